//! The one way a command's output reaches stdout. A reader that closed
//! its end early (`novelfs status MNT | head -1`) has all it wanted: the
//! command ends quietly and successfully, as `head` expects. Any other
//! failed write (a full disk, `> /dev/full`) means the output is lost:
//! one line on stderr and a failure exit status.

use std::io::{ErrorKind, Write};
use std::process::ExitCode;

/// How writing the output went.
#[derive(Debug)]
pub(crate) enum Written {
    /// All of it reached stdout.
    Whole,
    /// The reader closed its end: it wants no more.
    Closed,
    /// Lost: the line stderr got is said already.
    Lost,
}

impl Written {
    /// The command's exit status when the output was all it had to do.
    pub(crate) fn code(self) -> ExitCode {
        match self {
            Written::Whole | Written::Closed => ExitCode::SUCCESS,
            Written::Lost => ExitCode::FAILURE,
        }
    }
}

/// Writes `text` to stdout and flushes it.
pub(crate) fn emit(text: &str) -> Written {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Written::Whole,
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Written::Closed,
        Err(e) => {
            say(&format!("novelfs: the output was not written: {e}"));
            Written::Lost
        }
    }
}

/// `text` on stderr, ended by a newline if it has none; a stderr that
/// cannot take it is not worth a panic.
pub(crate) fn say(text: &str) {
    let end = if text.ends_with('\n') { "" } else { "\n" };
    let _ = write!(std::io::stderr().lock(), "{text}{end}");
}
