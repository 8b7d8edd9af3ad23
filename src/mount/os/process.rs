//! Process plumbing shared by daemonizing and the auto_unmount watchdog:
//! who we run as, and a fork with a socket between the two sides.

use std::os::fd::OwnedFd;

use nix::unistd::{ForkResult, Gid, Uid, fork, getegid, geteuid};

/// The effective uid and gid, which the kernel checks mounts against.
pub(crate) fn euid_egid() -> (u32, u32) {
    (Uid::as_raw(geteuid()), Gid::as_raw(getegid()))
}

/// One side of a fork, holding its end of the socket between the two.
pub(crate) enum Forked {
    Parent(OwnedFd),
    Child(OwnedFd),
}

/// Forks, with a close-on-exec socket pair between the two sides: each
/// reads what the other writes, and sees end of file once every process
/// holding the other's end has exited, however it exits. Refuses (see
/// `single_threaded`) unless the process has one thread: after `fork`
/// only the calling thread exists in the child, and any lock another
/// thread held stays held.
pub(crate) fn fork_with_socket() -> std::io::Result<Forked> {
    single_threaded()?;
    let (parent, child) = std::os::unix::net::UnixStream::pair()?;
    // SAFETY: the process has one thread, checked just above; only that
    // thread could have started another since, and it has not.
    let side = unsafe { fork() }?;
    Ok(match side {
        ForkResult::Parent { .. } => Forked::Parent(parent.into()),
        ForkResult::Child => Forked::Child(child.into()),
    })
}

/// Ok when the process has exactly one thread (the `Threads:` line of
/// `/proc/self/status`); an error saying how many otherwise, or why they
/// could not be counted.
pub(crate) fn single_threaded() -> std::io::Result<()> {
    const STATUS: &str = "/proc/self/status";
    let status = std::fs::read_to_string(STATUS)?;
    match threads_in_status(&status) {
        Some(1) => Ok(()),
        Some(n) => Err(std::io::Error::other(format!(
            "the process has {n} threads; forking needs exactly one"
        ))),
        None => Err(std::io::Error::other(format!(
            "{STATUS} has no Threads: line; cannot tell whether forking is safe"
        ))),
    }
}

/// The thread count of a `/proc/PID/status` text.
fn threads_in_status(status: &str) -> Option<usize> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|count| count.trim().parse().ok())
}

/// Tells the waiting CLI (or, in the foreground, stderr) why the mount failed.
pub(crate) fn report_failure(ready_pipe: Option<OwnedFd>, msg: &str) {
    match ready_pipe {
        Some(fd) => {
            use std::io::Write;
            let _ = std::fs::File::from(fd).write_all(msg.as_bytes());
        }
        None => eprintln!("novelfs: {msg}"),
    }
}

/// Points stdin, stdout and stderr at /dev/null: a daemon's are its
/// caller's terminal, gone once the caller exits.
pub(crate) fn detach_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        use std::os::fd::AsRawFd;
        for fd in 0..=2 {
            // SAFETY: duplicating a valid fd onto the standard descriptors.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}

/// Lets the process `cmd` starts inherit `fds` (which this process keeps
/// close-on-exec, so that nothing else it starts gets them).
pub(crate) fn inherit(cmd: &mut std::process::Command, fds: Vec<std::os::fd::RawFd>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only fcntl (async-signal-safe) runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            for &fd in &fds {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_line_is_read() {
        let status = "Name:\tnovelfs\nTgid:\t7\nThreads:\t1\nSigQ:\t0/1\n";
        assert_eq!(threads_in_status(status), Some(1));
        assert_eq!(threads_in_status("Threads:\t12\n"), Some(12));
        assert_eq!(threads_in_status("Name:\tx\n"), None);
    }

    #[test]
    fn a_second_thread_is_refused() {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let second = std::thread::spawn(move || {
            let _ = wait.recv();
        });
        let refused = single_threaded();
        let forked = fork_with_socket();
        release.send(()).unwrap();
        second.join().unwrap();
        let err = refused.unwrap_err();
        assert!(
            err.to_string().contains("forking needs exactly one"),
            "{err}"
        );
        assert!(forked.is_err(), "fork_with_socket forked with two threads");
    }
}
