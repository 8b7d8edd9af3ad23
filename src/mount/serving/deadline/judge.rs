//! When a request is stuck: in an access to the source past its bound,
//! asleep in another system call through a whole bound, or waiting on
//! this daemon while the source does not answer.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use novelfs_storage::access;

use super::{Rule, Timer};

/// The thread a request runs on.
pub(super) struct Running {
    pub(super) tid: i32,
    /// Its accesses to the source.
    pub(super) accesses: access::Thread,
}

/// What a request's thread is doing, from its current system call
/// (`/proc/self/task/TID/syscall`).
#[derive(Debug, PartialEq)]
enum Waiting {
    /// Computing, or runnable.
    Computing,
    /// Waiting for another thread of this process (a futex).
    OnThisDaemon,
    /// Asleep in some other system call.
    OnTheSystem,
}

fn waiting(tid: i32) -> Waiting {
    let Ok(call) = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")) else {
        return Waiting::OnTheSystem;
    };
    let first = call.split_whitespace().next().unwrap_or("");
    if first == "running" {
        Waiting::Computing
    } else if first.parse::<libc::c_long>() == Ok(libc::SYS_futex) {
        Waiting::OnThisDaemon
    } else {
        Waiting::OnTheSystem
    }
}

/// How many times a thread has gone to sleep (its voluntary context
/// switches, `/proc/self/task/TID/status`): unchanged between two looks
/// at a thread asleep in a system call, it slept through both in that one
/// call.
fn sleeps(tid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|n| n.trim().parse().ok())
}

/// How often a request that arrives while the source does not answer is
/// looked at: it fails the first time it is seen waiting on anything but
/// its own computing.
pub(super) const STUCK_LOOK: Duration = Duration::from_millis(10);

/// How often a request still running is looked at, in parts of its bound:
/// a system call not marked as an access is found stuck at most a part
/// after it has slept through the bound.
const LOOKS_PER_BOUND: u32 = 4;

/// Whether one request is stuck, looked at again and again until it ends.
pub(super) struct Judge {
    pub(super) armed_at: Instant,
    /// The longest one access may take: the source timeout, or the
    /// request's own shorter bound.
    pub(super) bound: Duration,
    /// Armed while the source did not answer: looked at every
    /// `STUCK_LOOK`, failed as soon as it is seen waiting on it.
    pub(super) arrived_stuck: bool,
    /// The thread's count of sleeps when first seen asleep in a system call
    /// that is not an access, and when.
    pub(super) asleep: Option<(u64, Instant)>,
}

impl Judge {
    /// When to look at the request again, or `None` when it is stuck;
    /// `running` is its thread, unset while it waits for one.
    pub(super) fn next_look(
        &mut self,
        timer: &Timer,
        running: Option<&Running>,
        now: Instant,
    ) -> Option<Instant> {
        let again = now
            + if self.arrived_stuck {
                STUCK_LOOK
            } else {
                (self.bound / LOOKS_PER_BOUND).max(STUCK_LOOK)
            };
        let Some(running) = running else {
            // Queued for a thread: failed once queued a whole bound.
            let waited = now.saturating_duration_since(self.armed_at);
            return (self.arrived_stuck && waited < self.bound).then_some(again);
        };
        match timer.rule {
            Rule::Access => {}
            Rule::Nothing => return Some(again),
            Rule::Request => {
                return match waiting(running.tid) {
                    Waiting::Computing => Some(now + timer.timeout),
                    Waiting::OnThisDaemon => {
                        (timer.overdue.load(Ordering::Acquire) == 0).then_some(now + timer.timeout)
                    }
                    Waiting::OnTheSystem => None,
                };
            }
        }
        if let Some(since) = running.accesses.in_access_since() {
            self.asleep = None;
            let stuck_at = since + self.bound;
            return (!self.arrived_stuck && now < stuck_at).then_some(stuck_at);
        }
        match waiting(running.tid) {
            Waiting::Computing => {
                self.asleep = None;
                Some(again)
            }
            Waiting::OnThisDaemon => {
                self.asleep = None;
                (!timer.source_stuck_now(now)).then_some(again)
            }
            Waiting::OnTheSystem => {
                let sleeps = sleeps(running.tid);
                match self.asleep {
                    Some((n, since)) if Some(n) == sleeps => {
                        let limit = if self.arrived_stuck {
                            STUCK_LOOK
                        } else {
                            self.bound
                        };
                        (now.saturating_duration_since(since) < limit).then_some(again)
                    }
                    _ => {
                        self.asleep = sleeps.map(|n| (n, now));
                        Some(again)
                    }
                }
            }
        }
    }
}

impl Timer {
    /// Whether the source does not answer now: a request is past its
    /// deadline, or an access on any thread (a request's, or a helper's it
    /// waits for) is older than the timeout.
    pub(super) fn source_stuck_now(&self, now: Instant) -> bool {
        self.overdue.load(Ordering::Acquire) > 0
            || access::oldest().is_some_and(|t| now.saturating_duration_since(t) >= self.timeout)
    }
}
