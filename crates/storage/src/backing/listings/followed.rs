//! The published snapshot followed: its directories are served from it,
//! not listed.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use novelfs_library::backing::PublishedIndex;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::super::follow::{Follower, PendingHead, Said, show};
use super::Listings;
use crate::counters::SnapshotState::{NonePublished, NotFollowed};
use novelfs_kit::lock;

impl Listings {
    /// Hands `sink` what the publisher recorded beside each directory of
    /// the snapshot followed, as its piece is fetched.
    pub(in crate::backing) fn on_published_index(&self, sink: PublishedIndex) {
        let _ = self.published_index.set(sink);
    }

    /// What takes the rows published beside a directory (see
    /// `on_published_index`), for a follower to hand them to.
    pub(in crate::backing) fn published_index(&self) -> Arc<OnceLock<PublishedIndex>> {
        self.published_index.clone()
    }

    /// Serves directories from `follower`'s snapshot from now on.
    pub(in crate::backing) fn follow(&self, follower: Arc<Follower>) {
        self.rows.followed();
        let _ = self.follow.set(follower);
    }

    /// Follows the snapshot `head` names once it is answered (see
    /// `take_pending`).
    pub(in crate::backing) fn follow_pending(&self, head: Arc<PendingHead>) {
        self.rows.followed();
        *lock(&self.pending) = Some(head);
        self.pending_any.store(true, Ordering::Release);
    }

    /// Takes the pending head, waiting for its answer, and follows its
    /// snapshot when there is one: readers that come meanwhile wait too,
    /// so none lists what the snapshot holds.
    pub(super) fn take_pending(&self) {
        if !self.pending_any.load(Ordering::Acquire) {
            return;
        }
        let mut pending = lock(&self.pending);
        let Some(head) = pending.take() else { return };
        match head.asked() {
            Ok(Some(head)) => {
                match Follower::start(self.storage.clone(), self.ttl, self.drift(), head) {
                    Ok(f) => {
                        let f = f.published_to(self.published_index.clone());
                        let _ = self.follow.set(Arc::new(f));
                    }
                    Err(e) => {
                        show(&*self.storage, NotFollowed, &e.to_string(), 0);
                        log::warn!("the published snapshot is not followed ({e}): the mount lists")
                    }
                }
            }
            Ok(None) => show(&*self.storage, NonePublished, "", 0),
            Err(e) => show(&*self.storage, NotFollowed, &e.to_string(), 0),
        }
        log::info!("freshness: {}", self.freshness());
        self.pending_any.store(false, Ordering::Release);
    }

    /// How often a directory read is compared with the snapshot (see
    /// `Follower`): `DRIFT` unless set.
    pub(in crate::backing) fn set_drift(&self, every: Duration) {
        *lock(&self.drift) = every;
    }

    pub(in crate::backing) fn drift(&self) -> Duration {
        *lock(&self.drift)
    }

    /// Whether a published snapshot is followed (it may have lapsed since).
    pub(in crate::backing) fn following(&self) -> bool {
        self.take_pending();
        self.follow.get().is_some()
    }

    /// The freshness rule in force: the snapshot's, or listings'.
    pub(in crate::backing) fn freshness(&self) -> String {
        match self.follow.get() {
            Some(f) => f.describe(),
            None if self.pending_any.load(Ordering::Acquire) => {
                "the published snapshot where there is one (its head is being asked for)".into()
            }
            None => format!("listings, each made again once per TTL ({:?})", self.ttl),
        }
    }

    /// The digest and newest time the followed snapshot gives the
    /// directory `dir` without its piece (see `Snapshot::shape`).
    pub(in crate::backing) fn snapshot_shape(
        &self,
        dir: &Path,
    ) -> Option<(u64, std::time::SystemTime)> {
        self.take_pending();
        self.follow.get()?.shape(dir)
    }

    /// What the publisher recorded of `dir` in the followed snapshot's
    /// root (see `Backing::published_figures`).
    pub(in crate::backing) fn published_figures(
        &self,
        dir: &Path,
    ) -> Option<novelfs_library::backing::PublishedFigures> {
        self.take_pending();
        self.follow.get()?.published_figures(dir)
    }

    /// What the followed snapshot says of `dir`, when it answers for it.
    pub(super) fn in_snapshot(&self, dir: &Path) -> Option<Said> {
        self.take_pending();
        self.follow.get()?.dir(dir)
    }
}
