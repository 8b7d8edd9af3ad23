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

/// Batches fetched at once (each with up to `GETS_IN_FLIGHT` GETs) by
/// threads of their own, besides the one the queue's thread fetches itself
/// when these are all busy.
pub(super) const BATCHES_AT_ONCE: usize = 3;

/// The bodies' share of the budget is split in two: half for the bodies
/// held, half for those in flight, shared evenly by every batch that may
/// be under way at once. A body bigger than a batch's part still goes,
/// alone in its batch (a big chapter's part is a quarter of the share).
fn split(share: u64) -> (u64, u64) {
    let held = share / 2;
    let per_batch = (share - held) / (BATCHES_AT_ONCE as u64 + 1);
    (held, per_batch.max(1))
}

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
    /// At most this many bytes of bodies held.
    limit: u64,
    /// At most this many bytes of bodies in flight for each batch fetched
    /// ahead.
    batch_bytes: u64,
    /// How long a reader waits for a GET already under way.
    wait: Duration,
    bodies: Arc<(Mutex<Bodies>, Condvar)>,
    queue: OnceLock<Mutex<Sender<Batch>>>,
}

impl Store {
    /// Bodies of `storage` held and fetched within `share` bytes, all
    /// told.
    pub(super) fn new(storage: Arc<dyn Storage>, share: u64, wait: Duration) -> Store {
        let (limit, batch_bytes) = split(share);
        Store {
            storage,
            limit,
            batch_bytes,
            wait,
            bodies: Arc::default(),
            queue: OnceLock::new(),
        }
    }

    /// At most this many bytes of bodies are held: a big chapter's part
    /// and the parts fetched ahead of it fit in it together.
    pub(super) fn held_limit(&self) -> u64 {
        self.limit
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
            let (limit, batch_bytes) = (self.limit, self.batch_bytes);
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
                            fetch(&*storage, &bodies, (limit, batch_bytes), batch);
                            continue;
                        }
                        running.fetch_add(1, Ordering::AcqRel);
                        let (storage, bodies, done) =
                            (storage.clone(), bodies.clone(), running.clone());
                        let spawned = std::thread::Builder::new()
                            .name("novelfs-fetch".into())
                            .spawn(move || {
                                fetch(&*storage, &bodies, (limit, batch_bytes), batch);
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

/// Fetches `batch` with many GETs under way, at most `batch_bytes` of
/// bodies in flight, keeping what fits in `limit`.
fn fetch(
    storage: &dyn Storage,
    bodies: &(Mutex<Bodies>, Condvar),
    (limit, batch_bytes): (u64, u64),
    batch: Batch,
) {
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
        bytes: batch_bytes,
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

#[cfg(test)]
mod tests {
    use std::ops::Range;
    use std::sync::atomic::AtomicU64;

    use novelfs_storage::{Entry, Object, ReadMany};

    use super::*;

    /// A storage whose batches take a while, adding up the bytes every
    /// batch under way may keep in flight.
    #[derive(Debug, Default)]
    struct Batches {
        in_flight: AtomicU64,
        most_in_flight: AtomicU64,
        batches: AtomicUsize,
    }

    fn none<T>(p: &RelPath) -> Result<T, StorageError> {
        Err(StorageError::NotFound {
            path: p.to_string(),
        })
    }

    impl Storage for Batches {
        fn describe(&self) -> String {
            "batches".into()
        }
        fn check(&self) -> Result<(), StorageError> {
            Ok(())
        }
        fn list(&self, p: &RelPath) -> Result<Vec<Entry>, StorageError> {
            none(p)
        }
        fn stat(&self, p: &RelPath) -> Result<Entry, StorageError> {
            none(p)
        }
        fn put(&self, p: &RelPath, _: Vec<u8>) -> Result<(), StorageError> {
            none(p)
        }
        fn read(&self, _: &RelPath, v: Option<&Version>) -> Result<Object, StorageError> {
            Ok(Object {
                bytes: vec![0; 1024],
                version: v.cloned().unwrap_or(Version::Prefix),
            })
        }
        fn read_range(
            &self,
            p: &RelPath,
            _: Range<u64>,
            v: Option<&Version>,
        ) -> Result<Object, StorageError> {
            self.read(p, v)
        }
        fn read_many(&self, requests: Vec<ReadRequest>, limits: InFlight) -> ReadMany<'_> {
            self.batches.fetch_add(1, Ordering::SeqCst);
            let now = self.in_flight.fetch_add(limits.bytes, Ordering::SeqCst) + limits.bytes;
            self.most_in_flight.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(200));
            let results: Vec<_> = requests
                .iter()
                .map(|r| self.read(&r.path, r.version.as_ref()))
                .collect();
            self.in_flight.fetch_sub(limits.bytes, Ordering::SeqCst);
            Box::new(results.into_iter())
        }
    }

    fn batch(n: usize) -> Batch {
        (0..8)
            .map(|i| {
                let key = Key::whole(Path::new(&format!("novels/书/第{n}-{i}章.md")));
                let etag = format!("\"{n}-{i}\"");
                (key, Version::ETag { etag, size: 1024 })
            })
            .collect()
    }

    #[test]
    fn every_batch_at_once_and_the_bodies_held_fit_in_the_share() {
        let share = 8 << 20;
        let storage = Arc::new(Batches::default());
        let store = Store::new(storage.clone(), share, Duration::from_secs(5));
        for n in 0..6 {
            store.ahead(batch(n));
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while storage.batches.load(Ordering::SeqCst) < 6
            || storage.in_flight.load(Ordering::SeqCst) > 0
        {
            assert!(Instant::now() < deadline, "the batches never ended");
            std::thread::sleep(Duration::from_millis(20));
        }
        let most = storage.most_in_flight.load(Ordering::SeqCst);
        assert!(
            store.held_limit() + most <= share,
            "held {} + in flight {most} over the share {share}",
            store.held_limit()
        );
        // Batches did run at once: the bound is not met by running one.
        assert!(most > split(share).1, "one batch at a time: {most}");
    }
}
