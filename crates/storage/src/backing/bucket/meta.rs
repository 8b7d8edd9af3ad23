//! A file's and a directory's attributes as a bucket's listing gives
//! them: the inode from the version (stable across machines), the times
//! from the objects'.

use std::hash::Hash;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::{Entry, Version};

use super::super::{EntryKind, Meta};

fn stamp_of_time(t: SystemTime) -> (i64, i64) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos() as i64),
        Err(_) => (0, 0),
    }
}

/// Inode numbers and directory stamps reach the persistent index and the
/// inode journal, and every machine of a fleet must give one version the
/// same: the hash is the stable one.
fn hash64(v: &impl Hash) -> u64 {
    novelfs_library::stable_hash::stable_hash(v)
}

/// An object's metadata from its version: a new ETag is a new inode.
pub(super) fn file_meta(version: &Version, size: u64, modified: SystemTime) -> Meta {
    Meta {
        kind: EntryKind::File,
        len: size,
        dev: 0,
        ino: hash64(version),
        mtime: stamp_of_time(modified),
        ctime: (0, 0),
    }
}

/// A directory's metadata from its listing: its stamp is a digest of the
/// names and versions listed, so a chapter added, removed or replaced
/// changes it.
pub(super) fn dir_meta(path: &Path, entries: &[Entry]) -> Meta {
    let digest = hash64(
        &entries
            .iter()
            .map(|e| (&e.name, &e.version))
            .collect::<Vec<_>>(),
    );
    let newest = entries
        .iter()
        .map(|e| e.modified)
        .max()
        .unwrap_or(UNIX_EPOCH);
    dir_meta_of(path, digest, newest)
}

/// A directory's metadata from a digest of what it holds and its newest
/// entry's time.
pub(super) fn dir_meta_of(path: &Path, digest: u64, newest: std::time::SystemTime) -> Meta {
    Meta {
        kind: EntryKind::Dir,
        len: 0,
        dev: 0,
        ino: hash64(&path),
        mtime: stamp_of_time(newest),
        ctime: (digest as i64, 0),
    }
}
