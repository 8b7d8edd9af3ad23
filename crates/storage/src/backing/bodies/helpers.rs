//! What every backing shares: a library path as the storage's, and an
//! object changed under a read told apart.

use std::io;
use std::path::Path;

use novelfs_library::backing::SourceKind;

use crate::RelPath;

pub(in crate::backing) fn rel(path: &Path) -> io::Result<RelPath> {
    RelPath::new(path.as_os_str()).map_err(io::Error::from)
}

/// Whether `e` says an object was replaced under a read of one version.
pub(in crate::backing) fn is_changed(e: &io::Error) -> bool {
    SourceKind::of(e) == SourceKind::Changed
}
