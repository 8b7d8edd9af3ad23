//! The pieces the tree (`novelfs-fs`) and the storage (`novelfs-storage`)
//! both build on, written once: a byte-bounded LRU map (`lru`), one
//! computation of a key at a time with the others waiting for its result
//! (`flight`), starting a named thread (`thread`), and a failure's cause
//! kept and shown with its chain (`cause`). No I/O, no knowledge of the
//! library.

pub mod cause;
pub mod flight;
pub mod lru;
pub mod thread;

/// Locks `m`, poisoned or not: the one way the daemon, the tree and the
/// storage take their locks.
///
/// A poisoned lock only means another request panicked (and was answered
/// with EIO): every value kept under these locks is whole between two
/// statements, so what another thread left is used as it is.
pub fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
