//! The byte-bounded LRU maps that hold decoded chapters, outlines,
//! rendered pages and listings, and how the one budget is split among them.
//!
//! Entries are validated by the caller against a stamp of the source (see
//! `Stamp`), so the cache never decides freshness itself; it only bounds
//! memory.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::os::unix::fs::MetadataExt;

/// What identifies a version of a source file or directory: a rewrite of
/// the same size with the old mtime restored still changes ctime, and a
/// rename over it changes the inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl Stamp {
    pub fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// Buffers at least this big get their own mapping from the allocator
/// (the daemon sets glibc's `M_MMAP_THRESHOLD` to it, see `daemon.rs`).
pub const MMAP_THRESHOLD: usize = 16 * 1024;

/// What a buffer of `bytes` really costs: a mapped one takes whole 4 KiB
/// pages (on average 2 KiB more than asked, which over thousands of cached
/// chapters is tens of MiB the budget must count), a small one a header.
pub fn allocated(bytes: usize) -> usize {
    if bytes >= MMAP_THRESHOLD {
        (bytes + 16).next_multiple_of(4096)
    } else {
        bytes + 16
    }
}

/// The cache budget of a mount, split by what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub texts: usize,
    pub outlines: usize,
    pub pages: usize,
    pub listings: usize,
}

impl Budget {
    /// 1/16 each (at least 1 MiB) for outlines, rendered pages and
    /// listings, the rest (at least 1 MiB) for decoded chapters: a text is
    /// what costs a decode to get back.
    pub fn split(total: usize) -> Budget {
        let sixteenth = (total / 16).max(1 << 20);
        Budget {
            texts: total.saturating_sub(3 * sixteenth).max(1 << 20),
            outlines: sixteenth,
            pages: sixteenth,
            listings: sixteenth,
        }
    }
}

pub struct Lru<K, V> {
    entries: HashMap<K, (V, usize, u64)>,
    /// Last-use tick → key, oldest first: eviction and touch are O(log n).
    order: BTreeMap<u64, K>,
    budget: usize,
    used: usize,
    clock: u64,
}

impl<K: Hash + Eq + Clone, V: Clone> Lru<K, V> {
    pub fn new(budget: usize) -> Self {
        Lru {
            entries: HashMap::new(),
            order: BTreeMap::new(),
            budget,
            used: 0,
            clock: 0,
        }
    }

    pub fn get(&mut self, key: &K) -> Option<V> {
        let (value, _, tick) = self.entries.get_mut(key)?;
        self.clock += 1;
        self.order.remove(tick);
        *tick = self.clock;
        self.order.insert(self.clock, key.clone());
        Some(value.clone())
    }

    /// Inserts `value` weighing `bytes`. An entry larger than the whole
    /// budget is kept alone: a 100,000-line chapter read page by page with
    /// a small cache must not be decoded again for every page.
    pub fn insert(&mut self, key: K, value: V, bytes: usize) {
        self.remove(&key);
        self.make_room(bytes);
        self.clock += 1;
        self.used += bytes;
        self.order.insert(self.clock, key.clone());
        self.entries.insert(key, (value, bytes, self.clock));
    }

    /// Evicts the least recently used entries until `bytes` more fit, so
    /// that a value about to be built does not come on top of a full cache.
    pub fn make_room(&mut self, bytes: usize) {
        while self.used + bytes > self.budget && self.used > 0 {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            if let Some((_, b, _)) = self.entries.remove(&oldest) {
                self.used -= b;
            }
        }
    }

    pub fn remove(&mut self, key: &K) {
        if let Some((_, bytes, tick)) = self.entries.remove(key) {
            self.used -= bytes;
            self.order.remove(&tick);
        }
    }

    pub fn used_bytes(&self) -> usize {
        self.used
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_goes_mostly_to_texts() {
        let b = Budget::split(256 << 20);
        assert_eq!(
            (b.outlines, b.pages, b.listings),
            (16 << 20, 16 << 20, 16 << 20)
        );
        assert_eq!(b.texts, 208 << 20);
        let tiny = Budget::split(0);
        assert_eq!((tiny.texts, tiny.outlines), (1 << 20, 1 << 20));
    }

    #[test]
    fn mapped_buffers_count_whole_pages() {
        assert_eq!(allocated(100), 116);
        assert_eq!(allocated(MMAP_THRESHOLD), 20480);
        assert_eq!(allocated(40_000), 40_960);
    }

    #[test]
    fn evicts_least_recently_used_within_budget() {
        let mut lru = Lru::new(10);
        lru.insert("a", 1, 4);
        lru.insert("b", 2, 4);
        assert_eq!(lru.get(&"a"), Some(1));
        lru.insert("c", 3, 4);
        assert_eq!(lru.get(&"b"), None, "b was least recently used");
        assert_eq!(lru.get(&"a"), Some(1));
        assert_eq!(lru.used_bytes(), 8);
        lru.insert("huge", 9, 11);
        assert_eq!(lru.get(&"huge"), Some(9), "kept alone");
        assert_eq!((lru.len(), lru.used_bytes()), (1, 11));
        lru.insert("d", 4, 4);
        assert_eq!(lru.get(&"huge"), None, "and the first to go");
        assert_eq!(lru.len(), 1);
        lru.insert("e", 5, 4);
        lru.make_room(5);
        assert_eq!(
            (lru.get(&"d"), lru.get(&"e")),
            (None, Some(5)),
            "room for 5 more: the older goes"
        );
    }
}
