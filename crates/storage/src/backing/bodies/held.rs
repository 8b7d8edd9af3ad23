//! The bodies kept, by what they are of and their version, the least
//! recently used given up first past a bound in bytes (the kit's LRU).

use std::sync::Arc;
use std::time::Instant;

use crate::Version;

use super::{Bodies, Key};

/// A body held: its version, its bytes, and when the GET that brought it
/// began (the object was this version then or later).
#[derive(Clone)]
pub(super) struct Held {
    pub(super) version: Version,
    pub(super) body: Arc<Vec<u8>>,
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
        let held = self.held.peek(key)?;
        if held.version != *version || got_since.is_some_and(|since| held.got < since) {
            return None;
        }
        self.held.get(key).map(|held| held.body)
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
        let len = body.len();
        if len as u64 > limit {
            return;
        }
        let (version, got) = got;
        self.held
            .insert(key.clone(), Held { version, body, got }, len);
    }
}
