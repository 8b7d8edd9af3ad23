//! The inode table's journal: every change of the table (an intern, a
//! forget) as a record, in the order the table's lock made them, so that a
//! server taking over a live connection (crash failover, see the mount's
//! `holder`) replays them into an empty table and gets the very numbers the
//! kernel holds: the table gives numbers by counting, so the same changes
//! in the same order give the same numbers. Each intern record carries the
//! number it got, and a replay that gets another stops with an error.
//!
//! A journal may start with a snapshot of the table (`snapshot`), which a
//! server writes in place of records once most are dead; its records are
//! read here with the others. A snapshot after records is a compaction
//! its server died in before making it the journal: the replay ends there.
//!
//! A record: its body's length (u32), the body, a checksum of the body
//! (u32). A record cut short (the server killed in the middle of writing
//! it) ends the replay there: the table had changed, but the kernel was
//! never answered with that number.//!
//! The records are written here and read back in `decode`.

mod decode;

use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::blocks::PageBlock;
use super::entries::LastAttr;
use crate::node::{Attr, ChapterId, Kind, Node};
use novelfs_library::PageFormat;

use decode::decode_record;

/// Where the records go (the file the holder keeps, `JournalFile`);
/// called under the table's lock.
pub trait JournalSink: Send + Sync {
    /// Adds one record, once per change.
    fn append(&self, record: &[u8]);
    /// Writes the next part of a snapshot (see `snapshot`) that is to
    /// replace every record: beside them, not yet read as the journal.
    fn snapshot_part(&self, part: &[u8]);
    /// Makes the snapshot written the journal (`keep`) in one step as a
    /// reader sees it (before or after, never a mix), or drops it; whether
    /// it is the journal now (`false`: the records stay as they were).
    fn end_snapshot(&self, keep: bool) -> bool;
}

const INTERN: u8 = 1;
const FORGET: u8 = 2;
/// A snapshot's records (see `snapshot`): its first, giving the numbers
/// next given; an entry; a block of pages.
pub(super) const SNAPSHOT: u8 = 3;
pub(super) const ENTRY: u8 = 4;
pub(super) const BLOCK: u8 = 5;

/// One change of the table, as replayed.
#[derive(Debug, PartialEq)]
pub(super) enum Record {
    Intern {
        ino: u64,
        node: Node,
        counted: bool,
        attr: Option<(u64, SystemTime)>,
    },
    Forget {
        ino: u64,
        n: u64,
    },
    Snapshot {
        entries_next: u64,
        blocks_next: u64,
    },
    Entry {
        ino: u64,
        lookups: u64,
        attr: Option<LastAttr>,
        node: Node,
    },
    Block {
        id: u64,
        block: Box<PageBlock>,
    },
}

fn checksum(body: &[u8]) -> u32 {
    // FNV-1a: enough to tell a torn record from a whole one.
    let mut h: u32 = 0x811c_9dc5;
    for &b in body {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

pub(super) fn frame(body: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 8);
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&checksum(&body).to_le_bytes());
    out
}

pub(crate) fn intern_record(ino: u64, node: &Node, counted: bool, attr: Option<&Attr>) -> Vec<u8> {
    let mut b = Vec::with_capacity(64);
    b.push(INTERN);
    b.extend_from_slice(&ino.to_le_bytes());
    b.push(u8::from(counted));
    match attr {
        Some(a) => {
            b.push(1);
            b.extend_from_slice(&a.size.to_le_bytes());
            let since = a.mtime.duration_since(UNIX_EPOCH).unwrap_or_default();
            b.extend_from_slice(&since.as_secs().to_le_bytes());
            b.extend_from_slice(&since.subsec_nanos().to_le_bytes());
        }
        None => b.push(0),
    }
    encode_node(&mut b, node);
    frame(b)
}

pub(crate) fn forget_record(ino: u64, n: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(17);
    b.push(FORGET);
    b.extend_from_slice(&ino.to_le_bytes());
    b.extend_from_slice(&n.to_le_bytes());
    frame(b)
}

/// Why a journal cannot be replayed: with any of these, the table would
/// not give the kernel's numbers the nodes they stood for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayError {
    /// A whole record (its checksum holds) that does not decode.
    Unreadable { at: usize },
    /// Record `record` interned `path` under another number than it says.
    Renumbered {
        record: usize,
        path: String,
        got: u64,
        recorded: u64,
    },
    /// Record `record` of a snapshot places an inode (or a page block,
    /// `block`) twice or past the snapshot's end.
    Misplaced { record: usize, block: bool, id: u64 },
    /// Record `record` stands where only a snapshot's records may.
    NotSnapshot { record: usize },
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::Unreadable { at } => {
                write!(
                    f,
                    "the inode journal has a record it cannot read at byte {at}"
                )
            }
            ReplayError::Renumbered {
                record,
                path,
                got,
                recorded,
            } => write!(
                f,
                "the inode journal's record {record} gave {path} inode {got}, not {recorded}"
            ),
            ReplayError::Misplaced { record, block, id } => write!(
                f,
                "the inode journal's snapshot places {} {id} twice or past its end (record {record})",
                if *block { "block" } else { "inode" }
            ),
            ReplayError::NotSnapshot { record } => {
                write!(f, "not a snapshot's record (record {record})")
            }
        }
    }
}

impl std::error::Error for ReplayError {}

/// The whole records at the start of `bytes`, and how many bytes they take
/// (a torn last record is left out).
pub(super) fn records(bytes: &[u8]) -> Result<(Vec<Record>, usize), ReplayError> {
    let mut out = Vec::new();
    let mut at = 0;
    while bytes.len() - at >= 4 {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4")) as usize;
        let Some(end) = (at + 4).checked_add(len).and_then(|e| e.checked_add(4)) else {
            break;
        };
        if end > bytes.len() {
            break;
        }
        let body = &bytes[at + 4..at + 4 + len];
        let sum = u32::from_le_bytes(bytes[end - 4..end].try_into().expect("4"));
        if sum != checksum(body) {
            break;
        }
        let record = decode_record(body).ok_or(ReplayError::Unreadable { at })?;
        if matches!(record, Record::Snapshot { .. }) && !out.is_empty() {
            // A snapshot after records: a compaction its server died in
            // before it made it the journal (see `JournalFile`), dropped.
            break;
        }
        out.push(record);
        at = end;
    }
    Ok((out, at))
}

fn put_bytes(b: &mut Vec<u8>, s: &[u8]) {
    b.extend_from_slice(&(s.len() as u32).to_le_bytes());
    b.extend_from_slice(s);
}

pub(super) fn put_chapter(b: &mut Vec<u8>, c: &ChapterId) {
    put_bytes(b, c.book.as_bytes());
    put_bytes(b, c.file.as_bytes());
}

fn format_byte(f: PageFormat) -> u8 {
    match f {
        PageFormat::Text => 0,
        PageFormat::Json => 1,
    }
}

pub(super) fn encode_node(b: &mut Vec<u8>, node: &Node) {
    match node {
        Node::Root => b.push(0),
        Node::RootError => b.push(1),
        Node::Book { book } => {
            b.push(2);
            put_bytes(b, book.as_bytes());
        }
        Node::BookError { book } => {
            b.push(3);
            put_bytes(b, book.as_bytes());
        }
        Node::BookAlias { name, target } => {
            b.push(4);
            put_bytes(b, name.as_bytes());
            put_bytes(b, target.as_bytes());
        }
        Node::Chapter { chapter } => {
            b.push(5);
            put_chapter(b, chapter);
        }
        Node::ChapterAlias { name, target } => {
            b.push(6);
            put_bytes(b, name.as_bytes());
            put_chapter(b, target);
        }
        Node::Ambiguous { book, name } => {
            b.push(7);
            put_bytes(b, book.as_bytes());
            put_bytes(b, name.as_bytes());
        }
        Node::AmbiguousError {
            book,
            name,
            version,
        } => {
            b.push(8);
            put_bytes(b, book.as_bytes());
            put_bytes(b, name.as_bytes());
            b.extend_from_slice(&version.to_le_bytes());
        }
        Node::ChapterError { chapter, version } => {
            b.push(9);
            put_chapter(b, chapter);
            b.extend_from_slice(&version.to_le_bytes());
        }
        Node::Page {
            chapter,
            page,
            version,
        } => {
            b.push(10);
            put_chapter(b, chapter);
            b.extend_from_slice(&page.offset.to_le_bytes());
            match page.limit {
                Some(l) => {
                    b.push(1);
                    b.extend_from_slice(&l.to_le_bytes());
                }
                None => b.push(0),
            }
            b.push(format_byte(page.format));
            b.extend_from_slice(&version.to_le_bytes());
        }
        Node::BooksIndex { format, version } => {
            b.push(11);
            b.push(format_byte(*format));
            b.extend_from_slice(&version.to_le_bytes());
        }
        Node::ChaptersIndex {
            book,
            format,
            version,
        } => {
            b.push(12);
            put_bytes(b, book.as_bytes());
            b.push(format_byte(*format));
            b.extend_from_slice(&version.to_le_bytes());
        }
    }
}

/// The attributes an intern record carries, as `intern` takes them (only
/// the size and mtime are kept by the table).
pub(crate) fn attr_of(ino: u64, attr: Option<(u64, SystemTime)>) -> Option<Attr> {
    attr.map(|(size, mtime)| Attr {
        ino,
        kind: Kind::File,
        size,
        mtime,
        ttl: Duration::ZERO,
    })
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::sync::Arc;

    use super::*;
    use crate::names::PageName;

    fn chapter() -> Arc<ChapterId> {
        Arc::new(ChapterId {
            book: OsStr::new("书").into(),
            file: OsStr::new("第1章.txt").into(),
        })
    }

    #[test]
    fn every_kind_of_node_comes_back() {
        let c = chapter();
        let nodes = vec![
            Node::Root,
            Node::RootError,
            Node::Book {
                book: OsStr::new("书").into(),
            },
            Node::BookError {
                book: OsStr::new("书").into(),
            },
            Node::BookAlias {
                name: OsStr::new("别名").into(),
                target: OsStr::new("书").into(),
            },
            Node::Chapter { chapter: c.clone() },
            Node::ChapterAlias {
                name: OsStr::new("1").into(),
                target: c.clone(),
            },
            Node::Ambiguous {
                book: OsStr::new("书").into(),
                name: OsStr::new("2").into(),
            },
            Node::AmbiguousError {
                book: OsStr::new("书").into(),
                name: OsStr::new("2").into(),
                version: 7,
            },
            Node::ChapterError {
                chapter: c.clone(),
                version: 9,
            },
            Node::Page {
                chapter: c.clone(),
                page: PageName {
                    offset: 401,
                    limit: Some(300),
                    format: PageFormat::Json,
                },
                version: u64::MAX,
            },
            Node::BooksIndex {
                format: PageFormat::Text,
                version: 3,
            },
            Node::ChaptersIndex {
                book: OsStr::new("书").into(),
                format: PageFormat::Json,
                version: 4,
            },
        ];
        let mut bytes = Vec::new();
        let mtime = UNIX_EPOCH + Duration::new(1_700_000_000, 5);
        for (i, n) in nodes.iter().enumerate() {
            let attr = Attr {
                ino: i as u64,
                kind: Kind::File,
                size: 10 + i as u64,
                mtime,
                ttl: Duration::ZERO,
            };
            bytes.extend(intern_record(
                i as u64 + 2,
                n,
                i % 2 == 0,
                (i % 3 == 0).then_some(&attr),
            ));
        }
        bytes.extend(forget_record(5, 2));
        let (recs, len) = records(&bytes).unwrap();
        assert_eq!(len, bytes.len());
        assert_eq!(recs.len(), nodes.len() + 1);
        for (i, (r, n)) in recs.iter().zip(&nodes).enumerate() {
            let want = Record::Intern {
                ino: i as u64 + 2,
                node: n.clone(),
                counted: i % 2 == 0,
                attr: (i % 3 == 0).then_some((10 + i as u64, mtime)),
            };
            assert_eq!(r, &want);
        }
        assert_eq!(recs.last(), Some(&Record::Forget { ino: 5, n: 2 }));
    }

    #[test]
    fn a_torn_record_ends_the_journal() {
        let mut bytes = forget_record(3, 1);
        let whole = bytes.len();
        let next = intern_record(9, &Node::Chapter { chapter: chapter() }, true, None);
        for cut in 0..next.len() {
            let mut torn = bytes.clone();
            torn.extend_from_slice(&next[..cut]);
            let (recs, len) = records(&torn).unwrap();
            assert_eq!((recs.len(), len), (1, whole), "cut at {cut}");
        }
        bytes.extend(next);
        assert_eq!(records(&bytes).unwrap().0.len(), 2);
    }
}
