//! What every backing shares: a lock that outlives a panic, a library
//! path as the storage's, and the storage's errors as a reader's.

use std::io;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use crate::{RelPath, StorageError};

pub(in crate::backing) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(in crate::backing) fn rel(path: &Path) -> io::Result<RelPath> {
    RelPath::new(path.as_os_str()).map_err(to_io)
}

/// The error a reader of the library gets for `e`: its errno, and its
/// words (which never hold a secret).
pub(in crate::backing) fn to_io(e: StorageError) -> io::Error {
    let kind = match &e {
        _ if e.is_not_found() => io::ErrorKind::NotFound,
        StorageError::Timeout { .. } => io::ErrorKind::TimedOut,
        StorageError::Unreachable { .. } => io::ErrorKind::ConnectionRefused,
        // The storage failing now (refused credentials may be renewed, a
        // 5xx may pass), or the object replaced under a read: never what
        // a file is.
        _ => io::ErrorKind::NotConnected,
    };
    io::Error::new(kind, e)
}

/// Whether `e` says an object was replaced under a read of one version.
pub(in crate::backing) fn is_changed(e: &io::Error) -> bool {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<StorageError>())
        .is_some_and(|s| matches!(s, StorageError::Changed { .. }))
}
