//! The assistant's on/off switches (its state file): `novel_read`'s for
//! the tree, `novel_books`' and `novel_chapters`' for the index files.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use novelfs_library as library;

use super::cache::Stamp;
use super::lock;

/// How old a reading of the switch may be: every request asks whether the
/// tool is on (several times per chapter directory listed), and a `stat`
/// of the state file each time would be a good part of a cold listing's
/// system calls.
/// The README promises a change of the file shows within a second.
pub(crate) const SWITCH_CHECK_INTERVAL: Duration = Duration::from_millis(200);

/// The tools whose switches a mount follows, in the bits of a reading.
const TOOLS: [&str; 3] = ["novel_read", "novel_books", "novel_chapters"];

/// A tool's bit in a reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tool {
    Read = 1,
    Books = 2,
    Chapters = 4,
}

/// The switches as read from the state file with that stamp (`None`: no
/// file): one bit per tool of `TOOLS`, set when it is on.
#[derive(Clone, Copy)]
struct Reading {
    stamp: Option<Stamp>,
    on: u8,
}

pub(crate) struct Switch {
    /// `None` = the default location.
    state_file: Option<PathBuf>,
    last: Mutex<Option<Reading>>,
    /// The last reading (0 = none yet, else the tools' bits | 8) and when
    /// it was taken (microseconds since `start`), read without the lock.
    current: AtomicU8,
    checked_at: AtomicU64,
    start: Instant,
    /// The switches as last reported by `flipped`, from the first reading
    /// taken (0 = none yet): a change after the reading that a request was
    /// served with is a flip, however late `flipped` first looks.
    seen: AtomicU8,
}

/// A reading as stored in the atomics (never 0).
fn flag(on: u8) -> u8 {
    on | 8
}

impl Switch {
    pub(crate) fn new(state_file: Option<PathBuf>) -> Switch {
        Switch {
            state_file,
            last: Mutex::new(None),
            current: AtomicU8::new(0),
            checked_at: AtomicU64::new(0),
            start: Instant::now(),
            seen: AtomicU8::new(0),
        }
    }

    fn now_micros(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// Whether `novel_read` is switched on, as read at most
    /// `SWITCH_CHECK_INTERVAL` ago.
    pub(crate) fn switched_on(&self) -> bool {
        self.tool_on(Tool::Read)
    }

    /// Whether `tool` is switched on, as read at most
    /// `SWITCH_CHECK_INTERVAL` ago.
    pub(crate) fn tool_on(&self, tool: Tool) -> bool {
        let current = self.current.load(Ordering::Acquire);
        if current != 0
            && self
                .now_micros()
                .saturating_sub(self.checked_at.load(Ordering::Acquire))
                < SWITCH_CHECK_INTERVAL.as_micros() as u64
        {
            return current & tool as u8 != 0;
        }
        self.check() & tool as u8 != 0
    }

    /// Looks at the state file now; it is parsed again only when its stamp
    /// changed. Returns the tools' bits.
    fn check(&self) -> u8 {
        let path = match &self.state_file {
            Some(p) => Some(p.clone()),
            None => library::switch::default_state_file(),
        };
        let stamp = path
            .as_deref()
            .and_then(|p| std::fs::metadata(p).ok())
            .and_then(|m| novelfs_library::backing::Meta::from_std(&m))
            .map(|m| Stamp::of(&m));
        let mut last = lock(&self.last);
        let on = match *last {
            Some(reading) if reading.stamp == stamp => reading.on,
            _ => {
                let on = library::switch::tools_switched_on(path.as_deref(), &TOOLS)
                    .into_iter()
                    .zip([Tool::Read, Tool::Books, Tool::Chapters])
                    .filter(|(on, _)| *on)
                    .fold(0, |bits, (_, tool)| bits | tool as u8);
                *last = Some(Reading { stamp, on });
                on
            }
        };
        self.current.store(flag(on), Ordering::Release);
        self.checked_at.store(self.now_micros(), Ordering::Release);
        let _ = self
            .seen
            .compare_exchange(0, flag(on), Ordering::AcqRel, Ordering::Acquire);
        on
    }

    /// Whether a switch flipped since the previous call, or before it
    /// since the first reading of all. Always looks at the file, so that
    /// what requests see is never older than what the caller acts on.
    pub(crate) fn flipped(&self) -> bool {
        let now = flag(self.check());
        let before = self.seen.swap(now, Ordering::Relaxed);
        before != 0 && before != now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_is_reused_for_the_interval_and_flipped_looks_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state.json");
        let switch = Switch::new(Some(file.clone()));
        assert!(switch.switched_on(), "no file: on");
        assert!(!switch.flipped(), "the first call only records");
        std::fs::write(&file, r#"{"tools":{"novel_read":false}}"#).unwrap();
        assert!(switch.flipped(), "flipped reads the file at once");
        assert!(!switch.switched_on(), "and requests see what it read");
        std::fs::remove_file(&file).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !switch.switched_on() {
            assert!(Instant::now() < deadline, "the switch never came back on");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(switch.flipped());
        std::fs::write(&file, r#"{"tools":{"novel_books":false}}"#).unwrap();
        assert!(switch.flipped(), "each tool's switch counts");
        assert!(switch.switched_on() && !switch.tool_on(Tool::Books));
        assert!(switch.tool_on(Tool::Chapters));
    }

    #[test]
    fn a_flip_before_the_first_call_of_flipped_counts() {
        // A request reads the switch, the file changes, and only then does
        // the watch thread (started late on a busy machine) first look: it
        // must still see a flip, or what the kernel holds is never dropped.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state.json");
        let switch = Switch::new(Some(file.clone()));
        assert!(switch.switched_on());
        std::fs::write(&file, r#"{"tools":{"novel_read":false}}"#).unwrap();
        assert!(switch.flipped(), "the change after the first reading");
        assert!(!switch.flipped());
        // With no reading before it, the first call only records.
        let fresh = Switch::new(Some(file));
        assert!(!fresh.flipped());
    }
}
