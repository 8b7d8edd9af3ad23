//! Process plumbing shared by daemonizing and the auto_unmount watchdog:
//! who we run as, and a fork with a pipe between the two sides.

use std::os::fd::OwnedFd;

use nix::unistd::{ForkResult, Gid, Uid, fork, getegid, geteuid, pipe2};

/// The effective uid and gid, which the kernel checks mounts against.
pub(crate) fn euid_egid() -> (u32, u32) {
    (Uid::as_raw(geteuid()), Gid::as_raw(getegid()))
}

/// One side of a fork, holding its end of the pipe between the two.
pub(crate) enum Forked {
    Parent(OwnedFd),
    Child(OwnedFd),
}

/// Which side of the pipe writes.
#[derive(Clone, Copy)]
pub(crate) enum Writer {
    Parent,
    Child,
}

/// Forks, with a close-on-exec pipe from the `writer` side to the other.
/// A reader sees end of file once the writer exits, however it exits.
///
/// # Safety
/// The process must have a single thread: after `fork` only the calling
/// thread exists in the child, and any lock another thread held stays held.
pub(crate) unsafe fn fork_with_pipe(writer: Writer) -> std::io::Result<Forked> {
    let (read_end, write_end) = pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    // SAFETY: the caller guarantees a single thread.
    let side = unsafe { fork() }?;
    Ok(match (side, writer) {
        (ForkResult::Parent { .. }, Writer::Parent) => Forked::Parent(write_end),
        (ForkResult::Parent { .. }, Writer::Child) => Forked::Parent(read_end),
        (ForkResult::Child, Writer::Parent) => Forked::Child(read_end),
        (ForkResult::Child, Writer::Child) => Forked::Child(write_end),
    })
}
