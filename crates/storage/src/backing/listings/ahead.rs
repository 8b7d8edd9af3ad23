//! A walker's next directories listed ahead of it, as many as it uses
//! within a share of the TTL, each about two LISTs' time before it comes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::Listings;
use super::flight::Found;
use super::refresh::LISTER_STACK;
use novelfs_kit::lock;

impl Listings {
    /// A walker comes to `dirs` next, in that order: they are listed ahead
    /// of it, as many as it uses within a share of the TTL.
    pub(in crate::backing) fn ahead(self: &Arc<Self>, dirs: Vec<PathBuf>) {
        if !self.ahead {
            return;
        }
        lock(&self.pace).want(dirs);
        self.pump();
    }

    /// Starts the listings ahead that the walker's pace has room for, each
    /// on a thread that waits for its moment (a listing is made about two
    /// LISTs' time before the walker comes to it).
    pub(super) fn pump(self: &Arc<Self>) {
        let lead = self.lead();
        loop {
            let next = lock(&self.pace).next(self.ttl, lead, |d| self.needless(d));
            let Some((dir, wait)) = next else { return };
            let me = self.clone();
            let spawned =
                novelfs_kit::thread::spawn("novelfs-list", Some(LISTER_STACK), move || {
                    std::thread::sleep(wait);
                    // The walker may have come to it meanwhile.
                    let made = match me.needless(&dir) {
                        true => None,
                        false => match me.find(&dir) {
                            Found::Mine(lead) => {
                                let begun = Instant::now();
                                me.fly(&dir, lead).is_ok().then_some(begun)
                            }
                            Found::Fresh(_) | Found::Theirs(_) => None,
                        },
                    };
                    lock(&me.pace).listed(&dir, made);
                    me.pump();
                });
            if spawned.is_err() {
                return;
            }
        }
    }

    /// Whether `dir` is fresh or being listed: nothing to list ahead.
    pub(super) fn needless(&self, dir: &Path) -> bool {
        self.fresh(dir).is_some() || self.making.under_way(&dir.to_path_buf())
    }

    /// A reader used the listing of `dir`: when it was made ahead, there
    /// is room for the next.
    pub(super) fn used(self: &Arc<Self>, dir: &Path) {
        if self.ahead && lock(&self.pace).used(dir) {
            self.pump();
        }
    }
}
