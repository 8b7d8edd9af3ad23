//! How chapter loads share the daemon: requests for one version of a
//! chapter join a single load of it, and big loads share a byte budget.

use std::sync::{Condvar, Mutex};

use super::{LoadedChapter, VersionKey};
use crate::error::Result;
use crate::lock;

/// Loads in progress, by the version looked at: requests for one version
/// join a single load of it (the kit's single flight); a load whose
/// leader ended without a result answers its waiters `LoadAbandoned`.
pub(super) type Flights = novelfs_kit::flight::Flights<VersionKey, Result<LoadedChapter>>;

/// A number of bytes shared by the loads under way. A load that does not
/// fit waits for others to end; one is always let in, however big.
pub(crate) struct LoadBudget {
    capacity: u64,
    in_use: Mutex<u64>,
    freed: Condvar,
}

/// Bytes of a `LoadBudget` taken by one load, given back when dropped.
pub(crate) struct Admission<'a> {
    budget: &'a LoadBudget,
    bytes: u64,
}

impl LoadBudget {
    pub(crate) fn new(capacity: u64) -> LoadBudget {
        LoadBudget {
            capacity,
            in_use: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    fn fits(&self, in_use: u64, bytes: u64) -> bool {
        in_use == 0 || in_use.saturating_add(bytes) <= self.capacity
    }

    /// Takes `bytes`, waiting until they fit.
    pub(crate) fn admit(&self, bytes: u64) -> Admission<'_> {
        let mut in_use = lock(&self.in_use);
        while !self.fits(*in_use, bytes) {
            in_use = self.freed.wait(in_use).unwrap_or_else(|e| e.into_inner());
        }
        *in_use += bytes;
        Admission {
            budget: self,
            bytes,
        }
    }

    /// Bytes taken by the loads under way.
    pub(crate) fn in_use(&self) -> u64 {
        *lock(&self.in_use)
    }
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        *lock(&self.budget.in_use) -= self.bytes;
        self.budget.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_budget_lets_in_what_fits_and_one_load_of_any_size() {
        let budget = LoadBudget::new(10);
        assert!(budget.fits(0, 100), "alone, any size is let in");
        assert!(budget.fits(6, 4) && !budget.fits(6, 6) && !budget.fits(4, 7));
        let six = budget.admit(6);
        let four = budget.admit(4);
        assert_eq!(budget.in_use(), 10);
        drop(six);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| drop(budget.admit(7)));
            drop(four);
            waiter.join().unwrap();
        });
        drop(budget.admit(100));
        assert_eq!(budget.in_use(), 0, "every admission was given back");
    }
}
