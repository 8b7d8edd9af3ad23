//! The rows a publisher recorded beside a directory, for a mount that
//! lists its directories rather than follows the published snapshot
//! (`--freshness listing`): the first time a directory is listed, its
//! piece of the snapshot is fetched (one GET; the head and the root once
//! per mount) and its rows handed to the mount's index, which uses a row
//! only while its chapter is the object it was made from. A mount that
//! follows the snapshot is handed them by its follower.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::super::snapshot::{self, Snapshot};
use super::Listings;
use novelfs_kit::lock;

#[derive(Default)]
pub(super) struct PublishedRows {
    /// The snapshot published when the mount first needed it; `None`
    /// when there is none, it could not be read, or the mount follows it.
    snapshot: OnceLock<Option<Snapshot>>,
    /// The directories whose rows were asked for.
    asked: Mutex<HashSet<PathBuf>>,
}

impl PublishedRows {
    /// The mount follows the snapshot: its follower hands the rows.
    pub(super) fn followed(&self) {
        let _ = self.snapshot.set(None);
    }
}

impl Listings {
    /// Whether the rows published beside `dir` are still to be asked for.
    pub(super) fn rows_wanted(&self, dir: &Path) -> bool {
        self.published_index.get().is_some()
            && self.follow.get().is_none()
            && self.rows.snapshot.get().is_none_or(Option::is_some)
            && !lock(&self.rows.asked).contains(dir)
    }

    /// Hands the mount's index the rows published beside `dir`, once per
    /// directory, when the mount keeps an index and lists its directories.
    /// A failure costs only the rows: the chapters are read as without them.
    pub(super) fn rows_beside(&self, dir: &Path) {
        let Some(index) = self.published_index.get() else {
            return;
        };
        if !lock(&self.rows.asked).insert(dir.to_path_buf()) {
            return;
        }
        let storage = &*self.storage;
        let snapshot = self.rows.snapshot.get_or_init(|| {
            let head = snapshot::published_head(storage);
            match head.and_then(|h| h.map(|h| Snapshot::fetch(storage, h)).transpose()) {
                Ok(snapshot) => snapshot,
                Err(e) => {
                    log::debug!("no published rows: {e}");
                    None
                }
            }
        });
        if let Some(snapshot) = snapshot
            && let Err(e) = snapshot.rows(storage, dir, index)
        {
            log::debug!("no published rows for {}: {e}", dir.display());
        }
    }
}
