//! What the fetchers ask for next: batches of bodies queued by readers,
//! taken from fairly among books, nothing asked for twice.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use crate::Version;

use super::{Batch, Bodies, GETS_A_FETCHER, Key};

/// A batch queued for the fetchers: one reader's (its book's) next
/// bodies.
pub(super) struct Pending {
    pub(super) book: Option<PathBuf>,
    pub(super) wanted: VecDeque<(Key, Version)>,
    pub(super) taken: usize,
}

impl Bodies {
    /// Whether `key` is held in `version`, under way or queued: nothing to
    /// ask for.
    pub(super) fn coming(&self, key: &Key, version: &Version) -> bool {
        self.held
            .peek(key)
            .is_some_and(|held| held.version == *version)
            || self.fetching.contains(key)
            || self.queued.contains(key)
    }

    /// Queues what of `wanted` is neither held nor coming already, as one
    /// batch; whether anything was.
    pub(super) fn queue(&mut self, wanted: Batch) -> bool {
        let batch: VecDeque<(Key, Version)> = wanted
            .into_iter()
            .filter(|(k, v)| !self.coming(k, v) && self.queued.insert(k.clone()))
            .collect();
        let Some((first, _)) = batch.front() else {
            return false;
        };
        self.pending_keys += batch.len();
        self.pending.push_back(Pending {
            book: first.path.parent().map(Path::to_path_buf),
            wanted: batch,
            taken: 0,
        });
        true
    }

    /// The batch to take from next: of the book whose pending batches were
    /// taken from least (the first queued of those), so that a book's
    /// first chapters queued behind another book's end are not kept
    /// waiting for it; its oldest batch, which its reader comes to first.
    pub(super) fn next_batch(&self) -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for (at, p) in self.pending.iter().enumerate() {
            if self.pending.iter().take(at).any(|q| q.book == p.book) {
                continue;
            }
            let taken: usize = self
                .pending
                .iter()
                .filter(|q| q.book == p.book)
                .map(|q| q.taken)
                .sum();
            if best.is_none_or(|(least, _)| taken < least) {
                best = Some((taken, at));
            }
        }
        best.map(|(_, at)| at)
    }

    /// The next bodies for a fetcher to ask for, up to `GETS_A_FETCHER`,
    /// marked under way (see `next_batch`). Empty when nothing is left to
    /// ask for.
    pub(super) fn take(&mut self) -> Batch {
        let mut chunk = Batch::new();
        while chunk.len() < GETS_A_FETCHER {
            let Some(at) = self.next_batch() else {
                break;
            };
            let pending = &mut self.pending[at];
            let Some((key, version)) = pending.wanted.pop_front() else {
                self.pending.remove(at);
                continue;
            };
            pending.taken += 1;
            self.pending_keys -= 1;
            if self.queued.remove(&key)
                && !self.held.contains(&key)
                && self.fetching.insert(key.clone())
            {
                chunk.push((key, version));
            }
        }
        chunk
    }
}
