//! How a command reaches the holder of a mount (`novelfs upgrade`,
//! `novelfs status`): the holder listens on an abstract socket named after
//! the mount's device (`novelfs-holder/MAJOR:MINOR`, one per FUSE
//! connection). A request is sent whole and the write side shut; the
//! answer is `ok …` or `error …`, read to its end.

use std::io::{Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::path::Path;
use std::time::Duration;

use crate::mount::os::mountinfo::{mount_device, mount_type};
use crate::mount::os::mountpoint::absolute;

/// What `novelfs status` sends: no binary path starts with a NUL byte (an
/// upgrade's request is an absolute path), and a holder of a build without
/// `status` fails to start it as a binary and says so.
pub(crate) const STATUS_REQUEST: &[u8] = b"\0status";

/// The holder's socket of the mount of device `device` (`major:minor`).
pub(crate) fn control_address(device: &str) -> std::io::Result<SocketAddr> {
    SocketAddr::from_abstract_name(format!("novelfs-holder/{device}").as_bytes())
}

/// Sends `request` to the holder of the novelfs mount at `mountpoint` and
/// waits up to `within` for its answer: what follows `ok `, or why not.
pub(crate) fn ask(mountpoint: &Path, request: &[u8], within: Duration) -> Result<String, String> {
    // Not resolved through the mount: while it is being handed over, a
    // stat of it would wait.
    let mnt = absolute(mountpoint);
    let at = mnt.display();
    match mount_type(&mnt) {
        Some(t) if t == "fuse.novelfs" => {}
        Some(t) => return Err(format!("{at} is not a novelfs mount ({t})")),
        None => return Err(format!("{at} is not a mount point")),
    }
    let device = mount_device(&mnt).ok_or_else(|| format!("{at} is not a mount point"))?;
    let address = control_address(&device).map_err(|e| e.to_string())?;
    let mut holder = UnixStream::connect_addr(&address).map_err(|e| match e.raw_os_error() {
        Some(libc::ECONNREFUSED | libc::ENOENT) => format!(
            "{at} has no holder (it was mounted with -o nofailover, or is served over FUSE over \
             io_uring): only a mount made with -o failover can be upgraded in place or asked \
             its status"
        ),
        _ => format!("cannot reach the holder of {at}: {e}"),
    })?;
    let asked = holder
        .write_all(request)
        .and_then(|_| holder.shutdown(std::net::Shutdown::Write));
    asked.map_err(|e| format!("cannot ask the holder of {at}: {e}"))?;
    let _ = holder.set_read_timeout(Some(within));
    let mut answer = String::new();
    let _ = holder.read_to_string(&mut answer);
    let answer = answer.trim_end();
    match answer.strip_prefix("ok ") {
        Some(said) => Ok(said.to_string()),
        None => Err(match answer.strip_prefix("error ") {
            Some(why) => why.to_string(),
            None if answer.is_empty() => format!(
                "the holder of {at} did not answer within {} s",
                within.as_secs()
            ),
            None => answer.to_string(),
        }),
    }
}
