//! How chapter loads share the daemon: requests for one version of a
//! chapter join a single load of it, and big loads share a byte budget.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Condvar, Mutex};

use super::{LoadedChapter, VersionKey};
use crate::error::{Error, Result};
use crate::lock;

/// A load in progress: requests for the same version wait for its result.
#[derive(Default)]
pub(super) struct Flight {
    result: Mutex<Option<Result<LoadedChapter>>>,
    done: Condvar,
}

impl Flight {
    pub(super) fn wait(&self) -> Result<LoadedChapter> {
        let mut result = lock(&self.result);
        loop {
            if let Some(r) = &*result {
                return r.clone();
            }
            result = self.done.wait(result).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Loads in progress, by the version looked at.
pub(super) type Flights = Mutex<HashMap<VersionKey, Arc<Flight>>>;

/// The request's part in loading `key`: the leader when no load of it is
/// under way, else the flight to wait on.
pub(super) fn lead_or_join(
    loads: &Flights,
    key: VersionKey,
) -> std::result::Result<Leader<'_>, Arc<Flight>> {
    match lock(loads).entry(key.clone()) {
        Entry::Occupied(e) => Err(e.get().clone()),
        Entry::Vacant(e) => {
            let flight = Arc::new(Flight::default());
            e.insert(flight.clone());
            Ok(Leader { loads, key, flight })
        }
    }
}

/// The request that loads a version for every request waiting on it.
/// However it ends (a panic included, as EIO), its waiters are answered
/// and the version can be loaded again.
pub(super) struct Leader<'a> {
    loads: &'a Flights,
    pub(super) key: VersionKey,
    flight: Arc<Flight>,
}

impl Leader<'_> {
    pub(super) fn finish(self, result: &Result<LoadedChapter>) {
        *lock(&self.flight.result) = Some(result.clone());
    }
}

impl Drop for Leader<'_> {
    fn drop(&mut self) {
        lock(self.loads).remove(&self.key);
        let mut result = lock(&self.flight.result);
        if result.is_none() {
            *result = Some(Err(Error::LoadAbandoned));
        }
        self.flight.done.notify_all();
    }
}

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
