//! What the holder (see `holder`) hands a server it starts, and how the
//! server reads it: the descriptors it inherits (the mount's `/dev/fuse`,
//! the inode journal, the INIT parameters, the pipe telling the holder it
//! serves, and for the first server the pipe to the waiting CLI), named in
//! one environment variable. The server is this binary again, run with
//! the same arguments: only that variable tells it it serves for a holder.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use fuser::{Negotiated, Version};

/// The variable the holder sets for its server.
pub(crate) const VAR: &str = "NOVELFS_HOLDER";

/// Test switches (`NOVELFS_TEST_FAILOVER_OFF=resend,journal,restart,give_up,dev_fuse,lean,drop_code,error_file,compact,has_resend,fail_left`,
/// and for upgrades `stand_by,drain,ready_first`): each turns one
/// mechanism of failover off, so that a test can be seen failing without
/// it (`error_file`: a holder that gave up answers every request EIO, its
/// root too; `stand_by`: an upgrade's server takes over as soon as it is
/// ready, beside the old one; `drain`: a server stepping down exits
/// without answering what it holds; `ready_first`: the old server is told
/// to step down as the new one starts, not once it is ready; `compact`:
/// the inode journal is never compacted; `has_resend`: a server acts as if
/// INIT had not offered `FUSE_HAS_RESEND`; `fail_left`: then what a dead
/// server left is not answered EIO, see `left_unanswered`).
pub(crate) const OFF_VAR: &str = "NOVELFS_TEST_FAILOVER_OFF";

/// A fault for tests (`NOVELFS_TEST_SERVER_CRASH=restart`): every server
/// after the first aborts as it starts.
pub(crate) const CRASH_VAR: &str = "NOVELFS_TEST_SERVER_CRASH";

pub(crate) fn switched_off(mechanism: &str) -> bool {
    novelfs_library::test_switch::lists(OFF_VAR, mechanism)
}

/// The descriptors a server inherits from the holder, by number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fds {
    pub fuse: RawFd,
    pub journal: RawFd,
    pub state: RawFd,
    pub status: RawFd,
    /// The first server's end of the pipe to the CLI waiting for the mount
    /// (`-1` when there is none: the foreground, or a later server).
    pub cli: RawFd,
    /// 1 for the server that answered INIT, then 2, 3 …
    pub generation: u64,
    /// A server started by `novelfs upgrade`: the pipe on which the holder
    /// says when to take over (`-1` otherwise; see `Handoff::stand_by`).
    pub go: RawFd,
    /// The holder's pid, for the log.
    pub holder: u32,
}

impl Fds {
    pub(crate) fn to_var(self) -> String {
        format!(
            "fuse={},journal={},state={},status={},cli={},generation={},holder={},go={}",
            self.fuse,
            self.journal,
            self.state,
            self.status,
            self.cli,
            self.generation,
            self.holder,
            self.go
        )
    }

    pub(crate) fn parse(v: &str) -> Option<Fds> {
        let mut f = Fds {
            fuse: -1,
            journal: -1,
            state: -1,
            status: -1,
            cli: -1,
            generation: 0,
            holder: 0,
            go: -1,
        };
        for part in v.split(',') {
            let (k, v) = part.split_once('=')?;
            match k {
                "fuse" => f.fuse = v.parse().ok()?,
                "journal" => f.journal = v.parse().ok()?,
                "state" => f.state = v.parse().ok()?,
                "status" => f.status = v.parse().ok()?,
                "cli" => f.cli = v.parse().ok()?,
                "generation" => f.generation = v.parse().ok()?,
                "holder" => f.holder = v.parse().ok()?,
                "go" => f.go = v.parse().ok()?,
                _ => return None,
            }
        }
        (f.fuse >= 0 && f.journal >= 0 && f.state >= 0 && f.status >= 0 && f.generation > 0)
            .then_some(f)
    }
}

/// What a server got from its holder, the descriptors owned.
pub(crate) struct Handoff {
    /// Taken by the session.
    pub fuse: Option<OwnedFd>,
    pub journal: std::fs::File,
    pub state: std::fs::File,
    pub status: std::fs::File,
    pub cli: Option<OwnedFd>,
    pub generation: u64,
    pub holder: u32,
    pub go: Option<std::fs::File>,
    /// The id the thread the holder watches once this server serves
    /// tells when it first runs (see `start_sentinel`).
    sentinel: Option<std::sync::mpsc::Receiver<libc::pid_t>>,
}

impl Handoff {
    /// The handoff of a server the holder started, if this is one; the
    /// variable is removed so that nothing this process starts sees it.
    pub(crate) fn from_env() -> Option<Handoff> {
        let v = std::env::var(VAR).ok()?;
        // SAFETY: the server is single-threaded here (nothing started yet).
        unsafe { std::env::remove_var(VAR) };
        let f = Fds::parse(&v)?;
        // SAFETY: the holder passed these descriptors open, for this
        // process to own; each number is taken once.
        unsafe {
            Some(Handoff {
                fuse: Some(OwnedFd::from_raw_fd(f.fuse)),
                journal: std::fs::File::from_raw_fd(f.journal),
                state: std::fs::File::from_raw_fd(f.state),
                status: std::fs::File::from_raw_fd(f.status),
                cli: (f.cli >= 0).then(|| OwnedFd::from_raw_fd(f.cli)),
                generation: f.generation,
                holder: f.holder,
                go: (f.go >= 0).then(|| std::fs::File::from_raw_fd(f.go)),
                sentinel: None,
            })
        }
    }

    /// The INIT parameters the first server kept, if it got that far: the
    /// memfd's first line (the table of `left_unanswered` follows, past its
    /// first page).
    pub(crate) fn negotiated(&mut self) -> Option<Negotiated> {
        let mut line = Vec::new();
        self.state.seek(SeekFrom::Start(0)).ok()?;
        (&mut self.state).take(4096).read_to_end(&mut line).ok()?;
        let end = line.iter().position(|&b| b == b'\n')?;
        parse_negotiated(std::str::from_utf8(&line[..end]).ok()?)
    }

    /// Keeps what INIT settled for the servers after this one, in place
    /// (the memfd never shrinks: a server maps a part of it).
    pub(crate) fn keep_negotiated(&mut self, n: &Negotiated) -> std::io::Result<()> {
        self.state.seek(SeekFrom::Start(0))?;
        self.state.write_all(format_negotiated(n).as_bytes())
    }

    /// A server started by `novelfs upgrade` (it has a `go` pipe) tells the
    /// holder it is ready (its library open, its tree made) and waits for
    /// the word to take over, which comes once the old server has stepped
    /// down: only then may the inode journal be replayed, since the old
    /// server adds to it until it is gone. `Err` when the holder calls the
    /// upgrade off (it closes the pipe).
    pub(crate) fn stand_by(&mut self) -> Result<(), String> {
        let Some(mut go) = self.go.take() else {
            return Ok(());
        };
        self.status
            .write_all(b"ready\n")
            .map_err(|e| format!("cannot tell the holder this server is ready: {e}"))?;
        if switched_off("stand_by") {
            // The test switch: take over at once, beside the old server.
            return Ok(());
        }
        let mut word = [0u8; 8];
        match go.read(&mut word) {
            Ok(n) if n > 0 => Ok(()),
            _ => Err("the holder called the upgrade off".into()),
        }
    }

    /// Starts the thread the holder watches once this server serves: one
    /// that only waits, so that it ends as soon as the server is killed
    /// (the main thread's end is not told until every thread has ended,
    /// and one may wait in the kernel for the next server). Started while
    /// the library opens, and not waited for here, so that `serving` has
    /// nothing left to wait for: on a busy machine a new thread's first
    /// run can wait milliseconds for a CPU.
    pub(crate) fn start_sentinel(&mut self) {
        let (tell, told) = std::sync::mpsc::channel();
        // It starts with every signal blocked (a thread starts with its
        // maker's mask): a termination signal is the signal thread's to
        // take, which `session::serve` starts later, with them blocked.
        // SAFETY: plain signal-mask calls on local sets.
        let kept = unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut kept: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut kept);
            kept
        };
        let spawned = novelfs_kit::thread::spawn("novelfs-sentinel", None, move || {
            // SAFETY: gettid has no preconditions.
            let _ = tell.send(unsafe { libc::gettid() });
            loop {
                std::thread::park();
            }
        });
        // SAFETY: restores the mask saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &kept, std::ptr::null_mut()) };
        self.sentinel = spawned.ok().map(|_| told);
    }

    /// Tells the holder this server serves, and which thread to watch
    /// (see `start_sentinel`; started here when it was not yet).
    pub(crate) fn serving(&mut self) {
        if self.sentinel.is_none() {
            self.start_sentinel();
        }
        let tid = self
            .sentinel
            .take()
            .and_then(|told| told.recv().ok())
            .unwrap_or(0);
        // One write (a pipe keeps a write this small whole): the holder
        // reads the line at once.
        let _ = self.status.write_all(format!("serving {tid}\n").as_bytes());
    }
}

pub(crate) fn format_negotiated(n: &Negotiated) -> String {
    format!(
        "version={}.{} offered={:#x} accepted={:#x} max_write={} max_readahead={}\n",
        n.version.0, n.version.1, n.offered, n.accepted, n.max_write, n.max_readahead
    )
}

pub(crate) fn parse_negotiated(text: &str) -> Option<Negotiated> {
    let mut n = Negotiated {
        version: Version(0, 0),
        offered: 0,
        accepted: 0,
        max_write: 0,
        max_readahead: 0,
    };
    let hex = |v: &str| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok();
    for part in text.split_whitespace() {
        let (k, v) = part.split_once('=')?;
        match k {
            "version" => {
                let (a, b) = v.split_once('.')?;
                n.version = Version(a.parse().ok()?, b.parse().ok()?);
            }
            "offered" => n.offered = hex(v)?,
            "accepted" => n.accepted = hex(v)?,
            "max_write" => n.max_write = v.parse().ok()?,
            "max_readahead" => n.max_readahead = v.parse().ok()?,
            _ => return None,
        }
    }
    (n.version.0 == 7).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fds_and_init_parameters_come_back() {
        let f = Fds {
            fuse: 3,
            journal: 4,
            state: 5,
            status: 6,
            cli: -1,
            generation: 2,
            holder: 77,
            go: 9,
        };
        assert_eq!(Fds::parse(&f.to_var()), Some(f));
        assert_eq!(Fds::parse("fuse=3"), None);
        let n = Negotiated {
            version: Version(7, 45),
            offered: 0x1234_5678_9abc,
            accepted: 0x1234,
            max_write: 1 << 24,
            max_readahead: 131072,
        };
        assert_eq!(parse_negotiated(&format_negotiated(&n)), Some(n));
        assert_eq!(parse_negotiated(""), None);
    }
}
