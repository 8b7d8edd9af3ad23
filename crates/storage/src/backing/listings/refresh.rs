//! A listing past its TTL made again on a thread of its own while its
//! readers keep the old one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::super::bodies::lock;
use super::Listings;
use super::flight::{Flight, Found, Landing};

/// Listings made again in the background at once; past it a reader of a
/// listing past its TTL makes it itself.
const REFRESHES_AT_ONCE: usize = 8;

/// The stack of a thread that lists: it waits on the storage's client,
/// which needs little.
pub(super) const LISTER_STACK: usize = 256 << 10;

impl Listings {
    /// Makes the listing of `dir` on a thread of its own, then calls
    /// `then` with when it began (`None`: it failed). Whether the thread
    /// started (if not, the flight ends with an error).
    pub(super) fn fly_away(
        self: &Arc<Self>,
        dir: PathBuf,
        flight: Arc<Flight>,
        then: impl FnOnce(&Arc<Self>, &Path, Option<Instant>) + Send + 'static,
    ) -> bool {
        let me = self.clone();
        let (d, f) = (dir.clone(), flight.clone());
        let spawned = std::thread::Builder::new()
            .name("novelfs-list".into())
            .stack_size(LISTER_STACK)
            .spawn(move || {
                let begun = Instant::now();
                let made = me.fly(&d, &f).is_ok().then_some(begun);
                then(&me, &d, made);
            });
        if spawned.is_err() {
            drop(Landing {
                listings: self,
                dir: &dir,
                flight: &flight,
            });
        }
        spawned.is_ok()
    }

    /// Starts making `dir`'s listing again in the background unless it is
    /// under way: whether the old listing is to be served meanwhile (not
    /// when no thread could make it and this reader made it itself).
    pub(super) fn refresh(self: &Arc<Self>, dir: &Path) -> bool {
        let flight = match self.find(dir) {
            Found::Fresh(_) | Found::Theirs(_) => return true,
            Found::Mine(f) => f,
        };
        let started = self.refreshing.fetch_add(1, Ordering::AcqRel) < REFRESHES_AT_ONCE
            && self.fly_away(dir.to_path_buf(), flight.clone(), |me, _, _| {
                me.refreshing.fetch_sub(1, Ordering::AcqRel);
            });
        if !started {
            self.refreshing.fetch_sub(1, Ordering::AcqRel);
            // No thread for it: the flight is this reader's own, and what
            // it made is served (the old listing only when it failed).
            if lock(&flight.result).is_none() {
                return self.fly(dir, &flight).is_err();
            }
        }
        true
    }
}
