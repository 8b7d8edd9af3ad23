//! What a request can fail with. Each variant names what went wrong where
//! it is understood, and carries the errno the kernel is answered with
//! (`errno`); the binary's adapter turns it into that number at the one
//! place it replies.

use std::fmt;

use novelfs_kit::cause::Cause;
use novelfs_library::NovelError;
use novelfs_library::backing::SourceKind;

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// No such name, inode, page or `ERROR` file in the source as it is
    /// now (a lookup that misses is an answer the kernel may keep).
    NotFound,
    /// A name looked up in, or a listing asked of, a node that is not a
    /// directory.
    NotADirectory,
    /// Bytes asked of a node that holds none.
    IsADirectory,
    /// A link's target asked of a node that is not a link.
    NotALink,
    /// `novel_read` is switched off: only the root and its `ERROR` remain.
    SwitchedOff,
    /// The version an inode stands for is gone from the source and the
    /// caches: its bytes cannot be made up from a newer version.
    Stale,
    /// A name not found while `novels/` itself cannot be listed: the
    /// library is not known to lack it.
    SourceDown,
    /// The source was read and failed (or holds a text that cannot be
    /// served as asked); `kind` says how, for the errno, `cause` is the
    /// error that said so, kept with its own causes.
    Source { kind: SourceKind, cause: Cause },
    /// The load a request waited on ended without a result: the request
    /// that led it panicked.
    LoadAbandoned,
    /// A request waited on the library's filesystem past its deadline, or
    /// would wait on it while another still does.
    SourceStuck,
    /// The handler serving the request panicked.
    Panicked,
    /// A request that would change the tree: the mount is a view of the
    /// library, which is the source of truth.
    ReadOnly,
    /// The mode bits do not let the caller do what it asks.
    Denied,
    /// An OPEN (and, in a watched mount, an OPENDIR): files and listings
    /// are read by inode, without handles; this answer makes the kernel
    /// stop asking.
    NoHandles,
    /// An ioctl: no file of the tree is a terminal.
    NotATerminal,
}

impl Error {
    /// The errno the kernel is answered with.
    pub fn errno(&self) -> i32 {
        match self {
            Error::NotFound => libc::ENOENT,
            Error::NotADirectory => libc::ENOTDIR,
            Error::IsADirectory => libc::EISDIR,
            Error::NotALink => libc::EINVAL,
            Error::SwitchedOff | Error::Denied => libc::EACCES,
            Error::Source { kind, .. } => source_errno(*kind),
            Error::Stale
            | Error::SourceDown
            | Error::LoadAbandoned
            | Error::SourceStuck
            | Error::Panicked => libc::EIO,
            Error::ReadOnly => libc::EROFS,
            Error::NoHandles => libc::ENOSYS,
            Error::NotATerminal => libc::ENOTTY,
        }
    }
}

/// The errno a reader gets for a failure of the source of `kind`, the one
/// table: an object changed under a read pinned to its version is a stale
/// handle (`EAGAIN` would invite the same read, which fails the same way);
/// a refusal is the caller's access denied; a chapter gone between its
/// listing and its read is not there. An outage, or anything else, is the
/// source failing, not the file: `EIO`, as a local disk failing would give.
fn source_errno(kind: SourceKind) -> i32 {
    match kind {
        SourceKind::NotFound => libc::ENOENT,
        SourceKind::Changed => libc::ESTALE,
        SourceKind::Denied => libc::EACCES,
        SourceKind::Transient | SourceKind::Other => libc::EIO,
    }
}

impl Error {
    /// Reading the source failed with `e`, of its kind.
    pub fn source_failed(e: std::io::Error) -> Error {
        Error::Source {
            kind: SourceKind::of(&e),
            cause: e.into(),
        }
    }
}

/// A chapter that cannot be read or decoded, met where its text is needed:
/// the source's failure keeps its kind, any other is `Other`.
impl From<NovelError> for Error {
    fn from(e: NovelError) -> Error {
        let kind = match &e {
            NovelError::Io { kind, .. } | NovelError::Unavailable { kind, .. } => *kind,
            _ => SourceKind::Other,
        };
        Error::Source {
            kind,
            cause: e.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            Error::NotFound => "not found",
            Error::NotADirectory => "not a directory",
            Error::IsADirectory => "not a file",
            Error::NotALink => "not a link",
            Error::SwitchedOff => "switched off",
            Error::Stale => "the version read is gone",
            Error::SourceDown => "the library cannot be listed",
            Error::Source { cause, .. } => return write!(f, "the source failed: {cause}"),
            Error::LoadAbandoned => "the load waited on was abandoned",
            Error::SourceStuck => "the library's filesystem does not answer",
            Error::Panicked => "the handler panicked",
            Error::ReadOnly => "read-only",
            Error::Denied => "permission denied",
            Error::NoHandles => "no handles",
            Error::NotATerminal => "not a terminal",
        };
        f.write_str(what)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Source { cause, .. } => Some(cause.get()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_answers_its_errno() {
        assert_eq!(Error::NotFound.errno(), libc::ENOENT);
        assert_eq!(Error::SourceDown.errno(), libc::EIO);
        assert_eq!(Error::SwitchedOff.errno(), libc::EACCES);
        let failed = Error::from(NovelError::SwitchedOff);
        assert_eq!(failed.errno(), libc::EIO);
    }

    /// A bucket's failure reaches the reader as its errno with its cause
    /// kept through the library: the chain a log line shows names the
    /// store's own error under the words the reader gets.
    #[test]
    fn a_source_failure_keeps_its_cause() {
        use novelfs_kit::cause::{Cause, Chain};
        use novelfs_storage::StorageError;
        let storage = StorageError::ServerError {
            what: "GET s3://b/novels/书/第1章.md".into(),
            status: 503,
            code: None,
            cause: Cause::new(std::io::Error::other("the store's own words")),
        };
        let io = std::io::Error::from(storage);
        let read = NovelError::from_io("/lib/novels/书/第1章.md".into(), &io);
        let failed = Error::from(read);
        assert_eq!(failed.errno(), libc::EIO);
        assert_eq!(
            Chain(&failed).to_string(),
            "the source failed: 无法读取 \"/lib/novels/书/第1章.md\"：\
             GET s3://b/novels/书/第1章.md: HTTP 503: the store's own words"
        );
        let local = Error::source_failed(std::io::Error::from_raw_os_error(libc::EACCES));
        let os = std::error::Error::source(&local)
            .and_then(|e| e.downcast_ref::<std::io::Error>())
            .and_then(std::io::Error::raw_os_error);
        assert_eq!((local.errno(), os), (libc::EACCES, Some(libc::EACCES)));
    }

    /// Each kind of the source's failure reaches the reader as its errno,
    /// through a library error as through an `io::Error`, the words kept.
    #[test]
    fn each_kind_of_source_failure_answers_its_errno() {
        let table = [
            (SourceKind::NotFound, libc::ENOENT),
            (SourceKind::Changed, libc::ESTALE),
            (SourceKind::Denied, libc::EACCES),
            (SourceKind::Transient, libc::EIO),
            (SourceKind::Other, libc::EIO),
        ];
        for (kind, errno) in table {
            let path = "/lib/novels/书/第1章.md".to_string();
            let reason = format!("{kind:?}");
            let io = NovelError::Io {
                path: path.clone(),
                reason: reason.clone(),
                kind,
                cause: None,
            };
            let passing = NovelError::Unavailable {
                path,
                reason,
                kind,
                cause: None,
            };
            for e in [io, passing] {
                let words = format!("the source failed: {e}");
                let failed = Error::from(e);
                assert_eq!(failed.errno(), errno, "{kind:?}");
                assert_eq!(failed.to_string(), words);
            }
        }
        let local = [
            (std::io::ErrorKind::NotFound, libc::ENOENT),
            (std::io::ErrorKind::PermissionDenied, libc::EACCES),
            (std::io::ErrorKind::StaleNetworkFileHandle, libc::ESTALE),
            (std::io::ErrorKind::TimedOut, libc::EIO),
            (std::io::ErrorKind::InvalidData, libc::EIO),
        ];
        for (io_kind, errno) in local {
            let failed = Error::source_failed(io_kind.into());
            assert_eq!(failed.errno(), errno, "{io_kind:?}");
        }
    }
}
