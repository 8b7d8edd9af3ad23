//! The byte-bounded LRU maps that hold decoded chapters, outlines,
//! rendered pages and listings, and how the one budget is split among them.
//!
//! Entries are validated by the caller against a stamp of the source (see
//! `Stamp`), so the cache never decides freshness itself; it only bounds
//! memory.

use std::collections::BTreeMap;
use std::hash::Hash;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// What identifies a version of a source file or directory: a rewrite of
/// the same size with the old mtime restored still changes ctime, and a
/// rename over it changes the inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl Stamp {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Stamp {
        let stamp = Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        };
        #[cfg(test)]
        if WHOLE_SECONDS.get() {
            return Stamp {
                mtime: (stamp.mtime.0, 0),
                ctime: (stamp.ctime.0, 0),
                ..stamp
            };
        }
        stamp
    }
}

#[cfg(test)]
thread_local! {
    /// Makes this thread's stamps whole seconds, as sshfs gives them: a
    /// local filesystem that hands out a fine time after every `stat`
    /// never shows two changes with one stamp.
    pub(crate) static WHOLE_SECONDS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Buffers at least this big get their own mapping from the allocator
/// (the daemon sets glibc's `M_MMAP_THRESHOLD` to it, see `daemon.rs`).
/// Chapters and pages below it come from the heap and reuse its freed
/// chunks: a fresh mapping for each costs its page faults, zeroed pages
/// and, when freed, a TLB shootdown on the other CPU, which took a cold
/// pass over the reference library from 21 to 28 ms of daemon CPU at
/// 16 KiB. Above it (big chapters, their line indexes) each buffer goes
/// back to the system the moment it is freed.
pub const MMAP_THRESHOLD: usize = 4 << 20;

/// What a buffer of `bytes` really costs: a mapped one takes whole 4 KiB
/// pages (on average 2 KiB more than asked, which over thousands of cached
/// chapters is tens of MiB the budget must count), a small one a header.
pub(crate) fn allocated(bytes: usize) -> usize {
    if bytes >= MMAP_THRESHOLD {
        (bytes + 16).next_multiple_of(4096)
    } else {
        bytes + 16
    }
}

/// Hands the heap's free memory back to the system after the kernel
/// forgot many inodes (`freed`) or the caches evicted many bytes
/// (`evicted`): glibc keeps freed small chunks in its arenas, so without it
/// the daemon's RSS never went down after a `drop_caches` or a walk.
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
/// kept what they freed in chunks between live ones (at 200,000 chapters
/// 159 MiB free inside a 411 MiB heap after `grep -r`), so the resident
/// size grew far past the budget the caches kept.
static EVICTED_BYTES: AtomicUsize = AtomicUsize::new(0);

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
        let now = self.start.elapsed().as_millis() as u64;
        let last = self.last.load(Ordering::Relaxed);
        if now.saturating_sub(last) < EVICTED_TRIM_INTERVAL_MS && last != 0 {
            return false;
        }
        if self
            .last
            .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
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
        let now = self.start.elapsed().as_millis() as u64;
        let last = self.last.load(Ordering::Relaxed);
        if now.saturating_sub(last) < TRIM_INTERVAL_MS && last != 0 {
            return false;
        }
        // One thread trims; the others go on.
        if self
            .last
            .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        self.freed.store(0, Ordering::Relaxed);
        trim_heap();
        true
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

/// Bytes the daemon holds outside its caches that the budget must cover
/// all the same: the inode table, which grows with what the kernel holds
/// (about 250 bytes per chapter it was given) and cannot be evicted. The
/// decoded texts give way to it, so that `--cache-size` bounds the whole.
pub(crate) type Charge = std::sync::Arc<AtomicUsize>;

/// The cache budget of a mount, split by what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    pub texts: usize,
    pub outlines: usize,
    pub pages: usize,
    pub listings: usize,
    /// Book indexes (chapter lists with their lookup maps): at 2,000 books
    /// they were 120 MiB outside any bound.
    pub indexes: usize,
    /// The rendered index files (`novel_books.*`, `novel_chapters.*`).
    pub index_files: usize,
    /// The names answered missing that the kernel may keep for long
    /// (`freshness::Negatives`).
    pub negatives: usize,
}

/// The least the decoded texts keep, however big the inode table grows.
pub(crate) const MIN_TEXTS_BUDGET: usize = 1 << 20;

impl Budget {
    /// 1/16 each (at least 1 MiB) for outlines, rendered pages, listings
    /// and book indexes, 1/32 for the index files, 1/64 for names answered
    /// missing, the rest (at least 1 MiB) for decoded chapters: a
    /// text is what costs a decode to get back. (An evicted book index
    /// costs one scan of its directory; whoever walks a library walks it
    /// book by book.)
    pub(crate) fn split(total: usize) -> Budget {
        let sixteenth = (total / 16).max(1 << 20);
        Budget {
            texts: total
                .saturating_sub(4 * sixteenth + sixteenth / 2 + sixteenth / 4)
                .max(1 << 20),
            outlines: sixteenth,
            pages: sixteenth,
            listings: sixteenth,
            indexes: sixteenth,
            index_files: sixteenth / 2,
            negatives: sixteenth / 4,
        }
    }
}

/// A byte-bounded map whose own tables count in its budget: with entries
/// of a hundred bytes (outlines, small texts) the hash table and the
/// ordering tree cost as much again as the values, and a budget that
/// counted only the values held twice its size.
pub(crate) struct Lru<K, V> {
    /// hashbrown's map for its `allocation_size` (std's is the same table),
    /// with its default hasher (foldhash): SipHash showed in the profile
    /// of a `grep -r`, every request looks up several caches.
    entries: hashbrown::HashMap<K, (V, usize, u64)>,
    /// Last-use tick → key, oldest first: eviction and touch are O(log n).
    order: BTreeMap<u64, K>,
    budget: usize,
    /// The values' weights (the tables come on top, see `tables_bytes`).
    used: usize,
    clock: u64,
}

/// What an ordering tree of (`u64`, `K`) takes per entry: leaves of 11
/// slots, filled to 5 or 6 when ticks arrive in order (a full leaf splits
/// in half and only the right half grows) and at least 5 when the oldest
/// are taken, plus the inner nodes above them (one per 6 leaves).
fn order_entry_bytes<K>() -> usize {
    let leaf = 11 * (8 + std::mem::size_of::<K>()) + 16;
    let inner = leaf + 12 * 8;
    (leaf + inner / 6) / 5
}

impl<K: Hash + Eq + Clone, V: Clone> Lru<K, V> {
    pub(crate) fn new(budget: usize) -> Self {
        Lru {
            entries: hashbrown::HashMap::default(),
            order: BTreeMap::new(),
            budget,
            used: 0,
            clock: 0,
        }
    }

    pub(crate) fn get<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (stored, (value, _, tick)) = self.entries.get_key_value(key)?;
        let (stored, value, old_tick) = (stored.clone(), value.clone(), *tick);
        self.clock += 1;
        self.order.remove(&old_tick);
        self.order.insert(self.clock, stored);
        if let Some((_, _, tick)) = self.entries.get_mut(key) {
            *tick = self.clock;
        }
        Some(value)
    }

    /// Whether `key` is held (its place in the order unchanged).
    pub(crate) fn contains<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.contains_key(key)
    }

    /// Inserts `value` weighing `bytes`. An entry larger than the whole
    /// budget is kept alone: a 100,000-line chapter read page by page with
    /// a small cache must not be decoded again for every page.
    pub(crate) fn insert(&mut self, key: K, value: V, bytes: usize) {
        self.remove(&key);
        self.make_room(bytes);
        self.rebuild_if_full();
        self.clock += 1;
        self.used += bytes;
        self.order.insert(self.clock, key.clone());
        self.entries.insert(key, (value, bytes, self.clock));
        // A table that grew for this entry counts from now on: older
        // entries make room for it.
        while self.used + self.tables_bytes(self.entries.len()) > self.budget
            && self.entries.len() > 1
        {
            self.evict_oldest();
        }
    }

    /// Changes the budget (what is over it goes at the next insert or
    /// `make_room`).
    pub(crate) fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
    }

    /// Evicts the least recently used entries until `bytes` more fit, so
    /// that a value about to be built does not come on top of a full cache.
    pub(crate) fn make_room(&mut self, bytes: usize) {
        while self.used + bytes + self.tables_bytes(self.entries.len() + 1) > self.budget
            && !self.entries.is_empty()
        {
            // A table grown for more entries (or a bigger budget) goes
            // down to their number first.
            let len = self.entries.len() + 1;
            if len < self.entries.capacity() / 4 {
                self.entries.shrink_to(2 * len);
                continue;
            }
            self.evict_oldest();
        }
        if self.entries.is_empty() {
            self.entries.shrink_to_fit();
        }
    }

    /// Builds the table anew when it has no room left for one more entry.
    /// An LRU removes about as many entries as it inserts, and each removal
    /// may leave a tombstone that takes a slot until the next rehash;
    /// hashbrown, out of room, doubles a table more than half of whose
    /// slots are live, tombstones or not, and the doubled table then took
    /// the entries' place in the budget (a 1 MiB LRU of small entries held
    /// 1,898 to 3,374 entries in 4 runs of 300, by the hasher's seed,
    /// instead of 4,019). Built anew for its live entries and an eighth
    /// more, it keeps the size they need, and the next rebuild is an eighth
    /// of its entries' insertions away.
    fn rebuild_if_full(&mut self) {
        let len = self.entries.len();
        if len < self.entries.capacity() {
            return;
        }
        let mut fresh = hashbrown::HashMap::with_capacity_and_hasher(
            len + len / 8 + 1,
            self.entries.hasher().clone(),
        );
        fresh.extend(self.entries.drain());
        self.entries = fresh;
    }

    fn evict_oldest(&mut self) {
        if let Some((_, oldest)) = self.order.pop_first()
            && let Some((_, b, _)) = self.entries.remove(&oldest)
        {
            self.used -= b;
            EVICTED_BYTES.fetch_add(b, Ordering::Relaxed);
        }
    }

    /// What the hash table (as it is now) and the ordering tree take with
    /// `len` entries.
    fn tables_bytes(&self, len: usize) -> usize {
        self.entries.allocation_size() + len * order_entry_bytes::<K>()
    }

    /// The values' weights and the tables holding them.
    #[cfg(test)]
    pub(crate) fn total_bytes(&self) -> usize {
        self.used + self.tables_bytes(self.entries.len())
    }

    /// Drops every entry, and the tables that held them.
    pub(crate) fn clear(&mut self) {
        *self = Lru::new(self.budget);
    }

    pub(crate) fn remove(&mut self, key: &K) {
        if let Some((_, bytes, tick)) = self.entries.remove(key) {
            self.used -= bytes;
            self.order.remove(&tick);
        }
    }

    #[cfg(test)]
    pub(crate) fn used_bytes(&self) -> usize {
        self.used
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
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
        assert_eq!(b.indexes, 16 << 20);
        assert_eq!(b.index_files, 8 << 20);
        assert_eq!(b.negatives, 4 << 20);
        assert_eq!(b.texts, 180 << 20);
        let tiny = Budget::split(0);
        assert_eq!((tiny.texts, tiny.outlines), (1 << 20, 1 << 20));
    }

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
            let mut lru = Lru::new(1 << 20);
            for i in 0..(TRIM_AFTER_EVICTED_BYTES >> 18) + 8 {
                lru.insert(i, (), 1 << 18);
            }
            trim.evicted()
        });
        assert!(trimmed, "a trim once the caches evicted enough");
        assert!(!trim.evicted(), "not again within the interval");
    }

    #[test]
    fn mapped_buffers_count_whole_pages() {
        assert_eq!(allocated(100), 116);
        assert_eq!(allocated(40_000), 40_016);
        assert_eq!(allocated(MMAP_THRESHOLD), MMAP_THRESHOLD + 4096);
        assert_eq!(allocated(MMAP_THRESHOLD + 1), MMAP_THRESHOLD + 4096);
    }

    #[test]
    fn small_entries_hold_their_tables_within_the_budget() {
        // Keys and values of the outlines' size, weighing what their
        // values take: the tables come on top and must fit too.
        let budget = 1 << 20;
        let mut lru: Lru<(std::sync::Arc<str>, u64), std::sync::Arc<[u8; 40]>> = Lru::new(budget);
        let name: std::sync::Arc<str> = "book/0001.txt".into();
        for i in 0..100_000u64 {
            lru.insert((name.clone(), i), std::sync::Arc::new([0; 40]), 56 + 16);
            assert!(
                lru.total_bytes() <= budget,
                "{} > {budget} at {i}",
                lru.total_bytes()
            );
        }
        let tables = lru.total_bytes() - lru.used_bytes();
        assert!(
            tables >= lru.len() * 48,
            "the tables are counted: {tables} bytes for {} entries",
            lru.len()
        );
        // About 4,000 fit, whatever the hasher's seed (see `rebuild_if_full`).
        assert!(lru.len() > 4_000, "{} entries in 1 MiB", lru.len());
        assert!(lru.get(&(name.clone(), 99_999)).is_some());
    }

    #[test]
    fn a_table_grown_for_a_bigger_budget_shrinks_with_it() {
        let mut lru = Lru::new(8 << 20);
        for i in 0..100_000u64 {
            lru.insert(i, i, 16);
        }
        let grown = lru.entries.allocation_size();
        lru.set_budget(256 << 10);
        lru.insert(u64::MAX, 0, 16);
        assert!(lru.total_bytes() <= 256 << 10);
        assert!(lru.entries.allocation_size() < grown / 8);
        assert!(lru.len() > 1_000, "{} entries left", lru.len());
    }

    #[test]
    fn evicts_least_recently_used_within_budget() {
        let mut lru = Lru::new(10_000);
        lru.insert("a", 1, 4_000);
        lru.insert("b", 2, 4_000);
        assert_eq!(lru.get(&"a"), Some(1));
        lru.insert("c", 3, 4_000);
        assert_eq!(lru.get(&"b"), None, "b was least recently used");
        assert_eq!(lru.get(&"a"), Some(1));
        assert_eq!(lru.used_bytes(), 8_000);
        lru.insert("huge", 9, 11_000);
        assert_eq!(lru.get(&"huge"), Some(9), "kept alone");
        assert_eq!((lru.len(), lru.used_bytes()), (1, 11_000));
        lru.insert("d", 4, 4_000);
        assert_eq!(lru.get(&"huge"), None, "and the first to go");
        assert_eq!(lru.len(), 1);
        lru.insert("e", 5, 4_000);
        lru.make_room(5_000);
        assert_eq!(
            (lru.get(&"d"), lru.get(&"e")),
            (None, Some(5)),
            "room for 5,000 more: the older goes"
        );
    }
}
