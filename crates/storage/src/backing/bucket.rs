//! A library in an S3 bucket (or anything speaking its API), through
//! `novelfs_storage`: a directory's names, sizes and versions come from its
//! listing (ListObjectsV2, kept for the listing TTL, so nothing is asked
//! per chapter but its one GET), a chapter's bytes from one GET (a big
//! chapter's from ranged GETs of its parts, `ranged`), and the chapters
//! ahead of a reader are fetched many at a time into a bounded store of
//! bodies, so latency is paid once per batch.

use std::ffi::OsString;
use std::hash::Hash;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::outage::{Guarded, Outage};
use crate::{Entry, Kind, RelPath, Storage, StorageError, Version};

use super::bodies::{Key, Store, is_changed, rel, to_io};
use super::follow::{Follower, PendingHead};
use super::listings::{self, Listings};
use super::ranged::{self, Ranged};
use super::snapshot;
use super::{Backing, EntryKind, Meta, Opened};

/// A library under `s3://BUCKET/PREFIX`.
pub struct BucketBacking {
    storage: Arc<dyn Storage>,
    ttl: Duration,
    listings: Arc<Listings>,
    /// Bodies fetched, whole chapters and parts of big ones, within an
    /// eighth of `--cache-size`.
    store: Arc<Store>,
    /// What a big chapter's parts are read with.
    big: Arc<ranged::Bucket>,
    /// Whether the bucket answers.
    outage: Arc<Outage>,
}

impl std::fmt::Debug for BucketBacking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketBacking")
            .field("storage", &self.storage)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

fn stamp_of_time(t: SystemTime) -> (i64, i64) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos() as i64),
        Err(_) => (0, 0),
    }
}

/// Inode numbers and directory stamps reach the persistent index and the
/// inode journal, and every machine of a fleet must give one version the
/// same: the hash is the stable one.
fn hash64(v: &impl Hash) -> u64 {
    novelfs_library::stable_hash::stable_hash(v)
}

/// An object's metadata from its version: a new ETag is a new inode.
fn file_meta(version: &Version, size: u64, modified: SystemTime) -> Meta {
    Meta {
        kind: EntryKind::File,
        len: size,
        dev: 0,
        ino: hash64(version),
        mtime: stamp_of_time(modified),
        ctime: (0, 0),
    }
}

/// A directory's metadata from its listing: its stamp is a digest of the
/// names and versions listed, so a chapter added, removed or replaced
/// changes it.
fn dir_meta(path: &Path, entries: &[Entry]) -> Meta {
    let digest = hash64(
        &entries
            .iter()
            .map(|e| (&e.name, &e.version))
            .collect::<Vec<_>>(),
    );
    let newest = entries
        .iter()
        .map(|e| e.modified)
        .max()
        .unwrap_or(UNIX_EPOCH);
    Meta {
        kind: EntryKind::Dir,
        len: 0,
        dev: 0,
        ino: hash64(&path),
        mtime: stamp_of_time(newest),
        ctime: (digest as i64, 0),
    }
}

impl BucketBacking {
    /// Reads through `storage`, making a directory's listing again at most
    /// once per `ttl`, and holding and fetching at most `ahead_bytes` of bodies
    /// (a reader waits at most `wait` for one under way). A chapter bigger
    /// than a part (see `ranged::part_bytes`) is read in parts.
    /// Every access goes through one `Outage`: while the bucket does not
    /// answer, accesses fail at once but for one probe at a time, and what
    /// was read before is served (`set_stale_if_error`).
    pub fn new(storage: Arc<dyn Storage>, ttl: Duration, ahead_bytes: u64, wait: Duration) -> Self {
        let outage = Outage::new(storage.describe(), storage.counters());
        let storage: Arc<dyn Storage> = Arc::new(Guarded::new(storage, outage.clone()));
        // The listings kept count in the budget beside the bodies: half
        // as much again (the mount leaves the tree's caches the rest).
        let listings = Arc::new(Listings::new(storage.clone(), ttl, ahead_bytes / 2));
        listings.guard(outage.clone());
        let store = Arc::new(Store::new(storage.clone(), ahead_bytes, wait));
        let part_bytes = ranged::part_bytes(store.held_limit());
        let big = Arc::new(ranged::Bucket {
            storage: storage.clone(),
            store: store.clone(),
            listings: listings.clone(),
            part_bytes,
            ahead: (store.held_limit() / part_bytes)
                .saturating_sub(1)
                .min(ranged::PARTS_AHEAD),
        });
        BucketBacking {
            storage,
            ttl,
            listings,
            store,
            big,
            outage,
        }
    }

    /// How long past their freshness the listings (names, sizes, versions)
    /// and bodies read before are served while the bucket does not answer
    /// (`--stale-if-error`; zero: never).
    pub fn set_stale_if_error(&self, d: Duration) {
        self.outage.set_stale_for(d);
    }

    /// Serves names, sizes and versions from the snapshot `head` names
    /// from now on, with no LIST, checking once per TTL for a newer one
    /// (see `follow`); an error, and listings as before, when its listing
    /// cannot be had or its publisher stopped.
    pub fn follow(&self, head: snapshot::Head) -> Result<(), StorageError> {
        let follower = Follower::start(self.storage.clone(), self.ttl, head)?;
        self.listings.follow(Arc::new(follower));
        Ok(())
    }

    /// Follows the snapshot `head` names once it is answered: the first
    /// look that needs a listing waits for it (see `PendingHead`).
    pub fn follow_pending(&self, head: Arc<PendingHead>) {
        self.listings.follow_pending(head);
    }

    /// The freshness rule in force, in words: the snapshot followed, or
    /// listings made again once per TTL.
    pub fn freshness(&self) -> String {
        self.listings.freshness()
    }

    /// A big chapter, read in parts, in its listed version; when that
    /// version is gone, in the one a new listing gives.
    fn open_big(&self, path: &Path, listed: Entry) -> io::Result<Option<Box<dyn Opened>>> {
        let meta = file_meta(&listed.version, listed.size, listed.modified);
        match Ranged::open(self.big.clone(), path, listed.version, meta) {
            Ok(r) => Ok(Some(Box::new(r))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            // Its listing was forgotten: the entry now is the new one.
            Err(e) if is_changed(&e) => match self.listings.entry(path)? {
                Some(e) if e.kind == Kind::File => {
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
    fn open_whole(&self, path: &Path, listed: Entry) -> io::Result<Option<Box<dyn Opened>>> {
        let key = Key::whole(path);
        if let Some(bytes) = self.store.held(&key, &listed.version) {
            if self.outage.is_down() {
                self.outage.served_stale();
            }
            return Ok(Some(Fetched::opened(
                bytes,
                &listed.version,
                listed.modified,
                true,
            )));
        }
        let (bytes, version) = match self.get_whole(&key, &rel(path)?, None) {
            Ok(got) => got,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(to_io(e)),
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
    fn get_whole(
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
    fn open_listed_before(&self, path: &Path) -> Option<io::Result<Option<Box<dyn Opened>>>> {
        if self.ttl.is_zero() || listings::switched_off("listed") {
            return None;
        }
        let listed = self.listings.kept_entry(path)?;
        if listed.kind != Kind::File || listed.size > self.big.part_bytes {
            return None;
        }
        let key = Key::whole(path);
        let since = Instant::now().checked_sub(self.ttl)?;
        if let Some(bytes) = self.store.held_since(&key, &listed.version, Some(since)) {
            let opened = Fetched::opened(bytes, &listed.version, listed.modified, true);
            return Some(Ok(Some(opened)));
        }
        if self.store.holds(&key) {
            return None;
        }
        let bytes = match self.get_whole(&key, &rel(path).ok()?, Some(&listed.version)) {
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
            Err(e) => return Some(Err(to_io(e))),
        };
        let opened = Fetched::opened(bytes, &listed.version, listed.modified, false);
        Some(Ok(Some(opened)))
    }
}

impl Backing for BucketBacking {
    fn list(&self, dir: &Path) -> io::Result<Vec<(OsString, EntryKind)>> {
        Ok(self
            .listings
            .of(dir)?
            .iter()
            .map(|e| {
                let kind = match e.kind {
                    Kind::File => EntryKind::File,
                    Kind::Dir => EntryKind::Dir,
                };
                (e.name.clone(), kind)
            })
            .collect())
    }

    /// A directory's stamp is a digest of its listing (names and
    /// versions), so a chapter added, removed or replaced changes it; a
    /// file's is its listed version.
    fn stat(&self, path: &Path) -> io::Result<Option<Meta>> {
        let is_root = path.as_os_str().is_empty();
        // A bucket has no empty directories: a listing that holds entries
        // says `path` is one, without a listing of its parent (the root's
        // would cost a LIST that nothing else needs). A name its parent's
        // listing holds as a file is looked up there: listed as a
        // directory, it would cost a LIST that finds nothing.
        let parent_listed = path
            .parent()
            .is_some_and(|p| self.listings.fresh(p).is_some());
        if !is_root && !parent_listed && !self.listings.listed_as_file(path) {
            match self.listings.of(path) {
                Ok(entries) => return Ok(Some(dir_meta(path, &entries))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        if !is_root {
            match self.listings.entry(path)? {
                None => return Ok(None),
                Some(e) if e.kind == Kind::File => {
                    return Ok(Some(file_meta(&e.version, e.size, e.modified)));
                }
                Some(_) => {}
            }
        }
        let entries = match self.listings.of(path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound && !is_root => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(Some(dir_meta(path, &entries)))
    }

    fn open(&self, path: &Path) -> io::Result<Option<Box<dyn Opened>>> {
        if let Some(opened) = self.open_listed_before(path) {
            return opened;
        }
        let Some(listed) = self.listings.entry(path)? else {
            return Ok(None);
        };
        if listed.kind != Kind::File {
            return Ok(None);
        }
        if listed.size > self.big.part_bytes {
            return self.open_big(path, listed);
        }
        self.open_whole(path, listed)
    }

    /// The directories are listed a few at a time ahead of the walker
    /// that comes to them in this order (see `list_pace`).
    fn list_ahead(&self, dirs: Vec<PathBuf>) {
        self.listings.ahead(dirs);
    }

    /// Small chapters are fetched whole; of a big one, its first part
    /// (what its first page and its encoding need).
    fn read_ahead(&self, paths: Vec<PathBuf>) {
        let batch = paths
            .into_iter()
            .filter_map(|p| {
                // The last listing's versions, however old: a body of one
                // replaced since is refused by its GET (If-Match) and read
                // again when its reader comes to it, and a book's listing
                // is not made again for what is only fetched ahead.
                let e = match self.listings.kept_entry(&p) {
                    Some(e) => e,
                    None => self.listings.entry(&p).ok()??,
                };
                if e.kind != Kind::File {
                    return None;
                }
                let key = if e.size > self.big.part_bytes {
                    Key::part(&p, 0..self.big.part_bytes)
                } else {
                    Key::whole(&p)
                };
                Some((key, e.version))
            })
            .collect();
        self.store.ahead(batch);
    }

    fn local_root(&self) -> Option<&Path> {
        None
    }

    fn listing_ttl(&self) -> Option<Duration> {
        Some(self.ttl)
    }

    fn freshness(&self) -> Option<String> {
        Some(self.freshness())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An object's inode is the same on every machine and with every
    /// build: it is pinned here (a mount and a published index made by
    /// another toolchain agree on it).
    #[test]
    fn a_versions_inode_is_pinned() {
        let version = Version::ETag {
            etag: "\"9b2cf535f27731c974343645a3985328\"".into(),
            size: 1234,
        };
        let meta = file_meta(&version, 1234, UNIX_EPOCH);
        assert_eq!(meta.ino, PINNED_INO);
    }

    const PINNED_INO: u64 = 12010008029579623612;
}
