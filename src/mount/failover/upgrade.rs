//! `novelfs upgrade MNT [--binary PATH]`: asks the holder of a `-o failover`
//! mount (`ask_holder`) to hand its connection to a new server (this
//! binary, or PATH) at a request boundary, and says how it went. What the
//! holder does is in `holder/upgrade.rs`.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::ask_holder::ask;

/// How long the CLI waits for the holder's answer: the new server opens
/// the library first (a bucket's may take a while), and the holder bounds
/// that wait itself.
const ANSWER_WITHIN: Duration = Duration::from_secs(300);

/// The request the CLI sends: the new server's binary.
pub(crate) fn request(binary: &Path) -> Vec<u8> {
    binary.as_os_str().as_bytes().to_vec()
}

/// Runs the command: what it prints, or why it failed.
pub(crate) fn run(mountpoint: &Path, binary: Option<&Path>) -> Result<String, String> {
    upgrade(mountpoint, binary).map(|said| format!("{said}\n"))
}

fn upgrade(mountpoint: &Path, binary: Option<&Path>) -> Result<String, String> {
    let binary =
        match binary {
            Some(b) => std::fs::canonicalize(b)
                .map_err(|e| format!("the new binary {}: {e}", b.display()))?,
            None => std::env::current_exe()
                .map_err(|e| format!("cannot tell which binary this is: {e}"))?,
        };
    ask(mountpoint, &request(&binary), ANSWER_WITHIN)
}

/// The binary a request names.
pub(crate) fn binary_of(request: &[u8]) -> PathBuf {
    PathBuf::from(std::ffi::OsStr::from_bytes(request))
}
