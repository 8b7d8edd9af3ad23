//! The bodies of a bucket's chapters as GETs returned them (what the
//! kernel's page cache is to a local library): whole chapters, and the
//! parts of big ones read with ranged GETs. The fetching of what a reader
//! comes to next into them, many GETs in flight, is here too.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

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

/// What a body is of: a chapter whole, or the bytes `range` of one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Key {
    pub(super) path: PathBuf,
    pub(super) range: Option<Range<u64>>,
}

impl Key {
    pub(super) fn whole(path: &Path) -> Key {
        Key {
            path: path.to_path_buf(),
            range: None,
        }
    }

    pub(super) fn part(path: &Path, range: Range<u64>) -> Key {
        Key {
            path: path.to_path_buf(),
            range: Some(range),
        }
    }
}

/// Bodies as GETs returned them, by what they are of and their version,
/// the least recently used given up first past a bound in bytes. A walk
/// that reads a chapter twice (its figures for an index file, then its
/// pages) pays one GET.
#[derive(Default)]
pub(super) struct Bodies {
    held: HashMap<Key, (Version, Arc<Vec<u8>>, u64)>,
    /// The keys held, by when they were last used.
    order: BTreeMap<u64, Key>,
    tick: u64,
    bytes: u64,
    /// Keys queued for the fetch thread and not yet asked for: a reader of
    /// one takes it off the queue and asks itself, and the fetch thread
    /// skips it, so no object is asked for twice.
    queued: HashSet<Key>,
    /// Keys whose GET is under way: a reader of one waits for it rather
    /// than asking for the same bytes again.
    fetching: HashSet<Key>,
}

impl Bodies {
    /// The body of `key` in `version`, marked as just used.
    fn get(&mut self, key: &Key, version: &Version) -> Option<Arc<Vec<u8>>> {
        self.tick += 1;
        let tick = self.tick;
        let (held, body, used) = self.held.get_mut(key)?;
        if held != version {
            return None;
        }
        self.order.remove(used);
        *used = tick;
        self.order.insert(tick, key.clone());
        Some(body.clone())
    }

    /// Whether `key` is held in `version`, under way or queued: nothing to
    /// ask for.
    fn coming(&self, key: &Key, version: &Version) -> bool {
        self.held
            .get(key)
            .is_some_and(|(held, _, _)| held == version)
            || self.fetching.contains(key)
            || self.queued.contains(key)
    }

    /// Keeps `body` unless it alone is over `limit`, giving up the least
    /// recently used bodies to make room.
    fn put(&mut self, key: &Key, version: Version, body: Arc<Vec<u8>>, limit: u64) {
        let len = body.len() as u64;
        if len > limit {
            return;
        }
        if let Some((_, old, used)) = self.held.remove(key) {
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
        self.order.insert(self.tick, key.clone());
        self.held.insert(key.clone(), (version, body, self.tick));
    }
}

/// Bodies to fetch ahead, each with the version its listing gave.
pub(super) type Batch = Vec<(Key, Version)>;

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
        // 5xx may pass), or the object replaced under a read: never what
        // a file is.
        _ => io::ErrorKind::NotConnected,
    };
    io::Error::new(kind, e)
}

/// Whether `e` says an object was replaced under a read of one version.
pub(super) fn is_changed(e: &io::Error) -> bool {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<StorageError>())
        .is_some_and(|s| matches!(s, StorageError::Changed { .. }))
}

/// The bodies a bucket's readers share, within `limit` bytes, and the
/// thread that fetches into them ahead of the readers.
pub(super) struct Store {
    storage: Arc<dyn Storage>,
    /// At most this many bytes of bodies held; each batch fetched ahead
    /// keeps at most as many in flight.
    limit: u64,
    /// How long a reader waits for a GET already under way.
    wait: Duration,
    bodies: Arc<(Mutex<Bodies>, Condvar)>,
    queue: OnceLock<Mutex<Sender<Batch>>>,
}

impl Store {
    pub(super) fn new(storage: Arc<dyn Storage>, limit: u64, wait: Duration) -> Store {
        Store {
            storage,
            limit,
            wait,
            bodies: Arc::default(),
            queue: OnceLock::new(),
        }
    }

    /// The body of `key` in `version` when it is held, waiting for its
    /// GET if one is under way.
    pub(super) fn held(&self, key: &Key, version: &Version) -> Option<Arc<Vec<u8>>> {
        let (bodies, done) = &*self.bodies;
        let deadline = Instant::now() + self.wait;
        let mut b = lock(bodies);
        b.queued.remove(key);
        while b.fetching.contains(key) {
            let left = deadline.checked_duration_since(Instant::now())?;
            b = done
                .wait_timeout(b, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        b.get(key, version)
    }

    /// Keeps `body` of `key` for the next reader.
    pub(super) fn put(&self, key: &Key, version: Version, body: Arc<Vec<u8>>) {
        lock(&self.bodies.0).put(key, version, body, self.limit);
    }

    /// Queues for the fetch thread what of `wanted` is neither held nor
    /// coming already. Never waits.
    pub(super) fn ahead(&self, wanted: Batch) {
        let batch: Batch = {
            let mut b = lock(&self.bodies.0);
            wanted
                .into_iter()
                .filter(|(k, v)| !b.coming(k, v) && b.queued.insert(k.clone()))
                .collect()
        };
        if !batch.is_empty() {
            let _ = lock(self.sender()).send(batch);
        }
    }

    fn sender(&self) -> &Mutex<Sender<Batch>> {
        self.queue.get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<Batch>();
            let storage = self.storage.clone();
            let bodies = self.bodies.clone();
            let limit = self.limit;
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
}

/// Fetches `batch` with many GETs under way, keeping what fits.
fn fetch(storage: &dyn Storage, bodies: &(Mutex<Bodies>, Condvar), limit: u64, batch: Batch) {
    let (lock_, done) = bodies;
    let wanted: Batch = {
        let mut b = lock(lock_);
        let mut wanted = Vec::new();
        for (k, v) in batch {
            if b.queued.remove(&k) && !b.held.contains_key(&k) && b.fetching.insert(k.clone()) {
                wanted.push((k, v));
            }
        }
        wanted
    };
    let requests: Vec<ReadRequest> = wanted
        .iter()
        .filter_map(|(k, v)| {
            let path = rel(&k.path).ok()?;
            Some(match &k.range {
                None => ReadRequest::new(path, Some(v.clone())),
                Some(r) => ReadRequest::range(path, Some(v.clone()), r.clone()),
            })
        })
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
        for ((key, version), result) in wanted.iter().zip(results) {
            let mut b = lock(lock_);
            // Read with If-Match: the bytes are of the version asked for.
            if let Ok(object) = result {
                b.put(key, version.clone(), Arc::new(object.bytes), limit);
            }
            b.fetching.remove(key);
            drop(b);
            done.notify_all();
        }
    }
    let mut b = lock(lock_);
    for (key, _) in &wanted {
        b.fetching.remove(key);
    }
    drop(b);
    done.notify_all();
}
