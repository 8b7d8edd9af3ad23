//! What a library's storage has done, counted: the requests sent by kind,
//! retries, errors, bytes fetched, the bodies' cache hits and misses, stale
//! serves, and the snapshot in use. One `Counters` per opened bucket,
//! shared by `Arc` between the client (which counts every HTTP attempt as
//! it goes on the wire, see `cloud::wire`) and the library layer.
//!
//! The counters are a fixed block of `SLOTS` atomic words, so that a mount
//! with a holder can keep them in memory the holder shares with its
//! servers (`Counters::in_shared`): the holder reads them without asking
//! the server, and they go on across servers. Word 0 says what the library
//! is (`Remote`), the snapshot's name is kept in the block's last words.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// One counter; its place in the block is its discriminant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// ListObjects requests (each page one).
    List = 1,
    /// GETs of a whole object.
    Get,
    /// GETs with a `Range` header.
    RangedGet,
    Head,
    Put,
    /// Any other request.
    Other,
    /// Conditional GETs answered `304 Not Modified` (counted on the wire:
    /// nothing needs to call for them; also counted as a GET or ranged GET).
    NotModified,
    /// HTTP attempts of an access after its first: object_store's retries
    /// of a failed request, and its resumption of a body cut short.
    Retries,
    /// Accesses that failed, once their retries were spent, for a reason
    /// other than the object being missing or changed.
    Errors,
    /// Bytes of object bodies received.
    BytesFetched,
    /// Reads the bodies' cache answered.
    CacheHits,
    /// Reads the bodies' cache did not hold (a GET follows).
    CacheMisses,
    /// Reads served from what was held while the storage could not say
    /// whether it is still current.
    StaleServes,
}

impl Counter {
    /// Every counter, in the order they are shown.
    pub const ALL: [Counter; 13] = [
        Counter::List,
        Counter::Get,
        Counter::RangedGet,
        Counter::Head,
        Counter::Put,
        Counter::Other,
        Counter::NotModified,
        Counter::Retries,
        Counter::Errors,
        Counter::BytesFetched,
        Counter::CacheHits,
        Counter::CacheMisses,
        Counter::StaleServes,
    ];

    /// Its name in `novelfs status` (`name: value`); with `_` for the
    /// spaces, its key in `--json`.
    pub fn name(self) -> &'static str {
        match self {
            Counter::List => "list requests",
            Counter::Get => "get requests",
            Counter::RangedGet => "ranged get requests",
            Counter::Head => "head requests",
            Counter::Put => "put requests",
            Counter::Other => "other requests",
            Counter::NotModified => "not modified",
            Counter::Retries => "retries",
            Counter::Errors => "errors",
            Counter::BytesFetched => "bytes fetched",
            Counter::CacheHits => "cache hits",
            Counter::CacheMisses => "cache misses",
            Counter::StaleServes => "stale serves",
        }
    }

    /// Its Prometheus metric, the label that sets it apart from the others
    /// of that metric, and the metric's help.
    pub fn metric(
        self,
    ) -> (
        &'static str,
        Option<(&'static str, &'static str)>,
        &'static str,
    ) {
        const REQUESTS: &str = "novelfs_requests_total";
        const REQUESTS_HELP: &str = "HTTP requests sent to the bucket, retries included, by kind";
        let kind = |k| Some(("kind", k));
        match self {
            Counter::List => (REQUESTS, kind("list"), REQUESTS_HELP),
            Counter::Get => (REQUESTS, kind("get"), REQUESTS_HELP),
            Counter::RangedGet => (REQUESTS, kind("ranged_get"), REQUESTS_HELP),
            Counter::Head => (REQUESTS, kind("head"), REQUESTS_HELP),
            Counter::Put => (REQUESTS, kind("put"), REQUESTS_HELP),
            Counter::Other => (REQUESTS, kind("other"), REQUESTS_HELP),
            Counter::NotModified => (
                "novelfs_not_modified_total",
                None,
                "Conditional GETs answered 304 Not Modified",
            ),
            Counter::Retries => (
                "novelfs_retries_total",
                None,
                "HTTP attempts of an access after its first",
            ),
            Counter::Errors => (
                "novelfs_errors_total",
                None,
                "Accesses to the bucket that failed once retries were spent",
            ),
            Counter::BytesFetched => (
                "novelfs_fetched_bytes_total",
                None,
                "Bytes of object bodies received from the bucket",
            ),
            Counter::CacheHits => (
                "novelfs_body_cache_hits_total",
                None,
                "Chapter reads the bodies' cache answered",
            ),
            Counter::CacheMisses => (
                "novelfs_body_cache_misses_total",
                None,
                "Chapter reads the bodies' cache did not hold",
            ),
            Counter::StaleServes => (
                "novelfs_stale_serves_total",
                None,
                "Reads served from what was held while the bucket could not be asked",
            ),
        }
    }
}

/// What the library whose counters these are is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remote {
    /// None opened yet.
    Unknown = 0,
    /// A local directory: no remote storage, nothing counted.
    Local = 1,
    Bucket = 2,
}

/// The words of a block.
pub const SLOTS: usize = 64;
/// The block's bytes.
pub const BYTES: usize = SLOTS * 8;
/// Where the snapshot's name starts: a sequence word (odd while it is
/// written), its length, then its bytes.
const SNAPSHOT_AT: usize = 32;
const SNAPSHOT_MAX: usize = (SLOTS - SNAPSHOT_AT - 2) * 8;

enum Cells {
    Own(Box<[AtomicU64; SLOTS]>),
    Shared(&'static [AtomicU64; SLOTS]),
}

/// The counters of one library's storage.
pub struct Counters {
    cells: Cells,
}

impl std::fmt::Debug for Counters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counters")
            .field("reading", &self.read())
            .finish()
    }
}

impl Counters {
    /// A block of its own, at zero.
    pub fn new() -> Arc<Counters> {
        Arc::new(Counters {
            cells: Cells::Own(Box::new(std::array::from_fn(|_| AtomicU64::new(0)))),
        })
    }

    /// Counters kept in `cells`, memory shared with another process that
    /// reads them (`Reading::from_bytes`); what they hold already goes on.
    pub fn in_shared(cells: &'static [AtomicU64; SLOTS]) -> Arc<Counters> {
        Arc::new(Counters {
            cells: Cells::Shared(cells),
        })
    }

    fn cells(&self) -> &[AtomicU64; SLOTS] {
        match &self.cells {
            Cells::Own(c) => c,
            Cells::Shared(c) => c,
        }
    }

    /// Adds `n` to `counter`.
    pub fn add(&self, counter: Counter, n: u64) {
        self.cells()[counter as usize].fetch_add(n, Ordering::Relaxed);
    }

    /// Counts one of `counter`.
    pub fn count(&self, counter: Counter) {
        self.add(counter, 1);
    }

    pub fn get(&self, counter: Counter) -> u64 {
        self.cells()[counter as usize].load(Ordering::Relaxed)
    }

    /// Says what the library is.
    pub fn set_remote(&self, remote: Remote) {
        self.cells()[0].store(remote as u64, Ordering::Relaxed);
    }

    /// Names the snapshot of the library in use (cut to `SNAPSHOT_MAX`
    /// bytes, at a character's boundary).
    pub fn set_snapshot(&self, name: &str) {
        let mut end = name.len().min(SNAPSHOT_MAX);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        let mut bytes = [0u8; SNAPSHOT_MAX];
        bytes[..end].copy_from_slice(&name.as_bytes()[..end]);
        let c = self.cells();
        let seq = c[SNAPSHOT_AT].fetch_add(1, Ordering::AcqRel);
        if seq % 2 == 1 {
            // Another writer is under way: the name is one of the two.
            c[SNAPSHOT_AT].fetch_sub(1, Ordering::AcqRel);
            return;
        }
        c[SNAPSHOT_AT + 1].store(end as u64, Ordering::Relaxed);
        for (i, word) in bytes.chunks(8).enumerate() {
            let w = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            c[SNAPSHOT_AT + 2 + i].store(w, Ordering::Relaxed);
        }
        c[SNAPSHOT_AT].fetch_add(1, Ordering::Release);
    }

    /// What they hold now.
    pub fn read(&self) -> Reading {
        let words: Vec<u64> = self
            .cells()
            .iter()
            .map(|w| w.load(Ordering::Acquire))
            .collect();
        Reading::from_words(&words)
    }
}

/// The counters as read at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    pub remote: Remote,
    /// By counter, in the order of `Counter::ALL`.
    pub values: Vec<(Counter, u64)>,
    /// The snapshot in use: "none" when none is named.
    pub snapshot: String,
}

impl Reading {
    /// A block as another process's memory holds it (`BYTES` bytes, the
    /// words in this machine's order); `None` when it is not whole.
    pub fn from_bytes(bytes: &[u8]) -> Option<Reading> {
        if bytes.len() < BYTES {
            return None;
        }
        let words: Vec<u64> = bytes[..BYTES]
            .chunks(8)
            .map(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")))
            .collect();
        Some(Reading::from_words(&words))
    }

    fn from_words(words: &[u64]) -> Reading {
        let remote = match words[0] {
            1 => Remote::Local,
            2 => Remote::Bucket,
            _ => Remote::Unknown,
        };
        let values = Counter::ALL
            .iter()
            .map(|&c| (c, words[c as usize]))
            .collect();
        let len = (words[SNAPSHOT_AT + 1] as usize).min(SNAPSHOT_MAX);
        let bytes: Vec<u8> = words[SNAPSHOT_AT + 2..]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .take(len)
            .collect();
        let snapshot = match String::from_utf8_lossy(&bytes) {
            s if s.is_empty() || words[SNAPSHOT_AT] % 2 == 1 => "none".to_string(),
            s => s.into_owned(),
        };
        Reading {
            remote,
            values,
            snapshot,
        }
    }

    pub fn get(&self, counter: Counter) -> u64 {
        self.values
            .iter()
            .find(|(c, _)| *c == counter)
            .map_or(0, |(_, v)| *v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_the_snapshot_come_back_from_the_bytes() {
        let c = Counters::new();
        c.set_remote(Remote::Bucket);
        c.count(Counter::List);
        c.add(Counter::BytesFetched, 1234);
        c.count(Counter::StaleServes);
        assert_eq!(c.read().snapshot, "none");
        c.set_snapshot("2026-12-06T04:00:00Z");
        let bytes: Vec<u8> = match &c.cells {
            Cells::Own(w) => w
                .iter()
                .flat_map(|w| w.load(Ordering::Relaxed).to_ne_bytes())
                .collect(),
            Cells::Shared(_) => unreachable!(),
        };
        let r = Reading::from_bytes(&bytes).unwrap();
        assert_eq!(r, c.read());
        assert_eq!(r.remote, Remote::Bucket);
        assert_eq!(r.get(Counter::List), 1);
        assert_eq!(r.get(Counter::BytesFetched), 1234);
        assert_eq!(r.get(Counter::StaleServes), 1);
        assert_eq!(r.get(Counter::Get), 0);
        assert_eq!(r.snapshot, "2026-12-06T04:00:00Z");
        c.set_snapshot(&"快".repeat(200));
        assert!(c.read().snapshot.chars().all(|ch| ch == '快'));
    }
}
