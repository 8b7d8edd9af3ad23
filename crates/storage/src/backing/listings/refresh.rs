//! A listing past its TTL made again on a thread of its own while its
//! readers keep the old one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::Listings;
use super::flight::{Found, Lead};

/// Listings made again in the background at once; past it a reader of a
/// listing past its TTL makes it itself.
const REFRESHES_AT_ONCE: usize = 8;

/// The stack of a thread that lists: it waits on the storage's client,
/// which needs little.
pub(super) const LISTER_STACK: usize = 256 << 10;

impl Listings {
    /// Makes the listing of `dir` for `lead` on a thread of its own, then
    /// calls `then` with when it began (`None`: it failed). Whether the
    /// thread started (if not, the lead is dropped: its waiters get an
    /// error).
    pub(super) fn fly_away(
        self: &Arc<Self>,
        dir: PathBuf,
        lead: Lead,
        then: impl FnOnce(&Arc<Self>, &Path, Option<Instant>) + Send + 'static,
    ) -> bool {
        let me = self.clone();
        novelfs_kit::thread::spawn("novelfs-list", Some(LISTER_STACK), move || {
            let begun = Instant::now();
            let made = me.fly(&dir, lead).is_ok().then_some(begun);
            then(&me, &dir, made);
        })
        .is_ok()
    }

    /// Starts making `dir`'s listing again in the background unless it is
    /// under way: whether the old listing is to be served meanwhile (not
    /// when no thread could make it and this reader made it itself).
    pub(super) fn refresh(self: &Arc<Self>, dir: &Path) -> bool {
        let lead = match self.find(dir) {
            Found::Fresh(_) | Found::Theirs(_) => return true,
            Found::Mine(lead) => lead,
        };
        if self.refreshing.fetch_add(1, Ordering::AcqRel) < REFRESHES_AT_ONCE {
            let started = self.fly_away(dir.to_path_buf(), lead, |me, _, _| {
                me.refreshing.fetch_sub(1, Ordering::AcqRel);
            });
            if !started {
                // The lead went with the thread that did not start: its
                // waiters got an error, and the old listing is served.
                self.refreshing.fetch_sub(1, Ordering::AcqRel);
            }
            return true;
        }
        self.refreshing.fetch_sub(1, Ordering::AcqRel);
        // No thread for it: the flight is this reader's own, and what it
        // makes is served (the old listing only when it failed).
        self.fly(dir, lead).is_err()
    }
}
