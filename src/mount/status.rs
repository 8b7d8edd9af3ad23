//! `novelfs status MNT`: what the holder of a mount has seen (see
//! `holder/control.rs`): its pid, its server's, how many servers it
//! started, how many died (serving, or before serving), the upgrades, and
//! whether it gave up and why. One `name: value` a line.

use std::path::Path;
use std::time::Duration;

use super::ask_holder::{STATUS_REQUEST, ask};

/// The holder answers at once, unless it is starting a server (it asks
/// its socket between servers).
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// Runs the command; the exit code.
pub(crate) fn run(mountpoint: &Path) -> i32 {
    match ask(mountpoint, STATUS_REQUEST, ANSWER_WITHIN) {
        Ok(said) => {
            println!(
                "mount: {}",
                super::mountpoint::absolute(mountpoint).display()
            );
            println!("{said}");
            0
        }
        Err(msg) => {
            eprintln!("novelfs: {msg}");
            1
        }
    }
}
