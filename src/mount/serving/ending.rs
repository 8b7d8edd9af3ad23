//! A server ends once its mount is gone, even while a call into the
//! source hangs (a network filesystem whose server went away, a GET on a
//! stalled bucket with a long `--source-timeout`): the thread stuck in it
//! is not waited for. fuser's session joins its workers before it
//! returns, and a worker stuck in the source would hold the process, and
//! the holder waiting for it, for as long as the source hangs.
//!
//! So once the connection is gone (`umount`, `novelfs unmount`: the
//! kernel aborts it, and `/dev/fuse` polls with POLLERR) or a termination
//! signal came, the session has `GRACE` to end by itself; past it the
//! process exits at once. Nothing the process holds needs it to end
//! otherwise: its files are written as they change (the index, the inode
//! journal, the log).

use std::os::fd::RawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a session whose mount is gone has to end by itself.
pub(crate) const GRACE: Duration = Duration::from_millis(500);

/// How often the watcher looks whether the connection is gone.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// Whether the kernel has dropped the connection `fuse`: with no events
/// asked, only POLLERR (the connection is gone), POLLHUP or POLLNVAL
/// come back.
fn connection_gone(fuse: RawFd) -> bool {
    let mut p = libc::pollfd {
        fd: fuse,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd; a zero timeout only looks.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents != 0
}

/// Whether the session ended by itself.
#[derive(Clone, Default)]
pub(crate) struct Ending {
    ran: Arc<AtomicBool>,
}

impl Ending {
    /// The session returned: what follows is the ordinary ending.
    pub(crate) fn ran(&self) {
        self.ran.store(true, Ordering::Release);
    }

    /// Exits the process unless the session ends within `GRACE`.
    pub(crate) fn exit_unless_ended(&self, why: &str) {
        let until = Instant::now() + GRACE;
        while Instant::now() < until {
            if self.ran.load(Ordering::Acquire) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if self.ran.load(Ordering::Acquire) {
            return;
        }
        log::warn!(
            "{why}, and the session did not end within {} ms (a call into the source hangs): \
             the server exits without waiting for it",
            GRACE.as_millis()
        );
        log::logger().flush();
        // SAFETY: _exit ends the process at once; no Rust state outlives it.
        unsafe { libc::_exit(0) };
    }

    /// Watches the connection `fuse` on a thread of its own: once the
    /// kernel has dropped it, the session has `GRACE` to end.
    ///
    /// The thread looks every `LOOK_EVERY` rather than sleeping in `poll`
    /// on the connection: the kernel wakes every sleeper on `/dev/fuse`'s
    /// wait queue for each request it queues, whatever events a sleeper
    /// asked for, so a thread parked there would be woken once per
    /// request for the life of the mount.
    pub(crate) fn watch(&self, fuse: RawFd) {
        let me = self.clone();
        let spawned = novelfs_kit::thread::spawn("novelfs-ending", Some(64 << 10), move || {
            while !connection_gone(fuse) {
                std::thread::sleep(LOOK_EVERY);
            }
            me.exit_unless_ended("the mount is gone");
        });
        if let Err(e) = spawned {
            log::warn!("no thread watching for the mount's end: {e}");
        }
    }
}
