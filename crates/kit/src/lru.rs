//! The byte-bounded LRU map every cache is: it counts its own hash table
//! and ordering tree, not only its values, and only bounds memory.

use std::collections::BTreeMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A byte-bounded map whose own tables count in its budget: with entries
/// of a hundred bytes (outlines, small texts) the hash table and the
/// ordering tree cost as much again as the values, and a budget that
/// counted only the values held twice its size.
pub struct Lru<K, V> {
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
    /// Where the bytes evicted are added up, when somewhere is: what
    /// tells the allocator's trimming that memory was given back.
    evictions: Option<&'static AtomicUsize>,
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
    pub fn new(budget: usize) -> Self {
        Lru {
            entries: hashbrown::HashMap::default(),
            order: BTreeMap::new(),
            budget,
            used: 0,
            clock: 0,
            evictions: None,
        }
    }

    /// The same, adding the bytes it evicts to `counter`.
    pub fn counting_evictions_in(mut self, counter: &'static AtomicUsize) -> Self {
        self.evictions = Some(counter);
        self
    }

    pub fn get<Q>(&mut self, key: &Q) -> Option<V>
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

    /// The value of `key`, its place in the order unchanged.
    pub fn peek<Q>(&self, key: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.get(key).map(|(value, _, _)| value)
    }

    /// Whether `key` is held (its place in the order unchanged).
    pub fn contains<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.contains_key(key)
    }

    /// Inserts `value` weighing `bytes`. An entry larger than the whole
    /// budget is kept alone: a 100,000-line chapter read page by page with
    /// a small cache must not be decoded again for every page.
    pub fn insert(&mut self, key: K, value: V, bytes: usize) {
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
    pub fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
    }

    /// Evicts the least recently used entries until `bytes` more fit, so
    /// that a value about to be built does not come on top of a full cache.
    pub fn make_room(&mut self, bytes: usize) {
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
            if let Some(counter) = self.evictions {
                counter.fetch_add(b, Ordering::Relaxed);
            }
        }
    }

    /// What the hash table (as it is now) and the ordering tree take with
    /// `len` entries.
    fn tables_bytes(&self, len: usize) -> usize {
        self.entries.allocation_size() + len * order_entry_bytes::<K>()
    }

    /// The values' weights and the tables holding them.
    pub fn total_bytes(&self) -> usize {
        self.used + self.tables_bytes(self.entries.len())
    }

    /// Drops every entry, and the tables that held them.
    pub fn clear(&mut self) {
        let evictions = self.evictions;
        *self = Lru::new(self.budget);
        self.evictions = evictions;
    }

    pub fn remove(&mut self, key: &K) {
        if let Some((_, bytes, tick)) = self.entries.remove(key) {
            self.used -= bytes;
            self.order.remove(&tick);
        }
    }

    /// The values' weights.
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
