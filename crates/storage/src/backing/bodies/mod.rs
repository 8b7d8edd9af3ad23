//! The bodies of a bucket's chapters as GETs returned them (what the
//! kernel's page cache is to a local library): whole chapters, and the
//! parts of big ones read with ranged GETs. The fetching of what a reader
//! comes to next into them, many GETs in flight, is here too.
//!
//! Each job in a file of its own: `held` (the bodies kept, the least
//! recently used given up first), `queue` (what the fetchers ask for next,
//! fairly among books), `fetchers` (the threads with GETs in flight) and
//! `helpers` (the locks and errors every backing shares).

mod fetchers;
mod held;
mod helpers;
mod queue;

use std::collections::{HashSet, VecDeque};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::{Storage, Version};

use held::Held;
use novelfs_kit::lru::Lru;
use queue::Pending;

pub(super) use helpers::{is_changed, rel};
pub(super) use novelfs_kit::lock;

/// Fetchers at once, each a thread with up to `GETS_A_FETCHER` GETs under
/// way: together they keep up to `FETCHERS * GETS_A_FETCHER` GETs in
/// flight whenever that many bodies are wanted, whichever readers want
/// them (a reader at its book's end and another at its book's start alike).
/// More than a few dozen only queue at the server.
pub(super) const FETCHERS: usize = 8;

/// GETs a fetcher has under way at once: the bodies it takes from the
/// queue at a time. A small share each, so that a fetcher waiting for its
/// slowest GET holds few of the GETs in flight idle.
pub(super) const GETS_A_FETCHER: usize = 8;

/// The bodies' share of the budget is split in two: half for the bodies
/// held, half for those in flight, shared evenly by the fetchers. A body
/// bigger than a fetcher's part still goes, alone (a big chapter's part is
/// a quarter of the share).
fn split(share: u64) -> (u64, u64) {
    let held = share / 2;
    let per_fetcher = (share - held) / FETCHERS as u64;
    (held, per_fetcher.max(1))
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
struct Bodies {
    held: Lru<Key, Held>,
    /// Keys queued for the fetchers and not yet asked for: a reader of
    /// one takes it off the queue and asks itself, and the fetchers skip
    /// it, so no object is asked for twice.
    queued: HashSet<Key>,
    /// Keys whose GET is under way, a fetcher's or a reader's (`Claim`):
    /// a reader of one waits for it rather than asking for the same bytes
    /// again, and the fetchers skip it.
    fetching: HashSet<Key>,
    /// The batches queued, in the order they came, each with how many of
    /// its bodies the fetchers took.
    pending: VecDeque<Pending>,
    /// The keys in `pending` (some may have been taken off by readers).
    pending_keys: usize,
    /// Fetcher threads running.
    fetchers: usize,
}

impl Bodies {
    /// Bodies held within `limit` bytes, none yet.
    fn new(limit: u64) -> Bodies {
        Bodies {
            held: Lru::new(usize::try_from(limit).unwrap_or(usize::MAX)),
            queued: HashSet::new(),
            fetching: HashSet::new(),
            pending: VecDeque::new(),
            pending_keys: 0,
            fetchers: 0,
        }
    }
}

/// What a reader's look at the bodies found.
pub(super) enum Found {
    Held(Arc<Vec<u8>>),
    /// Not held: the caller sends the GET, under this claim.
    Fetch(Claim),
}

/// A reader's GET of a body, marked under way until it is dropped (once
/// the body is kept), when the readers waiting for it are woken.
pub(super) struct Claim {
    bodies: Arc<(Mutex<Bodies>, Condvar)>,
    /// The key marked; `None` when another's GET of it still is.
    key: Option<Key>,
}

impl Claim {
    fn none(bodies: &Arc<(Mutex<Bodies>, Condvar)>) -> Claim {
        Claim {
            bodies: bodies.clone(),
            key: None,
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            lock(&self.bodies.0).fetching.remove(&key);
            self.bodies.1.notify_all();
        }
    }
}

/// Bodies to fetch ahead, each with the version its listing gave.
pub(super) type Batch = Vec<(Key, Version)>;

/// The bodies a bucket's readers share, within `limit` bytes, and the
/// thread that fetches into them ahead of the readers.
pub(super) struct Store {
    storage: Arc<dyn Storage>,
    /// At most this many bytes of bodies held.
    limit: u64,
    /// At most this many bytes of bodies in flight for each fetcher.
    batch_bytes: u64,
    /// How long a reader waits for a GET already under way.
    wait: Duration,
    bodies: Arc<(Mutex<Bodies>, Condvar)>,
    /// Where its hits and misses are counted.
    counters: Option<Arc<crate::Counters>>,
}

impl Store {
    /// Bodies of `storage` held and fetched within `share` bytes, all
    /// told.
    pub(super) fn new(storage: Arc<dyn Storage>, share: u64, wait: Duration) -> Store {
        let (limit, batch_bytes) = split(share);
        Store {
            counters: storage.counters(),
            storage,
            limit,
            batch_bytes,
            wait,
            bodies: Arc::new((Mutex::new(Bodies::new(limit)), Condvar::new())),
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
        self.held_since(key, version, None)
    }

    /// The body of `key` in `version` when it is held and its GET began at
    /// or after `got_since` (any time, `None`), waiting for its GET if one
    /// is under way. Counted as a hit or a miss.
    pub(super) fn held_since(
        &self,
        key: &Key,
        version: &Version,
        got_since: Option<Instant>,
    ) -> Option<Arc<Vec<u8>>> {
        match self.looked_up(key, version, got_since, false) {
            Found::Held(body) => Some(body),
            Found::Fetch(_) => None,
        }
    }

    /// `held_since`, or else the GET the caller is to send for it, marked
    /// under way (`Claim`) in the same look, so that a reader or the
    /// fetchers coming to it meanwhile wait for that GET rather than send
    /// their own.
    pub(super) fn held_or_fetch(
        &self,
        key: &Key,
        version: &Version,
        got_since: Option<Instant>,
    ) -> Found {
        self.looked_up(key, version, got_since, true)
    }

    /// A look at `key`, counted as a hit or a miss; a miss claimed when
    /// `claim`.
    fn looked_up(
        &self,
        key: &Key,
        version: &Version,
        got_since: Option<Instant>,
        claim: bool,
    ) -> Found {
        use crate::Counter::{CacheHits, CacheMisses};
        let found = self.look_up(key, version, got_since, claim);
        if let Some(c) = &self.counters {
            c.count(match found {
                Found::Held(_) => CacheHits,
                Found::Fetch(_) => CacheMisses,
            });
        }
        found
    }

    fn look_up(
        &self,
        key: &Key,
        version: &Version,
        got_since: Option<Instant>,
        claim: bool,
    ) -> Found {
        let (bodies, done) = &*self.bodies;
        let deadline = Instant::now() + self.wait;
        let mut b = lock(bodies);
        b.queued.remove(key);
        while b.fetching.contains(key) {
            // Waited long enough for another's GET: one of its own, not
            // marked (the other still is).
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return Found::Fetch(Claim::none(&self.bodies));
            };
            b = done
                .wait_timeout(b, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        if let Some(body) = b.get(key, version, got_since) {
            return Found::Held(body);
        }
        if !claim {
            return Found::Fetch(Claim::none(&self.bodies));
        }
        b.fetching.insert(key.clone());
        Found::Fetch(Claim {
            bodies: self.bodies.clone(),
            key: Some(key.clone()),
        })
    }

    /// Whether a body of `key` is held, in any version.
    pub(super) fn holds(&self, key: &Key) -> bool {
        lock(&self.bodies.0).held.contains(key)
    }

    /// Keeps `body` of `key`, in the version a GET begun at `got` gave,
    /// for the next reader.
    pub(super) fn put(&self, key: &Key, got: (Version, Instant), body: Arc<Vec<u8>>) {
        lock(&self.bodies.0).put(key, got, body, self.limit);
    }
}

#[cfg(test)]
mod tests {
    use std::ops::Range;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    use crate::{Entry, InFlight, Object, ReadMany, ReadRequest, RelPath, StorageError};

    use super::*;

    /// A storage whose GETs take a while (each call's at once), adding up
    /// the GETs and the bytes every call under way may keep in flight.
    #[derive(Debug, Default)]
    struct Batches {
        in_flight: AtomicU64,
        most_in_flight: AtomicU64,
        gets_in_flight: AtomicUsize,
        most_gets_in_flight: AtomicUsize,
        gets: AtomicUsize,
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
        /// Every GET of the call under way at once (as many as `limits`
        /// lets be), for 200 ms.
        fn read_many(&self, requests: Vec<ReadRequest>, limits: InFlight) -> ReadMany<'_> {
            let gets = requests.len().min(limits.requests);
            let now = self.gets_in_flight.fetch_add(gets, Ordering::SeqCst) + gets;
            self.most_gets_in_flight.fetch_max(now, Ordering::SeqCst);
            let now = self.in_flight.fetch_add(limits.bytes, Ordering::SeqCst) + limits.bytes;
            self.most_in_flight.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(200));
            let results: Vec<_> = requests
                .iter()
                .map(|r| self.read(&r.path, r.version.as_ref()))
                .collect();
            self.gets.fetch_add(results.len(), Ordering::SeqCst);
            self.in_flight.fetch_sub(limits.bytes, Ordering::SeqCst);
            self.gets_in_flight.fetch_sub(gets, Ordering::SeqCst);
            Box::new(results.into_iter())
        }
    }

    /// Chapters `chapters` of book `n`, as a read-ahead asks for them.
    fn batch(n: usize, chapters: Range<usize>) -> Batch {
        chapters
            .map(|i| {
                let key = Key::whole(Path::new(&format!("novels/书{n}/第{i}章.md")));
                let etag = format!("\"{n}-{i}\"");
                (key, Version::ETag { etag, size: 1024 })
            })
            .collect()
    }

    /// Waits until `gets` GETs were answered and none is under way.
    fn settled(storage: &Batches, gets: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while storage.gets.load(Ordering::SeqCst) < gets
            || storage.gets_in_flight.load(Ordering::SeqCst) > 0
        {
            assert!(Instant::now() < deadline, "the GETs never ended");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn every_fetcher_at_once_and_the_bodies_held_fit_in_the_share() {
        let share = 8 << 20;
        let storage = Arc::new(Batches::default());
        let store = Store::new(storage.clone(), share, Duration::from_secs(5));
        for n in 0..6 {
            store.ahead(batch(n, 0..16));
        }
        settled(&storage, 6 * 16);
        let most = storage.most_in_flight.load(Ordering::SeqCst);
        assert!(
            store.held_limit() + most <= share,
            "held {} + in flight {most} over the share {share}",
            store.held_limit()
        );
        // Fetchers did run at once: the bound is not met by running one.
        assert!(most > split(share).1, "one fetcher at a time: {most}");
    }

    /// The end of one book's chapters and the start of the next, asked
    /// for by a walk's two readers: together they keep every GET the
    /// fetchers may have in flight, rather than one batch's share each,
    /// and every chapter is asked for once.
    #[test]
    fn the_gets_in_flight_reach_the_bound_across_a_book_boundary() {
        let storage = Arc::new(Batches::default());
        let store = Store::new(storage.clone(), 8 << 20, Duration::from_secs(5));
        let bound = FETCHERS * GETS_A_FETCHER;
        let tail = bound * 3 / 4;
        store.ahead(batch(1, 100 - tail..100));
        store.ahead(batch(2, 0..bound - tail));
        settled(&storage, bound);
        let most = storage.most_gets_in_flight.load(Ordering::SeqCst);
        assert_eq!(most, bound, "GETs in flight at most {most} of {bound}");
        assert_eq!(storage.gets.load(Ordering::SeqCst), bound);
    }

    /// A reader's batches go out in the order it asked for them (the one
    /// it comes to first first), and another book's batch beside them, a
    /// body each in turn.
    #[test]
    fn a_readers_batches_in_its_order_and_another_books_beside_them() {
        let mut b = Bodies::new(1 << 20);
        assert!(b.queue(batch(1, 0..24)));
        assert!(b.queue(batch(1, 24..32)));
        assert!(b.queue(batch(2, 0..8)));
        assert!(!b.queue(batch(2, 0..8)), "queued already");
        let mut taken = Vec::new();
        loop {
            let chunk = b.take();
            if chunk.is_empty() {
                break;
            }
            assert!(chunk.len() <= GETS_A_FETCHER);
            taken.extend(chunk.into_iter().map(|(k, _)| k));
        }
        let keys =
            |n: usize, chapters: Range<usize>| batch(n, chapters).into_iter().map(|(k, _)| k);
        let expected: Vec<Key> = keys(1, 0..8)
            .zip(keys(2, 0..8))
            .flat_map(|(one, two)| [one, two])
            .chain(keys(1, 8..32))
            .collect();
        assert_eq!(taken, expected);
        assert_eq!(b.pending_keys, 0);
    }

    /// A reader's GET marks its chapter under way: a read-ahead queued
    /// meanwhile sends none, and another reader waits for that GET and
    /// reads its body.
    #[test]
    fn a_readers_get_is_joined_and_never_sent_again() {
        let storage = Arc::new(Batches::default());
        let store = Arc::new(Store::new(storage.clone(), 1 << 20, Duration::from_secs(5)));
        let (key, version) = batch(1, 0..1).pop().unwrap();
        let Found::Fetch(claim) = store.held_or_fetch(&key, &version, None) else {
            panic!("nothing is held yet");
        };
        store.ahead(batch(1, 0..1));
        assert!(!lock(&store.bodies.0).queued.contains(&key), "queued again");
        let other = {
            let (store, key, version) = (store.clone(), key.clone(), version.clone());
            std::thread::spawn(move || store.held_or_fetch(&key, &version, None))
        };
        std::thread::sleep(Duration::from_millis(100));
        store.put(&key, (version, Instant::now()), Arc::new(b"abc".to_vec()));
        drop(claim);
        assert!(matches!(other.join().unwrap(), Found::Held(_)), "joined");
        assert_eq!(storage.gets.load(Ordering::SeqCst), 0, "no GET of its own");
    }

    /// A body is given for a freshness bound only when its GET began at
    /// or after it: what `BucketBacking::open` trusts past a listing's
    /// TTL.
    #[test]
    fn a_body_got_before_the_bound_asked_for_is_not_given_for_it() {
        let store = Store::new(Arc::new(Batches::default()), 1 << 20, Duration::ZERO);
        let key = Key::whole(Path::new("novels/书/第1章.md"));
        let version = Version::ETag {
            etag: "\"1\"".into(),
            size: 3,
        };
        let got = Instant::now();
        store.put(&key, (version.clone(), got), Arc::new(b"abc".to_vec()));
        assert!(store.held_since(&key, &version, Some(got)).is_some());
        let later = got + Duration::from_millis(1);
        assert!(store.held_since(&key, &version, Some(later)).is_none());
        assert!(store.held(&key, &version).is_some(), "any age");
        assert!(store.holds(&key));
    }
}
