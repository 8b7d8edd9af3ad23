//! What the kernel may keep of a directory's listing at OPENDIR, from a
//! digest of what the listing depends on.

use std::hash::{Hash, Hasher};
use std::time::SystemTime;

use super::{NovelFs, book, chapter, root};
use crate::cache::Stamp;
use crate::error::{Error, Result};
use crate::node::{Kind, Node};

/// What the kernel may do with its cache of a directory's listing, at
/// OPENDIR (see `NovelFs::opendir`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirCache {
    /// List it from the cache, as it was filled before.
    Keep,
    /// Drop what the cache holds and fill it from the READDIRs that follow.
    Refill,
    /// Cache nothing: every READDIR comes to the daemon.
    Uncached,
}

/// A digest of what a directory's listing depends on (see `opendir`).
pub(super) fn digest(of: &impl Hash) -> u64 {
    let mut hasher = novelfs_library::stable_hash::StableHasher::new();
    of.hash(&mut hasher);
    hasher.finish()
}

impl NovelFs {
    /// Opens a directory, in mounts that are not watched (there OPENDIR
    /// gets ENOSYS and the kernel keeps listings until told otherwise).
    ///
    /// `Keep` when the kernel may list the directory from its own cache:
    /// only when what the listing depends on (the source of a chapter, the
    /// book directory, `novels/` and the switch) has the same stamp as at
    /// the previous opendir of this inode, and that stamp was settled then
    /// (`freshness::racy`).
    ///
    /// Under `--ttl 0` the kernel caches no listing at all (`Uncached`): a
    /// listing there is of the source as it is when it is asked, and a
    /// cache the kernel fills is not. The kernel adds a READDIR's entries
    /// to its cache when its reader gets them, which may come after an
    /// OPENDIR that dropped the cache for a newer version; two versions
    /// written within one clock tick share an mtime, so the kernel's own
    /// check of the directory's mtime does not catch it either.
    pub fn opendir(&self, ino: u64) -> Result<DirCache> {
        if self.getattr(ino)?.kind != Kind::Directory {
            return Err(Error::NotADirectory);
        }
        if self.freshness.ttl().is_zero() {
            return Ok(DirCache::Uncached);
        }
        let now = self.freshness.now();
        let (digest, settled) = match self.listing_digest(&self.node(ino)?, now) {
            Some((digest, settled)) => (Some(digest), settled),
            None => (None, false),
        };
        Ok(match self.listings.opened(ino, digest, settled) {
            true => DirCache::Keep,
            false => DirCache::Refill,
        })
    }

    /// A digest of what a listing of `node` depends on, and whether the
    /// stamps it is of are settled at `now`.
    fn listing_digest(&self, node: &Node, now: SystemTime) -> Option<(u64, bool)> {
        let (digest, stamp): (u64, Stamp) = match node {
            Node::Root => root::listing_digest(self)?,
            // An ambiguity lists what its book directory holds.
            Node::Book { book } | Node::Ambiguous { book, .. } => book::listing_digest(self, book)?,
            Node::Chapter { chapter } => chapter::listing_digest(self, chapter)?,
            _ => return None,
        };
        Some((digest, self.freshness.listing_settled(&stamp, now)))
    }
}
