//! The bodies of a bucket's chapters as GETs returned them (what the
//! kernel's page cache is to a local library), and the fetching of the
//! chapters ahead of a reader into them, many GETs in flight.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use novelfs_storage::{InFlight, ReadRequest, RelPath, Storage, StorageError, Version};

/// GETs under way at once for the chapters ahead of a reader. Latency is
/// paid once per this many chapters; more than a few dozen only queue at
/// the server.
pub(super) const GETS_IN_FLIGHT: usize = 16;

/// Batches fetched at once (each with up to `GETS_IN_FLIGHT` GETs).
pub(super) const BATCHES_AT_ONCE: usize = 3;

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Chapters' bodies as GETs returned them, by path and version, the least
/// recently used given up first past a bound in bytes: what the kernel's
/// page cache is to a local library. A walk that reads a chapter twice
/// (its figures for an index file, then its pages) pays one GET.
#[derive(Default)]
pub(super) struct Bodies {
    pub(super) held: HashMap<PathBuf, (Version, Arc<Vec<u8>>, u64)>,
    /// The paths held, by when they were last used.
    pub(super) order: BTreeMap<u64, PathBuf>,
    pub(super) tick: u64,
    pub(super) bytes: u64,
    /// Paths queued for the fetch thread and not yet asked for: an open of
    /// one takes it off the queue and asks itself, and the fetch thread
    /// skips it, so no object is asked for twice.
    pub(super) queued: HashSet<PathBuf>,
    /// Paths whose GET is under way: an open of one waits for it rather
    /// than asking for the same object again.
    pub(super) fetching: HashSet<PathBuf>,
}

impl Bodies {
    /// The body of `path` in `version`, marked as just used.
    pub(super) fn get(&mut self, path: &Path, version: &Version) -> Option<Arc<Vec<u8>>> {
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
    pub(super) fn put(&mut self, path: &Path, version: Version, body: Arc<Vec<u8>>, limit: u64) {
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
pub(super) type Batch = Vec<(PathBuf, Version)>;

pub(super) fn rel(path: &Path) -> io::Result<RelPath> {
    RelPath::new(path.as_os_str()).map_err(to_io)
}

/// The error a reader of the library gets for `e`: its errno, and its
/// words (which never hold a secret).
pub(super) fn to_io(e: StorageError) -> io::Error {
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

/// Fetches `batch` with many GETs under way, keeping what fits.
pub(super) fn fetch(
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
