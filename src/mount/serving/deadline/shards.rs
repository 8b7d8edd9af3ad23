//! Where the deadlines wait: each thread that arms requests keeps its
//! own map, so that arming and ending a request takes a lock its thread
//! shares only with the timer's looks (and with the thread the request
//! ends on), never one that every request of the mount takes.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use novelfs_kit::lock;

use super::{Deadlines, Expiry, Timer};

/// The deadlines armed on one thread, by (deadline, request number).
#[derive(Default)]
pub(super) struct Shard {
    pub(super) pending: Mutex<BTreeMap<(Instant, u64), Expiry>>,
}

impl Deadlines {
    /// The calling thread's shard of this mount's deadlines, made on its
    /// first request. A shard lives while its thread does or a request
    /// armed on it has not ended.
    pub(super) fn shard_here(&self) -> Arc<Shard> {
        thread_local! {
            static SHARDS: RefCell<Vec<(Weak<Timer>, Arc<Shard>)>> =
                const { RefCell::new(Vec::new()) };
        }
        SHARDS.with_borrow_mut(|shards| {
            // A live `Weak` keeps its timer's allocation: no other timer
            // can have the same address.
            let timer = Arc::as_ptr(&self.timer);
            if let Some((_, shard)) = shards.iter().find(|(t, _)| t.as_ptr() == timer) {
                return shard.clone();
            }
            shards.retain(|(t, _)| t.strong_count() > 0);
            let shard = Arc::new(Shard::default());
            lock(&self.timer.shards).push(Arc::downgrade(&shard));
            shards.push((Arc::downgrade(&self.timer), shard.clone()));
            shard
        })
    }
}

impl Timer {
    /// The shards whose threads or requests still live.
    pub(super) fn live_shards(&self) -> Vec<Arc<Shard>> {
        let mut shards = lock(&self.shards);
        shards.retain(|s| s.strong_count() > 0);
        shards.iter().filter_map(Weak::upgrade).collect()
    }
}
