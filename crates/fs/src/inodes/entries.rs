//! What the table's lock guards: the nodes with numbers of their own, the
//! blocks of pages, the attributes last reported, and the indexes that
//! find them; how each is interned, found and freed.

use std::time::SystemTime;

use super::blocks::{PageBlock, UNKNOWN_SIZE, block_key};
use super::hash::{FxMap, fx_hash};
use super::index::Index;
use super::numbering::{MAX_BLOCK, page_ino, page_of_slot, split_page_ino};
use super::slab::Slab;
use crate::node::{Attr, ChapterRef, Node};

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

pub(super) struct Entry {
    pub(super) node: Node,
    /// Lookups the kernel holds (entries returned by lookup and readdirplus).
    pub(super) lookups: u64,
}

pub(super) struct Table {
    /// By inode number.
    pub(super) entries: Slab<Entry>,
    pub(super) by_node: Index,
    /// Only for files (what `last_attr` serves); directories and links
    /// never need theirs.
    pub(super) last_attrs: FxMap<u64, LastAttr>,
    pub(super) blocks: Slab<PageBlock>,
    pub(super) block_of: Index,
    /// Heap bytes of the nodes with an entry (`node_heap_bytes`) and of
    /// the page lists of blocks beyond their first two pages.
    pub(super) owned_heap: usize,
    /// The records in the journal since its last snapshot (the snapshot's
    /// own included), and the bytes they take (see `journal`).
    pub(super) journal_records: u64,
    pub(super) journal_bytes: u64,
}

impl Table {
    /// The block of a version of a chapter's pages, if it has one.
    pub(super) fn find_block(&self, chapter: &ChapterRef, version: u64) -> Option<u64> {
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
    pub(super) fn find_own(&self, node: &Node) -> Option<u64> {
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
    pub(super) fn held(&self, ino: u64) -> bool {
        match split_page_ino(ino) {
            Some((block, slot)) => self
                .blocks
                .get(u64::from(block))
                .is_some_and(|b| b.lookups > 0 && b.pages().any(|(s, _)| *s == slot)),
            None => self.entries.get(ino).is_some_and(|e| e.lookups > 0),
        }
    }

    pub(super) fn bytes(&self) -> usize {
        self.entries.bytes()
            + self.blocks.bytes()
            + self.by_node.bytes()
            + self.block_of.bytes()
            + self.last_attrs.capacity() * 40
            + self.owned_heap
            + self.journal_bytes as usize
    }

    /// Entries and blocks: the records of a snapshot of the table, besides
    /// its first.
    pub(super) fn live_records(&self) -> u64 {
        (self.by_node.ids.len() + self.block_of.ids.len()) as u64
    }

    /// Puts an entry back under its number (a journal's snapshot).
    pub(super) fn place_entry(
        &mut self,
        ino: u64,
        node: Node,
        lookups: u64,
        attr: Option<LastAttr>,
    ) {
        let hash = fx_hash(&node);
        self.owned_heap += node_heap_bytes(&node);
        self.entries.place(ino, Entry { node, lookups });
        let entries = &self.entries;
        self.by_node.ids.insert_unique(hash, ino, |&ino| {
            fx_hash(&entries.get(ino).expect("indexed").node)
        });
        if let Some(a) = attr {
            self.last_attrs.insert(ino, a);
        }
    }

    /// Puts a block of pages back under its number (a journal's snapshot).
    pub(super) fn place_block(&mut self, id: u64, block: PageBlock) {
        let hash = block_key(&block.chapter, block.version);
        self.owned_heap += 8 * block.more.len();
        self.blocks.place(id, block);
        let blocks = &self.blocks;
        self.block_of.ids.insert_unique(hash, id, |&b| {
            let pb = blocks.get(b).expect("indexed");
            block_key(&pb.chapter, pb.version)
        });
    }

    /// The number of a node with an entry of its own, created if new.
    pub(super) fn own_entry(&mut self, node: Node) -> u64 {
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
    pub(super) fn intern_page(
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

    pub(super) fn page_node(&self, ino: u64) -> Option<Node> {
        let (block, slot) = split_page_ino(ino)?;
        let b = self.blocks.get(u64::from(block))?;
        b.pages().any(|(s, _)| *s == slot).then(|| Node::Page {
            chapter: b.chapter.clone(),
            page: page_of_slot(slot),
            version: b.version,
        })
    }

    pub(super) fn forget_page(&mut self, block: u64, n: u64) -> bool {
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

    pub(super) fn forget_own(&mut self, ino: u64, n: u64) -> bool {
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
