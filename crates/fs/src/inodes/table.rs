//! The table: which number the kernel was given for which node, the
//! lookups it holds on each and the attributes last reported, behind the
//! lock every request takes (`InodeTable`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use super::blocks::{PageBlock, UNKNOWN_SIZE, block_key};
use super::hash::{FxMap, fx_hash};
use super::index::Index;
use super::numbering::{MAX_BLOCK, page_ino, page_of_slot, page_slot, split_page_ino};
use super::slab::Slab;
use crate::cache::Charge;
use crate::lock;
use crate::node::{Attr, ChapterRef, Node, ROOT_INO, Result};

/// The size and mtime last reported for an inode, kept for a version that
/// is gone from disk but may still be open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LastAttr {
    pub size: u64,
    pub mtime: SystemTime,
}

/// What a node holds on the heap on its own (the names it owns; a
/// chapter's `ChapterId` is shared with its pages, and counted here).
fn node_heap_bytes(node: &Node) -> usize {
    let chunk = |n: usize| (n + 8).next_multiple_of(16).max(32);
    match node {
        Node::Chapter { chapter } => chunk(48) + chunk(chapter.file.len()),
        Node::BookAlias { name, .. }
        | Node::ChapterAlias { name, .. }
        | Node::Ambiguous { name, .. }
        | Node::AmbiguousError { name, .. } => chunk(name.len()),
        Node::Book { book } => chunk(16 + book.len()),
        Node::ChaptersIndex { book, .. } => chunk(16 + book.len()),
        _ => 0,
    }
}

struct Entry {
    node: Node,
    /// Lookups the kernel holds (entries returned by lookup and readdirplus).
    lookups: u64,
}

struct Table {
    /// By inode number.
    entries: Slab<Entry>,
    by_node: Index,
    /// Only for files (what `last_attr` serves); directories and links
    /// never need theirs.
    last_attrs: FxMap<u64, LastAttr>,
    blocks: Slab<PageBlock>,
    block_of: Index,
    /// Heap bytes of the nodes with an entry (`node_heap_bytes`) and of
    /// the page lists of blocks beyond their first two pages.
    owned_heap: usize,
}

pub(crate) struct InodeTable {
    table: Mutex<Table>,
    /// What the table takes, as of its last change (counted in the cache
    /// budget, see `cache::Charge`).
    bytes: Charge,
}

impl Default for InodeTable {
    fn default() -> Self {
        let mut table = Table {
            entries: Slab::new(ROOT_INO),
            by_node: Index::new(),
            last_attrs: FxMap::default(),
            blocks: Slab::new(0),
            block_of: Index::new(),
            owned_heap: 0,
        };
        table.own_entry(Node::Root);
        table.entries.get_mut(ROOT_INO).expect("root").lookups = 1;
        let bytes = Charge::new(table.bytes().into());
        InodeTable {
            table: Mutex::new(table),
            bytes,
        }
    }
}

impl Table {
    /// The block of a version of a chapter's pages, if it has one.
    fn find_block(&self, chapter: &ChapterRef, version: u64) -> Option<u64> {
        self.find_block_at(block_key(chapter, version), chapter, version)
    }

    /// `find_block` with the block's key already computed (`block_key`).
    fn find_block_at(&self, key: u64, chapter: &ChapterRef, version: u64) -> Option<u64> {
        let blocks = &self.blocks;
        self.block_of
            .ids
            .find(key, |&b| {
                blocks
                    .get(b)
                    .is_some_and(|pb| pb.version == version && *pb.chapter == **chapter)
            })
            .copied()
    }

    /// The number of a node with an entry of its own, if it has one.
    fn find_own(&self, node: &Node) -> Option<u64> {
        self.find_own_at(fx_hash(node), node)
    }

    /// `find_own` with the node's hash already computed (`fx_hash`).
    fn find_own_at(&self, hash: u64, node: &Node) -> Option<u64> {
        let entries = &self.entries;
        self.by_node
            .ids
            .find(hash, |&ino| {
                entries.get(ino).is_some_and(|e| e.node == *node)
            })
            .copied()
    }

    /// Whether the kernel holds `ino` (looked up and not forgotten).
    fn held(&self, ino: u64) -> bool {
        match split_page_ino(ino) {
            Some((block, slot)) => self
                .blocks
                .get(u64::from(block))
                .is_some_and(|b| b.lookups > 0 && b.pages().any(|(s, _)| *s == slot)),
            None => self.entries.get(ino).is_some_and(|e| e.lookups > 0),
        }
    }

    fn bytes(&self) -> usize {
        self.entries.bytes()
            + self.blocks.bytes()
            + self.by_node.bytes()
            + self.block_of.bytes()
            + self.last_attrs.capacity() * 40
            + self.owned_heap
    }

    /// The number of a node with an entry of its own, created if new.
    fn own_entry(&mut self, node: Node) -> u64 {
        let hash = fx_hash(&node);
        if let Some(ino) = self.find_own_at(hash, &node) {
            return ino;
        }
        let Table {
            entries,
            by_node,
            owned_heap,
            ..
        } = self;
        *owned_heap += node_heap_bytes(&node);
        let ino = entries.push(Entry { node, lookups: 0 });
        by_node.ids.insert_unique(hash, ino, |&ino| {
            fx_hash(&entries.get(ino).expect("indexed").node)
        });
        ino
    }

    /// The number of a page with a derived number (`None`: it needs an
    /// entry of its own, or the blocks ran out).
    fn intern_page(
        &mut self,
        chapter: &ChapterRef,
        version: u64,
        slot: u32,
        counted: bool,
        attr: Option<&Attr>,
    ) -> Option<u64> {
        let hash = block_key(chapter, version);
        let found = self.find_block_at(hash, chapter, version);
        let Table {
            blocks,
            block_of,
            owned_heap,
            ..
        } = self;
        let block = match found {
            Some(b) => b,
            None => {
                if blocks.next_id() > MAX_BLOCK {
                    return None;
                }
                let b = blocks.push(PageBlock {
                    chapter: chapter.clone(),
                    version,
                    mtime_nanos: 0,
                    lookups: 0,
                    first: [(0, 0); 2],
                    first_len: 0,
                    more: Box::default(),
                });
                block_of.ids.insert_unique(hash, b, |&b| {
                    let pb = blocks.get(b).expect("indexed");
                    block_key(&pb.chapter, pb.version)
                });
                b
            }
        };
        let entry = blocks.get_mut(block).expect("interned");
        entry.lookups = entry.lookups.saturating_add(u32::from(counted));
        let size = attr.map_or(UNKNOWN_SIZE, |a| {
            u32::try_from(a.size).unwrap_or(UNKNOWN_SIZE)
        });
        if let Some(a) = attr {
            entry.set_mtime(a.mtime);
        }
        match entry.page_mut(slot) {
            Some(known) => {
                if attr.is_some() {
                    *known = size;
                }
            }
            None => {
                if usize::from(entry.first_len) == entry.first.len() {
                    *owned_heap += 8;
                }
                entry.add_page(slot, size)
            }
        }
        Some(page_ino(block, slot))
    }

    fn page_node(&self, ino: u64) -> Option<Node> {
        let (block, slot) = split_page_ino(ino)?;
        let b = self.blocks.get(u64::from(block))?;
        b.pages().any(|(s, _)| *s == slot).then(|| Node::Page {
            chapter: b.chapter.clone(),
            page: page_of_slot(slot),
            version: b.version,
        })
    }

    fn forget_page(&mut self, block: u64, n: u64) -> bool {
        let Some(b) = self.blocks.get_mut(block) else {
            return false;
        };
        if b.lookups == u32::MAX {
            return false;
        }
        b.lookups = b
            .lookups
            .saturating_sub(u32::try_from(n).unwrap_or(u32::MAX));
        if b.lookups > 0 {
            return false;
        }
        let hash = {
            let b = self.blocks.get(block).expect("present");
            block_key(&b.chapter, b.version)
        };
        if let Ok(found) = self.block_of.ids.find_entry(hash, |&id| id == block) {
            found.remove();
        }
        if let Some(b) = self.blocks.remove(block) {
            self.owned_heap -= 8 * b.more.len();
        }
        let blocks = &self.blocks;
        self.block_of.shrink(|&b| {
            let pb = blocks.get(b).expect("indexed");
            block_key(&pb.chapter, pb.version)
        });
        true
    }

    fn forget_own(&mut self, ino: u64, n: u64) -> bool {
        let Some(entry) = self.entries.get_mut(ino) else {
            return false;
        };
        entry.lookups = entry.lookups.saturating_sub(n);
        if entry.lookups > 0 {
            return false;
        }
        let hash = fx_hash(&entry.node);
        if let Ok(found) = self.by_node.ids.find_entry(hash, |&id| id == ino) {
            found.remove();
        }
        if let Some(e) = self.entries.remove(ino) {
            self.owned_heap -= node_heap_bytes(&e.node);
        }
        self.last_attrs.remove(&ino);
        let entries = &self.entries;
        self.by_node
            .shrink(|&ino| fx_hash(&entries.get(ino).expect("indexed").node));
        true
    }
}

impl InodeTable {
    /// The inode of `node`, created if new; `counted` when the kernel
    /// will hold a lookup reference for it (lookup, readdirplus).
    pub(crate) fn intern(&self, node: Node, counted: bool, attr: Option<&Attr>) -> u64 {
        let mut table = lock(&self.table);
        if let Node::Page {
            chapter,
            page,
            version,
        } = &node
            && let Some(slot) = page_slot(page)
            && let Some(ino) = table.intern_page(chapter, *version, slot, counted, attr)
        {
            self.bytes.store(table.bytes(), Ordering::Relaxed);
            return ino;
        }
        let is_file = !node.is_directory()
            && !matches!(node, Node::BookAlias { .. } | Node::ChapterAlias { .. });
        let ino = table.own_entry(node);
        table.entries.get_mut(ino).expect("interned").lookups += u64::from(counted);
        if let Some(a) = attr
            && is_file
        {
            table.last_attrs.insert(
                ino,
                LastAttr {
                    size: a.size,
                    mtime: a.mtime,
                },
            );
        }
        self.bytes.store(table.bytes(), Ordering::Relaxed);
        ino
    }

    /// What the table takes, kept up to date (shared with the texts cache,
    /// which gives way to it).
    pub(crate) fn bytes(&self) -> Charge {
        self.bytes.clone()
    }

    pub(crate) fn node(&self, ino: u64) -> Result<Node> {
        let table = lock(&self.table);
        if split_page_ino(ino).is_some() {
            return table.page_node(ino).ok_or(libc::ENOENT);
        }
        table
            .entries
            .get(ino)
            .map(|e| e.node.clone())
            .ok_or(libc::ENOENT)
    }

    /// The path of `ino` for log lines (never fails).
    pub(crate) fn describe(&self, ino: u64) -> String {
        self.node(ino)
            .map_or_else(|_| format!("inode {ino}"), |n| n.path())
    }

    /// The kernel dropped `n` lookups of `ino`; true when that freed an
    /// entry (for a page: the last counted page of its block).
    pub(crate) fn forget(&self, ino: u64, n: u64) -> bool {
        if ino == ROOT_INO {
            return false;
        }
        let mut table = lock(&self.table);
        let freed = match split_page_ino(ino) {
            Some((block, _)) => table.forget_page(u64::from(block), n),
            None => table.forget_own(ino, n),
        };
        if freed {
            self.bytes.store(table.bytes(), Ordering::Relaxed);
        }
        freed
    }

    /// The number of a page the kernel holds now (given in a lookup or a
    /// READDIRPLUS entry, not yet forgotten): `None` when it holds none,
    /// also when it holds another version of that page.
    pub(crate) fn held_page(&self, node: &Node) -> Option<u64> {
        let Node::Page {
            chapter,
            page,
            version,
        } = node
        else {
            return None;
        };
        let table = lock(&self.table);
        let ino = match page_slot(page) {
            Some(slot) => page_ino(table.find_block(chapter, *version)?, slot),
            None => table.find_own(node)?,
        };
        table.held(ino).then_some(ino)
    }

    /// Whether the kernel holds `ino` (looked up and not forgotten).
    pub(crate) fn held(&self, ino: u64) -> bool {
        lock(&self.table).held(ino)
    }

    /// Entries held: one per node with a number of its own, one per block
    /// of pages.
    pub(crate) fn len(&self) -> usize {
        let table = lock(&self.table);
        table.by_node.ids.len() + table.block_of.ids.len()
    }

    /// The size and mtime last reported for `ino`.
    pub(crate) fn last_attr(&self, ino: u64) -> Result<LastAttr> {
        let table = lock(&self.table);
        if let Some((block, slot)) = split_page_ino(ino) {
            let b = table.blocks.get(u64::from(block)).ok_or(libc::ENOENT)?;
            return b
                .pages()
                .find(|(s, size)| *s == slot && *size != UNKNOWN_SIZE)
                .map(|&(_, size)| LastAttr {
                    size: u64::from(size),
                    mtime: b.mtime(),
                })
                .ok_or(libc::ENOENT);
        }
        table.last_attrs.get(&ino).copied().ok_or(libc::ENOENT)
    }

    /// Every node the kernel was given, by inode, as the table is now: a
    /// copy, so that what is done with it (asking the disk) runs without
    /// the lock every lookup needs. (Pages have no entries: their nodes are
    /// made here, from the blocks.)
    pub(crate) fn known(&self) -> HashMap<Node, u64> {
        let table = lock(&self.table);
        let mut known: HashMap<Node, u64> = table
            .entries
            .iter()
            .map(|(ino, e)| (e.node.clone(), ino))
            .collect();
        for (block, b) in table.blocks.iter() {
            for &(slot, _) in b.pages() {
                known.insert(
                    Node::Page {
                        chapter: b.chapter.clone(),
                        page: page_of_slot(slot),
                        version: b.version,
                    },
                    page_ino(block, slot),
                );
            }
        }
        known
    }

    /// Whether no one holds the table's lock (for tests of what runs
    /// without it).
    #[cfg(test)]
    pub(crate) fn is_free(&self) -> bool {
        self.table.try_lock().is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::PageName;
    use crate::node::{Kind, chapter_ref};
    use std::ffi::OsStr;
    use std::sync::Arc;
    use std::time::Duration;

    fn page(chapter: &ChapterRef, name: &str, version: u64) -> Node {
        Node::Page {
            chapter: chapter.clone(),
            page: PageName::parse(name.as_bytes()).unwrap(),
            version,
        }
    }

    fn file_attr(size: u64) -> Attr {
        Attr {
            ino: 0,
            kind: Kind::File,
            size,
            mtime: SystemTime::UNIX_EPOCH + Duration::from_secs(7),
            ttl: Duration::from_secs(1),
        }
    }

    #[test]
    fn page_numbers_round_trip_to_their_nodes() {
        let table = InodeTable::default();
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let one = chapter_ref(&book, OsStr::new("第1章.md"));
        let two = chapter_ref(&book, OsStr::new("第2章.md"));
        let names = [
            "offset-1.txt",
            "offset-1.json",
            "offset-401.txt",
            "offset-33554431.json",
            "offset-33554432.txt",
            "offset-5-limit-3.txt",
        ];
        let mut seen = std::collections::HashSet::new();
        for chapter in [&one, &two] {
            for version in [1, 2] {
                for name in names {
                    let node = page(chapter, name, version);
                    let ino = table.intern(node.clone(), true, Some(&file_attr(9)));
                    assert!(seen.insert(ino), "{name}: a number of its own");
                    assert_eq!(table.node(ino), Ok(node.clone()), "{name}");
                    assert_eq!(
                        table.intern(node.clone(), false, None),
                        ino,
                        "the same node, the same number"
                    );
                    assert_eq!(
                        table.last_attr(ino),
                        Ok(LastAttr {
                            size: 9,
                            mtime: file_attr(9).mtime
                        })
                    );
                }
            }
        }
        let derived = seen
            .iter()
            .filter(|&&i| split_page_ino(i).is_some())
            .count();
        assert!(seen.iter().all(|&i| i < 1 << 53), "safe as a double");
        assert_eq!(derived, 4 * 4, "the listed spellings that fit are derived");
        assert_eq!(table.len(), 1 + 4 + 4 * 2, "root, 4 blocks, 8 own entries");
        let known = table.known();
        assert_eq!(known.len(), 1 + seen.len());
        for (node, ino) in &known {
            assert_eq!(table.node(*ino).as_ref(), Ok(node));
        }
    }

    #[test]
    fn a_block_is_small_and_keeps_mtimes_before_the_epoch() {
        assert!(std::mem::size_of::<PageBlock>() <= 64);
        let table = InodeTable::default();
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let chapter = chapter_ref(&book, OsStr::new("第1章.md"));
        let old = SystemTime::UNIX_EPOCH - Duration::new(86_400, 5);
        let attr = Attr {
            mtime: old,
            ..file_attr(3)
        };
        let ino = table.intern(page(&chapter, "offset-1.txt", 1), true, Some(&attr));
        assert_eq!(table.last_attr(ino).map(|a| a.mtime), Ok(old));
    }

    #[test]
    fn a_block_goes_with_the_last_lookup_of_its_pages() {
        let table = InodeTable::default();
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let chapter = chapter_ref(&book, OsStr::new("第1章.md"));
        let text = table.intern(page(&chapter, "offset-1.txt", 3), true, None);
        let json = table.intern(page(&chapter, "offset-1.json", 3), true, None);
        table.intern(page(&chapter, "offset-1.json", 3), true, None);
        assert_eq!(table.len(), 2);
        assert_eq!(table.last_attr(text), Err(libc::ENOENT), "no size reported");
        assert!(!table.forget(text, 1));
        assert!(!table.forget(json, 1), "json still holds one lookup");
        assert!(table.node(json).is_ok());
        assert!(table.forget(json, 1));
        assert_eq!(table.len(), 1);
        assert_eq!(table.node(json), Err(libc::ENOENT));
        assert_eq!(table.node(text), Err(libc::ENOENT));
        let again = table.intern(page(&chapter, "offset-1.txt", 3), true, None);
        assert_ne!(again, text, "numbers are never reused");
    }

    #[test]
    fn forgetting_everything_frees_the_chunks_and_shrinks_the_index() {
        let table = InodeTable::default();
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let chapters: Vec<ChapterRef> = (0..5000)
            .map(|i| chapter_ref(&book, OsStr::new(&format!("第{i}章.md"))))
            .collect();
        let mut given = Vec::new();
        for c in &chapters {
            let dir = Node::Chapter { chapter: c.clone() };
            given.push(table.intern(dir, true, None));
            given.push(table.intern(page(c, "offset-1.txt", 1), true, None));
        }
        assert_eq!(table.len(), 1 + 2 * 5000);
        let full_bytes = table.bytes().load(Ordering::Relaxed);
        // A chapter entry, its shared name and a page block: no less than
        // their sizes, no more than twice (slack of chunks and tables).
        let least = 5000
            * (std::mem::size_of::<Option<Entry>>()
                + 64
                + std::mem::size_of::<Option<PageBlock>>());
        assert!(
            (least..2 * least).contains(&full_bytes),
            "{full_bytes} bytes for 5,000 chapters and pages"
        );
        let grown = lock(&table.table).by_node.ids.capacity();
        for &ino in given.iter().rev() {
            assert!(table.forget(ino, 1));
        }
        assert_eq!(table.len(), 1, "the root is left");
        assert!(
            table.bytes().load(Ordering::Relaxed) < full_bytes / 4,
            "the table's bytes went with its entries"
        );
        let t = lock(&table.table);
        assert_eq!(
            t.entries.chunks_held(),
            2,
            "only the root's chunk and the one that will hold the next numbers"
        );
        assert_eq!(t.blocks.chunks_held(), 1);
        assert!(t.by_node.ids.capacity() < grown, "the index shrank");
        drop(t);
        assert_eq!(table.node(ROOT_INO), Ok(Node::Root));
        let again = table.intern(
            Node::Chapter {
                chapter: chapters[0].clone(),
            },
            true,
            None,
        );
        assert!(!given.contains(&again), "a new number");
    }

    #[test]
    fn forgetting_frees_own_entries_and_their_attributes() {
        let table = InodeTable::default();
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let chapter = chapter_ref(&book, OsStr::new("第1章.md"));
        let error = Node::ChapterError {
            chapter: chapter.clone(),
            version: 1,
        };
        let ino = table.intern(error.clone(), true, Some(&file_attr(40)));
        assert_eq!(table.last_attr(ino).map(|a| a.size), Ok(40));
        let dir = table.intern(Node::Chapter { chapter }, true, Some(&file_attr(0)));
        assert_eq!(
            table.last_attr(dir),
            Err(libc::ENOENT),
            "directories keep none"
        );
        assert!(table.forget(ino, 1));
        assert_eq!(table.last_attr(ino), Err(libc::ENOENT));
        assert_eq!(table.node(ino), Err(libc::ENOENT));
        assert!(!table.forget(ROOT_INO, 1), "the root stays");
        assert_eq!(table.len(), 2);
    }
}
