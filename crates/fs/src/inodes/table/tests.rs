//! The inode table on small cases: page numbers and their nodes, blocks,
//! and what forgetting frees.

use super::*;
use crate::inodes::blocks::PageBlock;
use crate::inodes::entries::Entry;
use crate::names::PageName;
use crate::node::ChapterRef;
use crate::node::{Kind, chapter_ref};
use std::ffi::OsStr;
use std::sync::Arc;
use std::time::Duration;
use std::time::SystemTime;

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
    assert_eq!(
        table.last_attr(text).map_err(|e| e.errno()),
        Err(libc::ENOENT),
        "no size reported"
    );
    assert!(!table.forget(text, 1));
    assert!(!table.forget(json, 1), "json still holds one lookup");
    assert!(table.node(json).is_ok());
    assert!(table.forget(json, 1));
    assert_eq!(table.len(), 1);
    assert_eq!(table.node(json).map_err(|e| e.errno()), Err(libc::ENOENT));
    assert_eq!(table.node(text).map_err(|e| e.errno()), Err(libc::ENOENT));
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
        * (std::mem::size_of::<Option<Entry>>() + 64 + std::mem::size_of::<Option<PageBlock>>());
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
        table.last_attr(dir).map_err(|e| e.errno()),
        Err(libc::ENOENT),
        "directories keep none"
    );
    assert!(table.forget(ino, 1));
    assert_eq!(
        table.last_attr(ino).map_err(|e| e.errno()),
        Err(libc::ENOENT)
    );
    assert_eq!(table.node(ino).map_err(|e| e.errno()), Err(libc::ENOENT));
    assert!(!table.forget(ROOT_INO, 1), "the root stays");
    assert_eq!(table.len(), 2);
}

/// A journal in memory.
struct VecSink(Arc<std::sync::Mutex<Vec<u8>>>);

impl JournalSink for VecSink {
    fn append(&self, record: &[u8]) {
        self.0.lock().unwrap().extend_from_slice(record);
    }
    fn snapshot_part(&self, _: &[u8]) {}
    fn end_snapshot(&self, _: bool) -> bool {
        false
    }
}

/// A table fed its journal gives every node the number the journaled one
/// gave, after interns and forgets that freed entries (crash failover).
#[test]
fn a_replayed_journal_gives_the_same_numbers() {
    let journal = Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let table = InodeTable::default();
    table.journal_to(Box::new(VecSink(journal.clone())));
    let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
    let one = chapter_ref(&book, OsStr::new("第1章.md"));
    let two = chapter_ref(&book, OsStr::new("第2章.md"));
    let b = table.intern(Node::Book { book: book.clone() }, true, None);
    let c1 = table.intern(
        Node::Chapter {
            chapter: one.clone(),
        },
        true,
        None,
    );
    let p1 = table.intern(page(&one, "offset-1.txt", 3), true, Some(&file_attr(40)));
    let p2 = table.intern(page(&one, "offset-1-limit-9.json", 3), true, None);
    table.forget(c1, 1);
    table.forget(p1, 1);
    let c2 = table.intern(
        Node::Chapter {
            chapter: two.clone(),
        },
        true,
        None,
    );
    let p3 = table.intern(page(&two, "offset-401.txt", 5), true, Some(&file_attr(41)));
    let bytes = journal.lock().unwrap().clone();
    let fresh = InodeTable::default();
    let (records, len) = fresh.replay(&bytes).unwrap();
    assert_eq!((records, len), (8, bytes.len()));
    assert_eq!(fresh.known(), table.known());
    for ino in [b, p2, c2, p3] {
        assert_eq!(fresh.node(ino).unwrap(), table.node(ino).unwrap());
    }
    assert_eq!(fresh.last_attr(p3).unwrap(), table.last_attr(p3).unwrap());
    assert!(fresh.node(c1).is_err(), "a forgotten entry stays forgotten");
    // The next number is the same too.
    let n = Node::Book {
        book: Arc::from(OsStr::new("另一本")),
    };
    assert_eq!(
        fresh.intern(n.clone(), true, None),
        table.intern(n, true, None)
    );
}

/// A journal that would give a node another number than it recorded, or
/// that holds a whole record it cannot read, fails its replay with what
/// went wrong where, for the server to start without it.
#[test]
fn a_journal_that_cannot_give_the_same_numbers_says_why() {
    use crate::inodes::journal::{ReplayError, frame};
    let journal = Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let table = InodeTable::default();
    table.journal_to(Box::new(VecSink(journal.clone())));
    let book = Node::Book {
        book: Arc::from(OsStr::new("书")),
    };
    let recorded = table.intern(book, true, None);
    let bytes = journal.lock().unwrap().clone();
    let not_fresh = InodeTable::default();
    let other = Node::Book {
        book: Arc::from(OsStr::new("另一本")),
    };
    let taken = not_fresh.intern(other, true, None);
    assert_eq!(taken, recorded, "the other book took the recorded number");
    let got = not_fresh.replay(&bytes).unwrap_err();
    assert!(
        matches!(got, ReplayError::Renumbered { record: 0, recorded: r, .. } if r == recorded),
        "{got:?}"
    );
    let unreadable = frame(vec![0xff; 5]);
    let got = InodeTable::default().replay(&unreadable).unwrap_err();
    assert_eq!(got, ReplayError::Unreadable { at: 0 });
}
