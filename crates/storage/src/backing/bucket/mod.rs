//! A library in an S3 bucket (or anything speaking its API), through
//! `novelfs_storage`: a directory's names, sizes and versions come from its
//! listing (ListObjectsV2, kept for the listing TTL, so nothing is asked
//! per chapter but its one GET), a chapter's bytes from one GET (a big
//! chapter's from ranged GETs of its parts, `ranged`), and the chapters
//! ahead of a reader are fetched many at a time into a bounded store of
//! bodies, so latency is paid once per batch.
//!
//! `meta` makes a file's and a directory's attributes from what a listing
//! says; `opening` opens a chapter (whole from one GET, or in parts).

mod meta;
mod opening;

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::outage::{Guarded, Outage};
use crate::{Storage, StorageError};

use super::bodies::{Key, Store};
use super::follow::{Follower, PendingHead};
use super::listings::Listings;
use super::ranged;
use super::snapshot;
use super::{Backing, EntryKind, Meta, Opened};
use meta::{dir_meta, file_meta};

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

    /// How often a mount that follows a published snapshot lists one
    /// directory it reads and compares it with the snapshot (`--drift`;
    /// zero: never).
    pub fn set_drift(&self, every: Duration) {
        self.listings.set_drift(every);
    }

    /// Serves names, sizes and versions from the snapshot `head` names
    /// from now on, with no LIST, checking once per TTL for a newer one
    /// (see `follow`); an error, and listings as before, when its listing
    /// cannot be had or its publisher stopped.
    pub fn follow(&self, head: snapshot::Head) -> Result<(), StorageError> {
        let follower =
            Follower::start(self.storage.clone(), self.ttl, self.listings.drift(), head)?
                .published_to(self.listings.published_index());
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
}

impl Backing for BucketBacking {
    fn list(&self, dir: &Path) -> io::Result<Vec<(OsString, EntryKind)>> {
        Ok(self
            .listings
            .of(dir)?
            .iter()
            .map(|e| (e.name.clone(), e.kind))
            .collect())
    }

    /// A directory's stamp is a digest of its listing (names and
    /// versions), so a chapter added, removed or replaced changes it; a
    /// file's is its listed version.
    fn stat(&self, path: &Path) -> io::Result<Option<Meta>> {
        // A directory of the followed snapshot: its stamp from the root
        // object, without the piece of its files.
        if let Some((digest, newest)) = self.listings.snapshot_shape(path) {
            return Ok(Some(meta::dir_meta_of(path, digest, newest)));
        }
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
                Some(e) if e.kind == EntryKind::File => {
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
        if listed.kind != EntryKind::File {
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
                if e.kind != EntryKind::File {
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

    fn on_published_index(&self, sink: novelfs_library::backing::PublishedIndex) {
        self.listings.on_published_index(sink);
    }

    fn published_figures(&self, dir: &Path) -> Option<novelfs_library::backing::PublishedFigures> {
        self.listings.published_figures(dir)
    }
}

/// A file's metadata as a mount of the bucket gives it from a listing's
/// entry: what a publisher judges its rows against.
pub fn listed_meta(entry: &crate::Entry) -> Meta {
    file_meta(&entry.version, entry.size, entry.modified)
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use crate::Version;

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

    /// A store whose listings give no ETag (its GETs do): a chapter is
    /// opened in the version its listing gave, with the listing's time,
    /// from one GET pinned to its size and time; its directory is listed
    /// once, not again for every chapter read.
    #[test]
    fn a_chapter_listed_without_an_etag_opens_as_listed() {
        let storage = Arc::new(crate::memory::MemoryStorage::new());
        for c in 0..3 {
            storage.insert(&format!("novels/书/{c}.md"), format!("第{c}章").as_bytes());
            storage.age(&format!("novels/书/{c}.md"), Duration::from_secs(3600));
        }
        storage.set_listing_etags(false);
        let backing = BucketBacking::new(
            storage.clone(),
            Duration::from_secs(60),
            1 << 20,
            Duration::from_secs(5),
        );
        assert_eq!(backing.list(Path::new("novels/书")).unwrap().len(), 3);
        for c in 0..3 {
            let path = PathBuf::from(format!("novels/书/{c}.md"));
            let listed = backing.stat(&path).unwrap().unwrap();
            let opened = backing.open(&path).unwrap().unwrap();
            assert_eq!(opened.meta(), &listed, "{path:?}");
            let mut buf = [0u8; 16];
            let n = opened.read_at(&mut buf, 0).unwrap();
            assert_eq!(&buf[..n], format!("第{c}章").as_bytes());
        }
        let asked = storage.asked();
        assert_eq!((asked.lists, asked.gets), (1, 3), "{asked:?}");
    }
}
