//! Stamps and versions of what is on disk: a file's mtime, its stamp, the
//! version numbers cached values are kept under.

use std::ffi::OsStr;
use std::hash::{Hash, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

use novelfs_library::backing::Meta;
use novelfs_library::{BookIndex, Library};

use crate::cache::Stamp;

pub(crate) fn mtime_of(meta: &Meta) -> SystemTime {
    meta.modified()
}

/// The stamp of `novels` (or of the book directory `book`; `None` when it
/// is gone; a symlink is not followed).
pub(crate) fn stamp_of(library: &Library, book: Option<&OsStr>) -> Option<Stamp> {
    library.dir_metadata(book).map(|m| Stamp::of(&m))
}

/// The mtime of `novels` (or of the book directory `book`), or the epoch
/// when it is gone.
pub(crate) fn dir_mtime(library: &Library, book: Option<&OsStr>) -> SystemTime {
    library
        .dir_metadata(book)
        .map(|m| mtime_of(&m))
        .unwrap_or(UNIX_EPOCH)
}

/// The stamp of a local path, for tests that change files under a mount.
#[cfg(test)]
pub(crate) fn stamp_of_path(path: &std::path::Path) -> Option<Stamp> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Meta::from_std(&meta).map(|m| Stamp::of(&m))
}

/// A version number for a source stamp (a 64-bit digest: two versions of
/// one file colliding is not a practical concern).
pub(crate) fn version_of(stamp: &Stamp) -> u64 {
    let mut hasher = novelfs_library::stable_hash::StableHasher::new();
    stamp.hash(&mut hasher);
    hasher.finish()
}

/// The version of a book's index: of its directory's stamp and its names.
pub(super) fn index_version(stamp: &Stamp, index: &BookIndex) -> u64 {
    let mut hasher = novelfs_library::stable_hash::StableHasher::new();
    stamp.hash(&mut hasher);
    for c in &index.chapters {
        c.os_name.hash(&mut hasher);
    }
    hasher.finish()
}
