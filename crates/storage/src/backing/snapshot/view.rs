//! A published snapshot as a mount serves it: the root object at once,
//! a directory's piece the first time the directory is asked for, what
//! the publisher recorded beside its files handed to the mount's index.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::super::bodies::lock;
use super::Head;
use super::pieces::{self, Root};
use crate::{Entry, Storage, StorageError};
use novelfs_library::backing::{PublishedFigures, PublishedIndex};

#[derive(Debug)]
pub struct Snapshot {
    pub head: Head,
    root: Root,
    /// The directories served so far, each made once from its piece.
    made: Mutex<HashMap<PathBuf, Arc<Vec<Entry>>>>,
    /// One fetch at a time of each piece: the readers of a directory
    /// whose piece is on its way wait for it.
    fetching: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

impl Snapshot {
    /// The snapshot `head` names: its root object, fetched (one GET).
    pub(crate) fn fetch(storage: &dyn Storage, head: Head) -> Result<Snapshot, StorageError> {
        let root = Root::fetch(storage, &head.root)?;
        Ok(Snapshot {
            head,
            root,
            made: Mutex::new(HashMap::new()),
            fetching: Mutex::new(HashMap::new()),
        })
    }

    /// Keeps the directories `before` made whose piece and sub-directories
    /// this snapshot has unchanged: they are not fetched again.
    pub(crate) fn keeping(self, before: &Snapshot) -> Snapshot {
        {
            let old = lock(&before.made);
            let mut made = lock(&self.made);
            for (dir, entries) in old.iter() {
                if self.root.dirs.get(dir) == before.root.dirs.get(dir) {
                    made.insert(dir.clone(), entries.clone());
                }
            }
        }
        self
    }

    /// How many files it holds.
    pub fn files(&self) -> u64 {
        self.root.files()
    }

    /// The entries of `dir` as of the snapshot (its piece fetched the
    /// first time, one GET, and what its publisher recorded beside its
    /// files handed to `index` before they are served); `None` when it
    /// holds no such directory.
    pub fn dir(
        &self,
        storage: &dyn Storage,
        dir: &Path,
        index: Option<&PublishedIndex>,
    ) -> Result<Option<Arc<Vec<Entry>>>, StorageError> {
        let Some(shape) = self.root.dirs.get(dir) else {
            return Ok(None);
        };
        if let Some(made) = lock(&self.made).get(dir) {
            return Ok(Some(made.clone()));
        }
        let gate = shape.piece.as_ref().map(|piece| {
            lock(&self.fetching)
                .entry(piece.clone())
                .or_default()
                .clone()
        });
        let _one_fetch = gate.as_ref().map(|g| lock(g));
        if let Some(made) = lock(&self.made).get(dir) {
            return Ok(Some(made.clone()));
        }
        let files = match &shape.piece {
            Some(piece) => {
                let (files, beside) = pieces::fetch_files(storage, piece)?;
                if let (Some(index), Some(beside)) = (index, beside) {
                    index(dir, &beside);
                }
                files
            }
            None => Vec::new(),
        };
        let made = Arc::new(pieces::entries(shape, files));
        lock(&self.made).insert(dir.to_path_buf(), made.clone());
        Ok(Some(made))
    }

    /// A digest of what the directory `dir` holds (the names of its piece
    /// and its sub-directories) and its newest file's time, without its
    /// piece: a directory's stamp. `None` when it holds no such directory.
    pub fn shape(&self, dir: &Path) -> Option<(u64, SystemTime)> {
        use std::hash::{Hash, Hasher};
        let shape = self.root.dirs.get(dir)?;
        let mut subdirs: Vec<&std::ffi::OsStr> =
            shape.subdirs.iter().map(|s| s.as_os_str()).collect();
        subdirs.sort();
        let mut h = novelfs_library::stable_hash::StableHasher::new();
        (shape.piece.as_deref().unwrap_or(""), subdirs).hash(&mut h);
        Some((h.finish(), shape.newest))
    }

    /// Hands `index` what the publisher recorded beside the files of
    /// `dir` (its piece fetched, one GET, and not kept): for a mount that
    /// lists its directories rather than serves them from the snapshot.
    pub(crate) fn rows(
        &self,
        storage: &dyn Storage,
        dir: &Path,
        index: &PublishedIndex,
    ) -> Result<(), StorageError> {
        let piece = self.root.dirs.get(dir).and_then(|s| s.piece.as_ref());
        if let Some(piece) = piece
            && let (_, Some(beside)) = pieces::fetch_files(storage, piece)?
        {
            index(dir, &beside);
        }
        Ok(())
    }

    /// What the publisher recorded of `dir` in the root (see
    /// `Backing::published_figures`), with its stamp (`shape`), while its
    /// piece is not fetched: a directory the mount read is judged from
    /// its own listing.
    pub fn published_figures(&self, dir: &Path) -> Option<PublishedFigures> {
        let figures = self.root.dirs.get(dir)?.figures.clone()?;
        if lock(&self.made).contains_key(dir) {
            return None;
        }
        let (stamp, newest) = self.shape(dir)?;
        Some(PublishedFigures {
            stamp,
            newest,
            figures,
        })
    }

    /// How many directories it has made so far (their pieces fetched).
    #[cfg(test)]
    pub(crate) fn made(&self) -> usize {
        lock(&self.made).len()
    }
}
