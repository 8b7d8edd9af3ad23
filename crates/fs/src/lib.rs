//! The tree of the mount (§2 of docs/contract.md) over the library layer,
//! free of FUSE: which names exist, what they are, what bytes they hold,
//! how long the kernel may keep them. `tree` holds the request handlers
//! (`NovelFs`) and returns plain values; the binary's `mount::serving::fuse`
//! translates them for the kernel. Each concern the handlers rely on has
//! its own module. `events` names the machine-readable log lines that the
//! daemon writes and tests read back.

#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(unreachable_pub)]

mod ahead;
mod cache;
mod chapter_shape;
mod error;
pub mod events;
mod formats;
mod freshness;
mod hold;
mod indexes;
mod inodes;
mod listing;
mod names;
mod node;
mod outline;
mod pages;
pub mod persist;
mod pool;
mod resolve;
mod source;
mod switch;
#[doc(hidden)]
pub mod test_util;
mod tree;
mod unreadable_dirs;

pub use ahead::{Store, StoreOutcome};
pub use error::{Error, Result};
pub use formats::Formats;
pub use inodes::OUTSIDE_INO;
pub use inodes::journal::{JournalSink, ReplayError};
pub use inodes::journal_file::{Found as JournalFound, JournalFile};
pub use names::PageName;
pub use node::{Attr, Kind, ROOT_INO};
pub use tree::{Detail, DirCache, DirReply, Entry, FsConfig, NovelFs};

pub use cache::MMAP_THRESHOLD;
pub use freshness::{Change, Invalidation};
pub use pool::unpinned;

use novelfs_kit::lock;
