//! The daemon's log as a test reads it: the requests fuser logs at debug
//! level (`RUST_LOG=fuser=debug`), in order, up to a sentinel LOOKUP the
//! test makes.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Mount, eventually_within, follow_log};

const SENTINEL: &str = "the sentinel lookup in the daemon's log";

/// The daemon's stderr, line by line, collected by a thread so that the
/// debug log never fills the pipe and blocks the daemon.
pub struct DaemonLog {
    lines: Arc<Mutex<Vec<String>>>,
}

impl DaemonLog {
    pub fn follow(mount: &mut Mount) -> DaemonLog {
        DaemonLog {
            lines: follow_log(mount),
        }
    }

    pub fn len(&self) -> usize {
        self.lines.lock().unwrap().len()
    }

    /// The opcodes of the requests logged from line `from` up to the
    /// LOOKUP of `sentinel`, which the caller makes last: every request
    /// before it has been logged once it shows.
    pub fn requests_until(&self, from: usize, sentinel: &str) -> Vec<String> {
        eventually_within(SENTINEL, Duration::from_secs(20), || {
            let lines = self.lines.lock().unwrap();
            let tail = &lines[from.min(lines.len())..];
            let end = tail
                .iter()
                .position(|l| l.contains("LOOKUP") && l.contains(sentinel))?;
            Some(tail[..end].iter().filter_map(|l| opcode(l)).collect())
        })
    }

    /// The line after the LOOKUP of `sentinel` in `mnt`, which this makes:
    /// everything requested before the call is logged above that line (the
    /// log is read on another thread, so `len()` alone may come early).
    pub fn mark(&self, mnt: &Path, sentinel: &str) -> usize {
        let _ = std::fs::metadata(mnt.join(sentinel));
        eventually_within(SENTINEL, Duration::from_secs(20), || {
            let lines = self.lines.lock().unwrap();
            let at = lines
                .iter()
                .rposition(|l| l.contains("LOOKUP") && l.contains(sentinel))?;
            Some(at + 1)
        })
    }

    /// Every line logged from line `from` on (a copy).
    pub fn lines_from(&self, from: usize) -> Vec<String> {
        let lines = self.lines.lock().unwrap();
        lines[from.min(lines.len())..].to_vec()
    }

    /// The paths of the `event` lines (see `novelfs::events`) logged in
    /// `lines` (an end past the log's is the log's end), in order.
    pub fn event_paths(&self, lines: std::ops::Range<usize>, event: &str) -> Vec<String> {
        let logged = self.lines.lock().unwrap();
        let end = lines.end.min(logged.len());
        logged[lines.start.min(end)..end]
            .iter()
            .filter_map(|l| novelfs::events::path_of(l, event).map(str::to_string))
            .collect()
    }
}

/// The opcode of a fuser debug line `... FUSE(  12) ino 0x.. OPCODE ...`.
pub fn opcode(line: &str) -> Option<String> {
    let rest = &line[line.find("FUSE(")?..];
    let rest = &rest[rest.find(") ino ")? + ") ino ".len()..];
    let mut words = rest.split_whitespace();
    words.next()?; // the inode
    Some(words.next()?.to_string())
}
