//! novelfs: a library of novel chapters as a read-only filesystem whose
//! pages are byte for byte what the `novel_read` tool returns.
//!
//! `library` is the tool's semantics and `fs` the tree of the mount, each a
//! crate of its own (both free of FUSE, re-exported here under those
//! names); `mount` is the kernel side, `cli` the commands; `events` names
//! the daemon's machine-readable log lines.

#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(unreachable_pub)]

pub mod cli;
pub mod mount;

pub use novelfs_fs as fs;
pub use novelfs_fs::events;
pub use novelfs_library as library;
pub use novelfs_storage as storage;
