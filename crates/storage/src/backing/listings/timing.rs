//! A LIST's time, smoothed: how long before a walker comes to a directory
//! its listing ahead is begun.

use std::time::Duration;

use super::Listings;
use novelfs_kit::lock;

/// A LIST's time before one is measured.
pub(super) const FIRST_LIST_TIME: Duration = Duration::from_millis(50);

impl Listings {
    /// A LIST that answered took `took`: it weighs a fifth in the smoothed
    /// time.
    pub(super) fn timed(&self, took: Duration) {
        let mut time = lock(&self.list_time);
        *time = time.mul_f64(0.8) + took.mul_f64(0.2);
    }

    /// How long before a walker comes to a directory its listing ahead is
    /// begun: twice a LIST's smoothed time.
    pub(super) fn lead(&self) -> Duration {
        *lock(&self.list_time) * 2
    }
}
