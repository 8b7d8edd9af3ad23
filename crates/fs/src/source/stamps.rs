//! Stamps and versions of what is on disk: a file's mtime, its stamp, the
//! version numbers cached values are kept under.

use std::hash::{Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use novelfs_library::BookIndex;

use crate::cache::Stamp;

pub(crate) fn mtime_of(meta: &std::fs::Metadata) -> SystemTime {
    let secs = meta.mtime();
    let nanos = meta.mtime_nsec().clamp(0, 999_999_999) as u32;
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nanos)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::from_nanos(nanos as u64)
    }
}

/// The stamp of a path (`None` when it is gone; a symlink is not followed).
pub(crate) fn stamp_of(path: &Path) -> Option<Stamp> {
    std::fs::symlink_metadata(path).ok().map(|m| Stamp::of(&m))
}

/// The mtime of a directory, or the epoch when it is gone.
pub(crate) fn dir_mtime(path: &Path) -> SystemTime {
    std::fs::symlink_metadata(path)
        .map(|m| mtime_of(&m))
        .unwrap_or(UNIX_EPOCH)
}

/// A version number for a source stamp (a 64-bit digest: two versions of
/// one file colliding is not a practical concern).
pub(crate) fn version_of(stamp: &Stamp) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    stamp.hash(&mut hasher);
    hasher.finish()
}

/// The version of a book's index: of its directory's stamp and its names.
pub(super) fn index_version(stamp: &Stamp, index: &BookIndex) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    stamp.hash(&mut hasher);
    for c in &index.chapters {
        c.os_name.hash(&mut hasher);
    }
    hasher.finish()
}
