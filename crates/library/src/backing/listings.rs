//! A bucket's directory listings, each made again at most once per TTL
//! and by one reader at a time: where every name, size and version of a
//! bucket library comes from.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use novelfs_storage::{Entry, Storage};

use super::bodies::{lock, rel, to_io};

/// Listings kept before those past their TTL are dropped.
const PRUNE_LISTINGS_AT: usize = 1024;

/// A directory's listing as last made.
struct Listed {
    at: Instant,
    entries: Arc<Vec<Entry>>,
}

/// A listing's result as its waiters share it: the entries, or the
/// error's kind and words.
type Outcome = Result<Arc<Vec<Entry>>, (io::ErrorKind, String)>;

/// A listing being made: the readers that want it meanwhile wait for its
/// result rather than list the directory again.
#[derive(Default)]
struct Flight {
    /// The listing's result once made: the entries, or the error's kind
    /// and words (an error reaches every waiter and is kept nowhere).
    result: Mutex<Option<Outcome>>,
    done: Condvar,
    /// Set when the directory is forgotten while the listing is made: the
    /// result is then not kept (it may predate the change that made the
    /// directory forgotten).
    forgotten: AtomicBool,
}

pub(super) struct Listings {
    storage: Arc<dyn Storage>,
    ttl: Duration,
    made: Mutex<HashMap<PathBuf, Listed>>,
    making: Mutex<HashMap<PathBuf, Arc<Flight>>>,
}

impl Listings {
    pub(super) fn new(storage: Arc<dyn Storage>, ttl: Duration) -> Listings {
        Listings {
            storage,
            ttl,
            made: Mutex::new(HashMap::new()),
            making: Mutex::new(HashMap::new()),
        }
    }

    /// The listing of `dir`, made again once it is older than the TTL. One
    /// listing of a directory is made at a time: a reader that wants one
    /// while it is made waits for its result. The wait ends, since each
    /// access of the listing (one page) is bounded by the source timeout.
    pub(super) fn of(&self, dir: &Path) -> io::Result<Arc<Vec<Entry>>> {
        if let Some(entries) = self.fresh(dir) {
            return Ok(entries);
        }
        let (flight, mine) = {
            let mut making = lock(&self.making);
            // Made while this reader took the lock: no flight left, but a
            // fresh listing.
            if let Some(entries) = self.fresh(dir) {
                return Ok(entries);
            }
            match making.get(dir) {
                Some(f) => (f.clone(), false),
                None => {
                    let f = Arc::new(Flight::default());
                    making.insert(dir.to_path_buf(), f.clone());
                    (f, true)
                }
            }
        };
        if !mine {
            let mut result = lock(&flight.result);
            loop {
                if let Some(r) = &*result {
                    return r
                        .clone()
                        .map_err(|(kind, words)| io::Error::new(kind, words));
                }
                result = flight.done.wait(result).unwrap_or_else(|e| e.into_inner());
            }
        }
        let landing = Landing {
            listings: self,
            dir,
            flight: &flight,
        };
        let listed = rel(dir).and_then(|d| self.storage.list(&d).map_err(to_io));
        let listed = listed.map(Arc::new);
        if let Ok(entries) = &listed
            && !flight.forgotten.load(Ordering::Acquire)
        {
            self.keep(dir, entries.clone());
        }
        landing.land(match &listed {
            Ok(entries) => Ok(entries.clone()),
            Err(e) => Err((e.kind(), e.to_string())),
        });
        listed
    }

    fn keep(&self, dir: &Path, entries: Arc<Vec<Entry>>) {
        let mut made = lock(&self.made);
        // Listings past their TTL serve nothing: they go when there are
        // many, so what is kept is what a TTL's reading listed.
        if made.len() >= PRUNE_LISTINGS_AT {
            made.retain(|_, l| l.at.elapsed() < self.ttl);
        }
        made.insert(
            dir.to_path_buf(),
            Listed {
                at: Instant::now(),
                entries,
            },
        );
    }

    /// The listing of `dir` when one within its TTL is at hand.
    pub(super) fn fresh(&self, dir: &Path) -> Option<Arc<Vec<Entry>>> {
        lock(&self.made)
            .get(dir)
            .filter(|l| l.at.elapsed() < self.ttl)
            .map(|l| l.entries.clone())
    }

    /// The listed entry of `path`, from its directory's listing.
    pub(super) fn entry(&self, path: &Path) -> io::Result<Option<Entry>> {
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
    pub(super) fn forget(&self, dir: &Path) {
        if let Some(f) = lock(&self.making).get(dir) {
            f.forgotten.store(true, Ordering::Release);
        }
        lock(&self.made).remove(dir);
    }
}

/// Ends a flight: its waiters get its result, and the next reader after
/// it lists again unless the result was kept. Dropped unlanded (the lister
/// panicked), its waiters get an error rather than wait for ever.
struct Landing<'a> {
    listings: &'a Listings,
    dir: &'a Path,
    flight: &'a Flight,
}

impl Landing<'_> {
    fn land(self, result: Outcome) {
        *lock(&self.flight.result) = Some(result);
    }
}

impl Drop for Landing<'_> {
    fn drop(&mut self) {
        lock(&self.listings.making).remove(self.dir);
        let mut result = lock(&self.flight.result);
        if result.is_none() {
            *result = Some(Err((
                io::ErrorKind::Other,
                "the listing was not made".to_string(),
            )));
        }
        drop(result);
        self.flight.done.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::ops::Range;
    use std::sync::atomic::AtomicUsize;

    use novelfs_storage::{Kind, Object, RelPath, StorageError, Version};

    use super::*;

    /// A storage whose listings take `delay`, counted, failing while
    /// `failing` is set.
    #[derive(Debug, Default)]
    struct Slow {
        lists: AtomicUsize,
        failing: AtomicBool,
        delay: Duration,
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
            std::thread::sleep(self.delay);
            if self.failing.load(Ordering::SeqCst) {
                return Err(StorageError::Timeout {
                    what: "LIST".into(),
                    after: self.delay,
                });
            }
            Ok(vec![Entry {
                name: "第1章.md".into(),
                kind: Kind::File,
                size: 1,
                version: Version::ETag {
                    etag: "\"1\"".into(),
                    size: 1,
                },
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
    fn eight_at_once(listings: &Listings) -> Vec<io::Result<Arc<Vec<Entry>>>> {
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
        let listings = Listings::new(slow.clone(), Duration::from_secs(60));
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
}
