//! How the holder starts (`hold`): the mount command's process mounts,
//! makes the two memfds, and becomes the lean holder. It has parsed the
//! arguments, checked the library and mounted: its heap and the code pages
//! it touched are several MiB that the holder never uses again. So once the
//! mount is made, it execs this binary again in a mode that runs the
//! holder's loop and nothing else (`lean_main`, the first thing `main`
//! looks at, before the command line is parsed): the pid stays, the
//! resident memory is what the loop touches, and only the descriptors the
//! holder needs cross the exec (the connection, the two memfds, the pipe to
//! the waiting CLI, auto_unmount's pipe, the log file). Every other
//! descriptor is closed, and the working directory is `/`: the holder holds
//! nothing of the library.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::syscalls::{block_signals, memfd};
use super::{Held, keep_mount};
use crate::mount::config::MountConfig;
use crate::mount::failover::handoff;
use crate::mount::logging;
use crate::mount::os::attach::attach;
use crate::mount::os::mountinfo::mount_id;
use crate::mount::os::mountpoint::detach_if_ours;
use crate::mount::os::process::report_failure as report;
use crate::mount::os::watchdog::Watchdog;

/// What the lean holder is handed, in its environment.
const VAR: &str = "NOVELFS_HOLD";
const MOUNTPOINT_VAR: &str = "NOVELFS_HOLD_MOUNTPOINT";
const DIR_VAR: &str = "NOVELFS_HOLD_DIR";
const LOG_VAR: &str = "NOVELFS_HOLD_LOG";

/// Mounts, then holds the mount from a lean process (this one, exec'd
/// again: see `lean`), which starts the first server and keeps the
/// mount served until it goes; returns the exit code. `ready_pipe` (the
/// waiting CLI) goes to the first server, which reports on it.
pub(crate) fn hold(
    config: &MountConfig,
    mountpoint: &Path,
    given_in: Option<std::path::PathBuf>,
    mut watchdog: Option<Watchdog>,
    ready_pipe: Option<OwnedFd>,
) -> i32 {
    let signals = match block_signals() {
        Ok(fd) => fd,
        Err(e) => {
            report(ready_pipe, &format!("the holder cannot take signals: {e}"));
            return 1;
        }
    };
    let library_root = std::fs::canonicalize(&config.root)
        .unwrap_or_else(|_| config.root.clone())
        .to_string_lossy()
        .into_owned();
    let source = config.kernel.fsname.as_deref().unwrap_or(&library_root);
    let attached = match attach(&config.kernel, source, mountpoint) {
        Ok(a) => a,
        Err(msg) => {
            report(ready_pipe, &msg);
            return 1;
        }
    };
    let mount_id = mount_id(mountpoint);
    if let (Some(w), Some(id)) = (watchdog.as_mut(), mount_id) {
        w.arm(id);
    }
    let (journal, state) = match (memfd(c"novelfs-inodes"), memfd(c"novelfs-init")) {
        (Ok(j), Ok(s)) => (j, s),
        (Err(e), _) | (_, Err(e)) => {
            detach_if_ours(mountpoint, mount_id);
            report(
                ready_pipe,
                &format!("the holder cannot keep its state: {e}"),
            );
            return 1;
        }
    };
    drop(signals);
    let held = Held {
        fuse: attached.fd,
        journal,
        state,
        ready: ready_pipe,
        watchdog: watchdog.map(Watchdog::into_fd),
        mountpoint: mountpoint.to_path_buf(),
        given_in,
        mount_id,
        mode_mask: config.access.mode_mask(),
    };
    keep_mount(become_lean(held))
}

/// Replaces this process with the lean holder, handing it `held`; returns
/// `held` only when the exec fails (or is switched off for a test), for
/// this process to hold the mount itself.
pub(crate) fn become_lean(held: Held) -> Held {
    if handoff::switched_off("lean") {
        return held;
    }
    let (log_kind, log_path) = logging::handed_on();
    let log_fd = log_kind
        .strip_prefix("file:")
        .and_then(|fd| fd.parse::<RawFd>().ok());
    let opt = |fd: &Option<OwnedFd>| fd.as_ref().map_or(-1, |f| f.as_raw_fd());
    let desc = format!(
        "fuse={},journal={},state={},ready={},watchdog={},mount_id={},mode_mask={},log={log_kind}",
        held.fuse.as_raw_fd(),
        held.journal.as_raw_fd(),
        held.state.as_raw_fd(),
        opt(&held.ready),
        opt(&held.watchdog),
        held.mount_id.map_or(-1, |id| id as i64),
        held.mode_mask,
    );
    let pass: Vec<RawFd> = [
        held.fuse.as_raw_fd(),
        held.journal.as_raw_fd(),
        held.state.as_raw_fd(),
        opt(&held.ready),
        opt(&held.watchdog),
        log_fd.unwrap_or(-1),
    ]
    .into_iter()
    .filter(|&fd| fd >= 0)
    .collect();
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| "novelfs".into());
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0(arg0)
        .args(args)
        .env(VAR, desc)
        .env(MOUNTPOINT_VAR, &held.mountpoint);
    if let Some(dir) = &held.given_in {
        cmd.env(DIR_VAR, dir);
    }
    if let Some(path) = &log_path {
        cmd.env(LOG_VAR, path);
    }
    for &fd in &pass {
        set_cloexec(fd, false);
    }
    let err = cmd.exec();
    // Still here: the descriptors go back to closing on exec, so that the
    // servers this process starts inherit only what they are named.
    for &fd in &pass {
        set_cloexec(fd, true);
    }
    log::warn!("the holder cannot start lean ({err}): it holds the mount in this process");
    held
}

fn set_cloexec(fd: RawFd, on: bool) {
    // SAFETY: fcntl on a descriptor this process owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 {
            let flags = if on {
                flags | libc::FD_CLOEXEC
            } else {
                flags & !libc::FD_CLOEXEC
            };
            libc::fcntl(fd, libc::F_SETFD, flags);
        }
    }
}

/// The numbers `become_lean` wrote.
#[derive(Debug, PartialEq)]
struct Desc {
    fuse: RawFd,
    journal: RawFd,
    state: RawFd,
    ready: RawFd,
    watchdog: RawFd,
    mount_id: Option<u64>,
    mode_mask: u16,
    log: String,
}

fn parse(v: &str) -> Option<Desc> {
    let mut d = Desc {
        fuse: -1,
        journal: -1,
        state: -1,
        ready: -1,
        watchdog: -1,
        mount_id: None,
        mode_mask: 0,
        log: String::new(),
    };
    for part in v.split(',') {
        let (k, v) = part.split_once('=')?;
        match k {
            "fuse" => d.fuse = v.parse().ok()?,
            "journal" => d.journal = v.parse().ok()?,
            "state" => d.state = v.parse().ok()?,
            "ready" => d.ready = v.parse().ok()?,
            "watchdog" => d.watchdog = v.parse().ok()?,
            "mount_id" => d.mount_id = v.parse().ok(),
            "mode_mask" => d.mode_mask = v.parse().ok()?,
            "log" => d.log = v.to_string(),
            _ => return None,
        }
    }
    (d.fuse >= 0 && d.journal >= 0 && d.state >= 0).then_some(d)
}

/// In the process `become_lean` started: holds the mount until it goes and
/// returns the exit code. `None` in any other process.
pub(crate) fn lean_main() -> Option<i32> {
    let desc = std::env::var(VAR).ok()?;
    let mountpoint = std::env::var_os(MOUNTPOINT_VAR).map(PathBuf::from);
    let given_in = std::env::var_os(DIR_VAR).map(PathBuf::from);
    let log_path = std::env::var_os(LOG_VAR).map(PathBuf::from);
    // SAFETY: single-threaded (nothing started yet); the servers this
    // process starts must not see these.
    unsafe {
        for var in [VAR, MOUNTPOINT_VAR, DIR_VAR, LOG_VAR] {
            std::env::remove_var(var);
        }
    }
    let (Some(d), Some(mountpoint)) = (parse(&desc), mountpoint) else {
        eprintln!("novelfs: the holder was handed a mount it cannot read: {desc:?}");
        return Some(1);
    };
    let log_fd = d
        .log
        .strip_prefix("file:")
        .and_then(|fd| fd.parse::<RawFd>().ok());
    close_all_but(&[
        d.fuse,
        d.journal,
        d.state,
        d.ready,
        d.watchdog,
        log_fd.unwrap_or(-1),
    ]);
    // SAFETY: chdir to a valid path; naming this thread (the process's
    // comm, which an exec of /proc/self/exe would leave as "exe").
    unsafe {
        libc::chdir(c"/".as_ptr());
        libc::prctl(libc::PR_SET_NAME, c"novelfs".as_ptr());
    }
    logging::init(logging::taken_over(&d.log, log_path));
    let some = |fd: RawFd| {
        // SAFETY: each descriptor was left open across the exec for this
        // process to own, and is taken once.
        (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
    };
    let held = Held {
        fuse: some(d.fuse)?,
        journal: some(d.journal)?,
        state: some(d.state)?,
        ready: some(d.ready),
        watchdog: some(d.watchdog),
        mountpoint,
        given_in,
        mount_id: d.mount_id,
        mode_mask: d.mode_mask,
    };
    Some(keep_mount(held))
}

/// Closes every descriptor above stderr but `keep` (whatever the mount
/// command inherited from its caller: the holder holds nothing else).
fn close_all_but(keep: &[RawFd]) {
    let mut keep: Vec<u32> = keep
        .iter()
        .filter(|&&fd| fd > 2)
        .map(|&fd| fd as u32)
        .collect();
    keep.sort_unstable();
    let mut from = 3u32;
    for fd in keep {
        if fd > from {
            // SAFETY: closing descriptors this process owns and does not use.
            unsafe { libc::close_range(from, fd - 1, 0) };
        }
        from = fd + 1;
    }
    // SAFETY: as above.
    unsafe { libc::close_range(from, u32::MAX, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_comes_back() {
        let d = parse(
            "fuse=6,journal=7,state=8,ready=-1,watchdog=9,mount_id=55,mode_mask=18,log=file:3",
        )
        .expect("parsed");
        assert_eq!(
            d,
            Desc {
                fuse: 6,
                journal: 7,
                state: 8,
                ready: -1,
                watchdog: 9,
                mount_id: Some(55),
                mode_mask: 18,
                log: "file:3".into(),
            }
        );
        assert_eq!(parse("fuse=6"), None);
        assert_eq!(parse("fuse=6,journal=7,state=8,bogus=1"), None);
    }
}
