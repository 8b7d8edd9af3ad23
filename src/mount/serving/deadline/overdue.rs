//! The requests past their deadline and still running: the source does
//! not answer while there is one, logged once as the first goes overdue
//! and once as the last ends.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Timer;

impl Timer {
    /// A request is past its `bound`: the first one logs that the source
    /// stopped answering.
    pub(super) fn went_overdue(&self, bound: Duration) {
        if self.overdue.fetch_add(1, Ordering::AcqRel) == 0 {
            log::warn!(
                "{} stopped answering within {:.1} s: requests that need it get EIO until it answers",
                self.source,
                bound.as_secs_f64()
            );
        }
    }

    /// A request past its deadline ended: the last one logs that the
    /// source answers again.
    pub(super) fn overdue_ended(&self) {
        let before = self.overdue.fetch_sub(1, Ordering::AcqRel);
        if before == 1 {
            log::warn!("{} answers again", self.source);
        }
    }
}
