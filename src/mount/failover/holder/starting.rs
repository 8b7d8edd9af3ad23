//! The holder waiting for a server it started to serve: it answers its
//! socket meanwhile (`novelfs status`; `novelfs upgrade` is refused, see
//! `control`), reaps servers that died before, and unmounts on a signal,
//! so that a server that is slow to start, or never does, holds up none
//! of these.

use std::io::Read;
use std::os::fd::AsRawFd;

use super::syscalls::{pollin, read_signal, thread_pidfd};
use super::{Holder, Outcome};

impl Holder<'_> {
    /// Waits until the server says it serves, or dies. `novelfs status`
    /// is answered meanwhile, and `novelfs upgrade` refused (`control`).
    pub(super) fn wait_serving(&mut self) -> Outcome {
        let status = self.status.take();
        self.starting = true;
        let outcome = self.wait_serving_on(status);
        self.starting = false;
        outcome
    }

    fn wait_serving_on(&mut self, status: Option<std::fs::File>) -> Outcome {
        loop {
            let mut fds = [
                pollin(status.as_ref().map_or(-1, |s| s.as_raw_fd())),
                pollin(self.pidfd.as_ref().map_or(-1, |p| p.as_raw_fd())),
                pollin(self.control.as_ref().map_or(-1, |c| c.as_raw_fd())),
                pollin(self.signals.as_raw_fd()),
                // Once unmounting: the connection's end (POLLERR, asked
                // for or not; never its requests, which are the server's).
                libc::pollfd {
                    fd: if self.unmounting {
                        self.fuse.as_raw_fd()
                    } else {
                        -1
                    },
                    events: 0,
                    revents: 0,
                },
            ];
            // SAFETY: five pollfds (a negative fd is skipped).
            if unsafe { libc::poll(fds.as_mut_ptr(), 5, -1) } < 0 {
                continue;
            }
            if fds[2].revents != 0 {
                // Starts nothing while a server starts: only an answer.
                let _ = self.control_asked();
            }
            if fds[3].revents != 0 {
                self.signalled_while_starting();
            }
            if fds[4].revents != 0 {
                // Unmounted: a server that would serve it is not waited for.
                if let Some(c) = self.server.as_mut() {
                    let _ = c.kill();
                }
                return Outcome::Died(self.buried());
            }
            if fds[0].revents != 0 {
                let mut said = [0u8; 32];
                let read = status
                    .as_ref()
                    .map_or(0, |mut s| s.read(&mut said).unwrap_or(0));
                if read > 0 {
                    // From now on its death is its sentinel thread's end.
                    let tid = std::str::from_utf8(&said[..read])
                        .ok()
                        .and_then(|s| s.trim().strip_prefix("serving "))
                        .and_then(|t| t.parse::<u32>().ok())
                        .filter(|&t| t > 0);
                    match tid.map(thread_pidfd) {
                        Some(Some(fd)) => self.pidfd = Some(fd),
                        // The sentinel is gone already: killed as it
                        // started (waiting for the whole process could
                        // wait for ever, see `wait_event`).
                        Some(None) => return Outcome::Died(self.buried()),
                        // No sentinel: the whole process is watched.
                        None => {}
                    }
                    return Outcome::Serving;
                }
            }
            if fds[0].revents != 0 || fds[1].revents != 0 {
                // The pipe closed or the process ended: it is gone.
                return Outcome::Died(self.buried());
            }
        }
    }

    /// A signal while a server starts: a child's end is reaped; any other
    /// unmounts, as when a server serves.
    fn signalled_while_starting(&mut self) {
        let sig = read_signal(&self.signals);
        if sig == libc::SIGCHLD as u32 {
            self.reap_dying();
        } else if sig != 0 {
            log::info!(
                "holder: signal {sig} while a server starts: unmounting {}",
                self.mountpoint.display()
            );
            self.unmounting = true;
            self.unmount();
        }
    }
}
