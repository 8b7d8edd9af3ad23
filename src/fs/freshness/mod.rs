//! How long the kernel may keep what the mount told it, and what it must
//! drop when the library changes.
//!
//! One question decides both: is the directory a name lies in watched
//! (`Freshness::covered`)? A watched name may be kept for long, since a
//! change there is pushed to the kernel (`plan` says what to drop); any
//! other name only for the configured TTL.

pub(crate) mod negatives;
pub(crate) mod plan;
pub(crate) mod racy;
pub(crate) mod watch;

use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, SystemTime};

pub(crate) use negatives::Negatives;
pub(crate) use plan::{Invalidation, plan};
pub(crate) use watch::{Change, Watch};

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
    /// What tests make the time be.
    #[cfg(test)]
    pub fake_now: std::sync::Mutex<Option<SystemTime>>,
}

impl Freshness {
    /// Watches `novels_dir` when `watch` is asked for and the TTL is not 0.
    pub(crate) fn new(novels_dir: &Path, ttl: Duration, watch: bool) -> Freshness {
        let watched = if !watch {
            Err("--no-watch".to_string())
        } else if ttl.is_zero() {
            Err("--ttl 0 asks on every lookup".to_string())
        } else {
            Watch::new(novels_dir)
        };
        let (watch, unwatched) = match watched {
            Ok(w) => (Some(w), None),
            Err(why) => (None, Some(why)),
        };
        Freshness {
            ttl,
            watch,
            unwatched,
            granularity: racy::granularity_of(novels_dir),
            #[cfg(test)]
            fake_now: std::sync::Mutex::new(None),
        }
    }

    /// Why the library is not watched (`None` when it is).
    pub(crate) fn unwatched(&self) -> Option<&str> {
        self.unwatched.as_deref()
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
