//! The kernel side: everything that talks to FUSE, the kernel's mount
//! table or the process itself. `serving` answers the kernel's requests
//! (`fuse` translates fuser's requests to the tree, `novelfs_fs`, and
//! nothing more; `session` attaches and serves one mount); `failover`
//! keeps a mount's connection across its server's death (the holder,
//! upgrades, `novelfs status`); `os` is the plumbing (attaching, the
//! mount table, fusermount, forks, the auto_unmount watchdog). Here:
//! `daemon` runs `novelfs mount` as a process; `config` resolves the
//! command's settings once.

pub(crate) mod access;
pub(crate) mod config;
mod counted;
pub(crate) mod daemon;
pub(crate) mod failover;
pub(crate) mod library_at;
pub(crate) mod logging;
mod os;
mod serving;
pub(crate) mod transport;
pub(crate) mod utc;
mod verdict;

// The commands (`crate::cli`) name these at `mount::`.
pub(crate) use failover::{status, upgrade};
pub use os::fusermount;
pub(crate) use os::{mountinfo, mountpoint};
