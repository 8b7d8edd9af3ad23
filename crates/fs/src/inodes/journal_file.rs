//! The inode journal's file (a memfd the holder keeps, see the mount's
//! `holder`): a header in its first page naming where the records start,
//! then the records (`journal`). A snapshot (`snapshot`) replaces them in
//! three steps: it is written after the last record, the header is
//! rewritten to start at it (one write of 24 bytes into one page: a
//! server killed around it leaves the old start or the new, and the
//! checksum tells a torn header), and the pages before it are let go
//! (`FALLOC_FL_PUNCH_HOLE`: the file's length grows, its memory does
//! not). So the next server always finds whole records from a start.
//!
//! A file whose first bytes are not a header was written by a build
//! without it: its records start at 0, and the server converts it
//! (`NovelFs::compact_inodes`) once it has replayed it.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::journal::JournalSink;

const MAGIC: &[u8; 8] = b"novelfsJ";
const HEADER: usize = 24;
/// Where the records of a new journal start: the header has its page.
const FIRST: u64 = 4096;

fn header(start: u64) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..8].copy_from_slice(MAGIC);
    h[8..16].copy_from_slice(&start.to_le_bytes());
    h[16..24].copy_from_slice(&(start ^ 0x9e37_79b9_7f4a_7c15).to_le_bytes());
    h
}

/// The start a header names, if it is one.
fn start_of(h: &[u8]) -> Option<u64> {
    if h.len() < HEADER || &h[..8] != MAGIC {
        return None;
    }
    let start = u64::from_le_bytes(h[8..16].try_into().ok()?);
    let check = u64::from_le_bytes(h[16..24].try_into().ok()?);
    (check == start ^ 0x9e37_79b9_7f4a_7c15 && start >= FIRST).then_some(start)
}

/// The journal as a server writes it.
pub struct JournalFile {
    file: File,
    /// Where the records start, and where the next goes.
    start: AtomicU64,
    end: AtomicU64,
    /// The bytes of a snapshot written so far after `end` (`u64::MAX`: a
    /// part failed).
    pending: AtomicU64,
    /// A write failed (said once).
    failed: AtomicBool,
}

/// What a server found in the journal it was handed.
pub struct Found {
    pub journal: JournalFile,
    /// The records to replay (`NovelFs::resume_inodes`).
    pub records: Vec<u8>,
    /// Written by a build without the header: to be converted.
    pub headerless: bool,
}

impl JournalFile {
    /// Opens the journal in `file`: an empty one gets its header; else its
    /// records are read from their start, for a replay.
    pub fn open(file: File) -> std::io::Result<Found> {
        let len = file.metadata()?.len();
        if len == 0 {
            file.write_all_at(&header(FIRST), 0)?;
            file.set_len(FIRST)?;
            return Ok(Found {
                journal: JournalFile::at(file, FIRST, FIRST),
                records: Vec::new(),
                headerless: false,
            });
        }
        let mut h = [0u8; HEADER];
        let got = file.read_at(&mut h, 0)?;
        let (start, headerless) = match start_of(&h[..got]) {
            Some(start) => (start, false),
            None if got >= 8 && h[..8] == MAGIC[..] => {
                return Err(std::io::Error::other("the inode journal's header is torn"));
            }
            None => (0, true),
        };
        let mut records = vec![0u8; len.saturating_sub(start) as usize];
        file.read_exact_at(&mut records, start)?;
        Ok(Found {
            journal: JournalFile::at(file, start, len),
            records,
            headerless,
        })
    }

    fn at(file: File, start: u64, end: u64) -> JournalFile {
        JournalFile {
            file,
            start: AtomicU64::new(start),
            end: AtomicU64::new(end),
            pending: AtomicU64::new(0),
            failed: AtomicBool::new(false),
        }
    }

    /// Keeps the first `len` bytes of records (a record cut short by a
    /// server's death is dropped); the next record goes after them.
    pub fn keep(&self, len: usize) -> std::io::Result<()> {
        let end = self.start.load(Ordering::Relaxed) + len as u64;
        self.file.set_len(end)?;
        self.end.store(end, Ordering::Relaxed);
        Ok(())
    }

    /// The bytes of records (what the journal holds in memory).
    pub fn bytes(&self) -> u64 {
        self.end.load(Ordering::Relaxed) - self.start.load(Ordering::Relaxed)
    }

    fn failed(&self, e: &std::io::Error) {
        if !self.failed.swap(true, Ordering::Relaxed) {
            log::error!(
                "cannot write the inode journal ({e}): a next server would not know every inode"
            );
        }
    }
}

impl JournalSink for JournalFile {
    fn append(&self, record: &[u8]) {
        // Called under the table's lock: one writer at a time.
        let end = self.end.load(Ordering::Relaxed);
        match self.file.write_all_at(record, end) {
            Ok(()) => self.end.store(end + record.len() as u64, Ordering::Relaxed),
            Err(e) => self.failed(&e),
        }
    }

    fn snapshot_part(&self, part: &[u8]) {
        let at = self.end.load(Ordering::Relaxed).max(FIRST) + self.pending.load(Ordering::Relaxed);
        match self.file.write_all_at(part, at) {
            Ok(()) => {
                self.pending.fetch_add(part.len() as u64, Ordering::Relaxed);
            }
            Err(e) => {
                log::warn!("cannot compact the inode journal ({e}): it grows on");
                self.pending.store(u64::MAX, Ordering::Relaxed);
            }
        }
    }

    fn end_snapshot(&self, keep: bool) -> bool {
        let len = self.pending.swap(0, Ordering::Relaxed);
        let old_start = self.start.load(Ordering::Relaxed);
        let end = self.end.load(Ordering::Relaxed);
        let new_start = end.max(FIRST);
        let made = keep
            && len != u64::MAX
            && self
                .file
                .set_len(new_start + len)
                // The step that makes it the journal.
                .and_then(|_| self.file.write_all_at(&header(new_start), 0))
                .map_err(|e| log::warn!("cannot compact the inode journal ({e}): it grows on"))
                .is_ok();
        if !made {
            // What was written of it goes; the records stay.
            let _ = self.file.set_len(end);
            return false;
        }
        self.start.store(new_start, Ordering::Relaxed);
        self.end.store(new_start + len, Ordering::Relaxed);
        // The pages of the records before: their memory goes back. (A
        // file written without a header keeps its first page.)
        let from = old_start.max(FIRST);
        let to = new_start / FIRST * FIRST;
        if to > from {
            // SAFETY: fallocate on an open descriptor, a range inside it.
            unsafe {
                libc::fallocate(
                    self.file.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    from as libc::off_t,
                    (to - from) as libc::off_t,
                )
            };
        }
        true
    }
}

#[cfg(test)]
mod tests;
