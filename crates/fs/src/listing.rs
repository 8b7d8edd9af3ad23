//! Directory listings as READDIR serves them: one listing per pass,
//! continued by the READDIRs that follow it, and what the previous opendir
//! of each directory listed.

use std::ffi::OsString;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::cache::Lru;
use super::error::Result;
use super::lock;
use super::node::{Attr, Kind, Node};

/// A directory entry (without `.` and `..`) as listed, before the kernel
/// is given an inode for it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub(super) node: Node,
    pub kind: Kind,
    pub name: OsString,
    /// Known when listed (a chapter's pages, from the version listed).
    pub(super) attr: Option<Attr>,
}

/// A directory's entries as one listing took them, continued by the
/// READDIRs that follow it: their offsets carry the listing's number.
pub struct Listing {
    pub entries: Arc<Vec<Listed>>,
    number: u32,
    /// The index (`.` = 0, `..` = 1, entries from 2) to continue at.
    pub start: usize,
}

impl Listing {
    /// The READDIR offset of the entry after index `i`.
    pub fn offset_after(&self, i: usize) -> u64 {
        (u64::from(self.number) << 32) | (i as u64 + 1)
    }
}

/// A listing with the inode of the directory it lists.
struct Taken {
    ino: u64,
    entries: Arc<Vec<Listed>>,
}

pub(crate) struct Listings {
    taken: Mutex<Lru<u32, Arc<Taken>>>,
    next: AtomicU32,
    /// Per directory inode, a digest of what its previous opendir listed,
    /// and whether its stamp was settled then (see `freshness::racy`).
    last_listed: Mutex<hashbrown::HashMap<u64, (u64, bool)>>,
}

impl Listings {
    pub(crate) fn new(budget: usize) -> Listings {
        Listings {
            taken: Mutex::new(crate::cache::lru(budget)),
            next: AtomicU32::new(1),
            last_listed: Mutex::new(hashbrown::HashMap::new()),
        }
    }

    /// The listing a READDIR of `ino` at `offset` continues: a new one
    /// (from `list`) at offset 0 (a first read, or a rewind), else the one
    /// whose number the offset carries. Listing a directory costs one pass
    /// however many requests the kernel splits it into, and the pieces
    /// agree with each other even if the directory changes meanwhile.
    /// (Should that listing have left the cache, a new one continues at the
    /// same index.)
    pub(crate) fn continue_or_take(
        &self,
        ino: u64,
        offset: u64,
        list: impl FnOnce() -> Result<Vec<Listed>>,
    ) -> Result<Listing> {
        let number = (offset >> 32) as u32;
        let start = (offset & 0xffff_ffff) as usize;
        if offset > 0
            && let Some(taken) = lock(&self.taken).get(&number)
            && taken.ino == ino
        {
            return Ok(Listing {
                entries: taken.entries.clone(),
                number,
                start,
            });
        }
        let entries = Arc::new(list()?);
        // Offsets stay below 2^63 (telldir's long).
        let number = self.next.fetch_add(1, Ordering::Relaxed) & 0x7fff_ffff;
        let weight = 64
            + entries
                .iter()
                .map(|e| e.name.len() + std::mem::size_of::<Listed>())
                .sum::<usize>();
        let taken = Arc::new(Taken {
            ino,
            entries: entries.clone(),
        });
        lock(&self.taken).insert(number, taken, weight);
        Ok(Listing {
            entries,
            number,
            start,
        })
    }

    /// Records that an opendir of `ino` lists what `digest` stands for
    /// (`None`: unknown), `settled` when its stamp proves what is listed
    /// now; true when its previous opendir listed the same under a settled
    /// stamp. (Under a stamp not settled, a change in the same tick as the
    /// listing leaves the same digest: the directory is listed again.)
    pub(crate) fn opened(&self, ino: u64, digest: Option<u64>, settled: bool) -> bool {
        match digest {
            Some(digest) => {
                lock(&self.last_listed).insert(ino, (digest, settled)) == Some((digest, true))
            }
            None => {
                lock(&self.last_listed).remove(&ino);
                false
            }
        }
    }

    /// The kernel forgot `ino`.
    pub(crate) fn forget(&self, ino: u64) {
        lock(&self.last_listed).remove(&ino);
    }
}
