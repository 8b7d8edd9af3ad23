//! The holder (failover, see `failover`): the process `novelfs mount` leaves, which
//! owns the mount's `/dev/fuse` descriptor and runs the server as its
//! child, this binary run again with the same arguments (`handoff`). When
//! the server dies the connection stays, since the holder keeps the
//! descriptor open, and the holder starts another server on it: the new
//! one skips INIT (the first server kept what it settled in a file the
//! holder owns), replays the inode journal (`novelfs_fs::JournalSink`, a
//! second file the holder owns) and asks the kernel to resend what the dead
//! one had read (`FUSE_NOTIFY_RESEND`). Readers see a pause. `novelfs
//! upgrade` asks it, on a socket named after the mount's device, to hand
//! the connection to a new server at a request boundary (`upgrade`).
//!
//! The holder does nothing else: it never opens the library, never reads a
//! request while a server runs, and allocates nothing while it waits (it
//! reads its memory map after an event, to let go of the code it ran before
//! sleeping again: `syscalls::drop_mapped_code`). Servers
//! that keep dying (three in a row before serving, or more than
//! `MAX_DEATHS` in `DEATHS_WINDOW`) make it give up: it then answers alone
//! until the mount goes, the root listing only an `ERROR` that says why
//! and every other request EIO (`gave_up`), the reason in the log too.

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use crate::mount::failover::handoff;
use crate::mount::os::mountpoint::{detach_if_ours, unmount_or_detach};
use crate::mount::os::process::{detach_stdio, report_failure as report};
use syscalls::{block_signals, connected};

mod control;
mod error_tree;
mod gave_up;
pub(crate) mod lean;
mod server;
mod starting;
mod syscalls;
mod upgrade;

/// Servers in a row that may die before serving.
const MAX_FAILED_STARTS: u32 = 3;
/// Deaths of servers within `DEATHS_WINDOW` past which the holder gives up.
const MAX_DEATHS: usize = 30;
const DEATHS_WINDOW: Duration = Duration::from_secs(60);

/// How the holder ended its wait for a server.
enum Outcome {
    /// The server says it serves.
    Serving,
    /// It died first (its status when its last thread ended too).
    Died(Option<ExitStatus>),
}

/// What woke the holder while a server serves.
enum Event {
    Died(Option<ExitStatus>),
    Signal(u32),
    /// `novelfs upgrade` or `novelfs status` asks (see `control`).
    Asked,
}

/// How a server ended, for the log.
fn ended(status: Option<ExitStatus>) -> String {
    match status {
        Some(s) => s.to_string(),
        None => "killed; its last threads are still ending".into(),
    }
}

struct Holder<'a> {
    fuse: OwnedFd,
    journal: OwnedFd,
    state: OwnedFd,
    signals: OwnedFd,
    mountpoint: &'a Path,
    /// Where the arguments were given from (servers parse them again).
    given_in: Option<std::path::PathBuf>,
    generation: u64,
    server: Option<Child>,
    /// The pid of the last server started.
    pid: u32,
    /// A pidfd of the server: of its sentinel thread once it serves.
    pidfd: Option<OwnedFd>,
    /// Servers whose sentinel thread ended and whose last threads have not.
    dying: Vec<Child>,
    status: Option<std::fs::File>,
    /// The servers' mode mask (`Access::mode_mask`), for `gave_up`.
    mode_mask: u16,
    /// Where `novelfs upgrade` and `novelfs status` ask (see `control`).
    control: Option<std::os::unix::net::UnixListener>,
    /// What it has seen, for `novelfs status`.
    tally: control::Tally,
    /// A server is starting (`wait_serving`): an upgrade is refused.
    starting: bool,
    /// A signal asked for the mount to go.
    unmounting: bool,
    /// The servers' binary since an upgrade (this one's before).
    binary: Option<std::path::PathBuf>,
}

/// What the holder holds once the mount is made.
pub(crate) struct Held {
    pub fuse: OwnedFd,
    pub journal: OwnedFd,
    pub state: OwnedFd,
    /// The pipe to the CLI waiting for the mount (daemonized mounts).
    pub ready: Option<OwnedFd>,
    /// auto_unmount's pipe: its watchdog acts once every copy is closed.
    pub watchdog: Option<OwnedFd>,
    pub mountpoint: PathBuf,
    /// Where the arguments were given from (servers parse them again).
    pub given_in: Option<PathBuf>,
    pub mount_id: Option<u64>,
    /// The servers' mode mask (`Access::mode_mask`), for `gave_up`.
    pub mode_mask: u16,
}

/// Starts the first server on the mount `held` and keeps the mount served
/// until it goes; returns the exit code. Runs in the lean holder (see
/// `lean`), or in the mount command's process if that cannot start.
pub(crate) fn keep_mount(held: Held) -> i32 {
    // Blocked since before the mount (the mask crosses the exec, and what
    // came meanwhile is pending): a signalfd of this process's own.
    let signals = match block_signals() {
        Ok(fd) => fd,
        Err(e) => {
            detach_if_ours(&held.mountpoint, held.mount_id);
            report(held.ready, &format!("the holder cannot take signals: {e}"));
            return 1;
        }
    };
    let Held {
        fuse,
        journal,
        state,
        ready: ready_pipe,
        watchdog: _watchdog,
        mountpoint,
        given_in,
        mount_id,
        mode_mask,
    } = held;
    let mountpoint = mountpoint.as_path();
    let mut h = Holder {
        fuse,
        journal,
        state,
        signals,
        mountpoint,
        given_in,
        generation: 0,
        server: None,
        pid: 0,
        pidfd: None,
        dying: Vec::new(),
        status: None,
        mode_mask,
        control: control::listen(mountpoint),
        tally: control::Tally::default(),
        starting: false,
        unmounting: false,
        binary: None,
    };
    let cli = ready_pipe.as_ref().map(|fd| fd.as_raw_fd());
    if let Err(e) = h.start(cli, None) {
        detach_if_ours(mountpoint, mount_id);
        report(ready_pipe, &format!("cannot start the server: {e}"));
        return 1;
    }
    match h.wait_serving() {
        Outcome::Serving => {
            // The server told the CLI; the holder keeps nothing of it.
            if ready_pipe.is_some() {
                drop(ready_pipe);
                detach_stdio();
            }
        }
        Outcome::Died(status) => {
            let status = status.or_else(|| h.dying.pop().and_then(|mut c| c.wait().ok()));
            // The server said why on the pipe when it could; a signal
            // could not.
            if let Some(status) = status.filter(|s| s.signal().is_some()) {
                report(ready_pipe, &format!("the server died at start ({status})"));
            }
            detach_if_ours(mountpoint, mount_id);
            return 1;
        }
    }
    log::info!(
        "holder (pid {}) keeps the connection of {}; its server is pid {}",
        std::process::id(),
        mountpoint.display(),
        h.pid
    );
    h.keep()
}

impl Holder<'_> {
    /// Serves the mount through servers until it goes; the exit code.
    fn keep(&mut self) -> i32 {
        let mut deaths: VecDeque<Instant> = VecDeque::with_capacity(MAX_DEATHS + 1);
        loop {
            let status = match self.wait_event() {
                Event::Signal(sig) => {
                    log::info!(
                        "holder: signal {sig}: unmounting {}",
                        self.mountpoint.display()
                    );
                    self.unmounting = true;
                    self.unmount();
                    // Detached while a reader still holds a file (one
                    // stuck in a hung source, say), the connection lives
                    // on: the server is told to end too, and the holder
                    // ends with it (below).
                    if self.connected() && self.pid != 0 {
                        // SAFETY: kill with a pid of this holder's child.
                        unsafe { libc::kill(self.pid as i32, libc::SIGTERM) };
                    }
                    continue;
                }
                Event::Asked => match self.control_asked() {
                    Some(status) => status,
                    None => continue,
                },
                Event::Died(status) => status,
            };
            if !self.connected() {
                // Its last threads end now that the connection is gone.
                let status = status.or_else(|| self.dying.pop().and_then(|mut c| c.wait().ok()));
                for mut c in self.dying.drain(..) {
                    let _ = c.wait();
                }
                log::info!(
                    "holder: the connection of {} is gone; its server ended ({})",
                    self.mountpoint.display(),
                    ended(status)
                );
                return status.and_then(|s| s.code()).unwrap_or(1);
            }
            if self.unmounting {
                log::info!(
                    "holder: {} was unmounted; its server ended ({})",
                    self.mountpoint.display(),
                    ended(status)
                );
                return 0;
            }
            self.tally.died += 1;
            let now = Instant::now();
            deaths.push_back(now);
            while deaths
                .front()
                .is_some_and(|t| now.duration_since(*t) > DEATHS_WINDOW)
            {
                deaths.pop_front();
            }
            log::warn!(
                "holder: the server (pid {}) died ({}) with {} still mounted",
                self.pid,
                ended(status),
                self.mountpoint.display()
            );
            if handoff::switched_off("restart") {
                return self.give_up("restarting servers is switched off (test)");
            }
            if deaths.len() > MAX_DEATHS {
                return self.give_up(&format!(
                    "{} servers died within {} s",
                    deaths.len(),
                    DEATHS_WINDOW.as_secs()
                ));
            }
            let mut failed_starts = 0;
            loop {
                if let Err(e) = self.start(None, None) {
                    return self.give_up(&format!("cannot start a server: {e}"));
                }
                match self.wait_serving() {
                    Outcome::Serving => break,
                    Outcome::Died(status) => {
                        if !self.connected() {
                            // Unmounted meanwhile (a signal, `novelfs unmount`).
                            log::info!(
                                "holder: the connection of {} is gone while a server started",
                                self.mountpoint.display()
                            );
                            return i32::from(!self.unmounting);
                        }
                        failed_starts += 1;
                        self.tally.died_before_serving += 1;
                        log::warn!(
                            "holder: server {} died before serving ({})",
                            self.generation,
                            ended(status)
                        );
                        if handoff::switched_off("give_up") {
                            // The test switch: start servers for ever.
                            std::thread::sleep(Duration::from_millis(50));
                            continue;
                        }
                        if failed_starts >= MAX_FAILED_STARTS {
                            return self.give_up(&format!(
                                "{failed_starts} servers in a row died before serving, the last: {}",
                                ended(status)
                            ));
                        }
                    }
                }
            }
            log::info!(
                "holder: server {} (pid {}) took over {}",
                self.generation,
                self.pid,
                self.mountpoint.display()
            );
        }
    }

    /// Whether the kernel still has the connection (not unmounted, not
    /// aborted): `/dev/fuse` polls with POLLERR once it is gone.
    fn connected(&self) -> bool {
        connected(self.fuse.as_raw_fd())
    }

    fn unmount(&self) {
        unmount_or_detach(self.mountpoint);
    }
}
