//! The bodies kept, by what they are of and their version, the least
//! recently used given up first past a bound in bytes.

use std::sync::Arc;
use std::time::Instant;

use crate::Version;

use super::{Bodies, Key};

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
