//! One computation of a key at a time: the first caller that wants it
//! leads (computes it), the others that want it meanwhile join its flight
//! and wait for its result rather than compute it again. However the
//! leader ends (a panic included) its waiters are answered and the key can
//! be computed again.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crate::lock;

/// A computation under way: those that joined it wait for its result.
pub struct Flight<R> {
    result: Mutex<Option<R>>,
    done: Condvar,
    /// Set when what the computation reads changed while it ran: its
    /// result then answers its waiters but is kept nowhere.
    forgotten: AtomicBool,
}

impl<R: Clone> Flight<R> {
    fn new() -> Flight<R> {
        Flight {
            result: Mutex::new(None),
            done: Condvar::new(),
            forgotten: AtomicBool::new(false),
        }
    }

    /// Waits for the result.
    pub fn wait(&self) -> R {
        self.wait_until(None).expect("waited with no bound")
    }

    /// Waits for the result at most `timeout`: `None` when it is not
    /// there by then.
    pub fn wait_for(&self, timeout: std::time::Duration) -> Option<R> {
        self.wait_until(Some(std::time::Instant::now() + timeout))
    }

    fn wait_until(&self, until: Option<std::time::Instant>) -> Option<R> {
        let mut result = lock(&self.result);
        loop {
            if let Some(r) = &*result {
                return Some(r.clone());
            }
            result = match until {
                None => self.done.wait(result).unwrap_or_else(|e| e.into_inner()),
                Some(until) => {
                    let left = until.checked_duration_since(std::time::Instant::now())?;
                    self.done
                        .wait_timeout(result, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
    }

    /// Marks the computation as reading what changed since it began.
    pub fn forget(&self) {
        self.forgotten.store(true, Ordering::Release);
    }

    /// Whether `forget` was called.
    pub fn forgotten(&self) -> bool {
        self.forgotten.load(Ordering::Acquire)
    }
}

/// The computations under way, by key. `abandoned` is what the waiters
/// get when a leader ends without a result.
pub struct Flights<K, R> {
    under_way: Mutex<HashMap<K, Arc<Flight<R>>>>,
    abandoned: fn() -> R,
}

/// A caller's part in computing a key.
pub enum Part<K: Hash + Eq + Clone, R: Clone, T> {
    /// No computation of it was under way: this caller's to compute (the
    /// leader may move to another thread to compute it).
    Lead(Leader<K, R>),
    /// Another's, to wait for.
    Join(Arc<Flight<R>>),
    /// What the caller's check found under the lock, with no flight
    /// begun (see `lead_or_join_unless`).
    Found(T),
}

impl<K: Hash + Eq + Clone, R: Clone> Flights<K, R> {
    pub fn new(abandoned: fn() -> R) -> Flights<K, R> {
        Flights {
            under_way: Mutex::new(HashMap::new()),
            abandoned,
        }
    }

    /// The caller's part in computing `key`.
    pub fn lead_or_join(self: &Arc<Self>, key: K) -> Part<K, R, ()> {
        self.lead_or_join_unless(key, || None)
    }

    /// As `lead_or_join`, unless `found` (asked under the flights' lock,
    /// so that no flight lands between it and the choice) has the result
    /// already: a computation that landed while the caller took the lock.
    pub fn lead_or_join_unless<T>(
        self: &Arc<Self>,
        key: K,
        found: impl FnOnce() -> Option<T>,
    ) -> Part<K, R, T> {
        let mut under_way = lock(&self.under_way);
        if let Some(t) = found() {
            return Part::Found(t);
        }
        match under_way.entry(key.clone()) {
            Entry::Occupied(e) => Part::Join(e.get().clone()),
            Entry::Vacant(e) => {
                let flight = Arc::new(Flight::new());
                e.insert(flight.clone());
                Part::Lead(Leader {
                    flights: self.clone(),
                    key,
                    flight,
                })
            }
        }
    }

    /// Calls `forget` on the flight of every key `which` picks.
    pub fn forget_where(&self, which: impl Fn(&K) -> bool) {
        for (k, f) in lock(&self.under_way).iter() {
            if which(k) {
                f.forget();
            }
        }
    }

    /// Whether `key` is under way.
    pub fn under_way(&self, key: &K) -> bool {
        lock(&self.under_way).contains_key(key)
    }

    /// Keys under way.
    pub fn len(&self) -> usize {
        lock(&self.under_way).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The caller that computes a key for every caller waiting on it.
pub struct Leader<K: Hash + Eq + Clone, R: Clone> {
    flights: Arc<Flights<K, R>>,
    key: K,
    flight: Arc<Flight<R>>,
}

impl<K: Hash + Eq + Clone, R: Clone> Leader<K, R> {
    pub fn key(&self) -> &K {
        &self.key
    }

    /// The flight led, whose `forgotten` says whether its result may be
    /// kept.
    pub fn flight(&self) -> &Flight<R> {
        &self.flight
    }

    /// Answers the waiters with `result`.
    pub fn finish(self, result: R) {
        *lock(&self.flight.result) = Some(result);
    }
}

impl<K: Hash + Eq + Clone, R: Clone> Drop for Leader<K, R> {
    fn drop(&mut self) {
        lock(&self.flights.under_way).remove(&self.key);
        let mut result = lock(&self.flight.result);
        if result.is_none() {
            *result = Some((self.flights.abandoned)());
        }
        drop(result);
        self.flight.done.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_of_a_key_under_way_wait_for_its_one_result() {
        let flights: Arc<Flights<&str, Result<u32, &'static str>>> =
            Arc::new(Flights::new(|| Err("abandoned")));
        let Part::Lead(leader) = flights.lead_or_join("a") else {
            panic!("the first leads");
        };
        let Part::Join(flight) = flights.lead_or_join("a") else {
            panic!("the second joins");
        };
        assert!(matches!(flights.lead_or_join("b"), Part::Lead(_)));
        std::thread::scope(|s| {
            let waiter = s.spawn(|| flight.wait());
            leader.finish(Ok(7));
            assert_eq!(waiter.join().unwrap(), Ok(7));
        });
        assert!(flights.is_empty(), "a finished flight is gone");
        assert!(matches!(flights.lead_or_join("a"), Part::Lead(_)));
    }

    /// A leader dropped unfinished (as a panic's unwinding drops it; no
    /// panic here, so that the test run's output holds none) answers its
    /// waiters with the abandoned result.
    #[test]
    fn a_leader_that_ends_without_a_result_answers_its_waiters() {
        let flights: Arc<Flights<u8, Result<u32, &'static str>>> =
            Arc::new(Flights::new(|| Err("abandoned")));
        let joined = std::thread::scope(|s| {
            let Part::Lead(leader) = flights.lead_or_join(1) else {
                panic!()
            };
            let Part::Join(flight) = flights.lead_or_join(1) else {
                panic!()
            };
            let waiter = s.spawn(move || flight.wait());
            s.spawn(move || drop(leader));
            waiter.join().unwrap()
        });
        assert_eq!(joined, Err("abandoned"));
        assert!(flights.is_empty());
    }

    #[test]
    fn a_check_under_the_lock_finds_what_landed() {
        let flights: Arc<Flights<u8, u32>> = Arc::new(Flights::new(|| 0));
        assert!(matches!(
            flights.lead_or_join_unless(1, || Some("fresh")),
            Part::Found("fresh")
        ));
        assert!(flights.is_empty());
        let Part::Lead(leader) = flights.lead_or_join(2) else {
            panic!()
        };
        flights.forget_where(|k| *k == 2);
        assert!(leader.flight().forgotten());
        assert!(flights.under_way(&2));
        drop(leader);
        assert!(!flights.under_way(&2));
    }
}
