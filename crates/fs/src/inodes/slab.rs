//! The slab: values under increasing ids that are never reused, the
//! store of the table's entries and page blocks.

/// Values under increasing ids that are never reused, in chunks: no hash
/// table and no spare capacity per value, and a chunk whose values all
/// went is freed (each is its own mapping: the memory goes back at once).
pub(super) struct Slab<T> {
    chunks: Vec<Option<Chunk<T>>>,
    next: u64,
    live_chunks: usize,
}

struct Chunk<T> {
    slots: Box<[Option<T>]>,
    used: u32,
}

const CHUNK: u64 = 1024;

impl<T> Slab<T> {
    pub(super) fn new(first: u64) -> Slab<T> {
        Slab {
            chunks: Vec::new(),
            next: first,
            live_chunks: 0,
        }
    }

    pub(super) fn push(&mut self, value: T) -> u64 {
        let id = self.next;
        self.next += 1;
        self.put(id, value);
        id
    }

    /// Puts `value` under `id`, below the next id (a journal's snapshot
    /// restoring a table; `set_next` first).
    pub(super) fn place(&mut self, id: u64, value: T) {
        debug_assert!(id < self.next);
        self.put(id, value);
    }

    /// Puts `value` under `id`, making its chunk when it has none.
    fn put(&mut self, id: u64, value: T) {
        let c = (id / CHUNK) as usize;
        if self.chunks.len() <= c {
            self.chunks.resize_with(c + 1, || None);
        }
        if self.chunks[c].is_none() {
            self.live_chunks += 1;
        }
        let chunk = self.chunks[c].get_or_insert_with(|| Chunk {
            slots: (0..CHUNK).map(|_| None).collect(),
            used: 0,
        });
        let slot = &mut chunk.slots[(id % CHUNK) as usize];
        if slot.is_none() {
            chunk.used += 1;
        }
        *slot = Some(value);
    }

    /// Ids from now on start at `next` (never lower than they are).
    pub(super) fn set_next(&mut self, next: u64) {
        self.next = self.next.max(next);
    }

    pub(super) fn get(&self, id: u64) -> Option<&T> {
        let chunk = self.chunks.get((id / CHUNK) as usize)?.as_ref()?;
        chunk.slots[(id % CHUNK) as usize].as_ref()
    }

    pub(super) fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        let chunk = self.chunks.get_mut((id / CHUNK) as usize)?.as_mut()?;
        chunk.slots[(id % CHUNK) as usize].as_mut()
    }

    pub(super) fn remove(&mut self, id: u64) -> Option<T> {
        let c = (id / CHUNK) as usize;
        let chunk = self.chunks.get_mut(c)?.as_mut()?;
        let value = chunk.slots[(id % CHUNK) as usize].take()?;
        chunk.used -= 1;
        // A chunk that will get no new ids and holds nothing goes.
        if chunk.used == 0 && (c as u64 + 1) * CHUNK <= self.next {
            self.chunks[c] = None;
            self.live_chunks -= 1;
        }
        Some(value)
    }

    /// The id the next value gets.
    pub(super) fn next_id(&self) -> u64 {
        self.next
    }

    /// How many chunks are allocated (for tests of what is freed).
    #[cfg(test)]
    pub(super) fn chunks_held(&self) -> usize {
        self.chunks.iter().flatten().count()
    }

    /// What the chunks take.
    pub(super) fn bytes(&self) -> usize {
        self.live_chunks * (CHUNK as usize) * std::mem::size_of::<Option<T>>()
            + self.chunks.capacity() * std::mem::size_of::<Option<Chunk<T>>>()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, &T)> {
        self.chunks
            .iter()
            .enumerate()
            .filter_map(|(c, chunk)| Some((c, chunk.as_ref()?)))
            .flat_map(|(c, chunk)| {
                chunk
                    .slots
                    .iter()
                    .enumerate()
                    .filter_map(move |(i, v)| Some((c as u64 * CHUNK + i as u64, v.as_ref()?)))
            })
    }
}
