//! The assistant's on/off switch for `novel_read` (its state file).

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::library;

use super::cache::Stamp;
use super::lock;

/// The switch as read from the state file with that stamp (`None`: no file).
#[derive(Clone, Copy)]
struct Reading {
    stamp: Option<Stamp>,
    on: bool,
}

pub struct Switch {
    /// `None` = the default location.
    state_file: Option<PathBuf>,
    last: Mutex<Option<Reading>>,
    /// The switch as last reported by `flipped` (0 = not yet, 1 = on, 2 = off).
    seen: AtomicU8,
}

impl Switch {
    pub fn new(state_file: Option<PathBuf>) -> Switch {
        Switch {
            state_file,
            last: Mutex::new(None),
            seen: AtomicU8::new(0),
        }
    }

    /// Whether `novel_read` is switched on; the state file is re-read only
    /// when its stamp changes.
    pub fn enabled(&self) -> bool {
        let path = match &self.state_file {
            Some(p) => Some(p.clone()),
            None => library::state::default_state_file(),
        };
        let stamp = path
            .as_deref()
            .and_then(|p| std::fs::metadata(p).ok())
            .map(|m| Stamp::of(&m));
        let mut last = lock(&self.last);
        if let Some(reading) = *last
            && reading.stamp == stamp
        {
            return reading.on;
        }
        let on = library::state::tool_enabled(path.as_deref());
        *last = Some(Reading { stamp, on });
        on
    }

    /// Whether the switch flipped since the previous call (the first call
    /// only records it).
    pub fn flipped(&self) -> bool {
        let now = if self.enabled() { 1 } else { 2 };
        let before = self.seen.swap(now, Ordering::Relaxed);
        before != 0 && before != now
    }
}
