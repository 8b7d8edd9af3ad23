//! One listing of a directory made at a time (the kit's single flight): a
//! reader that wants it while it is made waits for its result rather than
//! list it again.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use novelfs_kit::flight::{Flight, Flights, Leader, Part};
use novelfs_library::backing::SourceFault;

use crate::Entry;

use super::super::bodies::rel;
use super::Listings;

/// A listing's result as its waiters share it: the entries, or the error
/// (each waiter gets a copy with its kind, words and fault; it is kept
/// nowhere).
pub(super) type Outcome = Result<Arc<Vec<Entry>>, Arc<io::Error>>;

/// The listings being made, by directory.
pub(super) type Making = Flights<PathBuf, Outcome>;

/// The making of a directory's listing, led by one reader.
pub(super) type Lead = Leader<PathBuf, Outcome>;

/// What the waiters of a listing that was never made get.
pub(super) fn making() -> Arc<Making> {
    Arc::new(Flights::new(|| {
        Err(Arc::new(io::Error::other("the listing was not made")))
    }))
}

/// A listing's result as a reader gets it.
pub(super) fn waited(flight: &Flight<Outcome>) -> io::Result<Arc<Vec<Entry>>> {
    flight.wait().map_err(|e| SourceFault::copy(&e))
}

/// What a reader finds when it wants a listing made.
pub(super) enum Found {
    /// A fresh one, made while it took the lock.
    Fresh(Arc<Vec<Entry>>),
    /// Another's flight, to wait for.
    Theirs(Arc<Flight<Outcome>>),
    /// No flight: this one, its to make.
    Mine(Lead),
}

impl Listings {
    /// The flight of `dir`: another's, or a new one of this reader's.
    pub(super) fn find(&self, dir: &Path) -> Found {
        // Made while this reader took the lock: no flight left, but a
        // fresh listing.
        match self
            .making
            .lead_or_join_unless(dir.to_path_buf(), || self.fresh(dir))
        {
            Part::Found(entries) => Found::Fresh(entries),
            Part::Join(flight) => Found::Theirs(flight),
            Part::Lead(lead) => Found::Mine(lead),
        }
    }

    /// Makes the listing of `dir` for `lead`, keeping it unless the
    /// directory was forgotten meanwhile; its waiters get the result (and
    /// if this panics, an error rather than a wait for ever).
    pub(super) fn fly(&self, dir: &Path, lead: Lead) -> io::Result<Arc<Vec<Entry>>> {
        let begun = Instant::now();
        let list = || rel(dir).and_then(|d| self.storage.list(&d).map_err(io::Error::from));
        // The rows published beside the directory are fetched beside its
        // LIST and handed to the index before the listing is kept: no
        // reader outlines its chapters without them.
        let listed = if self.rows_wanted(dir) {
            std::thread::scope(|s| {
                let rows = s.spawn(|| self.rows_beside(dir));
                let listed = list();
                let _ = rows.join();
                listed
            })
        } else {
            list()
        };
        let listed = listed.map(Arc::new);
        if listed.is_ok() {
            self.timed(begun.elapsed());
        }
        if let Ok(entries) = &listed
            && !lead.flight().forgotten()
        {
            self.keep(dir, entries.clone(), begun);
        }
        lead.finish(match &listed {
            Ok(entries) => Ok(entries.clone()),
            Err(e) => Err(Arc::new(SourceFault::copy(e))),
        });
        listed
    }
}
