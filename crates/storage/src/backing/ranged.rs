//! A big chapter of a bucket, read in parts with ranged GETs: as a local
//! file is read through the page cache, never held whole. Every part is
//! asked for with `If-Match` on the one version the chapter was opened in
//! and kept with the other bodies (`Store`, within their share of
//! `--cache-size`), so a page is cut from that version or fails; it never
//! mixes two. A reader going through the chapter in order (the line
//! index's pass, pages one after another) has the next parts fetched
//! ahead, several GETs in flight.

use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::{RelPath, Storage, StorageError, Version};

use super::bodies::{Key, Store, rel};
use super::listings::Listings;
use super::{Meta, Opened};

/// The biggest part: at 20 ms a request and a few hundred MB/s, a part
/// this size takes several times the latency to arrive, so the latency is
/// a small share of each GET; bigger parts only hold more memory.
pub(super) const MAX_PART_BYTES: u64 = 8 << 20;

/// The smallest part, whatever the budget.
const MIN_PART_BYTES: u64 = 1 << 20;

/// Parts fetched ahead of a reader going through a chapter in order, at
/// most.
pub(super) const PARTS_AHEAD: u64 = 3;

/// The part size for bodies held within `limit` bytes: a quarter of it
/// (so the part read and those fetched ahead fit together), between
/// `MIN_PART_BYTES` and `MAX_PART_BYTES`. A chapter bigger than one part
/// is read in parts.
pub(super) fn part_bytes(limit: u64) -> u64 {
    (limit / (PARTS_AHEAD + 1)).clamp(MIN_PART_BYTES, MAX_PART_BYTES)
}

/// What a ranged chapter needs of its bucket.
pub(super) struct Bucket {
    pub(super) storage: Arc<dyn Storage>,
    pub(super) store: Arc<Store>,
    pub(super) listings: Arc<Listings>,
    pub(super) part_bytes: u64,
    /// Parts fetched ahead of a reader in order.
    pub(super) ahead: u64,
}

/// A big chapter opened in one version.
pub(super) struct Ranged {
    bucket: Arc<Bucket>,
    path: PathBuf,
    rel: RelPath,
    version: Version,
    meta: Meta,
    /// The part read last: a read of the one after it is a reader going
    /// through in order.
    last: AtomicU64,
    at_hand: bool,
}

impl Ranged {
    /// The chapter at `path` in `version` (its listed one), its first part
    /// read: a chapter replaced since its listing fails here with
    /// `Changed`, before anything of it is read.
    pub(super) fn open(
        bucket: Arc<Bucket>,
        path: &Path,
        version: Version,
        meta: Meta,
    ) -> Result<Ranged, io::Error> {
        let at_hand = bucket
            .store
            .held(
                &Key::part(path, 0..bucket.part_bytes.min(meta.len)),
                &version,
            )
            .is_some();
        let ranged = Ranged {
            rel: rel(path)?,
            path: path.to_path_buf(),
            bucket,
            version,
            meta,
            last: AtomicU64::new(u64::MAX),
            at_hand,
        };
        ranged.part(0)?;
        Ok(ranged)
    }

    fn range(&self, part: u64) -> Range<u64> {
        let start = part * self.bucket.part_bytes;
        start..(start + self.bucket.part_bytes).min(self.meta.len)
    }

    /// The bytes of part `part`: held, or read now. Reading the part after
    /// the last one read fetches the next ones ahead.
    fn part(&self, part: u64) -> io::Result<Arc<Vec<u8>>> {
        let b = &*self.bucket;
        let last = self.last.swap(part, Ordering::Relaxed);
        if part == last.wrapping_add(1) {
            let ahead = (part + 1..=part + b.ahead)
                .filter(|p| p * b.part_bytes < self.meta.len)
                .map(|p| (Key::part(&self.path, self.range(p)), self.version.clone()))
                .collect();
            b.store.ahead(ahead);
        }
        let range = self.range(part);
        let key = Key::part(&self.path, range.clone());
        if let Some(body) = b.store.held(&key, &self.version) {
            return Ok(body);
        }
        let want = range.end - range.start;
        let begun = Instant::now();
        match b.storage.read_range(&self.rel, range, Some(&self.version)) {
            Ok(object) if object.bytes.len() as u64 == want => {
                let body = Arc::new(object.bytes);
                b.store
                    .put(&key, (self.version.clone(), begun), body.clone());
                Ok(body)
            }
            Ok(_) => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("{}: a part came short", self.path.display()),
            )),
            Err(e @ StorageError::Changed { .. }) => {
                if let Some(dir) = self.path.parent() {
                    b.listings.forget(dir);
                }
                Err(io::Error::from(e))
            }
            Err(e) => Err(io::Error::from(e)),
        }
    }
}

impl Opened for Ranged {
    fn meta(&self) -> &Meta {
        &self.meta
    }

    fn at_hand(&self) -> bool {
        self.at_hand
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        if offset >= self.meta.len || buf.is_empty() {
            return Ok(0);
        }
        let part = offset / self.bucket.part_bytes;
        let body = self.part(part)?;
        let start = (offset - part * self.bucket.part_bytes) as usize;
        let n = buf.len().min(body.len() - start);
        buf[..n].copy_from_slice(&body[start..start + n]);
        Ok(n)
    }

    /// Every byte is read with `If-Match` on the one version, or not at
    /// all: what is read is always of it.
    fn unchanged(&self) -> io::Result<bool> {
        Ok(true)
    }
}
