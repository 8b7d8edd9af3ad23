//! novelfs: a library of novel chapters as a read-only filesystem whose
//! pages are byte for byte what the `novel_read` tool returns.
//!
//! `library` is the tool's semantics, `fs` the tree of the mount (both
//! free of FUSE), `mount` the kernel side, `cli` the commands; `events`
//! names the daemon's machine-readable log lines.

#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(unreachable_pub)]

pub mod cli;
pub mod events;
pub mod fs;
pub mod library;
pub mod mount;
#[cfg(test)]
mod test_util;
