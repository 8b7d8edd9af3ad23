//! How long the kernel may keep what the mount told it, and what it must
//! drop when the library changes.
//!
//! One question decides both: is the directory a name lies in watched
//! (`Freshness::covered`)? A watched name may be kept for long, since a
//! change there is pushed to the kernel (`plan` says what to drop); any
//! other name only for the configured TTL.
//!
//! What the daemon itself keeps of an unwatched directory (a book's chapter
//! index, whether the kernel may keep a listing) is trusted under the
//! directory's stamp by the library's filesystem (`SourceFs`, worked out
//! once): where times move, once the stamp is settled (`racy`); where they
//! stay still, for one TTL.

pub(crate) mod held;
pub(crate) mod negatives;
pub(crate) mod plan;
pub(crate) mod racy;
pub(crate) mod source_fs;
pub(crate) mod watch;

use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, SystemTime};

pub(crate) use negatives::Negatives;
pub use plan::Invalidation;
pub(crate) use plan::plan;
pub(crate) use source_fs::SourceFs;
pub use watch::Change;
pub(crate) use watch::Watch;

use super::cache::Stamp;
use super::node::Node;

/// How long the kernel may keep what a watched directory holds: changes
/// there are pushed to it, so this only bounds a change inotify missed.
pub(crate) const WATCHED_TTL: Duration = Duration::from_secs(3600);

pub(crate) struct Freshness {
    /// For what is not watched; 0 = ask every time (and nothing is watched).
    ttl: Duration,
    watch: Option<Watch>,
    /// Why nothing is watched (`None`: `novels/` is).
    unwatched: Option<String>,
    /// Of the source's times (see `racy`).
    granularity: Duration,
    /// Whether the source is a network filesystem, or its times stay still
    /// (see `SourceFs`).
    network: bool,
    /// Why the directories' times are taken to stay still (set at the
    /// mount, or once a directory is seen to change under a settled
    /// stamp).
    still: std::sync::OnceLock<String>,
    /// The stamp and names of `novels/` at its last listing, and when it
    /// was taken: a listing with other names under that stamp, settled
    /// then, shows that times stay still.
    last_books: std::sync::Mutex<Option<(Stamp, u64, SystemTime)>>,
    /// What tests make the time be.
    #[cfg(test)]
    pub fake_now: std::sync::Mutex<Option<SystemTime>>,
}

/// Why a library in a bucket is not watched and its times are not
/// trusted.
const IN_BUCKET: &str = "the library is in a bucket";

impl Freshness {
    /// For tests: the freshness of `novels_dir` on a mount of type
    /// `fs_type`, its `SourceFs` worked out here.
    #[cfg(test)]
    pub(crate) fn new(
        novels_dir: &Path,
        ttl: Duration,
        watch: bool,
        fs_type: Option<&str>,
    ) -> Freshness {
        Freshness::of(&SourceFs::of(novels_dir, fs_type), novels_dir, ttl, watch)
    }

    /// Watches `novels_dir`, on the filesystem `source`, when `watch` is
    /// asked for and the TTL is not 0.
    pub(crate) fn of(
        source: &SourceFs,
        novels_dir: &Path,
        ttl: Duration,
        watch: bool,
    ) -> Freshness {
        let watched = if !watch {
            Err("--no-watch".to_string())
        } else if ttl.is_zero() {
            Err("--ttl 0 asks on every lookup".to_string())
        } else {
            Watch::new(novels_dir, source).map_err(|e| e.to_string())
        };
        let (watch, unwatched) = match watched {
            Ok(w) => (Some(w), None),
            Err(why) => (None, Some(why)),
        };
        // Where times stay still, no stamp proves anything before a
        // network filesystem's caches have passed.
        let (granularity, network, still) = match &source.times_still {
            None => (
                source.granularity,
                source.remote,
                std::sync::OnceLock::new(),
            ),
            Some(why) => (
                racy::COARSE_GRANULARITY + racy::NETWORK_CACHES,
                true,
                std::sync::OnceLock::from(why.clone()),
            ),
        };
        Freshness {
            ttl,
            watch,
            unwatched,
            granularity,
            network,
            still,
            last_books: std::sync::Mutex::new(None),
            #[cfg(test)]
            fake_now: std::sync::Mutex::new(None),
        }
    }

    /// For a library in a bucket: nothing to watch, directory stamps are
    /// digests of listings made again once per TTL (so a TTL old, names
    /// are listed again), and a file's stamp is its version (ETag), which
    /// proves its bytes at once.
    pub(crate) fn in_bucket(ttl: Duration) -> Freshness {
        Freshness {
            ttl,
            watch: None,
            unwatched: Some(IN_BUCKET.to_string()),
            granularity: Duration::ZERO,
            network: true,
            still: std::sync::OnceLock::from(IN_BUCKET.to_string()),
            last_books: std::sync::Mutex::new(None),
            #[cfg(test)]
            fake_now: std::sync::Mutex::new(None),
        }
    }

    /// Why the library is not watched (`None` when it is).
    pub(crate) fn unwatched(&self) -> Option<&str> {
        self.unwatched.as_deref()
    }

    /// Why the source's directory times are taken to stay still (`None`:
    /// they move with each change).
    pub(crate) fn times_still(&self) -> Option<&str> {
        self.still.get().map(String::as_str)
    }

    /// A directory's names changed under a stamp settled before: its
    /// times do not move. From now on every directory is listed again
    /// after a TTL (logged once).
    pub(crate) fn saw_times_stay_still(&self, dir: &Path) {
        let why = format!("{} changed without moving its times", dir.display());
        if self.still.set(why).is_ok() {
            log::warn!(
                "{} changed without moving its times: every directory is listed again after the TTL of {} s",
                dir.display(),
                self.ttl.as_secs_f64()
            );
        }
    }

    /// `novels/` (`dir`) listed `names` under `stamp` at `at`.
    pub(crate) fn books_listed(&self, dir: &Path, stamp: Stamp, names: u64, at: SystemTime) {
        let previous = super::lock(&self.last_books).replace((stamp, names, at));
        if let Some((last_stamp, last_names, last_at)) = previous
            && last_stamp == stamp
            && last_names != names
            && self.settled(&stamp, last_at)
        {
            self.saw_times_stay_still(dir);
        }
    }

    /// The rule the library gets and the delay that follows from it, for
    /// the log line at the mount.
    pub(crate) fn rule(&self) -> String {
        let ttl = self.ttl.as_secs_f64();
        // A bucket has no filesystem of its own between it and the mount:
        // its listings (or its published snapshot) are all there is.
        if self.times_still() == Some(IN_BUCKET) {
            return format!(
                "each directory's listing (or the published snapshot's head) is asked for \
                 again at most once per TTL: a change in the bucket shows within the TTL of {ttl} s"
            );
        }
        if let Some(why) = self.times_still() {
            return format!(
                "directory times do not move ({why}): each directory is listed again at most \
                 once per TTL and its names compared; a change shows within the TTL of {ttl} s \
                 plus the source filesystem's own cache"
            );
        }
        if self.network {
            return format!(
                "on a network filesystem a change shows within the TTL of {ttl} s once the \
                 filesystem's own caches show it (a stamp is trusted {} s after its last change)",
                self.granularity.as_secs()
            );
        }
        format!("changes show within the TTL of {ttl} s")
    }

    /// The time granularity of the source (see `racy`).
    pub(crate) fn granularity(&self) -> Duration {
        self.granularity
    }

    /// The time now, as a read's moment to compare stamps with.
    pub(crate) fn now(&self) -> SystemTime {
        #[cfg(test)]
        if let Some(now) = *super::lock(&self.fake_now) {
            return now;
        }
        SystemTime::now()
    }

    /// Whether what was read of a source at `at` is proven to be what its
    /// `stamp` stands for (see `racy::settled`).
    pub(crate) fn settled(&self, stamp: &Stamp, at: SystemTime) -> bool {
        racy::settled(stamp, at, self.granularity)
    }

    /// Whether what the daemon read of a directory at `checked` is still
    /// what it holds, as far as its `stamp` tells: under a settled stamp
    /// where times move; for a TTL where they stay still.
    pub(crate) fn trusted(&self, stamp: &Stamp, checked: SystemTime) -> bool {
        if self.still.get().is_some() || racy::times_still(stamp) {
            return checked
                .checked_add(self.ttl)
                .is_some_and(|until| self.now() < until);
        }
        self.settled(stamp, checked)
    }

    /// Whether the kernel may keep a listing taken at `at` under `stamp`
    /// (never where times stay still: the daemon's own listing is kept
    /// for the TTL instead).
    pub(crate) fn listing_settled(&self, stamp: &Stamp, at: SystemTime) -> bool {
        self.still.get().is_none() && !racy::times_still(stamp) && self.settled(stamp, at)
    }

    pub(crate) fn watch(&self) -> Option<&Watch> {
        self.watch.as_ref()
    }

    /// The configured TTL (what unwatched names get).
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Whether changes in `book` (`None`: in `novels/` itself) are pushed
    /// to the kernel.
    pub(crate) fn covered(&self, book: Option<&OsStr>) -> bool {
        self.watch.as_ref().is_some_and(|w| w.covers(book))
    }

    /// How long the kernel may keep `node`'s entry and attributes. The
    /// library's index depends on every book: it is kept for long only
    /// while all of them are watched.
    pub(crate) fn ttl_for(&self, node: &Node) -> Duration {
        let covered = match node {
            Node::BooksIndex { .. } => self.watch.as_ref().is_some_and(Watch::covers_all),
            _ if node.shadowed() => false,
            _ => self.covered(node.book()),
        };
        if covered { WATCHED_TTL } else { self.ttl }
    }

    /// Whether a name missing in `directory` may be kept missing for long:
    /// a change there that can make it resolve is pushed to the kernel
    /// (which then drops the names `Negatives` recorded there).
    pub(crate) fn covers_names_in(&self, directory: &Node) -> bool {
        match directory {
            _ if directory.shadowed() => false,
            Node::Root => self.covered(None),
            Node::Book { book } => self.covered(Some(book)),
            _ => self.covered(directory.book()),
        }
    }

    /// Starts watching `book` (if the library is watched): called before
    /// the book is read, so that a change after the read is reported.
    pub(crate) fn watch_book(&self, book: &OsStr) {
        if let Some(w) = &self.watch {
            w.watch_book(book);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn stamp(secs: i64) -> Stamp {
        Stamp {
            dev: 1,
            ino: 2,
            size: 0,
            mtime: (secs, 0),
            ctime: (secs, 0),
        }
    }

    fn at(f: &Freshness, secs: u64) -> SystemTime {
        let t = UNIX_EPOCH + Duration::from_secs(secs);
        *crate::lock(&f.fake_now) = Some(t);
        t
    }

    #[test]
    fn still_times_are_trusted_for_one_ttl() {
        let dir = tempfile::tempdir().unwrap();
        let f = Freshness::new(dir.path(), Duration::from_secs(1), false, None);
        assert!(f.times_still().is_none(), "a local directory: times move");
        let s3 = Freshness::new(dir.path(), Duration::from_secs(1), false, Some("fuse.s3fs"));
        assert!(
            s3.times_still()
                .is_some_and(|why| why.contains("fuse.s3fs"))
        );
        let checked = at(&f, 1000);
        assert!(f.trusted(&stamp(-1), checked), "within the TTL");
        at(&f, 1001);
        assert!(!f.trusted(&stamp(-1), checked), "a TTL later: listed again");
        assert!(
            f.trusted(&stamp(100), checked),
            "a settled stamp that moves"
        );
        assert!(!f.listing_settled(&stamp(-1), at(&f, 5000)));
    }

    #[test]
    fn names_that_change_under_a_settled_stamp_show_times_stay_still() {
        let dir = tempfile::tempdir().unwrap();
        let f = Freshness::new(dir.path(), Duration::from_secs(1), false, None);
        let s = stamp(100);
        f.books_listed(dir.path(), s, 1, at(&f, 200));
        f.books_listed(dir.path(), s, 1, at(&f, 300));
        assert!(f.times_still().is_none(), "the same names");
        assert!(f.trusted(&s, at(&f, 300)));
        f.books_listed(dir.path(), s, 2, at(&f, 400));
        assert!(f.times_still().is_some(), "other names, the same stamp");
        let checked = at(&f, 500);
        at(&f, 502);
        assert!(!f.trusted(&s, checked), "listed again after the TTL");
        assert!(f.rule().starts_with("directory times do not move"));
    }

    /// A bucket has no filesystem, nor its cache, between it and the
    /// mount: its rule speaks of its listings and the TTL.
    #[test]
    fn a_buckets_rule_speaks_of_its_listings_not_a_filesystems_cache() {
        let f = Freshness::in_bucket(Duration::from_secs(60));
        let rule = f.rule();
        assert!(rule.contains("listing") && rule.contains("60 s"), "{rule}");
        assert!(!rule.contains("filesystem"), "{rule}");
    }
}
