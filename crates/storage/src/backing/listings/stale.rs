//! Listings served past their TTL, within the stale window, while the
//! storage does not answer (`--stale-if-error`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::Entry;
use crate::outage::Outage;

use super::Listings;

impl Listings {
    /// Serves listings past their TTL while `outage` says the storage does
    /// not answer.
    pub(in crate::backing) fn guard(&self, outage: Arc<Outage>) {
        let _ = self.outage.set(outage);
    }

    /// `dir`'s kept listing when the storage does not answer and it is
    /// within the stale window past its TTL: counted as served stale.
    pub(super) fn stale(&self, dir: &Path) -> Option<Arc<Vec<Entry>>> {
        let outage = self.outage.get()?;
        let (entries, age, _) = self.kept(dir)?;
        if !outage.stale_ok(age.saturating_sub(self.ttl)) {
            return None;
        }
        outage.served_stale();
        Some(entries)
    }

    /// How long a listing is kept at most: past its TTL, the grace and the
    /// stale window, it serves nothing.
    pub(super) fn served_for(&self) -> Duration {
        let stale = self.outage.get().map_or(Duration::ZERO, |o| o.stale_for());
        self.ttl + self.grace.max(stale)
    }
}
