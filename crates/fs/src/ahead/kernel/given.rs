//! The given-set: the inodes whose bytes the kernel was given (stored or
//! read), per inode until the kernel forgets it. An inode's bytes never
//! change, so it is given once; a FORGET takes it out (the kernel dropped
//! it with its pages, and its number may come back for another page).

use std::sync::Arc;

use super::{State, Store, StoreAhead};
use crate::lock;
use crate::node::Node;

impl State {
    /// Whether the kernel was given `ino` (or it was given up on), or a
    /// store of it waits for its retry: not to be stored now.
    pub(super) fn has(&self, ino: u64) -> bool {
        self.given.contains(&ino) || self.retries.iter().any(|s| s.ino == ino)
    }
}

impl StoreAhead {
    /// The store of a page the kernel was not given yet (neither stored
    /// nor read), claimed: the store thread skips it. `None` once it was.
    pub(crate) fn claim(&self, ino: u64, node: Node, bytes: Arc<Vec<u8>>) -> Option<Store> {
        let mut state = lock(&self.state);
        if state.has(ino) {
            return None;
        }
        state.given.insert(ino);
        Some(Store::new(ino, bytes, node))
    }

    /// Whether the kernel may not have the page `ino` yet: it was neither
    /// stored nor read since the kernel made the inode.
    pub(crate) fn not_given(&self, ino: u64) -> bool {
        let state = lock(&self.state);
        !state.has(ino)
    }

    /// A READ of `ino` reached the daemon: the kernel has its bytes now.
    pub(crate) fn given(&self, ino: u64) {
        lock(&self.state).given.insert(ino);
    }

    /// The kernel forgot `ino`: whatever it was given there went with it.
    pub(crate) fn forgotten(&self, ino: u64) {
        if !self.following() {
            return;
        }
        let mut state = lock(&self.state);
        state.given.remove(&ino);
        state.retries.retain(|s| s.ino != ino);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ahead::track::Tracks;
    use crate::names::PageName;
    use novelfs_library::{BookIndex, Chapter, PageFormat};
    use std::ffi::OsStr;

    #[test]
    fn a_forgotten_inode_is_no_longer_given() {
        let ahead = StoreAhead::new();
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let chapter = crate::node::chapter_ref(&book, OsStr::new("第1章.md"));
        let index = Arc::new(BookIndex::new(vec![Chapter::new("第1章.md".into())]));
        let page = PageName {
            offset: 1,
            limit: None,
            format: PageFormat::Text,
        };
        let mut tracks = Tracks::default();
        tracks.of(&book, &index);
        ahead.read(&mut tracks, &chapter, 0, page, 1);
        ahead.given(7);
        assert!(!ahead.not_given(7));
        ahead.forgotten(7);
        assert!(ahead.not_given(7), "the kernel dropped it with its pages");
    }
}
