//! The inode table: which number the kernel was given for which node.
//! Numbers are never reused; an entry goes when the kernel forgets its
//! last lookup.
//!
//! Pages are most of what the kernel holds (two or more per chapter), so
//! they have no entry of their own: the pages of one version of a chapter
//! share one `PageBlock`, and a page's number is the block's number with
//! the page's offset and format in its low bits. At 200,000 chapters the
//! two maps of one entry per page took about 150 MiB; a block costs about
//! a fifth of that.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;
use std::time::SystemTime;

use super::lock;
use super::names::{Format, PageName};
use super::node::{Attr, ChapterRef, Node, ROOT_INO, Result};

/// The size and mtime last reported for an inode, kept for a version that
/// is gone from disk but may still be open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastAttr {
    pub size: u64,
    pub mtime: SystemTime,
}

/// FxHash (rustc's): the keys are the daemon's own nodes and numbers, not
/// chosen by an attacker who could aim at collisions, and SipHash over
/// every node was 5% of a cold listing.
#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// Page numbers: this bit set, the block in bits 32-62, and
/// `offset << 1 | format` below (offset < 2^31).
const PAGE_BIT: u64 = 1 << 63;
const MAX_BLOCK: u64 = (1 << 31) - 1;
const MAX_PAGED_OFFSET: u64 = (1 << 31) - 1;

/// The low bits of a page's number, for a page that has a derived number
/// (the listed spelling: no limit, and an offset that fits).
fn page_slot(page: &PageName) -> Option<u32> {
    if page.limit.is_some() || page.offset > MAX_PAGED_OFFSET {
        return None;
    }
    let format = match page.format {
        Format::Text => 0,
        Format::Json => 1,
    };
    Some(((page.offset as u32) << 1) | format)
}

fn page_of_slot(slot: u32) -> PageName {
    PageName {
        offset: u64::from(slot >> 1),
        limit: None,
        format: if slot & 1 == 0 {
            Format::Text
        } else {
            Format::Json
        },
    }
}

/// What a page number stands for: (block, low bits).
fn split_page_ino(ino: u64) -> Option<(u32, u32)> {
    (ino & PAGE_BIT != 0).then_some((((ino & !PAGE_BIT) >> 32) as u32, ino as u32))
}

struct Entry {
    node: Node,
    /// Lookups the kernel holds (entries returned by lookup and readdirplus).
    lookups: u64,
}

/// The pages of one version of a chapter that the kernel was given.
struct PageBlock {
    chapter: ChapterRef,
    version: u64,
    /// Lookups the kernel holds on all these pages together: the block goes
    /// when it forgot the last of them.
    lookups: u64,
    mtime: SystemTime,
    /// Each page given, by its low bits, with its last reported size
    /// (`u64::MAX`: none reported yet).
    pages: Vec<(u32, u64)>,
}

struct Table {
    by_node: FxMap<Node, u64>,
    entries: FxMap<u64, Entry>,
    /// Only for files (what `last_attr` serves); directories and links
    /// never need theirs.
    last_attrs: FxMap<u64, LastAttr>,
    next: u64,
    blocks: FxMap<u32, PageBlock>,
    block_of: FxMap<(ChapterRef, u64), u32>,
    next_block: u64,
}

pub struct InodeTable {
    table: Mutex<Table>,
}

impl Default for InodeTable {
    fn default() -> Self {
        let mut table = Table {
            by_node: FxMap::default(),
            entries: FxMap::default(),
            last_attrs: FxMap::default(),
            next: ROOT_INO + 1,
            blocks: FxMap::default(),
            block_of: FxMap::default(),
            next_block: 0,
        };
        table.by_node.insert(Node::Root, ROOT_INO);
        table.entries.insert(
            ROOT_INO,
            Entry {
                node: Node::Root,
                lookups: 1,
            },
        );
        InodeTable {
            table: Mutex::new(table),
        }
    }
}

impl Table {
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
        let block = match self.block_of.get(&(chapter.clone(), version)) {
            Some(&b) => b,
            None => {
                if self.next_block > MAX_BLOCK {
                    return None;
                }
                let b = self.next_block as u32;
                self.next_block += 1;
                self.block_of.insert((chapter.clone(), version), b);
                self.blocks.insert(
                    b,
                    PageBlock {
                        chapter: chapter.clone(),
                        version,
                        lookups: 0,
                        mtime: SystemTime::UNIX_EPOCH,
                        pages: Vec::new(),
                    },
                );
                b
            }
        };
        let entry = self.blocks.get_mut(&block).expect("interned");
        entry.lookups += u64::from(counted);
        let size = attr.map_or(u64::MAX, |a| a.size);
        if let Some(a) = attr {
            entry.mtime = a.mtime;
        }
        match entry.pages.iter_mut().find(|(s, _)| *s == slot) {
            Some((_, known)) => {
                if size != u64::MAX {
                    *known = size;
                }
            }
            None => {
                entry.pages.push((slot, size));
                // Most chapters have one or two pages: no spare room.
                if entry.pages.len() <= 4 {
                    entry.pages.shrink_to_fit();
                }
            }
        }
        Some(PAGE_BIT | (u64::from(block) << 32) | u64::from(slot))
    }

    fn page_node(&self, ino: u64) -> Option<Node> {
        let (block, slot) = split_page_ino(ino)?;
        let b = self.blocks.get(&block)?;
        b.pages.iter().any(|(s, _)| *s == slot).then(|| Node::Page {
            chapter: b.chapter.clone(),
            page: page_of_slot(slot),
            version: b.version,
        })
    }
}

impl InodeTable {
    /// The inode of `node`, created if new; `counted` when the kernel
    /// will hold a lookup reference for it (lookup, readdirplus).
    pub fn intern(&self, node: Node, counted: bool, attr: Option<&Attr>) -> u64 {
        let mut table = lock(&self.table);
        if let Node::Page {
            chapter,
            page,
            version,
        } = &node
            && let Some(slot) = page_slot(page)
            && let Some(ino) = table.intern_page(chapter, *version, slot, counted, attr)
        {
            return ino;
        }
        let is_file = !node.is_directory()
            && !matches!(node, Node::BookAlias { .. } | Node::ChapterAlias { .. });
        let ino = match table.by_node.get(&node) {
            Some(&ino) => ino,
            None => {
                let ino = table.next;
                table.next += 1;
                table.by_node.insert(node.clone(), ino);
                table.entries.insert(ino, Entry { node, lookups: 0 });
                ino
            }
        };
        let entry = table.entries.get_mut(&ino).expect("interned");
        entry.lookups += u64::from(counted);
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
        ino
    }

    pub fn node(&self, ino: u64) -> Result<Node> {
        let table = lock(&self.table);
        if ino & PAGE_BIT != 0 {
            return table.page_node(ino).ok_or(libc::ENOENT);
        }
        table
            .entries
            .get(&ino)
            .map(|e| e.node.clone())
            .ok_or(libc::ENOENT)
    }

    /// The path of `ino` for log lines (never fails).
    pub fn describe(&self, ino: u64) -> String {
        self.node(ino)
            .map_or_else(|_| format!("inode {ino}"), |n| n.path())
    }

    /// The kernel dropped `n` lookups of `ino`; true when that freed an
    /// entry (for a page: the last counted page of its block).
    pub fn forget(&self, ino: u64, n: u64) -> bool {
        if ino == ROOT_INO {
            return false;
        }
        let mut table = lock(&self.table);
        if let Some((block, _)) = split_page_ino(ino) {
            let Some(b) = table.blocks.get_mut(&block) else {
                return false;
            };
            b.lookups = b.lookups.saturating_sub(n);
            if b.lookups > 0 {
                return false;
            }
            let b = table.blocks.remove(&block).expect("present");
            table.block_of.remove(&(b.chapter, b.version));
            return true;
        }
        let Some(entry) = table.entries.get_mut(&ino) else {
            return false;
        };
        entry.lookups = entry.lookups.saturating_sub(n);
        if entry.lookups > 0 {
            return false;
        }
        let node = table.entries.remove(&ino).expect("present").node;
        table.by_node.remove(&node);
        table.last_attrs.remove(&ino);
        true
    }

    /// Entries held: one per node with a number of its own, one per block
    /// of pages.
    pub fn len(&self) -> usize {
        let table = lock(&self.table);
        table.entries.len() + table.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The size and mtime last reported for `ino`.
    pub fn last_attr(&self, ino: u64) -> Result<LastAttr> {
        let table = lock(&self.table);
        if let Some((block, slot)) = split_page_ino(ino) {
            let b = table.blocks.get(&block).ok_or(libc::ENOENT)?;
            return b
                .pages
                .iter()
                .find(|(s, size)| *s == slot && *size != u64::MAX)
                .map(|&(_, size)| LastAttr {
                    size,
                    mtime: b.mtime,
                })
                .ok_or(libc::ENOENT);
        }
        table.last_attrs.get(&ino).copied().ok_or(libc::ENOENT)
    }

    /// Runs `f` over every node the kernel was given, by inode, with the
    /// table held still. (Builds the map of every page: only for the rare
    /// changes on disk.)
    pub fn with_known<R>(&self, f: impl FnOnce(&HashMap<Node, u64>) -> R) -> R {
        let table = lock(&self.table);
        let mut known: HashMap<Node, u64> = table
            .by_node
            .iter()
            .map(|(n, &ino)| (n.clone(), ino))
            .collect();
        for (&block, b) in &table.blocks {
            for &(slot, _) in &b.pages {
                known.insert(
                    Node::Page {
                        chapter: b.chapter.clone(),
                        page: page_of_slot(slot),
                        version: b.version,
                    },
                    PAGE_BIT | (u64::from(block) << 32) | u64::from(slot),
                );
            }
        }
        f(&known)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::node::{Kind, chapter_ref};
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
            "offset-2147483647.json",
            "offset-2147483648.txt",
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
                    assert_eq!(table.last_attr(ino).map(|a| a.size), Ok(9));
                }
            }
        }
        let derived = seen.iter().filter(|&&i| i & PAGE_BIT != 0).count();
        assert_eq!(derived, 4 * 4, "the listed spellings that fit are derived");
        assert_eq!(table.len(), 1 + 4 + 4 * 2, "root, 4 blocks, 8 own entries");
        let known = table.with_known(|k| k.clone());
        assert_eq!(known.len(), 1 + seen.len());
        for (node, ino) in &known {
            assert_eq!(table.node(*ino).as_ref(), Ok(node));
        }
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
