//! auto_unmount: a process forked before the mount that outlives the
//! daemon and unmounts the mount if the daemon died without doing so.

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};

use super::fusermount::fusermount;
use super::mountinfo::mount_id;
use super::process::{Forked, fork_with_socket};

/// auto_unmount: a process forked before the mount that outlives the
/// daemon and unmounts the mount if the daemon died without doing so
/// (killed, crashed). It learns the mount's id once mounted, then waits
/// for its socket to close, which the kernel does when the daemon exits,
/// however it exits. It unmounts only a mount that still has that id at
/// that path, never a later one.
pub(crate) struct Watchdog {
    tell: std::fs::File,
}

impl Watchdog {
    /// Forks the watchdog for the mount about to be made at `mountpoint`;
    /// refuses unless the process has a single thread (see `fork_with_socket`).
    pub(crate) fn start(mountpoint: &Path) -> std::io::Result<Watchdog> {
        match fork_with_socket()? {
            Forked::Child(read_end) => {
                watch_and_clean(read_end, mountpoint);
                // SAFETY: leaving the child without running the parent's
                // destructors or atexit handlers.
                unsafe { libc::_exit(0) }
            }
            Forked::Parent(write_end) => Ok(Watchdog {
                tell: std::fs::File::from(write_end),
            }),
        }
    }

    /// The socket whose closing tells the watchdog the daemon is gone, for
    /// the holder to keep across its re-exec.
    pub(crate) fn into_fd(self) -> OwnedFd {
        self.tell.into()
    }

    /// Tells the watchdog which mount to clean up.
    pub(crate) fn arm(&mut self, mount_id: u64) {
        let _ = writeln!(self.tell, "{mount_id}");
    }
}

fn watch_and_clean(read_end: OwnedFd, mountpoint: &Path) {
    let keep = read_end.as_raw_fd();
    // Hold nothing of the daemon's: not its /dev/fuse, not the socket that
    // tells the CLI the mount is ready, not the caller's terminal, and not
    // the working directory; ignore the signals meant for the daemon, so
    // that only the daemon's end decides when this one acts.
    // SAFETY: plain fd and signal calls in a single-threaded child.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for fd in 0..=2 {
            if null >= 0 {
                libc::dup2(null, fd);
            }
        }
        if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
            let open: Vec<RawFd> = dir
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect();
            for fd in open {
                if fd > 2 && fd != keep {
                    libc::close(fd);
                }
            }
        }
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
            libc::signal(sig, libc::SIG_IGN);
        }
        libc::chdir(c"/".as_ptr());
        libc::prctl(libc::PR_SET_NAME, c"novelfs-autoumnt".as_ptr());
    }
    let mut told = String::new();
    let _ = std::fs::File::from(read_end).read_to_string(&mut told);
    let Some(id) = told
        .lines()
        .next()
        .and_then(|l| l.trim().parse::<u64>().ok())
    else {
        return;
    };
    if mount_id(mountpoint) != Some(id) {
        return;
    }
    let Ok(target) = CString::new(mountpoint.as_os_str().as_bytes()) else {
        return;
    };
    // SAFETY: target is a valid NUL-terminated path.
    if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } == 0 {
        return;
    }
    if let Some(helper) = fusermount() {
        let _ = Command::new(helper)
            .args(["-u", "-z", "--"])
            .arg(mountpoint)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
