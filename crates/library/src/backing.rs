//! Where a library's bytes are: the one seam between the tool's semantics
//! and a library's storage. Everything above it (the rules here, the tree,
//! the mount) asks the `Library` for names, metadata and chapter bytes and
//! never learns whether they came from a local directory or from a bucket.
//! This crate only names the seam; `novelfs_storage::backing` implements
//! it (a local directory, an object store), so the semantics carry no I/O
//! runtime.
//!
//! Paths here are relative to the library root (`novels/书/第1章.md`).

use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a name in a library directory is: only files and directories count
/// (a symlink is never followed, so nothing outside the library is read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    File,
    Dir,
}

/// The metadata of a file or directory as the library's rules use it: its
/// kind, its length and a stamp that changes with its contents. From a
/// local disk it is `lstat`'s; in a bucket the object's ETag stands in for
/// the inode (a new ETag is a new file) and the listing's time for mtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub kind: EntryKind,
    pub len: u64,
    pub dev: u64,
    pub ino: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl Meta {
    pub fn from_std(meta: &std::fs::Metadata) -> Option<Meta> {
        use std::os::unix::fs::MetadataExt;
        let kind = if meta.is_file() {
            EntryKind::File
        } else if meta.is_dir() {
            EntryKind::Dir
        } else {
            return None;
        };
        Some(Meta {
            kind,
            len: meta.len(),
            dev: meta.dev(),
            ino: meta.ino(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        })
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn is_file(&self) -> bool {
        self.kind == EntryKind::File
    }

    pub fn is_dir(&self) -> bool {
        self.kind == EntryKind::Dir
    }

    /// The modification time (the epoch for one before it).
    pub fn modified(&self) -> SystemTime {
        let (secs, nanos) = self.mtime;
        let nanos = nanos.clamp(0, 999_999_999) as u32;
        if secs >= 0 {
            UNIX_EPOCH + Duration::new(secs as u64, nanos)
        } else {
            UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
                + Duration::from_nanos(nanos as u64)
        }
    }
}

/// A chapter file opened for reading, with the metadata of what is read:
/// bytes read through it are of that version.
pub trait Opened: Send + Sync {
    fn meta(&self) -> &Meta;

    /// Whether its bytes are at hand without waiting on the storage (in
    /// the page cache, or fetched ahead): a reader that found them so needs
    /// nothing read ahead for it.
    fn at_hand(&self) -> bool;

    /// Reads `buf.len()` bytes at `offset`, fewer at the end.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

    /// Whether the object is still the version `meta` describes; a read
    /// that spans a change would mix two versions.
    fn unchanged(&self) -> io::Result<bool>;

    /// The whole contents, at most `max` bytes (`max + 1` read tells a
    /// file that grew past it).
    fn read_all(&self, max: u64) -> io::Result<Vec<u8>> {
        let want = self.meta().len.min(max + 1) as usize;
        let mut bytes = vec![0; want];
        let mut got = 0;
        while got < want {
            match self.read_at(&mut bytes[got..], got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        bytes.truncate(got);
        Ok(bytes)
    }
}

/// A digest of the contents of `opened`, the same for the same bytes
/// wherever they are read from.
pub fn digest(opened: &dyn Opened) -> io::Result<u64> {
    use std::hash::Hasher;
    let mut hasher = crate::stable_hash::StableHasher::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut at = 0u64;
    loop {
        let n = match opened.read_at(&mut buf, at) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.write(&buf[..n]);
        at += n as u64;
    }
    hasher.write_u64(at);
    Ok(hasher.finish())
}

/// The storage a library is read from.
pub trait Backing: Send + Sync + std::fmt::Debug {
    /// The names in directory `dir` that are files or directories, with
    /// which; `NotFound` when there is no such directory.
    fn list(&self, dir: &Path) -> io::Result<Vec<(OsString, EntryKind)>>;

    /// The metadata of `path` (`None` when nothing is there, or a symlink
    /// or a special file is).
    fn stat(&self, path: &Path) -> io::Result<Option<Meta>>;

    /// Opens the regular file at `path` (`None` when the name no longer
    /// holds one).
    fn open(&self, path: &Path) -> io::Result<Option<Box<dyn Opened>>>;

    /// Starts reading the files `paths` ahead of a reader: their bytes are
    /// at hand when opened. Never waits.
    fn read_ahead(&self, paths: Vec<std::path::PathBuf>);

    /// A walker comes to the directories `dirs` next, in this order:
    /// where a listing costs a request (a bucket), they are listed ahead
    /// of it. Never waits; a local directory needs nothing.
    fn list_ahead(&self, dirs: Vec<std::path::PathBuf>) {
        let _ = dirs;
    }

    /// The local directory the library is, when it is one: what inotify
    /// watches and `statfs` classifies. `None` for a bucket.
    fn local_root(&self) -> Option<&Path>;

    /// How long a listing of the storage may be trusted without a look:
    /// `None` when a look is cheap and exact (a local directory's stamp),
    /// else the time a listing is kept before it is made again.
    fn listing_ttl(&self) -> Option<Duration>;

    /// How the storage's names stay fresh, in words, where it has a rule
    /// of its own (a bucket: its published snapshot, or its listings made
    /// again once per TTL); for the mounted line. Never waits.
    fn freshness(&self) -> Option<String> {
        None
    }

    /// From now on, `sink` is handed what the library's publisher recorded
    /// beside the files of a directory (the persistent index's rows of a
    /// book's chapters, JSON), as the storage fetches it with the
    /// directory's listing (a published snapshot's piece), before the
    /// listing is served. A storage without a publisher never calls it.
    fn on_published_index(&self, sink: PublishedIndex) {
        let _ = sink;
    }

    /// What the library's publisher recorded of the directory `dir` in
    /// its snapshot's root (a book's figures), while the storage serves
    /// `dir` from that snapshot and has not fetched its piece: a directory
    /// the mount read is judged from what it holds, as without a
    /// snapshot. `None` otherwise, and for a storage without a publisher.
    fn published_figures(&self, dir: &Path) -> Option<PublishedFigures> {
        let _ = dir;
        None
    }
}

/// What a publisher recorded of a directory in its snapshot's root (see
/// `Backing::published_figures`), with the directory's stamp and newest
/// file's time as that snapshot gives them: the figures are made of the
/// piece the stamp names.
#[derive(Debug, Clone)]
pub struct PublishedFigures {
    pub stamp: u64,
    pub newest: SystemTime,
    pub figures: serde_json::Value,
}

/// What takes the rows published beside a directory (`dir` relative to
/// the library's root, the rows' JSON): see `Backing::on_published_index`.
pub type PublishedIndex = std::sync::Arc<dyn Fn(&Path, &[u8]) + Send + Sync>;

/// What kind of failure an access to the storage met, as the layers above
/// answer it (the tree gives each its own errno) without knowing the
/// storage's own error types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceKind {
    /// Nothing at that path (a chapter gone between its listing and its
    /// read).
    NotFound,
    /// The object is no longer in the version a read is pinned to.
    Changed,
    /// The storage refused the access (its credentials, or the mode bits
    /// of a local file).
    Denied,
    /// The storage did not answer now: a timeout, a connection refused or
    /// cut, a server error.
    Transient,
    /// Anything else.
    Other,
}

impl SourceKind {
    /// The kind of `e`: the one its backing declared (a `SourceFault`
    /// inside it), else read from its `io::ErrorKind` as a local disk
    /// gives it.
    pub fn of(e: &io::Error) -> SourceKind {
        if let Some(fault) = SourceFault::in_error(e) {
            return fault.kind;
        }
        use io::ErrorKind::*;
        match e.kind() {
            NotFound => SourceKind::NotFound,
            StaleNetworkFileHandle => SourceKind::Changed,
            PermissionDenied => SourceKind::Denied,
            TimedOut | ConnectionRefused | ConnectionReset | ConnectionAborted | NotConnected
            | BrokenPipe => SourceKind::Transient,
            _ => SourceKind::Other,
        }
    }
}

/// Whether `e` says the storage failed now rather than what the file is:
/// what its backing declared, else a transient kind (a local disk's
/// `EACCES` is the file's mode, kept as what the file is until it
/// changes). Such a failure is never kept as the file's contents.
pub fn passing(e: &io::Error) -> bool {
    match SourceFault::in_error(e) {
        Some(fault) => fault.passing,
        None => SourceKind::of(e) == SourceKind::Transient,
    }
}

/// A storage's error as it crosses the seam, inside the `io::Error` the
/// backing returns: the storage's own error (whose words the `io::Error`
/// shows unchanged) with the kind and the lasting-ness the storage
/// declares for it. A concrete type of this crate, so that the layers
/// above find it by downcasting without depending on the storage crate.
#[derive(Debug, Clone)]
pub struct SourceFault {
    pub kind: SourceKind,
    /// The failure is the storage's now (an outage, refused credentials,
    /// an object replaced under a read), not what the object is.
    pub passing: bool,
    pub error: std::sync::Arc<dyn std::error::Error + Send + Sync>,
}

impl SourceFault {
    /// The fault inside `e`, when its backing declared one.
    pub fn in_error(e: &io::Error) -> Option<&SourceFault> {
        e.get_ref()?.downcast_ref::<SourceFault>()
    }

    /// `e` again, with its kind, its words and its fault (an `io::Error`
    /// is not `Clone`): what each waiter on one access gets.
    pub fn copy(e: &io::Error) -> io::Error {
        match SourceFault::in_error(e) {
            Some(fault) => io::Error::new(e.kind(), fault.clone()),
            None => io::Error::new(e.kind(), e.to_string()),
        }
    }
}

impl std::fmt::Display for SourceFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

/// A fault shows its error's words and stands for it in a chain of causes:
/// what caused the fault is what caused its error.
impl std::error::Error for SourceFault {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// What the crate's own tests read through: a library with nothing in it,
/// and bytes in memory opened as a file.
#[cfg(test)]
pub(crate) mod for_tests {
    use super::*;

    /// A library that holds nothing, for the rules that need only a root.
    #[derive(Debug)]
    pub(crate) struct Empty;

    impl Backing for Empty {
        fn list(&self, _: &Path) -> io::Result<Vec<(OsString, EntryKind)>> {
            Err(io::ErrorKind::NotFound.into())
        }
        fn stat(&self, _: &Path) -> io::Result<Option<Meta>> {
            Ok(None)
        }
        fn open(&self, _: &Path) -> io::Result<Option<Box<dyn Opened>>> {
            Ok(None)
        }
        fn read_ahead(&self, _: Vec<std::path::PathBuf>) {}
        fn local_root(&self) -> Option<&Path> {
            None
        }
        fn listing_ttl(&self) -> Option<Duration> {
            None
        }
    }

    /// A library rooted (and written) at `root` that holds nothing.
    pub(crate) fn library_at(root: &str) -> crate::Library {
        crate::Library::new(std::sync::Arc::new(Empty), root.into(), root)
    }

    /// `bytes` as an opened file.
    pub(crate) struct InMemory {
        bytes: Vec<u8>,
        meta: Meta,
    }

    pub(crate) fn opened(bytes: Vec<u8>) -> Box<dyn Opened> {
        let meta = Meta {
            kind: EntryKind::File,
            len: bytes.len() as u64,
            dev: 0,
            ino: 0,
            mtime: (0, 0),
            ctime: (0, 0),
        };
        Box::new(InMemory { bytes, meta })
    }

    impl Opened for InMemory {
        fn meta(&self) -> &Meta {
            &self.meta
        }
        fn at_hand(&self) -> bool {
            true
        }
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            let start = (offset as usize).min(self.bytes.len());
            let n = buf.len().min(self.bytes.len() - start);
            buf[..n].copy_from_slice(&self.bytes[start..start + n]);
            Ok(n)
        }
        fn unchanged(&self) -> io::Result<bool> {
            Ok(true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A local disk's error declares nothing: its kind is its errno's, and
    /// only an outage passes (a file's mode is what the file is).
    #[test]
    fn a_local_error_has_the_kind_of_its_errno() {
        let table = [
            (libc::ENOENT, SourceKind::NotFound, false),
            (libc::ESTALE, SourceKind::Changed, false),
            (libc::EACCES, SourceKind::Denied, false),
            (libc::ETIMEDOUT, SourceKind::Transient, true),
            (libc::ECONNRESET, SourceKind::Transient, true),
            (libc::EIO, SourceKind::Other, false),
        ];
        for (errno, kind, passes) in table {
            let e = io::Error::from_raw_os_error(errno);
            assert_eq!(SourceKind::of(&e), kind, "{e}");
            assert_eq!(passing(&e), passes, "{e}");
        }
    }

    /// A fault the backing declared decides, whatever the `io::ErrorKind`
    /// beside it, and survives a copy with its words.
    #[test]
    fn a_declared_fault_decides_and_is_copied() {
        let fault = SourceFault {
            kind: SourceKind::Denied,
            passing: true,
            error: std::sync::Arc::new(io::Error::other("s3://b: access denied")),
        };
        let e = io::Error::other(fault);
        for e in [SourceFault::copy(&e), e] {
            assert_eq!(SourceKind::of(&e), SourceKind::Denied);
            assert!(passing(&e));
            assert_eq!(e.to_string(), "s3://b: access denied");
        }
    }
}
