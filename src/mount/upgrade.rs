//! `novelfs upgrade MNT [--binary PATH]`: asks the holder of a `-o failover`
//! mount to hand its connection to a new server (this binary, or PATH) at
//! a request boundary, and says how it went. The holder is found from the
//! mount: it listens on an abstract socket named after the mount's device
//! (`novelfs-holder/MAJOR:MINOR`, one per FUSE connection), and answers
//! only its own user and root. What the holder does is in
//! `holder/upgrade.rs`.

use std::io::{Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::mountinfo::{mount_device, mount_type};
use super::mountpoint::absolute;

/// How long the CLI waits for the holder's answer: the new server opens
/// the library first (a bucket's may take a while), and the holder bounds
/// that wait itself.
const ANSWER_WITHIN: Duration = Duration::from_secs(300);

/// The holder's socket of the mount of device `device` (`major:minor`).
pub(crate) fn control_address(device: &str) -> std::io::Result<SocketAddr> {
    SocketAddr::from_abstract_name(format!("novelfs-holder/{device}").as_bytes())
}

/// The request the CLI sends: the new server's binary.
pub(crate) fn request(binary: &Path) -> Vec<u8> {
    binary.as_os_str().as_bytes().to_vec()
}

/// Runs the command; the exit code.
pub(crate) fn run(mountpoint: &Path, binary: Option<&Path>) -> i32 {
    match upgrade(mountpoint, binary) {
        Ok(said) => {
            println!("{said}");
            0
        }
        Err(msg) => {
            eprintln!("novelfs: {msg}");
            1
        }
    }
}

fn upgrade(mountpoint: &Path, binary: Option<&Path>) -> Result<String, String> {
    // Not resolved through the mount: while it is being handed over, a
    // stat of it would wait.
    let mnt = absolute(mountpoint);
    let at = mnt.display();
    match mount_type(&mnt) {
        Some(t) if t == "fuse.novelfs" => {}
        Some(t) => return Err(format!("{at} is not a novelfs mount ({t})")),
        None => return Err(format!("{at} is not a mount point")),
    }
    let binary =
        match binary {
            Some(b) => std::fs::canonicalize(b)
                .map_err(|e| format!("the new binary {}: {e}", b.display()))?,
            None => std::env::current_exe()
                .map_err(|e| format!("cannot tell which binary this is: {e}"))?,
        };
    let device = mount_device(&mnt).ok_or_else(|| format!("{at} is not a mount point"))?;
    let address = control_address(&device).map_err(|e| e.to_string())?;
    let mut holder = UnixStream::connect_addr(&address).map_err(|e| match e.raw_os_error() {
        Some(libc::ECONNREFUSED | libc::ENOENT) => format!(
            "{at} has no holder to hand it over (it was mounted without -o failover, or its \
             holder gave up): mount it with -o failover to upgrade it in place"
        ),
        _ => format!("cannot reach the holder of {at}: {e}"),
    })?;
    let asked = holder
        .write_all(&request(&binary))
        .and_then(|_| holder.shutdown(std::net::Shutdown::Write));
    asked.map_err(|e| format!("cannot ask the holder of {at}: {e}"))?;
    let _ = holder.set_read_timeout(Some(ANSWER_WITHIN));
    let mut answer = String::new();
    let _ = holder.read_to_string(&mut answer);
    let answer = answer.trim_end();
    match answer.strip_prefix("ok ") {
        Some(said) => Ok(said.to_string()),
        None => Err(match answer.strip_prefix("error ") {
            Some(why) => why.to_string(),
            None if answer.is_empty() => format!("the holder of {at} did not answer"),
            None => answer.to_string(),
        }),
    }
}

/// The binary a request names.
pub(crate) fn binary_of(request: &[u8]) -> PathBuf {
    PathBuf::from(std::ffi::OsStr::from_bytes(request))
}
