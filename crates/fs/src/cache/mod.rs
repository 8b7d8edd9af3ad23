//! The caches' shared parts: the byte-bounded LRU maps that hold decoded
//! chapters, outlines, rendered pages and listings (`lru`), how the one
//! budget is split among them (`budget`), the stamp every cached value is
//! checked against (`stamp`), and the heap trims that give back what they
//! free (`trim`).
//!
//! Entries are validated by the caller against a stamp of the source (see
//! `Stamp`), so the cache never decides freshness itself; it only bounds
//! memory.

mod budget;
mod lru;
mod stamp;
mod trim;

pub use budget::MMAP_THRESHOLD;
pub(crate) use budget::{Budget, Charge, MIN_TEXTS_BUDGET, allocated};
pub(crate) use lru::Lru;
pub(crate) use stamp::Stamp;
#[cfg(test)]
pub(crate) use stamp::WHOLE_SECONDS;
pub(crate) use trim::HeapTrim;
