//! The thread that runs the deadlines as they pass, started with the
//! first request armed and gone with the mount.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use novelfs_kit::lock;

use super::{Deadlines, Timer};

impl Deadlines {
    pub(super) fn start(&self) {
        if self.timer.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let timer = Arc::downgrade(&self.timer);
        let spawned = novelfs_kit::thread::spawn("novelfs-deadline", None, move || {
            novelfs_fs::unpinned();
            run(timer)
        });
        if let Err(e) = spawned {
            log::warn!("no deadline thread ({e}): a hung source may hang requests");
        }
    }
}

/// The longest the timer thread sleeps between looks at its deadlines.
pub(super) const MAX_SLEEP: Duration = Duration::from_secs(1);

/// Runs the expiries as their deadlines pass, while the mount lives.
fn run(timer: std::sync::Weak<Timer>) {
    loop {
        let Some(t) = timer.upgrade() else { return };
        // Held through the look: a request armed meanwhile with a sooner
        // deadline than the one found finds the thread waiting and wakes
        // it (see `Deadlines::arm`).
        let mut next_look = lock(&t.next_look);
        let now = Instant::now();
        let mut soonest = now + MAX_SLEEP;
        for shard in t.live_shards() {
            // Under the shard's lock: a request that ends meanwhile finds
            // its deadline either still pending or already run.
            let mut pending = lock(&shard.pending);
            while let Some(entry) = pending.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                let mut expiry = entry.remove();
                if let Some(next) = expiry() {
                    pending.insert(next, expiry);
                }
            }
            if let Some(first) = pending.keys().next() {
                soonest = soonest.min(first.0);
            }
        }
        *next_look = soonest;
        // At most `MAX_SLEEP` at a time: the thread sees the mount go, and
        // deadlines armed meanwhile are run in time without a wake-up.
        let wait = soonest.saturating_duration_since(Instant::now());
        let _ = t.wake.wait_timeout(next_look, wait);
    }
}
