//! A bound on how long a request waits for the library's filesystem.
//!
//! A network filesystem whose server stops answering blocks every syscall
//! on it, for as long as the server is away. A request that reaches such a
//! call cannot be interrupted, but its reply need not wait for it: each
//! request's reply is armed with a deadline, and when the request is found
//! stuck, the reply is given its fallback (EIO, or for the root's
//! attributes the last ones given) by the timer thread, while the stuck
//! request keeps its own thread until the call returns, then finds its
//! reply taken and drops what it made.
//!
//! `--source-timeout` bounds one access to the source, not a request: a
//! request is stuck when one system call of its own on the library's
//! files (an `access`, marked where the backing makes it) has not returned
//! within the timeout. One whose accesses keep returning goes on however
//! long it takes (every chapter of a library over a slow network
//! filesystem), and so does one that computes (a big chapter decoding).
//! One asleep in a system call that is not marked as an access is stuck
//! when it has not woken once in a whole timeout (its count of voluntary
//! context switches has not moved). One waiting for another thread of
//! this daemon (a lock, a load in flight) is stuck only while the source
//! does not answer: some request is past its deadline, or some access on
//! any thread is older than the timeout.
//!
//! Requests past their deadline and still running mean the source is not
//! answering: logged once, until the last of them ends (logged again).
//! Meanwhile requests run on spare threads only, never on the threads that
//! read the kernel's requests, and a request that finds every spare thread
//! taken fails at once (see `runner::Runner::run`). A request that
//! arrives meanwhile is failed as soon as it is seen waiting
//! (`STUCK_LOOK`), not after a whole timeout: the kernel retries a failed
//! lookup of a name for each reader that waited on it, one after another,
//! so 40 readers of one path would otherwise wait 40 timeouts.
//!
//! Test switch: `NOVELFS_TEST_SOURCE_BOUND=request` bounds each request as
//! a whole instead (any system call found at its deadline fails it), and
//! `=none` bounds nothing, so that tests show each rule failing without it.
//!
//! Each job in a file of its own: `judge` (when a request is stuck),
//! `repeats` (what the requests past their deadline ask, so that the same
//! ask fails at once), `overdue` (the count of those requests, logged as
//! the source stops and starts answering), `shards` (where the deadlines
//! wait: a map per arming thread) and `timer` (the thread that runs the
//! deadlines).

mod judge;
mod overdue;
mod repeats;
mod shards;
mod timer;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};

use novelfs_kit::lock;
use novelfs_storage::access;
use std::time::{Duration, Instant};

use judge::{Judge, Running, STUCK_LOOK};
use shards::Shard;
use timer::MAX_SLEEP;

/// Run at a deadline, with its shard's lock held: the next key of a
/// request that is busy here, `None` once it is answered.
type Expiry = Box<dyn FnMut() -> Option<(Instant, u64)> + Send>;

struct Timer {
    /// Each arming thread's deadlines (`shards`).
    shards: Mutex<Vec<Weak<Shard>>>,
    /// When the timer thread looks at the deadlines next, held through
    /// each look: a request armed with a sooner deadline wakes it.
    next_look: Mutex<Instant>,
    wake: Condvar,
    next: AtomicU64,
    started: AtomicBool,
    /// Requests past their deadline that have not ended.
    overdue: AtomicUsize,
    /// What those requests ask (`Asks`), with how many ask it.
    held: Mutex<HashMap<Asks, usize>>,
    /// Hashes what a request asks: foldhash, every request is hashed.
    asks_hasher: hashbrown::DefaultHashBuilder,
    /// What the log calls the source.
    source: String,
    timeout: Duration,
    rule: Rule,
}

/// What is bounded by the timeout (`NOVELFS_TEST_SOURCE_BOUND`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Rule {
    /// One access to the source: the rule.
    Access,
    /// Each request as a whole, failed when found in a system call at its
    /// deadline (a test's counterfactual).
    Request,
    /// Nothing (a test's counterfactual).
    Nothing,
}

impl Rule {
    fn from_env() -> Rule {
        match novelfs_library::test_switch::var("NOVELFS_TEST_SOURCE_BOUND").as_deref() {
            Some("request") => Rule::Request,
            Some("none") => Rule::Nothing,
            _ => Rule::Access,
        }
    }
}

/// The deadlines of one mount's requests.
#[derive(Clone)]
pub(crate) struct Deadlines {
    timer: Arc<Timer>,
}

/// A reply that either its request or its deadline gives.
pub(crate) struct Armed<R> {
    shared: Arc<Shared<R>>,
    /// The map its deadline waits in.
    shard: Arc<Shard>,
    asks: Asks,
    timer: Arc<Timer>,
}

/// What a request and its deadline share: one allocation a request.
struct Shared<R> {
    reply: Mutex<Option<R>>,
    /// Where the deadline is in its shard (it moves, under the shard's
    /// lock, when the request is found busy here).
    key: Mutex<(Instant, u64)>,
    /// The thread running the request (unset while it waits to run).
    running: OnceLock<Running>,
}

/// What a request asks (a hash of its operation and arguments, 0 for
/// none): the kernel sends the same request again for each reader that
/// waited on a failed one (a lookup of one name, a read of one page), one
/// after another, and one that asks what a request the source holds asks
/// fails at once instead of waiting on the source once more.
pub(crate) type Asks = u64;

impl<R> Armed<R> {
    /// The reply, unless the deadline already answered it.
    pub(crate) fn take(&self) -> Option<R> {
        lock(&self.shared.reply).take()
    }

    /// The request starts running on this thread.
    pub(crate) fn running_here(&self) {
        let _ = self.shared.running.set(Running {
            tid: this_tid(),
            accesses: access::this_thread(),
        });
    }
}

/// The calling thread's id, asked of the kernel once per thread: every
/// request is run here, and a system call each would be a cost every
/// request pays.
fn this_tid() -> libc::pid_t {
    thread_local! {
        // SAFETY: gettid has no inputs and cannot fail.
        static TID: libc::pid_t = unsafe { libc::gettid() };
    }
    TID.with(|t| *t)
}

impl<R> Drop for Armed<R> {
    /// The request ended: its deadline is dropped, or, if it passed, the
    /// request no longer counts as stuck.
    fn drop(&mut self) {
        // The key moves only under the shard's lock.
        let mut pending = lock(&self.shard.pending);
        let key = *lock(&self.shared.key);
        if pending.remove(&key).is_none() {
            drop(pending);
            self.timer.release(self.asks);
            self.timer.overdue_ended();
        }
    }
}

impl Deadlines {
    /// For requests on the library `source` (named in the log), each
    /// bounded by `timeout`.
    pub(crate) fn new(source: String, timeout: Duration) -> Deadlines {
        Self::with_rule(source, timeout, Rule::from_env())
    }

    fn with_rule(source: String, timeout: Duration, rule: Rule) -> Deadlines {
        Deadlines {
            timer: Arc::new(Timer {
                shards: Mutex::new(Vec::new()),
                next_look: Mutex::new(Instant::now()),
                wake: Condvar::new(),
                next: AtomicU64::new(0),
                started: AtomicBool::new(false),
                overdue: AtomicUsize::new(0),
                held: Mutex::new(HashMap::new()),
                asks_hasher: hashbrown::DefaultHashBuilder::default(),
                source,
                timeout,
                rule,
            }),
        }
    }

    /// Whether some request is past its deadline and still running.
    pub(crate) fn source_stuck(&self) -> bool {
        self.timer.overdue.load(Ordering::Acquire) > 0
    }

    /// `reply`, answered with `fallback` if the request has not taken it
    /// within the source timeout (or `within`, when shorter); answered
    /// with it at once (`None`) when a request the source holds `asks`
    /// the same.
    pub(crate) fn arm<R: Send + 'static>(
        &self,
        reply: R,
        within: Option<Duration>,
        asks: Asks,
        fallback: impl FnOnce(R) + Send + 'static,
    ) -> Option<Armed<R>> {
        // Armed while the source does not answer: looked at every
        // `STUCK_LOOK` instead of once per timeout.
        let arrived_stuck = self.source_stuck();
        if arrived_stuck && self.timer.holds(asks) {
            fallback(reply);
            return None;
        }
        self.start();
        let bound = within.map_or(self.timer.timeout, |w| w.min(self.timer.timeout));
        let armed_at = Instant::now();
        let look = if arrived_stuck {
            STUCK_LOOK.min(bound)
        } else {
            bound
        };
        let key = (
            armed_at + look,
            self.timer.next.fetch_add(1, Ordering::Relaxed),
        );
        let shared = Arc::new(Shared {
            reply: Mutex::new(Some(reply)),
            key: Mutex::new(key),
            running: OnceLock::new(),
        });
        let expiring = shared.clone();
        let mut judge = Judge {
            armed_at,
            bound,
            arrived_stuck,
            asleep: None,
        };
        let timer = self.timer.clone();
        let mut fallback = Some(fallback);
        let expiry: Expiry = Box::new(move || {
            let now = Instant::now();
            // Answered already (the request is only finishing up): nothing
            // waits on it.
            let next = if lock(&expiring.reply).is_none() {
                Some(now + timer.timeout)
            } else {
                judge.next_look(&timer, expiring.running.get(), now)
            };
            if let Some(next) = next {
                let mut key = lock(&expiring.key);
                key.0 = next;
                return Some(*key);
            }
            timer.hold(asks);
            timer.went_overdue(bound);
            if let Some(reply) = lock(&expiring.reply).take()
                && let Some(fallback) = fallback.take()
            {
                fallback(reply);
            }
            None
        });
        let shard = self.shard_here();
        lock(&shard.pending).insert(key, expiry);
        // The timer thread looks at its deadlines at least every
        // `MAX_SLEEP`: only a deadline sooner than that, and sooner than
        // its next look, needs it woken. Waking it for every request
        // cost each request a context switch.
        if look < MAX_SLEEP && key.0 < *lock(&self.timer.next_look) {
            self.timer.wake.notify_one();
        }
        Some(Armed {
            shared,
            shard,
            asks,
            timer: self.timer.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn arm<R: Send + 'static>(
        d: &Deadlines,
        reply: R,
        within: Option<Duration>,
        fallback: impl FnOnce(R) + Send + 'static,
    ) -> Armed<R> {
        d.arm(reply, within, 0, fallback).unwrap()
    }

    #[test]
    fn a_reply_is_given_by_its_request_or_by_its_deadline() {
        let d = Deadlines::new("lib".into(), Duration::from_millis(100));
        let (sent, got) = mpsc::channel();
        let quick = arm(&d, "quick", None, {
            let sent = sent.clone();
            move |r| sent.send(format!("{r} timed out")).unwrap()
        });
        assert_eq!(quick.take(), Some("quick"));
        drop(quick);
        let slow = arm(&d, "slow", None, move |r| {
            sent.send(format!("{r} timed out")).unwrap()
        });
        assert_eq!(
            got.recv_timeout(Duration::from_secs(5)).unwrap(),
            "slow timed out"
        );
        assert!(d.source_stuck(), "the request still runs");
        assert_eq!(slow.take(), None, "answered by its deadline");
        drop(slow);
        assert!(!d.source_stuck(), "the request ended");
        assert!(got.try_recv().is_err(), "the quick one was never failed");
    }

    #[test]
    fn a_request_that_computes_gets_more_time_and_one_that_sleeps_does_not() {
        let d = Deadlines::new("lib".into(), Duration::from_millis(100));
        let (sent, got) = mpsc::channel();
        let computing = {
            let sent = sent.clone();
            let armed = arm(&d, "computing", None, move |r| sent.send(r).unwrap());
            std::thread::spawn(move || {
                armed.running_here();
                let start = Instant::now();
                let mut x = 0u64;
                while start.elapsed() < Duration::from_millis(400) {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
                armed.take()
            })
        };
        assert_eq!(computing.join().unwrap(), Some("computing"), "not failed");
        assert!(!d.source_stuck());
        let sleeping = {
            let armed = arm(&d, "sleeping", None, move |r| sent.send(r).unwrap());
            std::thread::spawn(move || {
                armed.running_here();
                std::thread::sleep(Duration::from_millis(400));
                armed.take()
            })
        };
        assert_eq!(
            got.recv_timeout(Duration::from_secs(5)).unwrap(),
            "sleeping"
        );
        assert_eq!(sleeping.join().unwrap(), None);
        assert!(!d.source_stuck(), "ended");
    }

    /// Waits until some request of `d` is past its deadline.
    fn until_stuck(d: &Deadlines) {
        let start = Instant::now();
        while !d.source_stuck() {
            assert!(start.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A request on a thread that sleeps past the timeout: the source
    /// stops answering. Dropped (the request ends) after `hold`.
    fn stuck_for(d: &Deadlines, hold: Duration) -> std::thread::JoinHandle<()> {
        let armed = arm(d, (), None, |_| {});
        std::thread::spawn(move || {
            armed.running_here();
            std::thread::sleep(hold);
            drop(armed);
        })
    }

    #[test]
    fn while_the_source_does_not_answer_a_new_request_that_waits_fails_at_once() {
        let timeout = Duration::from_millis(300);
        let d = Deadlines::new("lib".into(), timeout);
        let stuck = stuck_for(&d, Duration::from_secs(4));
        until_stuck(&d);
        let (sent, got) = mpsc::channel();
        let start = Instant::now();
        let armed = arm(&d, (), None, move |_| sent.send(start.elapsed()).unwrap());
        let waiting = std::thread::spawn(move || {
            armed.running_here();
            std::thread::sleep(Duration::from_secs(2));
            armed.take()
        });
        let failed_after = got.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(
            failed_after < timeout / 2,
            "failed after {failed_after:?}, the timeout is {timeout:?}"
        );
        assert_eq!(waiting.join().unwrap(), None);
        // One that computes meanwhile is not failed.
        let armed = arm(&d, "computing", None, |_| panic!("failed while computing"));
        let computing = std::thread::spawn(move || {
            armed.running_here();
            let start = Instant::now();
            let mut x = 0u64;
            while start.elapsed() < Duration::from_millis(200) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            armed.take()
        });
        assert_eq!(computing.join().unwrap(), Some("computing"));
        stuck.join().unwrap();
        assert!(!d.source_stuck(), "answers again");
    }

    #[test]
    fn a_request_waiting_for_one_that_the_source_holds_fails_too() {
        let d = Deadlines::new("lib".into(), Duration::from_millis(300));
        let hold = Duration::from_secs(4);
        let stuck = stuck_for(&d, hold);
        // The second waits on a futex for the first (as a request joining
        // a load in flight does).
        let (sent, got) = mpsc::channel();
        let start = Instant::now();
        let armed = arm(&d, (), None, move |_| sent.send(start.elapsed()).unwrap());
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let waiter = std::thread::spawn({
            let gate = gate.clone();
            move || {
                armed.running_here();
                let (m, c) = &*gate;
                let _g = c.wait_while(lock(m), |open| !*open).unwrap();
                armed.take()
            }
        });
        let failed_after = got.recv_timeout(Duration::from_secs(3)).unwrap();
        assert!(failed_after < hold, "failed after {failed_after:?}");
        *lock(&gate.0) = true;
        gate.1.notify_all();
        assert_eq!(waiter.join().unwrap(), None);
        stuck.join().unwrap();
    }

    #[test]
    fn a_request_asking_what_the_source_holds_fails_without_running() {
        let d = Deadlines::new("lib".into(), Duration::from_millis(100));
        let asks: Asks = 7;
        let held = d.arm((), None, asks, |_| {}).unwrap();
        until_stuck(&d);
        let (sent, got) = mpsc::channel();
        let same = d.arm("same", None, asks, {
            let sent = sent.clone();
            move |r| sent.send(r).unwrap()
        });
        assert!(same.is_none(), "not run");
        assert_eq!(got.try_recv(), Ok("same"), "failed at once");
        let other = d.arm("other", None, asks + 1, move |r| sent.send(r).unwrap());
        assert_eq!(other.unwrap().take(), Some("other"));
        drop(held);
        assert!(!d.source_stuck());
        let again = d.arm("again", None, asks, |_| {});
        assert_eq!(again.unwrap().take(), Some("again"), "runs once it ended");
    }

    #[test]
    fn a_request_that_answered_is_not_stuck_while_it_finishes() {
        let d = Deadlines::new("lib".into(), Duration::from_millis(50));
        let armed = arm(&d, "answered", None, |_| panic!("failed after answering"));
        let finishing = std::thread::spawn(move || {
            armed.running_here();
            assert_eq!(armed.take(), Some("answered"));
            // Past the deadline, in a system call.
            std::thread::sleep(Duration::from_millis(400));
            drop(armed);
        });
        std::thread::sleep(Duration::from_millis(250));
        assert!(!d.source_stuck(), "counted as stuck after answering");
        finishing.join().unwrap();
        assert!(!d.source_stuck());
    }

    /// A request on a thread that makes `n` accesses of `each` (a sleep
    /// standing in for a system call on the source), or one long access
    /// when `n` is 1; ended (dropped) at once after.
    fn accesses(
        d: &Deadlines,
        n: u32,
        each: Duration,
        sent: mpsc::Sender<&'static str>,
    ) -> std::thread::JoinHandle<Option<&'static str>> {
        let armed = arm(d, "accesses", None, move |r| sent.send(r).unwrap());
        std::thread::spawn(move || {
            armed.running_here();
            for _ in 0..n {
                access::one(|| std::thread::sleep(each));
            }
            armed.take()
        })
    }

    #[test]
    fn a_request_whose_accesses_keep_returning_is_never_stuck() {
        let timeout = Duration::from_millis(100);
        let d = Deadlines::new("lib".into(), timeout);
        let (sent, got) = mpsc::channel();
        // Ten times the timeout in all, each access a third of it.
        let slow = accesses(&d, 30, timeout / 3, sent);
        assert_eq!(slow.join().unwrap(), Some("accesses"), "not failed");
        assert!(got.try_recv().is_err());
        assert!(!d.source_stuck());
    }

    #[test]
    fn the_whole_request_rule_fails_the_same_request() {
        let timeout = Duration::from_millis(100);
        let d = Deadlines::with_rule("lib".into(), timeout, Rule::Request);
        let (sent, got) = mpsc::channel();
        let slow = accesses(&d, 30, timeout / 3, sent);
        assert_eq!(got.recv_timeout(Duration::from_secs(5)), Ok("accesses"));
        assert_eq!(slow.join().unwrap(), None);
    }

    #[test]
    fn one_access_past_the_timeout_fails_its_request_in_time() {
        let timeout = Duration::from_millis(300);
        let d = Deadlines::new("lib".into(), timeout);
        let (sent, got) = mpsc::channel();
        let start = Instant::now();
        // Busy first, so that the access begins well after the request.
        let armed = arm(&d, (), None, move |_| sent.send(start.elapsed()).unwrap());
        let began = Arc::new(OnceLock::new());
        let stuck = std::thread::spawn({
            let began = began.clone();
            move || {
                armed.running_here();
                let mut x = 0u64;
                while start.elapsed() < Duration::from_millis(200) {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
                access::one(|| {
                    began.set(start.elapsed()).unwrap();
                    std::thread::sleep(Duration::from_secs(2))
                });
                armed.take()
            }
        });
        let failed_after = got.recv_timeout(Duration::from_secs(5)).unwrap();
        let began = *began.get().unwrap();
        assert!(
            failed_after >= began + timeout && failed_after < began + timeout + timeout / 2,
            "failed after {failed_after:?}, the access began at {began:?}"
        );
        assert!(d.source_stuck());
        assert_eq!(stuck.join().unwrap(), None);
        assert!(!d.source_stuck(), "answers again");
    }

    #[test]
    fn a_request_waiting_for_a_helper_whose_access_is_stuck_fails() {
        let timeout = Duration::from_millis(200);
        let d = Deadlines::new("lib".into(), timeout);
        let (sent, got) = mpsc::channel();
        let start = Instant::now();
        let armed = arm(&d, (), None, move |_| sent.send(start.elapsed()).unwrap());
        let waiter = std::thread::spawn(move || {
            armed.running_here();
            // The helper's access outlasts the timeout; the request waits
            // on a futex for it.
            let helper = std::thread::spawn(|| {
                access::one(|| std::thread::sleep(Duration::from_millis(1500)))
            });
            helper.join().unwrap();
            armed.take()
        });
        let failed_after = got.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(
            failed_after < Duration::from_millis(1000),
            "{failed_after:?}"
        );
        assert_eq!(waiter.join().unwrap(), None);
    }

    #[test]
    fn nothing_bounded_fails_nothing() {
        let timeout = Duration::from_millis(100);
        let d = Deadlines::with_rule("lib".into(), timeout, Rule::Nothing);
        let (sent, got) = mpsc::channel();
        let stuck = accesses(&d, 1, timeout * 4, sent);
        assert_eq!(stuck.join().unwrap(), Some("accesses"));
        assert!(got.try_recv().is_err());
    }

    #[test]
    fn each_thread_arms_its_requests_in_a_map_of_its_own() {
        let d = Deadlines::new("lib".into(), Duration::from_secs(60));
        let here = [arm(&d, (), None, |_| {}), arm(&d, (), None, |_| {})];
        assert_eq!(d.timer.live_shards().len(), 1, "one thread, one map");
        let elsewhere: Vec<Armed<()>> = (0..2)
            .map(|_| {
                let d = d.clone();
                std::thread::spawn(move || arm(&d, (), None, |_| {}))
                    .join()
                    .unwrap()
            })
            .collect();
        assert_eq!(d.timer.live_shards().len(), 3, "a map per arming thread");
        // The maps of the threads that ended go with their last request.
        drop(elsewhere);
        assert_eq!(d.timer.live_shards().len(), 1);
        drop(here);
    }

    #[test]
    fn a_deadline_armed_on_a_thread_that_ended_is_still_run() {
        let d = Deadlines::new("lib".into(), Duration::from_millis(100));
        let (sent, got) = mpsc::channel();
        let armed = std::thread::spawn({
            let d = d.clone();
            move || arm(&d, "orphan", None, move |r| sent.send(r).unwrap())
        })
        .join()
        .unwrap();
        assert_eq!(got.recv_timeout(Duration::from_secs(5)), Ok("orphan"));
        assert_eq!(armed.take(), None, "answered by its deadline");
        drop(armed);
        assert!(!d.source_stuck());
    }

    #[test]
    fn a_shorter_bound_comes_first() {
        let d = Deadlines::new("lib".into(), Duration::from_secs(60));
        let (sent, got) = mpsc::channel();
        let start = Instant::now();
        let _long = arm(&d, (), None, |_| {});
        let _short = arm(&d, (), Some(Duration::from_millis(50)), move |_| {
            sent.send(()).unwrap()
        });
        got.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(start.elapsed() < Duration::from_secs(5));
    }
}
