//! One listing of a directory made at a time: a reader that wants it
//! while it is made waits for its result rather than list it again.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use novelfs_library::backing::SourceFault;

use crate::Entry;

use super::super::bodies::{lock, rel};
use super::Listings;

/// A listing's result as its waiters share it: the entries, or the
/// error, copied to each with its kind, words and fault.
pub(super) type Outcome = Result<Arc<Vec<Entry>>, io::Error>;

/// A listing being made: the readers that want it meanwhile wait for its
/// result rather than list the directory again.
#[derive(Default)]
pub(super) struct Flight {
    /// The listing's result once made: the entries, or the error (a copy
    /// of it reaches every waiter; it is kept nowhere).
    pub(super) result: Mutex<Option<Outcome>>,
    pub(super) done: Condvar,
    /// Set when the directory is forgotten while the listing is made: the
    /// result is then not kept (it may predate the change that made the
    /// directory forgotten).
    pub(super) forgotten: AtomicBool,
}

impl Flight {
    pub(super) fn wait(&self) -> io::Result<Arc<Vec<Entry>>> {
        let mut result = lock(&self.result);
        loop {
            if let Some(r) = &*result {
                return match r {
                    Ok(entries) => Ok(entries.clone()),
                    Err(e) => Err(SourceFault::copy(e)),
                };
            }
            result = self.done.wait(result).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// What a reader finds when it wants a listing made.
pub(super) enum Found {
    /// A fresh one, made while it took the lock.
    Fresh(Arc<Vec<Entry>>),
    /// Another's flight, to wait for.
    Theirs(Arc<Flight>),
    /// No flight: this one, its to make.
    Mine(Arc<Flight>),
}

impl Listings {
    /// The flight of `dir`: another's, or a new one of this reader's.
    pub(super) fn find(&self, dir: &Path) -> Found {
        let mut making = lock(&self.making);
        // Made while this reader took the lock: no flight left, but a
        // fresh listing.
        if let Some(entries) = self.fresh(dir) {
            return Found::Fresh(entries);
        }
        match making.get(dir) {
            Some(f) => Found::Theirs(f.clone()),
            None => {
                let f = Arc::new(Flight::default());
                making.insert(dir.to_path_buf(), f.clone());
                Found::Mine(f)
            }
        }
    }

    /// Makes the listing of `dir` for `flight`, keeping it unless the
    /// directory was forgotten meanwhile.
    pub(super) fn fly(&self, dir: &Path, flight: &Flight) -> io::Result<Arc<Vec<Entry>>> {
        let landing = Landing {
            listings: self,
            dir,
            flight,
        };
        let begun = Instant::now();
        let listed = rel(dir).and_then(|d| self.storage.list(&d).map_err(io::Error::from));
        let listed = listed.map(Arc::new);
        if listed.is_ok() {
            self.timed(begun.elapsed());
        }
        if let Ok(entries) = &listed
            && !flight.forgotten.load(Ordering::Acquire)
        {
            self.keep(dir, entries.clone(), begun);
        }
        landing.land(match &listed {
            Ok(entries) => Ok(entries.clone()),
            Err(e) => Err(SourceFault::copy(e)),
        });
        listed
    }
}

/// Ends a flight: its waiters get its result, and the next reader after
/// it lists again unless the result was kept. Dropped unlanded (the lister
/// panicked or never started), its waiters get an error rather than wait
/// for ever.
pub(super) struct Landing<'a> {
    pub(super) listings: &'a Listings,
    pub(super) dir: &'a Path,
    pub(super) flight: &'a Flight,
}

impl Landing<'_> {
    pub(super) fn land(self, result: Outcome) {
        *lock(&self.flight.result) = Some(result);
    }
}

impl Drop for Landing<'_> {
    fn drop(&mut self) {
        lock(&self.listings.making).remove(self.dir);
        let mut result = lock(&self.flight.result);
        if result.is_none() {
            *result = Some(Err(io::Error::other("the listing was not made")));
        }
        drop(result);
        self.flight.done.notify_all();
    }
}
