//! A chapter opened: a small one from one GET of the whole object (or
//! the body already held), a big one in parts (`ranged`), each in the
//! version its listing gave or the one a new listing gives.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use crate::{Entry, EntryKind, RelPath, StorageError, Version};

use super::super::bodies::{Found, Key, is_changed, rel};
use super::super::listings;
use super::super::ranged::Ranged;
use super::super::{Meta, Opened};
use super::BucketBacking;
use super::meta::file_meta;

impl BucketBacking {
    /// A big chapter, read in parts, in its listed version; when that
    /// version is gone, in the one a new listing gives.
    pub(super) fn open_big(
        &self,
        path: &Path,
        listed: Entry,
    ) -> io::Result<Option<Box<dyn Opened>>> {
        let meta = file_meta(&listed.version, listed.size, listed.modified);
        match Ranged::open(self.big.clone(), path, listed.version, meta) {
            Ok(r) => Ok(Some(Box::new(r))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            // Its listing was forgotten: the entry now is the new one.
            Err(e) if is_changed(&e) => match self.listings.entry(path)? {
                Some(e) if e.kind == EntryKind::File => {
                    let meta = file_meta(&e.version, e.size, e.modified);
                    if e.size <= self.big.part_bytes {
                        return self.open_whole(path, e);
                    }
                    match Ranged::open(self.big.clone(), path, e.version, meta) {
                        Ok(r) => Ok(Some(Box::new(r))),
                        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                        Err(e) => Err(e),
                    }
                }
                _ => Ok(None),
            },
            Err(e) => Err(e),
        }
    }

    /// A chapter read whole, with one GET (or from the bodies held).
    pub(super) fn open_whole(
        &self,
        path: &Path,
        listed: Entry,
    ) -> io::Result<Option<Box<dyn Opened>>> {
        let key = Key::whole(path);
        let claim = match self.store.held_or_fetch(&key, &listed.version, None) {
            Found::Held(bytes) => {
                if self.outage.is_down() {
                    self.outage.served_stale();
                }
                let opened = Fetched::opened(bytes, &listed.version, listed.modified, true);
                return Ok(Some(opened));
            }
            Found::Fetch(claim) => claim,
        };
        // A version no ETag tells is read pinned: the answer is then known
        // to be the listed version, and has the listing's time. Replaced
        // since, it is read as it is now.
        let pinned = matches!(listed.version, Version::SizeAndTime { .. });
        let mut got = self.get_whole(&key, &rel(path)?, pinned.then_some(&listed.version));
        if pinned && matches!(got, Err(StorageError::Changed { .. })) {
            got = self.get_whole(&key, &rel(path)?, None);
        }
        drop(claim);
        let (bytes, version) = match got {
            Ok(got) => got,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(io::Error::from(e)),
        };
        // A version newer than the listing's is read as it is: its time is
        // not known before the next listing, so it is now.
        let modified = if version == listed.version {
            listed.modified
        } else {
            SystemTime::now()
        };
        Ok(Some(Fetched::opened(bytes, &version, modified, false)))
    }

    /// One GET of the whole object at `rel`, pinned to a version (its
    /// bytes are then of that version: If-Match) or of any, its body kept
    /// for `key` as of when the GET began; the body and its version.
    pub(super) fn get_whole(
        &self,
        key: &Key,
        rel: &RelPath,
        pinned: Option<&Version>,
    ) -> Result<(Arc<Vec<u8>>, Version), StorageError> {
        let begun = Instant::now();
        let object = self.storage.read(rel, pinned)?;
        let version = pinned.cloned().unwrap_or(object.version);
        let bytes = Arc::new(object.bytes);
        self.store.put(key, (version.clone(), begun), bytes.clone());
        Ok((bytes, version))
    }

    /// A small chapter its directory's last listing names, however old
    /// that listing is: held from a GET begun within the TTL, or read now
    /// with a GET pinned to the listed version. Either GET saw the object
    /// as a listing made then would have, so a walk of the books that
    /// outlasts a book's listing reads the rest of the book without
    /// listing it again. `None` when it is not known so, or is held only
    /// from a GET older than the TTL (a LIST, not a GET, says whether it
    /// is still that version), or was replaced since (a new listing says
    /// what it is now).
    pub(super) fn open_listed_before(
        &self,
        path: &Path,
    ) -> Option<io::Result<Option<Box<dyn Opened>>>> {
        if self.ttl.is_zero() || listings::switched_off("listed") {
            return None;
        }
        let listed = self.listings.kept_entry(path)?;
        if listed.kind != EntryKind::File || listed.size > self.big.part_bytes {
            return None;
        }
        let key = Key::whole(path);
        let since = Instant::now().checked_sub(self.ttl)?;
        let claim = match self.store.held_or_fetch(&key, &listed.version, Some(since)) {
            Found::Held(bytes) => {
                let opened = Fetched::opened(bytes, &listed.version, listed.modified, true);
                return Some(Ok(Some(opened)));
            }
            Found::Fetch(claim) => claim,
        };
        if self.store.holds(&key) {
            return None;
        }
        let got = self.get_whole(&key, &rel(path).ok()?, Some(&listed.version));
        drop(claim);
        let bytes = match got {
            Ok((bytes, _)) => bytes,
            // Gone since a snapshot: its directory is listed.
            Err(e) if e.is_not_found() && self.listings.following() => {
                self.listings.forget(path.parent()?);
                return None;
            }
            Err(e) if e.is_not_found() => return Some(Ok(None)),
            Err(StorageError::Changed { .. }) => {
                self.listings.forget(path.parent()?);
                return None;
            }
            Err(e) => return Some(Err(io::Error::from(e))),
        };
        let opened = Fetched::opened(bytes, &listed.version, listed.modified, false);
        Some(Ok(Some(opened)))
    }
}

/// An object's bytes as one GET returned them: every page of the file is
/// cut from this one version.
struct Fetched {
    bytes: Arc<Vec<u8>>,
    meta: Meta,
    at_hand: bool,
}

impl Fetched {
    /// `bytes` opened as a file of `version`, changed at `modified`;
    /// `at_hand` when no GET was waited for.
    fn opened(
        bytes: Arc<Vec<u8>>,
        version: &Version,
        modified: SystemTime,
        at_hand: bool,
    ) -> Box<dyn Opened> {
        let meta = file_meta(version, bytes.len() as u64, modified);
        Box::new(Fetched {
            bytes,
            meta,
            at_hand,
        })
    }
}

impl Opened for Fetched {
    fn meta(&self) -> &Meta {
        &self.meta
    }

    fn at_hand(&self) -> bool {
        self.at_hand
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let start = (offset as usize).min(self.bytes.len());
        let n = buf.len().min(self.bytes.len() - start);
        buf[..n].copy_from_slice(&self.bytes[start..start + n]);
        Ok(n)
    }

    fn unchanged(&self) -> io::Result<bool> {
        Ok(true)
    }

    fn read_all(&self, max: u64) -> io::Result<Vec<u8>> {
        let n = (self.bytes.len() as u64).min(max + 1) as usize;
        Ok(self.bytes[..n].to_vec())
    }
}
