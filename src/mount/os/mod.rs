//! The plumbing of a mount in the system: attaching the connection to
//! the mountpoint, fusermount3, the kernel's mount table, unmounting,
//! forks and who we run as, and the auto_unmount watchdog.

pub(super) mod attach;
pub mod fusermount;
pub(crate) mod mountinfo;
pub(crate) mod mountpoint;
pub(super) mod process;
pub(super) mod watchdog;
