//! The holder's side of `novelfs upgrade` (the command is `mount/failover/upgrade.rs`):
//! it starts the new server beside the serving one, waits until it is
//! ready (its library open, its tree made: `Handoff::stand_by`), then asks
//! the old one to step down (`leave_for_upgrade`: no more requests, those it holds
//! answered, exit), and once it is gone tells the new one to take over:
//! it replays the inode journal, asks the kernel to resend what the old
//! one left, and serves with the same INIT parameters. Readers see a pause
//! from the step-down to the new server's first answer, never an error.
//! A new server that cannot start (dies, or is not ready in
//! `READY_WITHIN`) is killed and the old one serves on, never stopped.
//! Later servers (after a crash) start from the new binary.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use super::syscalls::pollin;
use super::{Holder, Outcome};
use crate::mount::failover::handoff;
use crate::mount::failover::leave_for_upgrade::STEP_DOWN;

/// How long a new server may take to get ready (a bucket's library is
/// checked and its published index fetched first).
const READY_WITHIN: Duration = Duration::from_secs(120);
/// How long the old server may take to step down before it is killed (it
/// bounds its own wait for the requests it holds to a second).
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// Waits until one of `fds` is readable or `within` has passed; the index
/// of the first readable one.
fn first_readable(fds: &mut [libc::pollfd], within: Duration) -> Option<usize> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        // SAFETY: valid pollfds (a negative fd is skipped).
        let n = unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                left.as_millis().min(i32::MAX as u128) as i32 + 1,
            )
        };
        if n > 0 {
            return fds.iter().position(|p| p.revents != 0);
        }
    }
}

/// The serving server while a new one gets ready.
struct Old {
    child: Option<Child>,
    pid: u32,
    pidfd: OwnedFd,
}

impl Holder<'_> {
    /// Hands the connection to a server of `binary`; what to say, and
    /// `Some` when the server that should serve now died. Meanwhile the
    /// socket is answered, another upgrade refused (`control`).
    pub(super) fn upgrade(
        &mut self,
        binary: &Path,
    ) -> (Result<String, String>, Option<Option<ExitStatus>>) {
        self.starting = true;
        let done = self.upgrade_to(binary);
        self.starting = false;
        done
    }

    fn upgrade_to(
        &mut self,
        binary: &Path,
    ) -> (Result<String, String>, Option<Option<ExitStatus>>) {
        let at = self.mountpoint.display().to_string();
        let Some(pidfd) = self.pidfd.take() else {
            return (Err(format!("no server serves {at} now")), None);
        };
        let old = Old {
            child: self.server.take(),
            pid: self.pid,
            pidfd,
        };
        let go = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from);
        let started = go.and_then(|(go_read, go_write)| {
            self.start(None, Some((binary, go_read.as_raw_fd())))
                .map(|_| go_write)
        });
        let go = match started {
            Ok(go) => go,
            Err(e) => {
                self.serve_on(old);
                let why = format!("cannot start {}: {e}", binary.display());
                return (Err(self.old_serves_on(&why)), None);
            }
        };
        log::info!(
            "holder: upgrade of {at}: server {} (pid {}, {}) gets ready beside pid {}",
            self.generation,
            self.pid,
            binary.display(),
            old.pid
        );
        let early = handoff::switched_off("ready_first");
        if early {
            // The test switch: the old server goes before the new is ready.
            // SAFETY: a signal to this holder's child, not yet reaped.
            unsafe { libc::kill(old.pid as i32, STEP_DOWN) };
        }
        let mut old_died = false;
        match self.wait_ready(&old) {
            Ok(false) => {}
            Ok(true) => old_died = true,
            Err(why) => {
                // Killed, never told to go: it never touched the connection.
                if let Some(mut c) = self.server.take() {
                    let _ = c.kill();
                    self.dying.push(c);
                }
                self.status = None;
                self.serve_on(old);
                return (Err(self.old_serves_on(&why)), None);
            }
        }
        let handing = Instant::now();
        if !old_died && !early {
            // SAFETY: a signal to this holder's child, not yet reaped.
            unsafe { libc::kill(old.pid as i32, STEP_DOWN) };
        }
        let new_died = self.wait_gone(&old);
        if let Some(mut c) = old.child
            && !matches!(c.try_wait(), Ok(Some(_)))
        {
            self.dying.push(c);
        }
        if new_died {
            let why = format!(
                "the new server ({}) died as the old one stepped down; the holder starts another",
                binary.display()
            );
            return (Err(why), Some(self.buried()));
        }
        let _ = (&std::fs::File::from(go)).write_all(b"go");
        match self.wait_serving() {
            Outcome::Serving => {
                self.binary = Some(binary.to_path_buf());
                self.tally.upgrades += 1;
                let said = format!(
                    "server {} (pid {}, {}) serves {at} in place of pid {}{}; handed over in {:?}",
                    self.generation,
                    self.pid,
                    binary.display(),
                    old.pid,
                    if old_died { ", which had died" } else { "" },
                    handing.elapsed()
                );
                log::info!("holder: {said}");
                (Ok(said), None)
            }
            Outcome::Died(status) => {
                let why = format!(
                    "the new server ({}) died as it took over; the holder starts another",
                    binary.display()
                );
                (Err(why), Some(status))
            }
        }
    }

    /// The old server goes on as the one serving.
    fn serve_on(&mut self, old: Old) {
        self.server = old.child;
        self.pid = old.pid;
        self.pidfd = Some(old.pidfd);
    }

    fn old_serves_on(&self, why: &str) -> String {
        format!("{why}; the server (pid {}) serves on", self.pid)
    }

    /// Waits for the new server's `ready`: `Ok(true)` if the old one died
    /// meanwhile, `Err` with why it will not be.
    fn wait_ready(&mut self, old: &Old) -> Result<bool, String> {
        let Some(mut status) = self.status.take() else {
            return Err("the new server has no status pipe".into());
        };
        let fds = [
            status.as_raw_fd(),
            self.pidfd.as_ref().map_or(-1, |p| p.as_raw_fd()),
        ];
        let outcome = match self.first_readable_answering(&fds, READY_WITHIN) {
            Some(0) => {
                let mut said = [0u8; 6];
                match status.read_exact(&mut said) {
                    Ok(()) if &said == b"ready\n" => Ok(false),
                    _ => Err("the new server died before it was ready".to_string()),
                }
            }
            Some(_) => Err("the new server died before it was ready".to_string()),
            None => Err(format!(
                "the new server was not ready within {} s",
                READY_WITHIN.as_secs()
            )),
        };
        self.status = Some(status);
        let outcome = outcome.map_err(|why| match self.server.as_mut().map(|c| c.try_wait()) {
            Some(Ok(Some(status))) => format!("{why} ({status})"),
            _ => why,
        });
        // The old one may have died meanwhile: the new one takes over.
        let mut gone = [pollin(old.pidfd.as_raw_fd())];
        outcome.map(|_| first_readable(&mut gone, Duration::ZERO).is_some())
    }

    /// `first_readable` of `fds`, answering the socket meanwhile (a new
    /// server may take long to get ready: a bucket's library is checked).
    fn first_readable_answering(&mut self, fds: &[RawFd], within: Duration) -> Option<usize> {
        let deadline = Instant::now() + within;
        loop {
            let mut polled: Vec<libc::pollfd> = fds.iter().map(|&fd| pollin(fd)).collect();
            polled.push(pollin(self.control.as_ref().map_or(-1, |c| c.as_raw_fd())));
            let left = deadline.saturating_duration_since(Instant::now());
            match first_readable(&mut polled, left) {
                Some(i) if i == fds.len() => {
                    let _ = self.control_asked();
                }
                other => return other,
            }
        }
    }

    /// Waits until the old server is gone (killed if it does not step down
    /// in time); whether the new one died meanwhile.
    fn wait_gone(&mut self, old: &Old) -> bool {
        let mut new_died = false;
        let mut killed = false;
        loop {
            let mut fds = [
                pollin(old.pidfd.as_raw_fd()),
                pollin(if new_died {
                    -1
                } else {
                    self.pidfd.as_ref().map_or(-1, |p| p.as_raw_fd())
                }),
            ];
            match first_readable(&mut fds, GONE_WITHIN) {
                Some(0) => return new_died,
                Some(_) => new_died = true,
                None if !killed => {
                    log::warn!(
                        "holder: the server (pid {}) did not step down within {} s: killed",
                        old.pid,
                        GONE_WITHIN.as_secs()
                    );
                    // SAFETY: a signal to this holder's child, not yet reaped.
                    unsafe { libc::kill(old.pid as i32, libc::SIGKILL) };
                    killed = true;
                }
                None => {}
            }
        }
    }
}
