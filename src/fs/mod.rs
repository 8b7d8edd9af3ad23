//! The FUSE adapter: the tree of §2 (docs/contract.md) over the library layer.
//!
//! `core` holds the request handlers (`NovelFs`), free of FUSE types;
//! `fuse` only translates fuser's requests to them; each concern the
//! handlers rely on has its own module and owner.

pub mod access;
pub mod attach;
pub mod cache;
pub mod core;
pub mod daemon;
pub mod freshness;
pub mod fuse;
pub mod inodes;
pub mod listing;
pub mod mountpoint;
pub mod names;
pub mod node;
pub mod options;
pub mod outline;
pub mod pages;
pub mod prefetch;
pub mod resolve;
pub mod session;
pub mod source;
pub mod switch;

pub use self::core::{FsConfig, NovelFs};
pub use freshness::{Change, Invalidation, WATCHED_TTL};
pub use listing::{Listed, Listing};
pub use node::{Attr, Kind, Node, ROOT_INO};

use std::sync::{Mutex, MutexGuard};

/// A poisoned lock only means another request panicked (and was answered
/// with EIO); the data behind these locks stays consistent.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
