//! The daemon's machine-readable log events: debug lines of the form
//! `event=NAME key=value ... path=PATH` that tests and tools count instead of
//! matching prose. Each event's name is defined once, here, and used by the
//! code that logs it and by whatever reads it back, so that renaming one
//! breaks its readers loudly rather than leaving them matching nothing.
//! `path=` comes last, as a path holds spaces.

/// A page stored into the kernel's page cache ahead of a reader:
/// `event=stored ino=0x… bytes=N path=/book/chapter/page`.
pub const STORED: &str = "event=stored";

/// A chapter decoded from its source file: `event=decoded path=/book/chapter`.
pub const DECODED: &str = "event=decoded";

/// A version of a chapter read before is no longer the source's (its file
/// changed or went): `event=changed path=/book/chapter`.
pub const CHANGED: &str = "event=changed";

/// The library's storage stopped answering, and answers again: once each
/// per outage, `event=source_down` / `event=source_up` (no `path=`). The
/// storage logs them, which names nothing above it: defined there.
pub use novelfs_storage::outage::{SOURCE_DOWN, SOURCE_UP};

/// A round of the publisher (`novelfs index --publish --every`) ended:
/// `event=publish_round n=N outcome=done|failed`.
pub const PUBLISH_ROUND: &str = "event=publish_round";

/// A round of the publisher still waits on the bucket, said once a round:
/// `event=round_waiting n=N`.
pub const ROUND_WAITING: &str = "event=round_waiting";

/// The `path=` field of `line` when it holds the event `name`, else `None`.
pub fn path_of<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let (_, fields) = line.split_once(name)?;
    let fields = fields.strip_prefix(' ')?;
    if fields.starts_with("path=") {
        return fields.strip_prefix("path=");
    }
    fields.split_once(" path=").map(|(_, path)| path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_is_the_rest_of_the_line() {
        let line =
            format!("[DEBUG novelfs] {STORED} ino=0x5 bytes=9 path=/书/第1章 起.md/offset-1.txt");
        assert_eq!(path_of(&line, STORED), Some("/书/第1章 起.md/offset-1.txt"));
        assert_eq!(path_of(&line, DECODED), None);
        let line = format!("{DECODED} path=/书/第1章 起.md");
        assert_eq!(path_of(&line, DECODED), Some("/书/第1章 起.md"));
        assert_eq!(path_of("event=storedx path=/a", STORED), None);
    }
}
