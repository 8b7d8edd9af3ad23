//! The hashed index of a slab's ids, by a key each value holds.

use hashbrown::HashTable;

/// A hash index of a slab's ids by a key each value holds: the key is
/// stored once, in the slab (a map from key to id stored every node twice).
pub(super) struct Index {
    pub(super) ids: HashTable<u64>,
}

impl Index {
    pub(super) fn new() -> Index {
        Index {
            ids: HashTable::new(),
        }
    }

    /// What the table takes: a number and a control byte per bucket, at
    /// most 7/8 of them used.
    pub(super) fn bytes(&self) -> usize {
        (self.ids.capacity() * 8 / 7) * 9
    }

    /// Shrinks the table once it is mostly empty (after many FORGETs).
    pub(super) fn shrink(&mut self, rehash: impl Fn(&u64) -> u64) {
        if self.ids.capacity() > 4096 && self.ids.len() < self.ids.capacity() / 4 {
            self.ids.shrink_to(self.ids.len() * 2, rehash);
        }
    }
}
