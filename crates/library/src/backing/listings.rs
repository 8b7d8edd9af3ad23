//! A bucket's directory listings, each made again at most once per TTL:
//! where every name, size and version of a bucket library comes from.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
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

pub(super) struct Listings {
    storage: Arc<dyn Storage>,
    ttl: Duration,
    made: Mutex<HashMap<PathBuf, Listed>>,
}

impl Listings {
    pub(super) fn new(storage: Arc<dyn Storage>, ttl: Duration) -> Listings {
        Listings {
            storage,
            ttl,
            made: Mutex::new(HashMap::new()),
        }
    }

    /// The listing of `dir`, made again once it is older than the TTL.
    pub(super) fn of(&self, dir: &Path) -> io::Result<Arc<Vec<Entry>>> {
        if let Some(entries) = self.fresh(dir) {
            return Ok(entries);
        }
        let entries = Arc::new(self.storage.list(&rel(dir)?).map_err(to_io)?);
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
                entries: entries.clone(),
            },
        );
        Ok(entries)
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
        lock(&self.made).remove(dir);
    }
}
