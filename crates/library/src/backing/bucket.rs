//! A library in an S3 bucket (or anything speaking its API), through
//! `novelfs_storage`: a directory's names, sizes and versions come from its
//! listing (ListObjectsV2, kept for the listing TTL, so nothing is asked
//! per chapter but its one GET), a chapter's bytes from one GET, and the
//! chapters ahead of a reader are fetched many at a time into a bounded
//! store of bodies, so latency is paid once per batch.

use std::collections::HashMap;
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use novelfs_storage::{Entry, Kind, Storage, Version};

use super::bodies::{BATCHES_AT_ONCE, Batch, Bodies, fetch, lock, rel, to_io};
use super::{Backing, EntryKind, Meta, Opened};

/// Listings kept before those past their TTL are dropped.
const PRUNE_LISTINGS_AT: usize = 1024;

/// A directory's listing as last made.
struct Listed {
    at: Instant,
    entries: Arc<Vec<Entry>>,
}

/// A library under `s3://BUCKET/PREFIX`.
pub struct BucketBacking {
    storage: Arc<dyn Storage>,
    ttl: Duration,
    /// At most this many bytes of bodies fetched ahead and not yet read.
    ahead_bytes: u64,
    listings: Mutex<HashMap<PathBuf, Listed>>,
    bodies: Arc<(Mutex<Bodies>, Condvar)>,
    queue: OnceLock<Mutex<Sender<Batch>>>,
    /// How long an open waits for a GET already under way.
    wait: Duration,
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

fn hash64(v: &impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
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
    /// once per `ttl`, and holding at most `ahead_bytes` of bodies fetched
    /// ahead of readers.
    pub fn new(storage: Arc<dyn Storage>, ttl: Duration, ahead_bytes: u64, wait: Duration) -> Self {
        BucketBacking {
            storage,
            ttl,
            ahead_bytes,
            listings: Mutex::new(HashMap::new()),
            bodies: Arc::default(),
            queue: OnceLock::new(),
            wait,
        }
    }

    /// The listing of `dir`, made again once it is older than the TTL.
    fn listing(&self, dir: &Path) -> io::Result<Arc<Vec<Entry>>> {
        if let Some(l) = lock(&self.listings).get(dir)
            && l.at.elapsed() < self.ttl
        {
            return Ok(l.entries.clone());
        }
        let entries = Arc::new(self.storage.list(&rel(dir)?).map_err(to_io)?);
        let mut listings = lock(&self.listings);
        // Listings past their TTL serve nothing: they go when there are
        // many, so what is kept is what a TTL's reading listed.
        if listings.len() >= PRUNE_LISTINGS_AT {
            listings.retain(|_, l| l.at.elapsed() < self.ttl);
        }
        listings.insert(
            dir.to_path_buf(),
            Listed {
                at: Instant::now(),
                entries: entries.clone(),
            },
        );
        Ok(entries)
    }

    /// The listed entry of `path`, from its directory's listing.
    fn listed(&self, path: &Path) -> io::Result<Option<Entry>> {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Ok(None);
        };
        match self.listing(dir) {
            Ok(entries) => Ok(entries.iter().find(|e| e.name == name).cloned()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn sender(&self) -> &Mutex<Sender<Batch>> {
        self.queue.get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<Batch>();
            let storage = self.storage.clone();
            let bodies = self.bodies.clone();
            let limit = self.ahead_bytes;
            let spawned = std::thread::Builder::new()
                .name("novelfs-fetch".into())
                .spawn(move || {
                    // A batch queued while others are under way starts at
                    // once (up to `BATCHES_AT_ONCE`): a reader's next batch
                    // goes out before the tail of the one it is reading
                    // has come, so GETs stay in flight.
                    let running = Arc::new(AtomicUsize::new(0));
                    for batch in rx {
                        if running.load(Ordering::Acquire) >= BATCHES_AT_ONCE {
                            fetch(&*storage, &bodies, limit, batch);
                            continue;
                        }
                        running.fetch_add(1, Ordering::AcqRel);
                        let (storage, bodies, done) =
                            (storage.clone(), bodies.clone(), running.clone());
                        let spawned = std::thread::Builder::new()
                            .name("novelfs-fetch".into())
                            .spawn(move || {
                                fetch(&*storage, &bodies, limit, batch);
                                done.fetch_sub(1, Ordering::AcqRel);
                            });
                        if spawned.is_err() {
                            running.fetch_sub(1, Ordering::AcqRel);
                        }
                    }
                });
            if let Err(e) = spawned {
                log::warn!("no thread fetching chapters ahead: {e}");
            }
            Mutex::new(tx)
        })
    }

    /// The body of `path` in `version` when it is held, waiting for its
    /// GET if one is under way.
    fn held(&self, path: &Path, version: &Version) -> Option<Arc<Vec<u8>>> {
        let (bodies, done) = &*self.bodies;
        let deadline = Instant::now() + self.wait;
        let mut b = lock(bodies);
        b.queued.remove(path);
        while b.fetching.contains(path) {
            let left = deadline.checked_duration_since(Instant::now())?;
            b = done
                .wait_timeout(b, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        b.get(path, version)
    }
}

impl Backing for BucketBacking {
    fn list(&self, dir: &Path) -> io::Result<Vec<(OsString, EntryKind)>> {
        Ok(self
            .listing(dir)?
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
        // would cost a LIST that nothing else needs).
        let parent_listed = path.parent().is_some_and(|p| {
            lock(&self.listings)
                .get(p)
                .is_some_and(|l| l.at.elapsed() < self.ttl)
        });
        if !is_root && !parent_listed {
            match self.listing(path) {
                Ok(entries) => return Ok(Some(dir_meta(path, &entries))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        if !is_root {
            match self.listed(path)? {
                None => return Ok(None),
                Some(e) if e.kind == Kind::File => {
                    return Ok(Some(file_meta(&e.version, e.size, e.modified)));
                }
                Some(_) => {}
            }
        }
        let entries = match self.listing(path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound && !is_root => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(Some(dir_meta(path, &entries)))
    }

    fn open(&self, path: &Path) -> io::Result<Option<Box<dyn Opened>>> {
        let Some(listed) = self.listed(path)? else {
            return Ok(None);
        };
        if listed.kind != Kind::File {
            return Ok(None);
        }
        if let Some(bytes) = self.held(path, &listed.version) {
            let meta = file_meta(&listed.version, bytes.len() as u64, listed.modified);
            return Ok(Some(Box::new(Fetched {
                bytes,
                meta,
                at_hand: true,
            })));
        }
        let object = match self.storage.read(&rel(path)?, None) {
            Ok(o) => o,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(to_io(e)),
        };
        // A version newer than the listing's is read as it is: its time is
        // not known before the next listing, so it is now.
        let modified = if object.version == listed.version {
            listed.modified
        } else {
            SystemTime::now()
        };
        let meta = file_meta(&object.version, object.bytes.len() as u64, modified);
        let bytes = Arc::new(object.bytes);
        lock(&self.bodies.0).put(path, object.version, bytes.clone(), self.ahead_bytes);
        Ok(Some(Box::new(Fetched {
            bytes,
            meta,
            at_hand: false,
        })))
    }

    fn read_ahead(&self, paths: Vec<PathBuf>) {
        let batch: Vec<(PathBuf, Version)> = paths
            .into_iter()
            .filter_map(|p| {
                let e = self.listed(&p).ok()??;
                (e.kind == Kind::File).then_some((p, e.version))
            })
            .collect();
        let batch: Batch = {
            let mut b = lock(&self.bodies.0);
            batch
                .into_iter()
                .filter(|(p, v)| {
                    let held = b.held.get(p).is_some_and(|(held, _, _)| held == v);
                    !held && !b.fetching.contains(p) && b.queued.insert(p.clone())
                })
                .collect()
        };
        if !batch.is_empty() {
            let _ = lock(self.sender()).send(batch);
        }
    }

    fn local_root(&self) -> Option<&Path> {
        None
    }

    fn listing_ttl(&self) -> Option<Duration> {
        Some(self.ttl)
    }
}

/// An object's bytes as one GET returned them: every page of the file is
/// cut from this one version.
struct Fetched {
    bytes: Arc<Vec<u8>>,
    meta: Meta,
    at_hand: bool,
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
