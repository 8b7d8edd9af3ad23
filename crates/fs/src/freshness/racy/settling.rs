//! Settling: the versions of sources read while their stamps proved
//! nothing yet, told apart by digests of their bytes.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::settled;
use crate::cache::Stamp;
use crate::lock;

/// A version for contents that differ from those of `previous` under the
/// same stamp.
pub(crate) fn mix(previous: u64, digest: u64) -> u64 {
    let mut hasher = novelfs_library::stable_hash::StableHasher::new();
    (previous, digest).hash(&mut hasher);
    hasher.finish()
}

/// What is known of a source's version from its stamp alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Known {
    /// The version: no need to read the source.
    Version(u64),
    /// The stamp proves nothing yet: the bytes must be read and compared
    /// (`Settling::looked`). The version of the last bytes read, for when
    /// they cannot be.
    Look(u64),
}

#[derive(Debug, Clone, Copy)]
struct Unsettled {
    stamp: Stamp,
    digest: u64,
    version: u64,
    /// When the bytes of `digest` were last read.
    checked: SystemTime,
}

/// The versions of sources read while their stamps were not settled, by
/// key: a version is the stamp's own (`plain`) until bytes read under the
/// same stamp differ from the bytes read before, then a new one. An entry
/// goes once its stamp is settled and its version is the stamp's own, or
/// once the source has another stamp.
pub(crate) struct Settling<K> {
    entries: Mutex<HashMap<K, Unsettled>>,
    /// Whether `entries` may hold anything: most of the time it holds
    /// nothing, and a look at a whole book's chapters then takes no lock.
    any: std::sync::atomic::AtomicBool,
    plain: fn(&Stamp) -> u64,
}

/// Entries kept before the ones that prove nothing more are swept.
const SWEEP_ABOVE: usize = 1024;

impl<K: Hash + Eq + Clone> Settling<K> {
    pub(crate) fn new(plain: fn(&Stamp) -> u64) -> Settling<K> {
        Settling {
            entries: Mutex::new(HashMap::new()),
            any: std::sync::atomic::AtomicBool::new(false),
            plain,
        }
    }

    /// The version of the source of `key` with `stamp`. No entry: the
    /// stamp's own version (bytes read under a stamp that was not settled
    /// leave an entry, so a cached text under the stamp's own version came
    /// from bytes the stamp proves).
    pub(crate) fn known(&self, key: &K, stamp: &Stamp, granularity: Duration) -> Known {
        let plain = (self.plain)(stamp);
        let mut entries = lock(&self.entries);
        let Some(u) = entries.get(key).copied() else {
            return Known::Version(plain);
        };
        if u.stamp != *stamp {
            entries.remove(key);
            return Known::Version(plain);
        }
        if !settled(stamp, u.checked, granularity) {
            return Known::Look(u.version);
        }
        if u.version == plain {
            entries.remove(key);
        }
        Known::Version(u.version)
    }

    /// Whether bytes about to be read under `stamp` at `now` must be
    /// digested (and given to `looked`).
    pub(crate) fn must_digest(&self, key: &K, stamp: &Stamp, now: SystemTime, g: Duration) -> bool {
        !settled(stamp, now, g)
            || lock(&self.entries)
                .get(key)
                .is_some_and(|u| u.stamp == *stamp)
    }

    /// The version of the bytes with `digest`, read under `stamp` from `at`
    /// on.
    pub(crate) fn looked(
        &self,
        key: &K,
        stamp: &Stamp,
        digest: u64,
        at: SystemTime,
        granularity: Duration,
    ) -> u64 {
        let plain_of = self.plain;
        let plain = plain_of(stamp);
        let mut entries = lock(&self.entries);
        if let Some(u) = entries.get_mut(key)
            && u.stamp == *stamp
        {
            if u.digest != digest {
                u.version = mix(u.version, digest);
                u.digest = digest;
                u.checked = at;
            } else if at > u.checked {
                u.checked = at;
            }
            return u.version;
        }
        if settled(stamp, at, granularity) {
            entries.remove(key);
            return plain;
        }
        if entries.len() >= SWEEP_ABOVE {
            entries.retain(|_, u| {
                !(settled(&u.stamp, u.checked, granularity) && u.version == plain_of(&u.stamp))
            });
        }
        self.any.store(true, std::sync::atomic::Ordering::Relaxed);
        entries.insert(
            key.clone(),
            Unsettled {
                stamp: *stamp,
                digest,
                version: plain,
                checked: at,
            },
        );
        plain
    }

    /// True when no source is remembered: every version is its stamp's.
    pub(crate) fn is_empty(&self) -> bool {
        if !self.any.load(std::sync::atomic::Ordering::Relaxed) {
            return true;
        }
        let empty = lock(&self.entries).is_empty();
        if empty {
            self.any.store(false, std::sync::atomic::Ordering::Relaxed);
        }
        empty
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.entries).len()
    }
}
