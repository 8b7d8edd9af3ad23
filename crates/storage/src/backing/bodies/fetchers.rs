//! The fetchers: threads that ask for the bodies queued, a few GETs at a
//! time each, and keep what they bring for the readers.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use crate::{InFlight, ReadRequest, Storage};

use super::{Batch, Bodies, FETCHERS, GETS_A_FETCHER, Store, lock, rel};

/// The stack of a fetcher: it only waits for GETs and files their bodies.
const FETCHER_STACK: usize = 256 * 1024;

impl Store {
    /// Queues for the fetchers what of `wanted` is neither held nor
    /// coming already, and starts fetchers for it. Never waits.
    pub(in crate::backing) fn ahead(&self, wanted: Batch) {
        let start = {
            let mut b = lock(&self.bodies.0);
            if !b.queue(wanted) {
                return;
            }
            // A fetcher running is busy (an idle one ends): one more for
            // each fetcher's share of the keys waiting, up to the bound.
            let start = b
                .pending_keys
                .div_ceil(GETS_A_FETCHER)
                .min(FETCHERS - b.fetchers);
            b.fetchers += start;
            start
        };
        for _ in 0..start {
            let (storage, bodies) = (self.storage.clone(), self.bodies.clone());
            let limits = (self.limit, self.batch_bytes);
            let spawned =
                novelfs_kit::thread::spawn("novelfs-fetch", Some(FETCHER_STACK), move || {
                    fetcher(&*storage, &bodies, limits)
                });
            if let Err(e) = spawned {
                log::warn!("no thread fetching chapters ahead: {e}");
                lock(&self.bodies.0).fetchers -= 1;
            }
        }
    }
}

/// A fetcher: asks for the bodies queued, a few at a time, until none are
/// left, then ends.
fn fetcher(storage: &dyn Storage, bodies: &(Mutex<Bodies>, Condvar), limits: (u64, u64)) {
    loop {
        let chunk = {
            let mut b = lock(&bodies.0);
            let chunk = b.take();
            if chunk.is_empty() {
                b.fetchers -= 1;
                return;
            }
            chunk
        };
        fetch(storage, bodies, limits, chunk);
    }
}

/// Fetches `wanted` (marked under way) with its GETs under way at once,
/// at most `batch_bytes` of bodies in flight, keeping what fits in
/// `limit`.
fn fetch(
    storage: &dyn Storage,
    bodies: &(Mutex<Bodies>, Condvar),
    (limit, batch_bytes): (u64, u64),
    wanted: Batch,
) {
    let (lock_, done) = bodies;
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
        requests: GETS_A_FETCHER,
        bytes: batch_bytes,
    };
    if requests.len() == wanted.len() {
        // Each body is kept, and its waiting reader woken, as it arrives:
        // a reader of the first chapters of a batch does not wait for the
        // last.
        let begun = Instant::now();
        let results = storage.read_many(requests, limits);
        for ((key, version), result) in wanted.iter().zip(results) {
            let mut b = lock(lock_);
            // Read with If-Match: the bytes are of the version asked for.
            if let Ok(object) = result {
                b.put(key, (version.clone(), begun), Arc::new(object.bytes), limit);
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
