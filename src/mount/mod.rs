//! The kernel side: everything that talks to FUSE, the kernel's mount
//! table or the process itself. `fuse` translates fuser's requests to the
//! tree (`novelfs_fs`) and nothing more; `session` attaches and serves one
//! mount; `daemon` runs `novelfs mount` as a process; `config` resolves
//! the command's settings once.

pub(crate) mod access;
mod ask_holder;
mod attach;
pub(crate) mod config;
mod counted;
pub(crate) mod daemon;
mod deadline;
mod ending;
pub(crate) mod failover;
#[macro_use]
mod read_only;
mod fuse;
pub mod fusermount;
mod handoff;
mod holder;
pub(crate) mod holder_lean;
mod holder_os;
pub(crate) mod library_at;
pub(crate) mod logging;
pub(crate) mod mountinfo;
pub(crate) mod mountpoint;
mod offload;
pub(crate) mod options;
mod process;
mod pusher;
mod replies;
mod runner;
mod session;
pub(crate) mod status;
mod step_down;
pub(crate) mod transport;
pub(crate) mod unanswered;
pub(crate) mod upgrade;
mod verdict;
mod watchdog;
