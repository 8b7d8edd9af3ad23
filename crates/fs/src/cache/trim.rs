//! Handing the heap's free memory back to the system after many inodes
//! were forgotten or the caches evicted many bytes.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Hands the heap's free memory back to the system after the kernel
/// forgot many inodes (`freed`) or the caches evicted many bytes
/// (`evicted`): glibc keeps freed small chunks in its arenas, so without it
/// the daemon's RSS does not go down after a `drop_caches` or a walk.
pub(crate) struct HeapTrim {
    freed: AtomicUsize,
    /// Milliseconds since `start` of the last trim.
    last: AtomicU64,
    start: Instant,
}

/// Entries freed before a trim is worth its cost (it walks the heap).
const TRIM_AFTER_FREED: usize = 4096;
const TRIM_INTERVAL_MS: u64 = 1000;

impl Default for HeapTrim {
    fn default() -> Self {
        HeapTrim {
            freed: AtomicUsize::new(0),
            last: AtomicU64::new(0),
            start: Instant::now(),
        }
    }
}

/// Bytes the caches evicted since the last trim, over every cache: a walk
/// of the whole library turns the caches over many times, and the heap
/// keeps what they freed in chunks between live ones, so without a trim
/// the resident size grows far past the budget the caches keep.
pub(super) static EVICTED_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Evicted bytes before a trim is worth its cost: an eighth of the 64 MiB
/// bound beside the budget.
const TRIM_AFTER_EVICTED_BYTES: usize = 8 << 20;
/// Evictions come in a steady stream during a walk: one trim at most this
/// often.
const EVICTED_TRIM_INTERVAL_MS: u64 = 200;

impl HeapTrim {
    /// Trims once the caches evicted `TRIM_AFTER_EVICTED_BYTES` since the
    /// last trim, at most every `EVICTED_TRIM_INTERVAL_MS`; called after a
    /// request, outside the caches' locks. True when it trimmed.
    pub(crate) fn evicted(&self) -> bool {
        if EVICTED_BYTES.load(Ordering::Relaxed) < TRIM_AFTER_EVICTED_BYTES {
            return false;
        }
        if !self.take_turn(EVICTED_TRIM_INTERVAL_MS) {
            return false;
        }
        EVICTED_BYTES.store(0, Ordering::Relaxed);
        trim_heap();
        true
    }

    /// One more entry was freed; trims at most once a second, once enough
    /// were. True when it trimmed.
    pub(crate) fn freed(&self) -> bool {
        if self.freed.fetch_add(1, Ordering::Relaxed) + 1 < TRIM_AFTER_FREED {
            return false;
        }
        if !self.take_turn(TRIM_INTERVAL_MS) {
            return false;
        }
        self.freed.store(0, Ordering::Relaxed);
        trim_heap();
        true
    }

    /// Whether this call trims now: none did within `interval_ms` (or none
    /// did yet), and this thread is the one that marks the moment. One
    /// thread trims; the others go on.
    fn take_turn(&self, interval_ms: u64) -> bool {
        let now = self.start.elapsed().as_millis() as u64;
        let last = self.last.load(Ordering::Relaxed);
        if now.saturating_sub(last) < interval_ms && last != 0 {
            return false;
        }
        self.last
            .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

/// Returns free heap memory to the system (glibc only; elsewhere a no-op).
pub(crate) fn trim_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases free memory of the allocator.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_trim_waits_for_enough_freed_entries() {
        let trim = HeapTrim::default();
        let trimmed = (0..TRIM_AFTER_FREED).filter(|_| trim.freed()).count();
        assert_eq!(trimmed, 1, "one trim once enough were freed");
        assert!(
            !(0..TRIM_AFTER_FREED).any(|_| trim.freed()),
            "not again within the interval"
        );
    }

    #[test]
    fn evictions_trim_the_heap_once_enough_bytes_went() {
        let trim = HeapTrim::default();
        // Other tests evict and trim through the same counter: a trim
        // within a few rounds of evicting enough is what is asserted.
        let trimmed = (0..5).any(|_| {
            let mut lru = crate::cache::lru(1 << 20);
            for i in 0..(TRIM_AFTER_EVICTED_BYTES >> 18) + 8 {
                lru.insert(i, (), 1 << 18);
            }
            trim.evicted()
        });
        assert!(trimmed, "a trim once the caches evicted enough");
        assert!(!trim.evicted(), "not again within the interval");
    }
}
