//! The journal's records read back: what `encode_node` and the record
//! headers wrote, a record the reader does not know ending the replay.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::super::blocks::PageBlock;
use super::super::entries::LastAttr;
use super::{BLOCK, ENTRY, FORGET, INTERN, Record, SNAPSHOT};
use crate::names::PageName;
use crate::node::{ChapterId, Node};
use novelfs_library::PageFormat;

/// Reads what `encode_node` and the record headers wrote.
pub(in crate::inodes) struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    pub(in crate::inodes) fn node(&mut self) -> Option<Node> {
        decode_node(self)
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    pub(in crate::inodes) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    pub(in crate::inodes) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    pub(in crate::inodes) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&'a OsStr> {
        let n = self.u32()? as usize;
        Some(OsStr::from_bytes(self.take(n)?))
    }
    pub(in crate::inodes) fn chapter(&mut self) -> Option<Arc<ChapterId>> {
        let book: Arc<OsStr> = self.bytes()?.into();
        let file: Box<OsStr> = self.bytes()?.into();
        Some(Arc::new(ChapterId { book, file }))
    }
    fn format(&mut self) -> Option<PageFormat> {
        match self.u8()? {
            0 => Some(PageFormat::Text),
            1 => Some(PageFormat::Json),
            _ => None,
        }
    }
}

pub(super) fn decode_record(body: &[u8]) -> Option<Record> {
    let mut r = Reader(body);
    match r.u8()? {
        INTERN => {
            let ino = r.u64()?;
            let counted = r.u8()? != 0;
            let attr = match r.u8()? {
                0 => None,
                _ => {
                    let size = r.u64()?;
                    let secs = r.u64()?;
                    let nanos = r.u32()?;
                    Some((size, UNIX_EPOCH + Duration::new(secs, nanos)))
                }
            };
            let node = decode_node(&mut r)?;
            r.0.is_empty().then_some(Record::Intern {
                ino,
                node,
                counted,
                attr,
            })
        }
        FORGET => {
            let ino = r.u64()?;
            let n = r.u64()?;
            r.0.is_empty().then_some(Record::Forget { ino, n })
        }
        kind => {
            let record = decode_snapshot_record(kind, &mut r)?;
            r.0.is_empty().then_some(record)
        }
    }
}

fn mtime_of(nanos: i64) -> SystemTime {
    let since = std::time::Duration::from_nanos(nanos.unsigned_abs());
    if nanos >= 0 {
        SystemTime::UNIX_EPOCH + since
    } else {
        SystemTime::UNIX_EPOCH - since
    }
}

/// Reads the body of a snapshot's record (see `snapshot`; after its kind
/// byte).
fn decode_snapshot_record(kind: u8, r: &mut Reader<'_>) -> Option<Record> {
    Some(match kind {
        SNAPSHOT => Record::Snapshot {
            entries_next: r.u64()?,
            blocks_next: r.u64()?,
        },
        ENTRY => {
            let ino = r.u64()?;
            let lookups = r.u64()?;
            let attr = match r.u8()? {
                0 => None,
                _ => Some(LastAttr {
                    size: r.u64()?,
                    mtime: mtime_of(r.u64()? as i64),
                }),
            };
            Record::Entry {
                ino,
                lookups,
                attr,
                node: r.node()?,
            }
        }
        BLOCK => {
            let id = r.u64()?;
            let lookups = r.u32()?;
            let version = r.u64()?;
            let mtime_nanos = r.u64()? as i64;
            let chapter = r.chapter()?;
            let n = r.u32()? as usize;
            let mut block = PageBlock {
                chapter,
                version,
                mtime_nanos,
                lookups,
                first: [(0, 0); 2],
                first_len: 0,
                more: Box::default(),
            };
            let mut more = Vec::with_capacity(n.saturating_sub(2).min(1 << 20));
            for _ in 0..n {
                let page = (r.u32()?, r.u32()?);
                if usize::from(block.first_len) < block.first.len() {
                    block.first[usize::from(block.first_len)] = page;
                    block.first_len += 1;
                } else {
                    more.push(page);
                }
            }
            block.more = more.into_boxed_slice();
            Record::Block {
                id,
                block: Box::new(block),
            }
        }
        _ => return None,
    })
}

fn decode_node(r: &mut Reader<'_>) -> Option<Node> {
    Some(match r.u8()? {
        0 => Node::Root,
        1 => Node::RootError,
        2 => Node::Book {
            book: r.bytes()?.into(),
        },
        3 => Node::BookError {
            book: r.bytes()?.into(),
        },
        4 => Node::BookAlias {
            name: r.bytes()?.into(),
            target: r.bytes()?.into(),
        },
        5 => Node::Chapter {
            chapter: r.chapter()?,
        },
        6 => Node::ChapterAlias {
            name: r.bytes()?.into(),
            target: r.chapter()?,
        },
        7 => Node::Ambiguous {
            book: r.bytes()?.into(),
            name: r.bytes()?.into(),
        },
        8 => Node::AmbiguousError {
            book: r.bytes()?.into(),
            name: r.bytes()?.into(),
            version: r.u64()?,
        },
        9 => Node::ChapterError {
            chapter: r.chapter()?,
            version: r.u64()?,
        },
        10 => {
            let chapter = r.chapter()?;
            let offset = r.u64()?;
            let limit = match r.u8()? {
                0 => None,
                _ => Some(r.u32()?),
            };
            let format = r.format()?;
            Node::Page {
                chapter,
                page: PageName {
                    offset,
                    limit,
                    format,
                },
                version: r.u64()?,
            }
        }
        11 => Node::BooksIndex {
            format: r.format()?,
            version: r.u64()?,
        },
        12 => Node::ChaptersIndex {
            book: r.bytes()?.into(),
            format: r.format()?,
            version: r.u64()?,
        },
        _ => return None,
    })
}
