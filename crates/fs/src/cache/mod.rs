//! The caches' shared parts: the byte-bounded LRU maps that hold decoded
//! chapters, outlines, rendered pages and listings (the kit's `Lru`, its
//! evictions counted for `trim`: `lru`), how the one
//! budget is split among them (`budget`), the stamp every cached value is
//! checked against (`stamp`), and the heap trims that give back what they
//! free (`trim`).
//!
//! Entries are validated by the caller against a stamp of the source (see
//! `Stamp`), so the cache never decides freshness itself; it only bounds
//! memory.

mod budget;
mod stamp;
mod trim;

pub use budget::MMAP_THRESHOLD;
pub(crate) use budget::{Budget, Charge, MIN_TEXTS_BUDGET, allocated};
pub(crate) use novelfs_kit::lru::Lru;
pub(crate) use stamp::Stamp;
#[cfg(test)]
pub(crate) use stamp::WHOLE_SECONDS;
pub(crate) use trim::HeapTrim;

/// A cache of the tree: a byte-bounded LRU of `budget` bytes whose
/// evictions count towards the heap's next trim.
pub(crate) fn lru<K: std::hash::Hash + Eq + Clone, V: Clone>(budget: usize) -> Lru<K, V> {
    Lru::new(budget).counting_evictions_in(&trim::EVICTED_BYTES)
}
