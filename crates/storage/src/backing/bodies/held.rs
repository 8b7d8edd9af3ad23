//! The bodies kept, by what they are of and their version, the least
//! recently used given up first past a bound in bytes; and the state of
//! those queued and under way, which the same lock guards.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use crate::Version;

use super::Key;
use super::queue::Pending;

/// Bodies as GETs returned them, by what they are of and their version,
/// the least recently used given up first past a bound in bytes. A walk
/// that reads a chapter twice (its figures for an index file, then its
/// pages) pays one GET.
#[derive(Default)]
pub(super) struct Bodies {
    pub(super) held: HashMap<Key, Held>,
    /// The keys held, by when they were last used.
    pub(super) order: BTreeMap<u64, Key>,
    pub(super) tick: u64,
    pub(super) bytes: u64,
    /// Keys queued for the fetchers and not yet asked for: a reader of
    /// one takes it off the queue and asks itself, and the fetchers skip
    /// it, so no object is asked for twice.
    pub(super) queued: HashSet<Key>,
    /// Keys whose GET is under way: a reader of one waits for it rather
    /// than asking for the same bytes again.
    pub(super) fetching: HashSet<Key>,
    /// The batches queued, in the order they came, each with how many of
    /// its bodies the fetchers took.
    pub(super) pending: VecDeque<Pending>,
    /// The keys in `pending` (some may have been taken off by readers).
    pub(super) pending_keys: usize,
    /// Fetcher threads running.
    pub(super) fetchers: usize,
}

/// A body held: its version, its bytes, when it was last used (its tick)
/// and when the GET that brought it began (the object was this version
/// then or later).
pub(super) struct Held {
    pub(super) version: Version,
    pub(super) body: Arc<Vec<u8>>,
    pub(super) used: u64,
    pub(super) got: Instant,
}

impl Bodies {
    /// The body of `key` in `version`, got by a GET begun at or after
    /// `got_since` when that is given, marked as just used.
    pub(super) fn get(
        &mut self,
        key: &Key,
        version: &Version,
        got_since: Option<Instant>,
    ) -> Option<Arc<Vec<u8>>> {
        self.tick += 1;
        let tick = self.tick;
        let held = self.held.get_mut(key)?;
        if held.version != *version || got_since.is_some_and(|since| held.got < since) {
            return None;
        }
        self.order.remove(&held.used);
        held.used = tick;
        self.order.insert(tick, key.clone());
        Some(held.body.clone())
    }

    /// Keeps `body` unless it alone is over `limit`, giving up the least
    /// recently used bodies to make room.
    pub(super) fn put(
        &mut self,
        key: &Key,
        got: (Version, Instant),
        body: Arc<Vec<u8>>,
        limit: u64,
    ) {
        let len = body.len() as u64;
        if len > limit {
            return;
        }
        if let Some(old) = self.held.remove(key) {
            self.order.remove(&old.used);
            self.bytes -= old.body.len() as u64;
        }
        while self.bytes + len > limit {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            if let Some(old) = self.held.remove(&oldest) {
                self.bytes -= old.body.len() as u64;
            }
        }
        self.tick += 1;
        self.bytes += len;
        self.order.insert(self.tick, key.clone());
        let (version, got) = got;
        let used = self.tick;
        self.held.insert(
            key.clone(),
            Held {
                version,
                body,
                used,
                got,
            },
        );
    }
}
