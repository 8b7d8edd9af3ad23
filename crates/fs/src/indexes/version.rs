//! The versions index files are cached under: a digest of what a look
//! saw, or of the error or the switched-off tool they show instead.

use std::hash::{Hash, Hasher};

use novelfs_library::NovelError;

/// The version of a book's index, from its directory's version and each
/// chapter's (in list order; `None`: gone).
pub(crate) fn chapters_version(book: u64, chapters: impl Iterator<Item = Option<u64>>) -> u64 {
    let mut h = novelfs_library::stable_hash::StableHasher::new();
    ("chapters", book).hash(&mut h);
    for c in chapters {
        c.hash(&mut h);
    }
    h.finish()
}

/// The version of an index that fails with `error`.
pub(super) fn error_version(error: &NovelError) -> u64 {
    let mut h = novelfs_library::stable_hash::StableHasher::new();
    ("error", error.error_line()).hash(&mut h);
    h.finish()
}

pub(super) fn off_version(tool: &str) -> u64 {
    let mut h = novelfs_library::stable_hash::StableHasher::new();
    ("off", tool).hash(&mut h);
    h.finish()
}
