//! A library in an S3 bucket (or anything speaking its API), through
//! `novelfs_storage`: a directory's names, sizes and versions come from its
//! listing (ListObjectsV2, kept for the listing TTL, so nothing is asked
//! per chapter but its one GET), a chapter's bytes from one GET, and the
//! chapters ahead of a reader are fetched many at a time into a bounded
//! store of bodies, so latency is paid once per batch.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use novelfs_storage::{
    Entry, InFlight, Kind, ReadRequest, RelPath, Storage, StorageError, Version,
};

use super::{Backing, EntryKind, Meta, Opened};

/// GETs under way at once for the chapters ahead of a reader. Latency is
/// paid once per this many chapters; more than a few dozen only queue at
/// the server.
pub(crate) const GETS_IN_FLIGHT: usize = 16;

/// Batches fetched at once (each with up to `GETS_IN_FLIGHT` GETs).
const BATCHES_AT_ONCE: usize = 3;

/// Listings kept before those past their TTL are dropped.
const PRUNE_LISTINGS_AT: usize = 1024;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A directory's listing as last made.
struct Listed {
    at: Instant,
    entries: Arc<Vec<Entry>>,
}

/// Chapters' bodies as GETs returned them, by path and version, the least
/// recently used given up first past a bound in bytes: what the kernel's
/// page cache is to a local library. A walk that reads a chapter twice
/// (its figures for an index file, then its pages) pays one GET.
#[derive(Default)]
struct Bodies {
    held: HashMap<PathBuf, (Version, Arc<Vec<u8>>, u64)>,
    /// The paths held, by when they were last used.
    order: BTreeMap<u64, PathBuf>,
    tick: u64,
    bytes: u64,
    /// Paths queued for the fetch thread and not yet asked for: an open of
    /// one takes it off the queue and asks itself, and the fetch thread
    /// skips it, so no object is asked for twice.
    queued: HashSet<PathBuf>,
    /// Paths whose GET is under way: an open of one waits for it rather
    /// than asking for the same object again.
    fetching: HashSet<PathBuf>,
}

impl Bodies {
    /// The body of `path` in `version`, marked as just used.
    fn get(&mut self, path: &Path, version: &Version) -> Option<Arc<Vec<u8>>> {
        self.tick += 1;
        let tick = self.tick;
        let (held, body, used) = self.held.get_mut(path)?;
        if held != version {
            return None;
        }
        self.order.remove(used);
        *used = tick;
        self.order.insert(tick, path.to_path_buf());
        Some(body.clone())
    }

    /// Keeps `body` unless it alone is over `limit`, giving up the least
    /// recently used bodies to make room.
    fn put(&mut self, path: &Path, version: Version, body: Arc<Vec<u8>>, limit: u64) {
        let len = body.len() as u64;
        if len > limit {
            return;
        }
        if let Some((_, old, used)) = self.held.remove(path) {
            self.order.remove(&used);
            self.bytes -= old.len() as u64;
        }
        while self.bytes + len > limit {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            if let Some((_, old, _)) = self.held.remove(&oldest) {
                self.bytes -= old.len() as u64;
            }
        }
        self.tick += 1;
        self.bytes += len;
        self.order.insert(self.tick, path.to_path_buf());
        self.held
            .insert(path.to_path_buf(), (version, body, self.tick));
    }
}

/// Chapters to fetch ahead, each with the version its listing gave.
type Batch = Vec<(PathBuf, Version)>;

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

fn rel(path: &Path) -> io::Result<RelPath> {
    RelPath::new(path.as_os_str()).map_err(to_io)
}

/// The error a reader of the library gets for `e`: its errno, and its
/// words (which never hold a secret).
pub(crate) fn to_io(e: StorageError) -> io::Error {
    let kind = match &e {
        _ if e.is_not_found() => io::ErrorKind::NotFound,
        StorageError::Timeout { .. } => io::ErrorKind::TimedOut,
        StorageError::Unreachable { .. } => io::ErrorKind::ConnectionRefused,
        // The storage failing now (refused credentials may be renewed, a
        // 5xx may pass): never what a file is.
        _ => io::ErrorKind::NotConnected,
    };
    io::Error::new(kind, e.to_string())
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

/// Fetches `batch` with many GETs under way, keeping what fits.
fn fetch(
    storage: &dyn Storage,
    bodies: &(Mutex<Bodies>, Condvar),
    limit: u64,
    batch: Vec<(PathBuf, Version)>,
) {
    let (lock_, done) = bodies;
    let wanted: Vec<(PathBuf, Version)> = {
        let mut b = lock(lock_);
        let mut wanted = Vec::new();
        for (p, v) in batch {
            if b.queued.remove(&p) && !b.held.contains_key(&p) && b.fetching.insert(p.clone()) {
                wanted.push((p, v));
            }
        }
        wanted
    };
    let requests: Vec<ReadRequest> = wanted
        .iter()
        .filter_map(|(p, v)| Some(ReadRequest::new(rel(p).ok()?, Some(v.clone()))))
        .collect();
    let limits = InFlight {
        requests: GETS_IN_FLIGHT,
        bytes: limit.max(1),
    };
    if requests.len() == wanted.len() {
        // Each body is kept, and its waiting reader woken, as it arrives:
        // a reader of the first chapters of a batch does not wait for the
        // last.
        let results = storage.read_many(requests, limits);
        for ((path, _), result) in wanted.iter().zip(results) {
            let mut b = lock(lock_);
            if let Ok(object) = result {
                b.put(path, object.version, Arc::new(object.bytes), limit);
            }
            b.fetching.remove(path);
            drop(b);
            done.notify_all();
        }
    }
    let mut b = lock(lock_);
    for (path, _) in &wanted {
        b.fetching.remove(path);
    }
    drop(b);
    done.notify_all();
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
