//! A bucket's directory listings, each made again at most once per TTL
//! and by one reader at a time: where every name, size and version of a
//! bucket library comes from. A listing past its TTL is made again in the
//! background while its readers keep the old one for a short bounded
//! while, and a walker's next directories are listed ahead of it
//! (`list_pace`), so a reader waits on a LIST only for a directory no one
//! has listed lately.
//!
//! Each job in a file of its own: `flight` (one LIST of a directory at a
//! time, its readers waiting for its result), `made` (the listings kept,
//! within a bound in bytes), `refresh` (a listing past its TTL made again
//! on a thread while the old one is served), `ahead` (a walker's next
//! directories listed ahead of it), `followed` (the published snapshot's
//! directories served instead of listed), `stale` (listings served past
//! their TTL while the storage does not answer), `timing` (a LIST's time,
//! smoothed) and `switches` (the tests' switches).

mod ahead;
mod flight;
mod followed;
mod made;
mod published_rows;
mod refresh;
mod stale;
mod switches;
mod timing;

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{Entry, EntryKind, Storage};

use super::follow::{Follower, PendingHead, Said};
use super::list_pace::Pace;
use crate::outage::Outage;
use flight::Found;
use made::{Listed, Made, listing_bytes};
use novelfs_kit::lock;
use timing::FIRST_LIST_TIME;

pub(super) use switches::switched_off;

/// The longest a listing is served past its TTL while it is made again:
/// a change shows in every view within the TTL and this (the contract
/// allows the TTL and 1 s).
const GRACE_MAX: Duration = Duration::from_millis(500);

pub(super) struct Listings {
    storage: Arc<dyn Storage>,
    ttl: Duration,
    /// How long past its TTL a listing is served while it is made again
    /// (zero: never).
    grace: Duration,
    /// Whether directories are listed ahead of a walker.
    ahead: bool,
    made: Mutex<Made>,
    making: Arc<flight::Making>,
    pace: Mutex<Pace>,
    /// A LIST's time, smoothed: how long before a walker comes to a
    /// directory its listing ahead is begun (twice this).
    list_time: Mutex<Duration>,
    refreshing: AtomicUsize,
    /// The published snapshot followed, when the mount follows one: its
    /// directories are served from it, not listed.
    follow: std::sync::OnceLock<Arc<Follower>>,
    /// What takes the rows published beside a directory (`followed`).
    published_index: Arc<std::sync::OnceLock<novelfs_library::backing::PublishedIndex>>,
    /// Those rows for a mount that lists (`published_rows`).
    rows: published_rows::PublishedRows,
    /// How often the snapshot followed is compared with a LIST of a
    /// directory being read.
    drift: Mutex<Duration>,
    /// The head of the snapshot to follow, while it is asked for: the
    /// first look that needs a listing waits for it.
    pending: Mutex<Option<Arc<PendingHead>>>,
    /// Whether `pending` may hold a head still to take.
    pending_any: AtomicBool,
    /// Whether the storage answers: while it does not, a listing past its
    /// TTL is served within the stale window (`--stale-if-error`).
    outage: std::sync::OnceLock<Arc<Outage>>,
}

/// How long a reader of a listing past its TTL waits for it to be made
/// again before it is served the kept one (within the stale window).
const REVALIDATE_WAIT: Duration = Duration::from_millis(150);

/// How often, by default, a mount that follows a published snapshot
/// lists one directory it reads and compares it with the snapshot: a
/// change made in the bucket and never published shows within it.
pub const DRIFT: Duration = Duration::from_secs(600);

impl Listings {
    /// Listings of `storage`'s directories, made again once past `ttl`,
    /// those kept holding at most about `limit` bytes; the test switches
    /// of `OFF_ENV` apply.
    pub(in crate::backing) fn new(
        storage: Arc<dyn Storage>,
        ttl: Duration,
        limit: u64,
    ) -> Listings {
        let grace = if switched_off("stale") {
            Duration::ZERO
        } else {
            ttl.min(GRACE_MAX)
        };
        let mut listings = Listings::with(storage, ttl, grace, !switched_off("ahead"));
        listings
            .made
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .limit = limit;
        listings
    }

    fn with(storage: Arc<dyn Storage>, ttl: Duration, grace: Duration, ahead: bool) -> Listings {
        Listings {
            storage,
            ttl,
            grace,
            ahead,
            drift: Mutex::new(DRIFT),
            made: Mutex::new(Made {
                by_dir: HashMap::new(),
                bytes: 0,
                limit: u64::MAX,
            }),
            making: flight::making(),
            pace: Mutex::default(),
            list_time: Mutex::new(FIRST_LIST_TIME),
            refreshing: AtomicUsize::new(0),
            follow: std::sync::OnceLock::new(),
            published_index: Arc::default(),
            rows: published_rows::PublishedRows::default(),
            pending: Mutex::new(None),
            pending_any: AtomicBool::new(false),
            outage: std::sync::OnceLock::new(),
        }
    }

    /// The listing of `dir`, made again once it is older than the TTL. One
    /// listing of a directory is made at a time: a reader that wants one
    /// while it is made waits for its result. The wait ends, since each
    /// access of the listing (one page) is bounded by the source timeout.
    /// Within the grace past the TTL the old listing is served while it is
    /// made again in the background.
    pub(in crate::backing) fn of(self: &Arc<Self>, dir: &Path) -> io::Result<Arc<Vec<Entry>>> {
        match self.in_snapshot(dir) {
            Some(Said::Entries(entries)) => return Ok(entries),
            Some(Said::Absent) => {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{}: not in the published snapshot", dir.display()),
                ));
            }
            Some(Said::Unanswered(e)) => return Err(e.into()),
            None => {}
        }
        let kept = self.kept(dir);
        if let Some((entries, age, landed)) = &kept
            && (*age < self.ttl
                || ((*age < self.ttl + self.grace || *landed < self.grace) && self.refresh(dir)))
        {
            self.used(dir);
            return Ok(entries.clone());
        }
        // The storage does not answer: the old listing, with no wait; a
        // refresh in the background asks again (at once, or it fails at
        // once but for one probe at a time).
        if kept.is_some()
            && let Some(entries) = self.stale(dir)
        {
            self.refresh(dir);
            return Ok(entries);
        }
        if let Some((entries, age, _)) = &kept
            && let Some(served) = self.revalidated(dir, entries, *age)
        {
            return served;
        }
        let listed = match self.find(dir) {
            Found::Fresh(entries) => return Ok(entries),
            Found::Theirs(flight) => flight::waited(&flight),
            Found::Mine(lead) => self.fly(dir, lead),
        };
        // It stopped answering this listing.
        if listed.is_err()
            && let Some(entries) = self.stale(dir)
        {
            return Ok(entries);
        }
        if listed.is_ok() {
            self.used(dir);
        }
        listed
    }

    /// `dir`'s listing made again in the background and waited for at
    /// most `REVALIDATE_WAIT`, when its kept one (`entries`, `age` old)
    /// is within the stale window past its TTL: a storage slower than
    /// that (stalled, before the outage is known) has the kept listing
    /// served meanwhile, as RFC 5861's stale-while-revalidate does, rather
    /// than its reader wait a whole timeout. `None`: no stale window, or
    /// no thread to make it (the reader lists it itself).
    fn revalidated(
        self: &Arc<Self>,
        dir: &Path,
        entries: &Arc<Vec<Entry>>,
        age: Duration,
    ) -> Option<io::Result<Arc<Vec<Entry>>>> {
        let outage = self.outage.get()?;
        if !outage.within_stale_window(age.saturating_sub(self.ttl)) {
            return None;
        }
        // Made again already: its reader waited once, the others do not.
        let under_way = self.making.under_way(&dir.to_path_buf());
        if !self.refresh(dir) {
            return None;
        }
        let made = match self.find(dir) {
            Found::Fresh(made) => return Some(Ok(made)),
            Found::Theirs(_) if under_way => None,
            Found::Theirs(flight) => flight.wait_for(REVALIDATE_WAIT),
            // Made and failed since: listed again as without a window.
            Found::Mine(lead) => {
                drop(lead);
                return None;
            }
        };
        match made {
            Some(Ok(made)) => Some(Ok(made)),
            // An answer that says what the directory is (gone, refused)
            // is no outage: never covered by what was read before.
            Some(Err(e)) if !novelfs_library::backing::passing(&e) => {
                Some(Err(novelfs_library::backing::SourceFault::copy(&e)))
            }
            _ => {
                outage.served_stale();
                self.used(dir);
                Some(Ok(entries.clone()))
            }
        }
    }

    /// The kept listing of `dir`, its age and how long ago it was made,
    /// whatever they are.
    fn kept(&self, dir: &Path) -> Option<(Arc<Vec<Entry>>, Duration, Duration)> {
        lock(&self.made)
            .by_dir
            .get(dir)
            .map(|l| (l.entries.clone(), l.at.elapsed(), l.landed.elapsed()))
    }

    fn keep(&self, dir: &Path, entries: Arc<Vec<Entry>>, begun: Instant) {
        let bytes = listing_bytes(&entries);
        let listed = Listed {
            at: begun,
            landed: Instant::now(),
            entries,
            bytes,
        };
        lock(&self.made).keep(dir, listed, self.served_for());
    }

    /// The listing of `dir` when one within its TTL is at hand.
    pub(in crate::backing) fn fresh(&self, dir: &Path) -> Option<Arc<Vec<Entry>>> {
        match self.in_snapshot(dir) {
            Some(Said::Entries(entries)) => return Some(entries),
            Some(Said::Absent | Said::Unanswered(_)) => return None,
            None => {}
        }
        lock(&self.made)
            .by_dir
            .get(dir)
            .filter(|l| l.at.elapsed() < self.ttl)
            .map(|l| l.entries.clone())
    }

    /// Whether the last listing of `path`'s directory, however old, named
    /// it as a file: then it is looked up in a new listing of its
    /// directory first, not listed as a directory (a LIST that would most
    /// likely find nothing). Only the order of the looks follows from it.
    pub(in crate::backing) fn listed_as_file(&self, path: &Path) -> bool {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return false;
        };
        if let Some(Said::Entries(entries)) = self.in_snapshot(dir) {
            return entries
                .iter()
                .any(|e| e.name == name && e.kind == EntryKind::File);
        }
        lock(&self.made).by_dir.get(dir).is_some_and(|l| {
            l.entries
                .iter()
                .any(|e| e.name == name && e.kind == EntryKind::File)
        })
    }

    /// The entry of `path` in its directory's last listing, however old:
    /// nothing is listed for it.
    pub(in crate::backing) fn kept_entry(&self, path: &Path) -> Option<Entry> {
        let (dir, name) = (path.parent()?, path.file_name()?);
        match self.in_snapshot(dir) {
            Some(Said::Entries(entries)) => {
                return entries.iter().find(|e| e.name == name).cloned();
            }
            Some(Said::Absent) => return None,
            Some(Said::Unanswered(_)) | None => {}
        }
        let made = lock(&self.made);
        let listed = made.by_dir.get(dir)?;
        listed.entries.iter().find(|e| e.name == name).cloned()
    }

    /// The listed entry of `path`, from its directory's listing.
    pub(in crate::backing) fn entry(self: &Arc<Self>, path: &Path) -> io::Result<Option<Entry>> {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Ok(None);
        };
        match self.of(dir) {
            Ok(entries) => Ok(entries.iter().find(|e| e.name == name).cloned()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Drops the listing of `dir`: an object in it was found replaced, so
    /// the next look lists it again rather than trust it for the rest of
    /// its TTL.
    pub(in crate::backing) fn forget(&self, dir: &Path) {
        if let Some(f) = self.follow.get() {
            f.behind(dir);
        }
        self.making.forget_where(|d| d == dir);
        lock(&self.made).remove(dir);
    }
}

#[cfg(test)]
mod tests {
    use std::ops::Range;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::{EntryKind, Object, RelPath, StorageError, Version};

    use super::*;

    /// A storage whose listings take `delay`, counted (and the most under
    /// way at once), failing while `failing` is set; the one chapter
    /// listed has the ETag `generation`.
    #[derive(Debug, Default)]
    struct Slow {
        lists: AtomicUsize,
        failing: AtomicBool,
        /// Every LIST answers that there is no such directory.
        gone: AtomicBool,
        delay: Duration,
        generation: AtomicUsize,
        in_flight: AtomicUsize,
        max_in_flight: AtomicUsize,
    }

    impl Storage for Slow {
        fn describe(&self) -> String {
            "slow".into()
        }
        fn check(&self) -> Result<(), StorageError> {
            Ok(())
        }
        fn list(&self, _: &RelPath) -> Result<Vec<Entry>, StorageError> {
            self.lists.fetch_add(1, Ordering::SeqCst);
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_in_flight.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(self.delay);
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            let etag = format!("\"{}\"", self.generation.load(Ordering::SeqCst));
            if self.gone.load(Ordering::SeqCst) {
                return Err(StorageError::not_found("novels/书".to_string()));
            }
            if self.failing.load(Ordering::SeqCst) {
                return Err(StorageError::Timeout {
                    what: "LIST".into(),
                    after: self.delay,
                });
            }
            Ok(vec![Entry {
                name: "第1章.md".into(),
                kind: EntryKind::File,
                size: 1,
                version: Version::ETag { etag, size: 1 },
                modified: std::time::UNIX_EPOCH,
            }])
        }
        fn stat(&self, p: &RelPath) -> Result<Entry, StorageError> {
            Err(StorageError::NotFound {
                path: p.to_string(),
            })
        }
        fn put(&self, p: &RelPath, _: Vec<u8>) -> Result<(), StorageError> {
            Err(StorageError::NotFound {
                path: p.to_string(),
            })
        }
        fn read(&self, p: &RelPath, _: Option<&Version>) -> Result<Object, StorageError> {
            Err(StorageError::NotFound {
                path: p.to_string(),
            })
        }
        fn read_range(
            &self,
            p: &RelPath,
            _: Range<u64>,
            _: Option<&Version>,
        ) -> Result<Object, StorageError> {
            Err(StorageError::NotFound {
                path: p.to_string(),
            })
        }
    }

    /// Eight readers of one directory at once: the results of one listing.
    fn eight_at_once(listings: &Arc<Listings>) -> Vec<io::Result<Arc<Vec<Entry>>>> {
        let start = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            let readers: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        listings.of(Path::new("novels/书"))
                    })
                })
                .collect();
            readers.into_iter().map(|r| r.join().unwrap()).collect()
        })
    }

    #[test]
    fn readers_at_once_share_one_listing_and_its_error() {
        let slow = Arc::new(Slow {
            delay: Duration::from_secs(1),
            ..Default::default()
        });
        let listings = Arc::new(Listings::new(
            slow.clone(),
            Duration::from_secs(60),
            1 << 20,
        ));
        slow.failing.store(true, Ordering::SeqCst);
        let failed = eight_at_once(&listings);
        assert_eq!(slow.lists.load(Ordering::SeqCst), 1);
        for r in failed {
            assert_eq!(r.unwrap_err().kind(), io::ErrorKind::TimedOut);
        }
        // The error is kept nowhere: the next readers list again.
        slow.failing.store(false, Ordering::SeqCst);
        let listed = eight_at_once(&listings);
        assert_eq!(slow.lists.load(Ordering::SeqCst), 2);
        for r in listed {
            assert_eq!(r.unwrap().len(), 1);
        }
    }

    fn slow(delay_ms: u64) -> Arc<Slow> {
        Arc::new(Slow {
            delay: Duration::from_millis(delay_ms),
            ..Default::default()
        })
    }

    fn listings(slow: &Arc<Slow>, ttl_ms: u64, grace_ms: u64) -> Arc<Listings> {
        let ms = Duration::from_millis;
        Arc::new(Listings::with(slow.clone(), ms(ttl_ms), ms(grace_ms), true))
    }

    /// The ETag of the one chapter `entries` list.
    fn generation(entries: &[Entry]) -> String {
        match &entries[0].version {
            Version::ETag { etag, .. } => etag.trim_matches('"').to_string(),
            v => panic!("{v:?}"),
        }
    }

    /// `of(dir)` and how long it took.
    fn timed(listings: &Arc<Listings>, dir: &str) -> (io::Result<Arc<Vec<Entry>>>, Duration) {
        let t = Instant::now();
        (listings.of(Path::new(dir)), t.elapsed())
    }

    /// Listings through the outage guard, served stale for `stale_ms`.
    fn guarded(
        slow: &Arc<Slow>,
        ttl_ms: u64,
        stale_ms: u64,
    ) -> (Arc<Listings>, Arc<Outage>, Arc<crate::Counters>) {
        let counters = crate::Counters::new();
        let outage = Outage::new("slow".into(), Some(counters.clone()));
        outage.set_stale_for(Duration::from_millis(stale_ms));
        let storage = Arc::new(crate::outage::Guarded::new(slow.clone(), outage.clone()));
        let ms = Duration::from_millis;
        let listings = Arc::new(Listings::with(storage, ms(ttl_ms), Duration::ZERO, false));
        listings.guard(outage.clone());
        (listings, outage, counters)
    }

    #[test]
    fn while_the_storage_does_not_answer_the_last_listing_is_served_within_the_window() {
        let slow = slow(100);
        let (listings, outage, counters) = guarded(&slow, 50, 1500);
        let dir = "novels/书";
        assert_eq!(generation(&timed(&listings, dir).0.unwrap()), "0");
        std::thread::sleep(Duration::from_millis(100));
        slow.failing.store(true, Ordering::SeqCst);
        // Past its TTL: the LIST times out, the old listing is served.
        let (stale, _) = timed(&listings, dir);
        assert_eq!(generation(&stale.unwrap()), "0");
        assert!(outage.is_down());
        let lists = slow.lists.load(Ordering::SeqCst);
        // While it is down, at once, with no LIST waited for.
        for _ in 0..5 {
            let (again, took) = timed(&listings, dir);
            assert_eq!(generation(&again.unwrap()), "0");
            assert!(took < Duration::from_millis(100), "{took:?}");
        }
        // A directory never listed: fails, at once (the circuit is open).
        let (never, took) = timed(&listings, "novels/别的书");
        assert!(never.is_err());
        assert!(took < Duration::from_millis(100), "{took:?}");
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            slow.lists.load(Ordering::SeqCst) <= lists + 1,
            "one probe at a time"
        );
        let counted = counters.get(crate::Counter::StaleServes);
        assert!(counted >= 6, "{counted} stale serves counted");
        // Past the window: the error.
        std::thread::sleep(Duration::from_millis(1500));
        assert!(timed(&listings, dir).0.is_err(), "past the stale window");
        // It answers again: a new listing, and no stale one after.
        slow.generation.store(1, Ordering::SeqCst);
        slow.failing.store(false, Ordering::SeqCst);
        std::thread::sleep(crate::outage::RETRY_AFTER);
        assert_eq!(generation(&timed(&listings, dir).0.unwrap()), "1");
        assert!(!outage.is_down());
    }

    /// Within the stale window, a listing made again that says the
    /// directory is gone is the answer: only a storage that does not
    /// answer has the kept one served.
    #[test]
    fn a_directory_gone_is_not_served_stale() {
        let slow = slow(20);
        let (listings, _, _) = guarded(&slow, 50, 1500);
        let dir = "novels/书";
        timed(&listings, dir).0.unwrap();
        std::thread::sleep(Duration::from_millis(100));
        slow.gone.store(true, Ordering::SeqCst);
        let e = timed(&listings, dir).0.expect_err("gone");
        assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
    }

    #[test]
    fn with_no_stale_window_nothing_is_served_stale() {
        let slow = slow(20);
        let (listings, _, _) = guarded(&slow, 50, 0);
        let dir = "novels/书";
        timed(&listings, dir).0.unwrap();
        std::thread::sleep(Duration::from_millis(100));
        slow.failing.store(true, Ordering::SeqCst);
        assert!(timed(&listings, dir).0.is_err());
        assert!(timed(&listings, dir).0.is_err());
    }

    #[test]
    fn a_listing_past_its_ttl_is_served_while_made_again() {
        // A listing's age counts from when its LIST began: made at 0,
        // here at 150 ms, past its TTL from 300 ms, its grace to 600 ms.
        let slow = slow(150);
        let listings = listings(&slow, 300, 300);
        assert_eq!(generation(&timed(&listings, "novels/书").0.unwrap()), "0");
        slow.generation.store(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(200));
        // Past the TTL, within the grace: the old listing at once, and a
        // LIST under way for the next reader.
        let (old, took) = timed(&listings, "novels/书");
        assert_eq!(generation(&old.unwrap()), "0");
        assert!(took < Duration::from_millis(150), "waited {took:?}");
        std::thread::sleep(Duration::from_millis(50));
        let (again, _) = timed(&listings, "novels/书");
        assert_eq!(generation(&again.unwrap()), "0");
        assert_eq!(
            slow.lists.load(Ordering::SeqCst),
            2,
            "one refresh at a time"
        );
        std::thread::sleep(Duration::from_millis(200));
        let (new, took) = timed(&listings, "novels/书");
        assert_eq!(generation(&new.unwrap()), "1");
        assert!(took < Duration::from_millis(150), "waited {took:?}");
        assert_eq!(slow.lists.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn past_the_grace_or_with_none_a_reader_waits_for_the_new_listing() {
        for grace in [100, 0] {
            let slow = slow(200);
            let listings = listings(&slow, 100, grace);
            listings.of(Path::new("novels/书")).unwrap();
            slow.generation.store(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(if grace == 0 { 150 } else { 250 }));
            let (new, took) = timed(&listings, "novels/书");
            assert_eq!(generation(&new.unwrap()), "1", "grace {grace}");
            assert!(
                took >= Duration::from_millis(200),
                "grace {grace}: {took:?}"
            );
        }
    }

    #[test]
    fn the_listings_kept_stay_within_their_bound_in_bytes() {
        let entries: Vec<Entry> = (0..100)
            .map(|i| Entry {
                name: format!("第{i}章.md").into(),
                kind: EntryKind::File,
                size: 1,
                version: Version::ETag {
                    etag: format!("\"{i:032}\""),
                    size: 1,
                },
                modified: std::time::UNIX_EPOCH,
            })
            .collect();
        let one = listing_bytes(&entries);
        let mut made = Made {
            by_dir: HashMap::new(),
            bytes: 0,
            limit: one * 3 + one / 2,
        };
        let entries = Arc::new(entries);
        let start = Instant::now();
        for i in 0..10 {
            let listed = Listed {
                at: start,
                landed: start + Duration::from_millis(i),
                entries: entries.clone(),
                bytes: one,
            };
            made.keep(
                Path::new(&format!("novels/{i}")),
                listed,
                Duration::from_secs(60),
            );
            assert!(
                made.bytes <= made.limit,
                "{} over {}",
                made.bytes,
                made.limit
            );
            assert_eq!(made.bytes, one * made.by_dir.len() as u64);
        }
        // The most recently made are the ones kept.
        let mut kept: Vec<_> = made.by_dir.keys().cloned().collect();
        kept.sort();
        assert_eq!(
            kept,
            ["novels/7", "novels/8", "novels/9"].map(PathBuf::from)
        );
        // One listing over the whole bound is still kept, alone.
        made.limit = one / 2;
        let listed = Listed {
            at: Instant::now(),
            landed: Instant::now(),
            entries,
            bytes: one,
        };
        made.keep(Path::new("novels/big"), listed, Duration::from_secs(60));
        assert_eq!(made.by_dir.len(), 1);
        assert_eq!(made.bytes, one);
    }

    #[test]
    fn a_listing_just_made_is_served_though_its_list_outlasted_the_ttl() {
        // Each LIST takes three TTLs: what one made is past its TTL and
        // grace as it comes, yet the next reader is served it at once (and
        // one LIST makes it again), rather than each list in turn.
        let slow = slow(300);
        let listings = listings(&slow, 100, 100);
        listings.of(Path::new("novels/书")).unwrap();
        slow.generation.store(1, Ordering::SeqCst);
        let (old, took) = timed(&listings, "novels/书");
        assert_eq!(generation(&old.unwrap()), "0");
        assert!(took < Duration::from_millis(150), "waited {took:?}");
        let (again, took) = timed(&listings, "novels/书");
        assert_eq!(generation(&again.unwrap()), "0");
        assert!(took < Duration::from_millis(150), "waited {took:?}");
        // Past that grace the reader waits for the one under way.
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(slow.lists.load(Ordering::SeqCst), 2, "one refresh");
        assert_eq!(generation(&timed(&listings, "novels/书").0.unwrap()), "1");
        assert_eq!(slow.lists.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_refresh_that_fails_is_kept_nowhere_and_the_grace_still_ends() {
        let slow = slow(100);
        let listings = listings(&slow, 100, 300);
        listings.of(Path::new("novels/书")).unwrap();
        slow.failing.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(150));
        // Served old while the refresh fails in the background.
        assert!(timed(&listings, "novels/书").0.is_ok());
        std::thread::sleep(Duration::from_millis(300));
        // Past the grace: the reader's own LIST, and its error.
        let (failed, _) = timed(&listings, "novels/书");
        assert_eq!(failed.unwrap_err().kind(), io::ErrorKind::TimedOut);
        slow.failing.store(false, Ordering::SeqCst);
        slow.generation.store(2, Ordering::SeqCst);
        assert_eq!(generation(&timed(&listings, "novels/书").0.unwrap()), "2");
    }

    #[test]
    fn a_directory_forgotten_during_its_refresh_keeps_no_result() {
        let slow = slow(200);
        let listings = listings(&slow, 100, 300);
        listings.of(Path::new("novels/书")).unwrap();
        std::thread::sleep(Duration::from_millis(150));
        listings.of(Path::new("novels/书")).unwrap();
        // The refresh is under way (LIST 2) when the directory is
        // forgotten: what it lists is not kept.
        listings.forget(Path::new("novels/书"));
        std::thread::sleep(Duration::from_millis(300));
        assert!(listings.fresh(Path::new("novels/书")).is_none());
        listings.of(Path::new("novels/书")).unwrap();
        assert_eq!(slow.lists.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_walker_finds_its_directories_listed_ahead_many_at_once() {
        let slow = slow(50);
        let listings = listings(&slow, 5_000, 500);
        let dirs: Vec<PathBuf> = (0..64)
            .map(|i| PathBuf::from(format!("novels/{i}")))
            .collect();
        let t = Instant::now();
        listings.ahead(dirs.clone());
        for d in &dirs {
            listings.of(d).unwrap();
        }
        let took = t.elapsed();
        // One after another they take 64 × 50 ms = 3.2 s.
        assert!(took < Duration::from_millis(1600), "{took:?}");
        assert!(slow.max_in_flight.load(Ordering::SeqCst) > 4);
        assert_eq!(slow.lists.load(Ordering::SeqCst), 64, "each listed once");
    }

    #[test]
    fn with_no_listing_ahead_a_walker_lists_one_after_another() {
        let slow = slow(20);
        let listings = Arc::new(Listings::with(
            slow.clone(),
            Duration::from_secs(5),
            Duration::ZERO,
            false,
        ));
        let dirs: Vec<PathBuf> = (0..16)
            .map(|i| PathBuf::from(format!("novels/{i}")))
            .collect();
        listings.ahead(dirs.clone());
        for d in &dirs {
            listings.of(d).unwrap();
        }
        assert_eq!(slow.max_in_flight.load(Ordering::SeqCst), 1);
    }
}
