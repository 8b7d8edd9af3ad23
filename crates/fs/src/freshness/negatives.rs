//! The names a watched directory was answered "no such name" for, so that
//! the kernel may keep those answers as long as the names that exist and
//! be told to drop them when the directory changes.
//!
//! The kernel keeps a negative entry for as long as it was told; a name
//! it keeps for long must be one the daemon can later invalidate. So a
//! long negative is given only for a name recorded here: when a
//! directory's set or the whole is full, or a change was planned while
//! the lookup ran, the answer is the plain "no such name" the kernel asks
//! again about.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::lock;

/// Names recorded per directory: ripgrep asks three (`.gitignore`,
/// `.ignore`, `.rgignore`) in each, an agent a few more.
pub(crate) const NAMES_PER_DIRECTORY: usize = 32;

/// What one recorded name costs beside its bytes: its slot in the set
/// and the allocation's header.
const NAME_OVERHEAD: usize = 48;
/// What one directory's set costs beside its names.
const DIRECTORY_OVERHEAD: usize = 96;

pub(crate) struct Negatives {
    by_directory: Mutex<HashMap<u64, HashSet<OsString>>>,
    /// Bumped whenever names are taken for invalidation: a lookup that
    /// began before may have seen the directory as it was.
    epoch: AtomicU64,
    /// Bytes recorded here, at most `limit` (the budget's share for
    /// them, see `cache::Budget`).
    held: AtomicUsize,
    limit: usize,
}

/// When a lookup began, to record what it found missing against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Epoch(u64);

fn name_bytes(name: &OsStr) -> usize {
    name.len() + NAME_OVERHEAD
}

impl Negatives {
    /// At most `limit` bytes of names.
    pub(crate) fn new(limit: usize) -> Negatives {
        Negatives {
            by_directory: Mutex::new(HashMap::new()),
            epoch: AtomicU64::new(0),
            held: AtomicUsize::new(0),
            limit,
        }
    }

    /// Read before a lookup asks the disk.
    pub(crate) fn epoch(&self) -> Epoch {
        Epoch(self.epoch.load(Ordering::SeqCst))
    }

    /// Records that `name` is missing in `directory`, as found by a lookup
    /// that began at `since`; false when it cannot be recorded (the sets
    /// are full, or names were taken for invalidation meanwhile), and the
    /// kernel must not keep the answer for long.
    pub(crate) fn record(&self, directory: u64, name: &OsStr, since: Epoch) -> bool {
        let mut sets = lock(&self.by_directory);
        // Under the lock: `take` bumps the epoch under it too.
        if self.epoch() != since {
            return false;
        }
        let is_new_directory = !sets.contains_key(&directory);
        let set = sets.entry(directory).or_default();
        if set.contains(name) {
            return true;
        }
        let cost = name_bytes(name)
            + if is_new_directory {
                DIRECTORY_OVERHEAD
            } else {
                0
            };
        if set.len() >= NAMES_PER_DIRECTORY || self.held.load(Ordering::Relaxed) + cost > self.limit
        {
            if set.is_empty() {
                sets.remove(&directory);
            }
            return false;
        }
        set.insert(name.to_owned());
        self.held.fetch_add(cost, Ordering::Relaxed);
        true
    }

    /// The names recorded in each of `directories`, taken out: the kernel
    /// is told to drop them, and a later lookup records them anew.
    pub(crate) fn take(&self, directories: impl IntoIterator<Item = u64>) -> Vec<(u64, OsString)> {
        let mut sets = lock(&self.by_directory);
        self.epoch.fetch_add(1, Ordering::SeqCst);
        let mut taken = Vec::new();
        for directory in directories {
            if let Some(set) = sets.remove(&directory) {
                self.release(&set);
                taken.extend(set.into_iter().map(|name| (directory, name)));
            }
        }
        taken
    }

    /// The kernel forgot `directory`, and with it every entry below it.
    pub(crate) fn forget(&self, directory: u64) {
        if let Some(set) = lock(&self.by_directory).remove(&directory) {
            self.release(&set);
        }
    }

    fn release(&self, set: &HashSet<OsString>) {
        let cost = DIRECTORY_OVERHEAD + set.iter().map(|n| name_bytes(n)).sum::<usize>();
        self.held.fetch_sub(cost, Ordering::Relaxed);
    }

    /// Bytes recorded.
    pub(crate) fn bytes(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_names_are_taken_once_per_directory_and_their_bytes_given_back() {
        let n = Negatives::new(1 << 20);
        let since = n.epoch();
        assert!(n.record(7, OsStr::new(".gitignore"), since));
        assert!(n.record(7, OsStr::new(".gitignore"), since), "again: held");
        assert!(n.record(7, OsStr::new("第9章"), since));
        assert!(n.record(8, OsStr::new(".ignore"), since));
        assert!(n.bytes() > 0);
        let mut taken = n.take([7, 9]);
        taken.sort();
        assert_eq!(
            taken,
            [(7, ".gitignore".into()), (7, "第9章".into())],
            "only the directories asked for"
        );
        assert_eq!(n.take([7]), [], "taken out");
        n.forget(8);
        assert_eq!(n.take([8]), []);
        assert_eq!(n.bytes(), 0);
    }

    #[test]
    fn a_lookup_that_began_before_a_take_is_not_recorded() {
        let n = Negatives::new(1 << 20);
        let since = n.epoch();
        n.take([1]);
        assert!(
            !n.record(1, OsStr::new("x"), since),
            "the directory may have changed after the lookup looked"
        );
        assert!(n.record(1, OsStr::new("x"), n.epoch()));
    }

    #[test]
    fn full_sets_record_nothing_more() {
        let n = Negatives::new(1 << 20);
        let since = n.epoch();
        for i in 0..NAMES_PER_DIRECTORY {
            assert!(n.record(1, OsStr::new(&format!("{i}")), since));
        }
        assert!(
            !n.record(1, OsStr::new("one more"), since),
            "the directory's set is full"
        );
        assert!(
            n.record(1, OsStr::new("0"), since),
            "a name held stays held"
        );
        assert!(
            n.record(2, OsStr::new("one more"), since),
            "another directory has room"
        );

        let small = Negatives::new(2 * (DIRECTORY_OVERHEAD + NAME_OVERHEAD + 1));
        let since = small.epoch();
        assert!(small.record(1, OsStr::new("a"), since));
        assert!(small.record(2, OsStr::new("b"), since));
        assert!(
            !small.record(3, OsStr::new("c"), since),
            "the whole is full"
        );
        assert_eq!(small.take([3]), [], "no empty set is kept");
    }
}
