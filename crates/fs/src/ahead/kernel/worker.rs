//! The store thread's side: the next stores to send (refused ones due
//! again, then the pages the kernel can take now, then rendering ahead of
//! the reader's listings), and what the kernel said to each.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::super::track::Tracks;
use super::plan::{AHEAD_CHAPTERS, Place, Reader};
use super::{Parts, Store, StoreAhead, StoreOutcome};
use crate::lock;

/// When a store the kernel refused with ENOENT is sent again, after each
/// refusal. The kernel makes a page's inode while the reader parses the
/// reply that named it, microseconds to a few milliseconds after the daemon
/// sent it; the reader's next request in the book (its next listing) is a
/// sign it has, and retries every refused store at once. After the last
/// refusal the store is dropped: the reader's READ serves the page.
const RETRY_AFTER: [Duration; 5] = [
    Duration::from_micros(100),
    Duration::from_micros(500),
    Duration::from_millis(2),
    Duration::from_millis(10),
    Duration::from_millis(50),
];

impl StoreAhead {
    /// The next stores to send: waits until a reader moves, a listing comes
    /// in a reader's book or a refused store is due again (at most `wait`,
    /// when given; then nothing may be returned).
    pub(crate) fn next(
        &self,
        parts: &Parts,
        tracks: &Mutex<Tracks<Place>>,
        wait: Option<Duration>,
    ) -> Vec<Store> {
        let give_up_at = wait.map(|w| Instant::now() + w);
        let (retries, events) = {
            let mut state = lock(&self.state);
            loop {
                let now = Instant::now();
                if state.events != state.planned || state.again {
                    break;
                }
                let due = state.retries.iter().map(|s| s.due).min();
                if due.is_some_and(|d| d <= now) {
                    break;
                }
                if give_up_at.is_some_and(|g| g <= now) {
                    return Vec::new();
                }
                let until = match (due, give_up_at) {
                    (Some(d), Some(g)) => Some(d.min(g)),
                    (d, g) => d.or(g),
                };
                // Marked under the lock the events are added under: one
                // added while the thread is not waiting is seen before it
                // waits, and wakes nothing (see `StoreAhead::wake`).
                state.waiting = true;
                state = match until {
                    Some(t) => {
                        self.wake
                            .wait_timeout(state, t.saturating_duration_since(now))
                            .unwrap_or_else(|e| e.into_inner())
                            .0
                    }
                    None => self.wake.wait(state).unwrap_or_else(|e| e.into_inner()),
                };
                state.waiting = false;
            }
            // A new event means the kernel went on with the reader's
            // requests, so it parsed the replies before: every refused store
            // is tried again now, not only those due.
            let now = Instant::now();
            let fresh = state.events != state.planned;
            state.planned = state.events;
            state.again = false;
            let (retries, later): (Vec<Store>, Vec<Store>) = std::mem::take(&mut state.retries)
                .into_iter()
                .partition(|s| fresh || s.due <= now);
            state.retries = later;
            (retries, state.planned)
        };
        let mut readers = Self::readers(tracks);
        // Refused stores first, before any planning: the kernel most likely
        // has their inodes now, and their reader is about to read them.
        let retried: Vec<Store> = retries
            .into_iter()
            .filter(|s| parts.inodes.held(s.ino))
            .collect();
        if !retried.is_empty() {
            lock(&self.state).again = true;
            return retried;
        }
        self.make_plans(parts, tracks, &mut readers, false);
        let mut out = Vec::new();
        let mut in_flight = 0;
        // Then what the kernel can take now, one page at a time, each sent
        // before the next is rendered: the reader may be about to read it,
        // and where it is by the next call decides what comes next.
        for r in &readers {
            if out.is_empty() {
                self.batch(parts, &r.place, Some(&mut out), &mut in_flight, &|| false);
            }
        }
        if !out.is_empty() {
            // Then the rest of the plan, on the next call.
            lock(&self.state).again = true;
            return out;
        }
        // Then the pages whose inodes the kernel does not hold yet, rendered
        // so that they are ready when the reader lists their chapter; given
        // up as soon as anything happens, which may have made some storable.
        let moved = || lock(&self.state).events != events;
        self.make_plans(parts, tracks, &mut readers, true);
        for r in &readers {
            self.batch(parts, &r.place, None, &mut in_flight, &moved);
        }
        out
    }

    /// The pages read on every track, as they are now, the most recent
    /// first.
    fn readers(tracks: &Mutex<Tracks<Place>>) -> Vec<Reader> {
        let tracks = lock(tracks);
        let mut readers: Vec<Reader> = tracks
            .iter()
            .flat_map(|t| {
                t.pages.iter().map(|p| Reader {
                    index: t.index.clone(),
                    place: p.clone(),
                    chapters: t.reach(AHEAD_CHAPTERS),
                })
            })
            .collect();
        readers.sort_by_key(|r| std::cmp::Reverse(r.place.read_at));
        readers
    }

    /// What the kernel said to `store`: a refused one is sent again later
    /// (`RETRY_AFTER`), up to a point.
    pub(crate) fn finished(&self, mut store: Store, outcome: StoreOutcome) {
        let mut state = lock(&self.state);
        match outcome {
            StoreOutcome::NotHeld if store.refused < RETRY_AFTER.len() => {
                store.due = Instant::now() + RETRY_AFTER[store.refused];
                store.refused += 1;
                state.retries.push(store);
            }
            StoreOutcome::NotHeld => {
                log::debug!(
                    "not stored ahead (the kernel does not hold it): {}",
                    store.path()
                );
                state.given.insert(store.ino);
            }
            StoreOutcome::Stored | StoreOutcome::Failed => {
                state.given.insert(store.ino);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Node;
    use std::sync::Arc;

    #[test]
    fn a_refused_store_is_retried_a_bounded_number_of_times() {
        let ahead = StoreAhead::new();
        let store = || Store {
            ino: 7,
            bytes: Arc::new(vec![1]),
            node: Node::Root,
            refused: 0,
            due: Instant::now(),
        };
        let mut s = store();
        for i in 0..RETRY_AFTER.len() {
            ahead.finished(s, StoreOutcome::NotHeld);
            let mut state = lock(&ahead.state);
            assert_eq!(state.retries.len(), 1, "refusal {i} is retried");
            s = state.retries.pop().unwrap();
            assert_eq!(s.refused, i + 1);
        }
        ahead.finished(s, StoreOutcome::NotHeld);
        let state = lock(&ahead.state);
        assert!(state.retries.is_empty(), "dropped after the last retry");
        assert!(state.given.contains(&7), "and not planned again");
    }
}
