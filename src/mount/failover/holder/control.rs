//! The holder's socket (`novelfs-holder/MAJOR:MINOR`, named after the
//! mount's device): `novelfs upgrade` asks on it for a new server
//! (`upgrade`), `novelfs status` for what the holder has seen (`Tally`)
//! and what the library's storage has cost (`counted`). Only the holder's
//! own user and root are answered.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use super::Holder;
use crate::mount::failover::ask_holder::{STATUS_REQUEST, control_address};
use crate::mount::failover::upgrade::binary_of;
use crate::mount::os::mountinfo::mount_device;

/// What the holder has seen of its servers, for `novelfs status`.
#[derive(Default)]
pub(super) struct Tally {
    /// Servers that died while serving (a crash, a kill).
    pub(super) died: u64,
    /// Servers that died before they served.
    pub(super) died_before_serving: u64,
    /// Upgrades done.
    pub(super) upgrades: u64,
    /// Why the holder gave up, once it has.
    pub(super) gave_up: Option<String>,
}

/// How long the socket's name may stay taken: a mount's device number is
/// given again as soon as the mount before it went, whose holder lets the
/// name go a moment later, when it sees its connection gone.
const NAME_FREE_WITHIN: Duration = Duration::from_secs(5);

/// The socket the CLI reaches this holder on, if it can be made.
pub(super) fn listen(mountpoint: &Path) -> Option<UnixListener> {
    let deadline = std::time::Instant::now() + NAME_FREE_WITHIN;
    let listener = loop {
        let bound = mount_device(mountpoint)
            .ok_or_else(|| std::io::Error::other("the mount is not in mountinfo"))
            .and_then(|d| control_address(&d))
            .and_then(|a| UnixListener::bind_addr(&a));
        match bound {
            Err(e)
                if e.kind() == std::io::ErrorKind::AddrInUse
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            other => break other.and_then(|l| l.set_nonblocking(true).map(|_| l)),
        }
    };
    match listener {
        Ok(l) => Some(l),
        Err(e) => {
            log::warn!(
                "holder: no socket for `novelfs upgrade` and `novelfs status` ({e}): this mount \
                 cannot be upgraded in place"
            );
            None
        }
    }
}

/// Whether the peer may ask: the holder's own user, or root.
fn peer_may(stream: &UnixStream) -> bool {
    // SAFETY: an all-zero ucred is valid; getsockopt fills it.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: SO_PEERCRED into a ucred of its size.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    // SAFETY: geteuid has no preconditions.
    rc == 0 && (cred.uid == 0 || cred.uid == unsafe { libc::geteuid() })
}

impl Holder<'_> {
    /// Answers one request on the socket. `Some` when the server that
    /// should serve now died (an upgrade's new one as it took over):
    /// `keep` starts another.
    pub(super) fn control_asked(&mut self) -> Option<Option<ExitStatus>> {
        let (mut stream, _) = self.control.as_ref()?.accept().ok()?;
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
        let mut request = Vec::new();
        let (said, died) = if !peer_may(&stream) {
            (
                Err("only the user who mounted, or root, may ask its holder".into()),
                None,
            )
        } else if let Err(e) = (&stream).take(64 << 10).read_to_end(&mut request) {
            (Err(format!("the request did not come whole: {e}")), None)
        } else if request == STATUS_REQUEST {
            (Ok(self.status_said()), None)
        } else if self.starting {
            let why = format!(
                "the holder of {} is starting a server (server {}{}); ask again once it serves \
                 (`novelfs status` says when)",
                self.mountpoint.display(),
                self.generation,
                if self.tally.died > 0 {
                    ", in place of one that died"
                } else {
                    ""
                }
            );
            (Err(why), None)
        } else if let Some(why) = &self.tally.gave_up {
            let why = format!(
                "the holder of {} gave up serving it ({why}): unmount it and mount it again",
                self.mountpoint.display()
            );
            (Err(why), None)
        } else {
            self.upgrade(&binary_of(&request))
        };
        let answer = match said {
            Ok(s) => format!("ok {s}\n"),
            Err(e) => {
                log::warn!("holder: asked of {}: {e}", self.mountpoint.display());
                format!("error {e}\n")
            }
        };
        let _ = stream.write_all(answer.as_bytes());
        died
    }

    /// What `novelfs status` prints, a `name: value` a line.
    fn status_said(&self) -> String {
        let server = match (&self.pidfd, self.tally.gave_up.is_some()) {
            (Some(_), false) if self.starting => format!("{} (starting)", self.pid),
            (Some(_), false) => self.pid.to_string(),
            _ => "none".into(),
        };
        // The memory the inode journal takes (its file is sparse: the
        // pages before its start are let go).
        let journal = nix::sys::stat::fstat(&self.journal).map_or(0, |st| st.st_blocks * 512);
        let counted = crate::mount::counted::read(&self.state);
        format!(
            "holder: {}\nserver: {server}\nservers started: {}\nservers died: {}\n\
             died before serving: {}\nupgrades: {}\ngave up: {}\ninode journal bytes: {journal}\n{}",
            std::process::id(),
            self.generation,
            self.tally.died,
            self.tally.died_before_serving,
            self.tally.upgrades,
            self.tally.gave_up.as_deref().unwrap_or("no"),
            crate::mount::counted::said(counted.as_ref()),
        )
    }
}
