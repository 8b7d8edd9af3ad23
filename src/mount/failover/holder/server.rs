//! A server of the holder's: started on the connection as this binary
//! run again (`handoff`), its death awaited (its sentinel thread's end)
//! and the killed ones reaped, the kernel asked to resend what they read.

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};

use super::syscalls::{drop_mapped_code, notify_resend, pollin, process_pidfd, read_signal};
use super::{Event, Holder};
use crate::mount::failover::handoff::{self, Fds};
use crate::mount::os::process::inherit;

impl Holder<'_> {
    /// Starts a server on the connection; `cli` for the first, `standby`
    /// (its binary, the read end of its `go` pipe) for an upgrade's.
    pub(super) fn start(
        &mut self,
        cli: Option<RawFd>,
        standby: Option<(&Path, RawFd)>,
    ) -> std::io::Result<()> {
        self.generation += 1;
        let (status_read, status_write) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from)?;
        let fds = Fds {
            fuse: self.fuse.as_raw_fd(),
            journal: self.journal.as_raw_fd(),
            state: self.state.as_raw_fd(),
            status: status_write.as_raw_fd(),
            cli: cli.unwrap_or(-1),
            generation: self.generation,
            holder: std::process::id(),
            go: standby.map_or(-1, |(_, go)| go),
        };
        let pass: Vec<RawFd> = [
            fds.fuse,
            fds.journal,
            fds.state,
            fds.status,
            fds.cli,
            fds.go,
        ]
        .into_iter()
        .filter(|&fd| fd >= 0)
        .collect();
        let mut args = std::env::args_os();
        let arg0 = args.next().unwrap_or_else(|| "novelfs".into());
        let binary = standby.map(|(b, _)| b).or(self.binary.as_deref());
        let mut cmd = Command::new(binary.unwrap_or(Path::new("/proc/self/exe")));
        cmd.arg0(arg0).args(args).env(handoff::VAR, fds.to_var());
        if let Some(dir) = &self.given_in {
            cmd.current_dir(dir);
        }
        // The descriptors the server is named.
        inherit(&mut cmd, pass);
        let child = cmd.spawn()?;
        drop(status_write);
        self.pid = child.id();
        self.pidfd = process_pidfd(child.id());
        self.server = Some(child);
        self.status = Some(std::fs::File::from(status_read));
        Ok(())
    }

    /// The exit status of the server whose sentinel thread ended, if its last
    /// threads ended too; else it is reaped later (`dying`).
    pub(super) fn buried(&mut self) -> Option<ExitStatus> {
        self.pidfd = None;
        let mut child = self.server.take()?;
        match child.try_wait() {
            Ok(Some(s)) => Some(s),
            _ => {
                self.dying.push(child);
                None
            }
        }
    }

    /// Waits for the server's death or a signal to the holder. The death
    /// is its sentinel thread's end (see `Handoff::serving`): a thread of a
    /// killed server can stay blocked in the kernel until the next server
    /// answers what it waits on (a NOTIFY_STORE waits for a page a read
    /// holds locked while its request is unanswered), so waiting for the
    /// whole process would wait for ever.
    pub(super) fn wait_event(&mut self) -> Event {
        loop {
            // Sleeping: the code run since the last sleep need not stay mapped.
            drop_mapped_code();
            let mut fds = [
                pollin(self.signals.as_raw_fd()),
                pollin(self.pidfd.as_ref().map_or(-1, |p| p.as_raw_fd())),
                pollin(self.control.as_ref().map_or(-1, |c| c.as_raw_fd())),
            ];
            // SAFETY: three pollfds (a negative fd is skipped).
            if unsafe { libc::poll(fds.as_mut_ptr(), 3, -1) } < 0 {
                continue;
            }
            if fds[1].revents != 0 {
                return Event::Died(self.buried());
            }
            if fds[2].revents != 0 {
                return Event::Asked;
            }
            if fds[0].revents == 0 {
                continue;
            }
            let sig = read_signal(&self.signals);
            if sig == libc::SIGCHLD as u32 {
                self.reap_dying();
                if let Some(Ok(Some(_))) = self.server.as_mut().map(Child::try_wait) {
                    return Event::Died(self.buried());
                }
                continue;
            }
            if sig != 0 {
                return Event::Signal(sig);
            }
        }
    }

    /// Reaps the killed servers that ended. A thread of one may have read
    /// a request after the next server asked for a resend (it ends once it
    /// runs, which on a busy machine can be late): when one ended, ask
    /// again. A request the server is serving comes again too; its first
    /// answer is refused, the second taken.
    pub(super) fn reap_dying(&mut self) {
        let before = self.dying.len();
        self.dying
            .retain_mut(|c| !matches!(c.try_wait(), Ok(Some(_))));
        if self.dying.len() < before {
            self.resend();
        }
    }

    /// Asks the kernel to queue again what was read and not answered
    /// (`FUSE_NOTIFY_RESEND`, written as a notification's bare header).
    /// A test acting as a kernel without it (`has_resend` off) asks
    /// nothing either: a request queued again would escape the next
    /// server's EIO answers, as it cannot on such a kernel.
    pub(super) fn resend(&self) {
        if handoff::switched_off("resend") || handoff::switched_off("has_resend") {
            return;
        }
        notify_resend(self.fuse.as_raw_fd());
    }
}
