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
    /// HTTP attempts that got no answer (the connection refused, reset or
    /// timed out before a response), by kind: not among the requests
    /// above, which the bucket answered.
    ListUnanswered,
    GetUnanswered,
    RangedGetUnanswered,
    HeadUnanswered,
    PutUnanswered,
    OtherUnanswered,
}

impl Counter {
    /// Every counter, in the order they are shown.
    pub const ALL: [Counter; 19] = [
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
        Counter::ListUnanswered,
        Counter::GetUnanswered,
        Counter::RangedGetUnanswered,
        Counter::HeadUnanswered,
        Counter::PutUnanswered,
        Counter::OtherUnanswered,
    ];

    /// The counter of the attempts of this kind of request that got no
    /// answer; itself for a counter that is no request's.
    pub fn unanswered(self) -> Counter {
        match self {
            Counter::List => Counter::ListUnanswered,
            Counter::Get => Counter::GetUnanswered,
            Counter::RangedGet => Counter::RangedGetUnanswered,
            Counter::Head => Counter::HeadUnanswered,
            Counter::Put => Counter::PutUnanswered,
            Counter::Other => Counter::OtherUnanswered,
            other => other,
        }
    }

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
            Counter::ListUnanswered => "list unanswered",
            Counter::GetUnanswered => "get unanswered",
            Counter::RangedGetUnanswered => "ranged get unanswered",
            Counter::HeadUnanswered => "head unanswered",
            Counter::PutUnanswered => "put unanswered",
            Counter::OtherUnanswered => "other unanswered",
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

/// Whether the mount follows a published snapshot, and if not, why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotState {
    /// The mount has not looked for one yet (its first listing does).
    NotLookedFor = 0,
    /// One is followed: its head's ETag and when it was made.
    Followed = 1,
    /// None is published: the mount lists.
    NonePublished = 2,
    /// One is published but not followed (lapsed, withdrawn, unreadable):
    /// the mount lists; why, in words.
    NotFollowed = 3,
    /// `--freshness listing`: none is looked for.
    NotAskedFor = 4,
}

/// The words of a block.
pub const SLOTS: usize = 64;
/// The snapshot's state and when it was made (Unix seconds).
const SNAPSHOT_STATE: usize = 30;
const SNAPSHOT_MADE: usize = 31;
const _: () = assert!(Counter::ALL.len() < SNAPSHOT_STATE);
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

    /// Says whether a snapshot is followed (`text`: its head's ETag, or
    /// why not, cut to `SNAPSHOT_MAX` bytes at a character's boundary;
    /// `made`: when it was made, Unix seconds).
    pub fn set_snapshot(&self, state: SnapshotState, text: &str, made: u64) {
        let name = text;
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
        c[SNAPSHOT_STATE].store(state as u64, Ordering::Relaxed);
        c[SNAPSHOT_MADE].store(made, Ordering::Relaxed);
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
    /// Whether a snapshot is followed.
    pub snapshot_state: SnapshotState,
    /// The ETag of the snapshot's head when it is followed; why not when
    /// it is not; empty otherwise.
    pub snapshot: String,
    /// When the snapshot followed was made (Unix seconds; 0: none).
    pub snapshot_made: u64,
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
        // Being written: the one before or after it, as it was when read
        // in the next `status`.
        let writing = words[SNAPSHOT_AT] % 2 == 1;
        let snapshot_state = match words[SNAPSHOT_STATE] {
            _ if writing => SnapshotState::NotLookedFor,
            1 => SnapshotState::Followed,
            2 => SnapshotState::NonePublished,
            3 => SnapshotState::NotFollowed,
            4 => SnapshotState::NotAskedFor,
            _ => SnapshotState::NotLookedFor,
        };
        let snapshot = match writing {
            true => String::new(),
            false => String::from_utf8_lossy(&bytes).into_owned(),
        };
        let snapshot_made = match snapshot_state {
            SnapshotState::Followed => words[SNAPSHOT_MADE],
            _ => 0,
        };
        Reading {
            remote,
            values,
            snapshot_state,
            snapshot,
            snapshot_made,
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
        assert_eq!(c.read().snapshot_state, SnapshotState::NotLookedFor);
        c.set_snapshot(SnapshotState::Followed, "\"e1\"", 1_796_627_099);
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
        assert_eq!(r.snapshot, "\"e1\"");
        assert_eq!(r.snapshot_state, SnapshotState::Followed);
        assert_eq!(r.snapshot_made, 1_796_627_099);
        assert_eq!(r.get(Counter::GetUnanswered), 0);
        c.set_snapshot(SnapshotState::NotFollowed, &"快".repeat(200), 0);
        assert!(c.read().snapshot.chars().all(|ch| ch == '快'));
    }
}
