//! What the requests past their deadline ask: the kernel sends a failed
//! request again for each reader that waited on it, and one that asks
//! the same fails at once instead of waiting on the source once more.

use novelfs_kit::lock;

use super::{Asks, Deadlines, Timer};

impl Timer {
    pub(super) fn hold(&self, asks: Asks) {
        if asks != 0 {
            *lock(&self.held).entry(asks).or_default() += 1;
        }
    }

    pub(super) fn release(&self, asks: Asks) {
        if asks == 0 {
            return;
        }
        let mut held = lock(&self.held);
        if let Some(n) = held.get_mut(&asks) {
            *n -= 1;
            if *n == 0 {
                held.remove(&asks);
            }
        }
    }

    pub(super) fn holds(&self, asks: Asks) -> bool {
        asks != 0 && lock(&self.held).contains_key(&asks)
    }
}

impl Deadlines {
    /// What a request of `what` (its operation and arguments) asks.
    pub(crate) fn asks(&self, what: &impl std::hash::Hash) -> Asks {
        use std::hash::BuildHasher;
        // Never 0, which asks nothing.
        self.timer.asks_hasher.hash_one(what) | 1
    }
}
