//! The inode journal in its file through a long churn of lookups and
//! forgets: compacted, it stays about the size of the table, and every
//! state a server can die in (a compaction half done included) replays to
//! the table the kernel knows.

use super::*;
use crate::inodes::table::InodeTable;
use crate::node::{Attr, Kind, Node, chapter_ref};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::fd::FromRawFd;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

fn memfd() -> File {
    // SAFETY: a name and no flags; the descriptor is owned by the File.
    let fd = unsafe { libc::memfd_create(c"journal-test".as_ptr(), 0) };
    assert!(fd >= 0);
    // SAFETY: a new descriptor, owned once.
    unsafe { File::from_raw_fd(fd) }
}

fn copy_of(file: &File) -> File {
    let len = file.metadata().unwrap().len();
    let mut bytes = vec![0u8; len as usize];
    file.read_exact_at(&mut bytes, 0).unwrap();
    let copy = memfd();
    copy.write_all_at(&bytes, 0).unwrap();
    copy
}

fn attr(size: u64) -> Attr {
    Attr {
        ino: 0,
        kind: Kind::File,
        size,
        mtime: SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        ttl: Duration::ZERO,
    }
}

/// `round`'s lookups: chapters and their pages (and a page with an entry
/// of its own), most forgotten again, a few kept.
fn churn(table: &InodeTable, round: u64) {
    let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
    let mut held = Vec::new();
    for c in 0..40 {
        let file = format!("第{}章.md", round * 40 + c);
        let chapter = chapter_ref(&book, OsStr::new(&file));
        let ino = table.intern(
            Node::Chapter {
                chapter: chapter.clone(),
            },
            true,
            None,
        );
        held.push(ino);
        for name in ["offset-1.txt", "offset-401.json", "offset-2-limit-9.txt"] {
            let page = Node::Page {
                chapter: chapter.clone(),
                page: crate::names::PageName::parse(name.as_bytes()).unwrap(),
                version: round,
            };
            held.push(table.intern(page, true, Some(&attr(round + c))));
        }
    }
    // One chapter in ten, with its pages, stays looked up.
    for (i, ino) in held.into_iter().enumerate() {
        if (i / 4) % 10 != 0 {
            table.forget(ino, 1);
        }
    }
}

fn replayed(file: &File) -> (InodeTable, JournalFile) {
    let found = JournalFile::open(file.try_clone().unwrap()).unwrap();
    let table = InodeTable::default();
    let (_, len) = table.replay(&found.records).unwrap();
    found.journal.keep(len).unwrap();
    (table, found.journal)
}

fn same(a: &InodeTable, b: &InodeTable) {
    let (ka, kb): (HashMap<Node, u64>, HashMap<Node, u64>) = (a.known(), b.known());
    let differ: Vec<_> = ka
        .iter()
        .filter(|(n, i)| kb.get(*n) != Some(*i))
        .map(|(n, i)| (n.path(), *i, kb.get(n).copied()))
        .take(3)
        .collect();
    let extra: Vec<_> = kb
        .iter()
        .filter(|(n, _)| !ka.contains_key(*n))
        .map(|(n, i)| (n.path(), *i))
        .take(3)
        .collect();
    assert!(
        differ.is_empty() && ka.len() == kb.len(),
        "{} vs {} nodes; differing: {differ:?}, only replayed: {extra:?}",
        ka.len(),
        kb.len()
    );
    for ino in ka.values() {
        assert_eq!(
            a.lookups_for_test(*ino),
            b.lookups_for_test(*ino),
            "inode {ino}"
        );
        if let Ok(l) = a.last_attr(*ino) {
            assert_eq!(b.last_attr(*ino).unwrap(), l, "inode {ino}");
        }
    }
    // The next numbers are the same too.
    assert_eq!(a.next_numbers_for_test(), b.next_numbers_for_test());
}

#[test]
fn a_long_churn_keeps_the_journal_about_the_size_of_the_table() {
    let file = memfd();
    let found = JournalFile::open(file.try_clone().unwrap()).unwrap();
    assert!(found.records.is_empty() && !found.headerless);
    let table = InodeTable::default();
    table.journal_to(Box::new(found.journal));
    let mut largest = 0;
    for round in 0..300 {
        churn(&table, round);
        largest = largest.max(journal_bytes(&file));
    }
    let live = table.snapshot_for_test().len() as u64;
    // Without compaction: 300 rounds of 280 records.
    assert!(
        largest < 3 * live + 200_000,
        "journal up to {largest} bytes, table {live} bytes as a snapshot"
    );
    // Its memory too: the pages before the start were let go.
    let allocated = allocated_bytes(&file);
    assert!(
        allocated < 3 * live + 300_000,
        "{allocated} bytes allocated, file {} bytes long",
        file.metadata().unwrap().len()
    );
    let (next, _journal) = replayed(&file);
    same(&table, &next);
    println!("journal: up to {largest} bytes, {allocated} allocated, snapshot {live}");
}

/// The bytes of records the file holds now.
fn journal_bytes(file: &File) -> u64 {
    let found = JournalFile::open(file.try_clone().unwrap()).unwrap();
    found.records.len() as u64
}

fn allocated_bytes(file: &File) -> u64 {
    use std::os::unix::fs::MetadataExt;
    file.metadata().unwrap().blocks() * 512
}

#[test]
fn a_server_dying_anywhere_in_a_compaction_leaves_a_journal_that_replays() {
    let file = memfd();
    let found = JournalFile::open(file.try_clone().unwrap()).unwrap();
    let table = InodeTable::default();
    table.journal_to(Box::new(found.journal));
    for round in 0..3 {
        churn(&table, round);
    }
    // Before the compaction, as the next server would find it.
    let before = copy_of(&file);
    let snapshot = table.snapshot_for_test();
    let end = before.metadata().unwrap().len();
    // Died as the snapshot was being written after the records: none, a
    // part, or all of it there, the header not yet rewritten.
    for cut in [0, 1, 30, snapshot.len() / 2, snapshot.len()] {
        let died = copy_of(&before);
        died.write_all_at(&snapshot[..cut], end).unwrap();
        let (next, journal) = replayed(&died);
        same(&table, &next);
        // The uncommitted snapshot is dropped: records go after the old.
        assert_eq!(journal.bytes(), end - FIRST, "cut {cut}");
    }
    // Died once the header was rewritten (before letting pages go).
    let died = copy_of(&before);
    died.write_all_at(&snapshot, end).unwrap();
    died.write_all_at(&header(end), 0).unwrap();
    let (next, journal) = replayed(&died);
    same(&table, &next);
    assert_eq!(journal.bytes(), snapshot.len() as u64);
    // A torn header is said, not replayed as something else.
    let torn = copy_of(&before);
    torn.write_all_at(&header(end)[..12], 0).unwrap();
    let e = JournalFile::open(torn).err().expect("a torn header");
    assert!(e.to_string().contains("torn"), "{e}");
}

#[test]
fn a_journal_without_a_header_is_replayed_and_converted() {
    // What a build without the header wrote: records from byte 0.
    let legacy = Arc::new(std::sync::Mutex::new(Vec::new()));
    struct Append(Arc<std::sync::Mutex<Vec<u8>>>);
    impl JournalSink for Append {
        fn append(&self, r: &[u8]) {
            self.0.lock().unwrap().extend_from_slice(r);
        }
        fn snapshot_part(&self, _: &[u8]) {}
        fn end_snapshot(&self, _: bool) -> bool {
            false
        }
    }
    let table = InodeTable::default();
    table.journal_to(Box::new(Append(legacy.clone())));
    churn(&table, 0);
    let file = memfd();
    file.write_all_at(&legacy.lock().unwrap(), 0).unwrap();
    let found = JournalFile::open(file.try_clone().unwrap()).unwrap();
    assert!(found.headerless);
    let next = InodeTable::default();
    let (_, len) = next.replay(&found.records).unwrap();
    found.journal.keep(len).unwrap();
    next.journal_to(Box::new(found.journal));
    next.compact();
    let found = JournalFile::open(file.try_clone().unwrap()).unwrap();
    assert!(!found.headerless, "converted");
    let (again, _) = replayed(&file);
    same(&table, &next);
    same(&next, &again);
}
