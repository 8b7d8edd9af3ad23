//! The byte-bounded LRU map every cache is: it counts its own tables,
//! not only its values, and only bounds memory.

use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicUsize, Ordering};

use hashbrown::{DefaultHashBuilder, HashTable};

/// No slot: the end of the order, or of the free list.
const NIL: u32 = u32::MAX;

/// A byte-bounded map whose own tables count in its budget: with entries
/// of a hundred bytes (outlines, small texts) the tables cost as much
/// again as the values, and a budget that counted only the values held
/// twice its size.
///
/// Every operation is O(1) and hashes its key once: the entries live in
/// slots linked newest to oldest, the hash table holds slot numbers, and
/// each slot keeps its key's hash, so a touch moves two links and an
/// eviction finds its slot without hashing the key again. A `grep -r`
/// looks a page up in several caches and evicts one entry for each it
/// inserts, so a map plus an ordering tree (a second hash and a tree
/// removal and insertion per touch) would be a large share of its CPU.
pub struct Lru<K, V> {
    /// Slot numbers, by their keys' hashes (foldhash, hashbrown's default:
    /// the keys are the daemon's own, and SipHash shows in the profile of
    /// a `grep -r`).
    table: HashTable<u32>,
    slots: Vec<Slot<K, V>>,
    hasher: DefaultHashBuilder,
    /// The most and the least recently used slot.
    newest: u32,
    oldest: u32,
    /// Slots freed, linked through `older`.
    free: u32,
    len: usize,
    budget: usize,
    /// The values' weights (the tables come on top, see `tables_bytes`).
    used: usize,
    /// Where the bytes evicted are added up, when somewhere is: what
    /// tells the allocator's trimming that memory was given back.
    evictions: Option<&'static AtomicUsize>,
}

struct Slot<K, V> {
    /// `None` while the slot is free.
    entry: Option<(K, V)>,
    bytes: usize,
    hash: u64,
    newer: u32,
    older: u32,
}

impl<K: Hash + Eq + Clone, V: Clone> Lru<K, V> {
    pub fn new(budget: usize) -> Self {
        Lru {
            table: HashTable::new(),
            slots: Vec::new(),
            hasher: DefaultHashBuilder::default(),
            newest: NIL,
            oldest: NIL,
            free: NIL,
            len: 0,
            budget,
            used: 0,
            evictions: None,
        }
    }

    /// The same, adding the bytes it evicts to `counter`.
    pub fn counting_evictions_in(mut self, counter: &'static AtomicUsize) -> Self {
        self.evictions = Some(counter);
        self
    }

    /// The slot holding `key`.
    fn find<Q>(&self, key: &Q) -> Option<u32>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        let slots = &self.slots;
        self.table
            .find(hash, |&i| {
                slots[i as usize]
                    .entry
                    .as_ref()
                    .is_some_and(|(k, _)| k.borrow() == key)
            })
            .copied()
    }

    pub fn get<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.find(key)?;
        self.unlink(i);
        self.link_newest(i);
        self.slots[i as usize]
            .entry
            .as_ref()
            .map(|(_, v)| v.clone())
    }

    /// The value of `key`, its place in the order unchanged.
    pub fn peek<Q>(&self, key: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.find(key)?;
        self.slots[i as usize].entry.as_ref().map(|(_, v)| v)
    }

    /// Whether `key` is held (its place in the order unchanged).
    pub fn contains<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.find(key).is_some()
    }

    /// Inserts `value` weighing `bytes`. An entry larger than the whole
    /// budget is kept alone: a 100,000-line chapter read page by page with
    /// a small cache must not be decoded again for every page.
    pub fn insert(&mut self, key: K, value: V, bytes: usize) {
        let hash = self.hasher.hash_one(&key);
        self.remove_hashed(hash, &key);
        self.make_room(bytes);
        self.rebuild_if_full();
        let i = self.take_slot(Slot {
            entry: Some((key, value)),
            bytes,
            hash,
            newer: NIL,
            older: NIL,
        });
        self.link_newest(i);
        let slots = &self.slots;
        self.table
            .insert_unique(hash, i, |&j| slots[j as usize].hash);
        self.len += 1;
        self.used += bytes;
        // Tables that grew for this entry count from now on: older
        // entries make room for them.
        while self.used + self.tables_bytes(0) > self.budget && self.len > 1 {
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
        while self.used + bytes + self.tables_bytes(1) > self.budget && self.len > 0 {
            // Tables grown for more entries (or a bigger budget) go down
            // to their number first.
            let len = self.len + 1;
            if len < self.table.capacity() / 4 || len < self.slots.capacity() / 4 {
                self.compact(2 * len);
                continue;
            }
            self.evict_oldest();
        }
        if self.len == 0 {
            self.clear_tables();
        }
    }

    /// Builds the table anew when it has no room left for one more entry.
    /// An LRU removes about as many entries as it inserts, and each removal
    /// may leave a tombstone that takes a slot until the next rehash;
    /// hashbrown, out of room, doubles a table more than half of whose
    /// slots are live, tombstones or not, and the doubled table then takes
    /// the entries' place in the budget (an LRU of small entries would hold
    /// a half to four fifths of the entries it has room for, by the
    /// hasher's seed). Built anew for its live entries and an eighth
    /// more, it keeps the size they need, and the next rebuild is an eighth
    /// of its entries' insertions away. The slots grow by the same eighth.
    fn rebuild_if_full(&mut self) {
        let len = self.len;
        if len >= self.table.capacity() {
            let mut fresh = HashTable::with_capacity(len + len / 8 + 1);
            for (i, s) in self.slots.iter().enumerate() {
                if s.entry.is_some() {
                    fresh.insert_unique(s.hash, i as u32, |_| unreachable!("room was made"));
                }
            }
            self.table = fresh;
        }
        if self.free == NIL && self.slots.len() == self.slots.capacity() {
            self.slots.reserve_exact(len / 8 + 1);
        }
    }

    /// Moves the entries, oldest first, into slots and a table made for
    /// `capacity` entries.
    fn compact(&mut self, capacity: usize) {
        let mut order = Vec::with_capacity(self.len);
        let mut i = self.oldest;
        while i != NIL {
            order.push(i);
            i = self.slots[i as usize].newer;
        }
        let mut old = std::mem::take(&mut self.slots);
        self.clear_tables();
        self.slots.reserve_exact(capacity.max(order.len()));
        self.table = HashTable::with_capacity(capacity.max(order.len()));
        for i in order {
            let slot = std::mem::replace(&mut old[i as usize], Slot::free());
            let hash = slot.hash;
            let j = self.take_slot(slot);
            self.link_newest(j);
            let slots = &self.slots;
            self.table
                .insert_unique(hash, j, |&k| slots[k as usize].hash);
        }
    }

    fn evict_oldest(&mut self) {
        let i = self.oldest;
        if i == NIL {
            return;
        }
        let b = self.release(i);
        if let Some(counter) = self.evictions {
            counter.fetch_add(b, Ordering::Relaxed);
        }
    }

    /// Takes slot `i` out of the table and the order; frees it and
    /// returns its entry's weight.
    fn release(&mut self, i: u32) -> usize {
        let bytes = self.slots[i as usize].bytes;
        drop(self.vacate(i));
        bytes
    }

    /// Frees slot `i`, handing back its entry.
    fn vacate(&mut self, i: u32) -> Option<(K, V)> {
        let hash = self.slots[i as usize].hash;
        if let Ok(found) = self.table.find_entry(hash, |&j| j == i) {
            found.remove();
        }
        self.unlink(i);
        let slot = &mut self.slots[i as usize];
        let bytes = slot.bytes;
        let entry = slot.entry.take();
        slot.older = self.free;
        self.free = i;
        self.len -= 1;
        self.used -= bytes;
        entry
    }

    fn remove_hashed(&mut self, hash: u64, key: &K) {
        let slots = &self.slots;
        let found = self
            .table
            .find(hash, |&i| {
                slots[i as usize]
                    .entry
                    .as_ref()
                    .is_some_and(|(k, _)| k == key)
            })
            .copied();
        if let Some(i) = found {
            self.release(i);
        }
    }

    /// A free slot holding `slot`.
    fn take_slot(&mut self, slot: Slot<K, V>) -> u32 {
        if self.free != NIL {
            let i = self.free;
            self.free = self.slots[i as usize].older;
            self.slots[i as usize] = slot;
            return i;
        }
        self.slots.push(slot);
        (self.slots.len() - 1) as u32
    }

    fn unlink(&mut self, i: u32) {
        let (newer, older) = {
            let s = &self.slots[i as usize];
            (s.newer, s.older)
        };
        match newer {
            NIL => self.newest = older,
            n => self.slots[n as usize].older = older,
        }
        match older {
            NIL => self.oldest = newer,
            o => self.slots[o as usize].newer = newer,
        }
    }

    fn link_newest(&mut self, i: u32) {
        let old_newest = self.newest;
        {
            let s = &mut self.slots[i as usize];
            s.newer = NIL;
            s.older = old_newest;
        }
        match old_newest {
            NIL => self.oldest = i,
            n => self.slots[n as usize].newer = i,
        }
        self.newest = i;
    }

    fn clear_tables(&mut self) {
        self.table = HashTable::new();
        self.slots = Vec::new();
        self.newest = NIL;
        self.oldest = NIL;
        self.free = NIL;
    }

    /// What the hash table and the slots take as they are now, with room
    /// for `more` entries beyond their slots' capacity.
    fn tables_bytes(&self, more: usize) -> usize {
        let free_slots = self.slots.capacity() - self.len;
        let slots = self.slots.capacity() + more.saturating_sub(free_slots);
        self.table.allocation_size() + slots * std::mem::size_of::<Slot<K, V>>()
    }

    /// The values' weights and the tables holding them.
    pub fn total_bytes(&self) -> usize {
        self.used + self.tables_bytes(0)
    }

    /// Drops every entry, and the tables that held them.
    pub fn clear(&mut self) {
        let evictions = self.evictions;
        *self = Lru::new(self.budget);
        self.evictions = evictions;
    }

    /// Removes `key`, handing back its value.
    pub fn take<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.find(key)?;
        self.vacate(i).map(|(_, v)| v)
    }

    pub fn remove(&mut self, key: &K) {
        let hash = self.hasher.hash_one(key);
        self.remove_hashed(hash, key);
    }

    /// The values' weights.
    pub fn used_bytes(&self) -> usize {
        self.used
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<K, V> Slot<K, V> {
    fn free() -> Self {
        Slot {
            entry: None,
            bytes: 0,
            hash: 0,
            newer: NIL,
            older: NIL,
        }
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
        let grown = lru.tables_bytes(0);
        lru.set_budget(256 << 10);
        lru.insert(u64::MAX, 0, 16);
        assert!(lru.total_bytes() <= 256 << 10);
        assert!(lru.tables_bytes(0) < grown / 8);
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
    #[test]
    fn holds_the_most_recently_used_entries_whatever_the_operations() {
        // A model: keys by recency, newest last. Whatever the budget and
        // the tables' sizes decide, what stays is a run of the newest.
        let mut lru: Lru<u32, u64> = Lru::new(40_000);
        let mut model: Vec<(u32, u64)> = Vec::new();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for step in 0..200_000u64 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let key = (seed % 500) as u32;
            match (seed >> 32) % 10 {
                0..=4 => {
                    let got = lru.get(&key);
                    let at = model.iter().position(|(k, _)| *k == key);
                    assert_eq!(got, at.map(|i| model[i].1), "get {key} at {step}");
                    if let Some(i) = at {
                        let e = model.remove(i);
                        model.push(e);
                    }
                }
                5..=8 => {
                    let bytes = 8 + (seed >> 40) as usize % 900;
                    lru.insert(key, step, bytes);
                    model.retain(|(k, _)| *k != key);
                    model.push((key, step));
                }
                _ if seed & 1 == 0 => {
                    lru.remove(&key);
                    model.retain(|(k, _)| *k != key);
                }
                _ => {
                    let had = model.iter().find(|(k, _)| *k == key).map(|e| e.1);
                    assert_eq!(lru.take(&key), had, "take {key} at {step}");
                    model.retain(|(k, _)| *k != key);
                }
            }
            model.drain(..model.len() - lru.len());
            assert!(lru.len() == 1 || lru.total_bytes() <= 40_000, "at {step}");
            if step % 1_000 == 0 {
                for (k, v) in &model {
                    assert_eq!(lru.peek(k), Some(v), "{k} held at {step}");
                }
            }
        }
    }
}
