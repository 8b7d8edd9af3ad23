//! Every read of a library. The library's semantics read through one
//! seam, `novelfs_library::backing::Backing`, which this crate implements
//! twice (`backing`): a directory on a local disk, read with the page cache
//! and `fadvise`, and keys in a bucket, read through `Storage`, the object
//! store's interface (list a directory with sizes and versions, read whole
//! or a range, many in flight), which `BucketStorage` speaks to S3, Google
//! Cloud Storage and Azure Blob alike.
//!
//! The API is synchronous and blocking: its callers are plain threads (the
//! FUSE workers, the CLI). `BucketStorage` keeps its own small async runtime
//! inside.

use std::ffi::OsString;
use std::ops::Range;
use std::time::SystemTime;

pub mod access;
pub mod backing;
mod cloud;
pub mod counters;
mod error;
#[cfg(any(test, feature = "memory"))]
pub mod memory;
mod metrics;
pub mod outage;
mod path;

pub use cloud::{BucketStorage, BucketUrl, Cloud, Credentials, StoreOptions};
pub use counters::{Counter, Counters};
pub use error::StorageError;
pub use path::{RelPath, is_plain_name};

/// The library in the local directory `root`, made absolute and canonical
/// because every page prints it.
pub fn open_local(root: &std::path::Path) -> std::io::Result<novelfs_library::Library> {
    let root = std::fs::canonicalize(root)?;
    let display = root.to_string_lossy().into_owned();
    let backing = std::sync::Arc::new(backing::LocalBacking::new(root.clone()));
    Ok(novelfs_library::Library::new(backing, root, &display))
}

/// The library in a bucket, read through `bucket`; its root is written as
/// `url` (the `s3://` URL) until `with_path_root` says otherwise.
pub fn open_bucket(bucket: backing::BucketBacking, url: &str) -> novelfs_library::Library {
    let display = url.trim_end_matches('/');
    let backing = std::sync::Arc::new(bucket);
    novelfs_library::Library::new(backing, std::path::PathBuf::from(display), display)
}

/// What a directory entry is: the library's own kinds (a file or a
/// directory), one enum from the seam to the bucket's listings.
pub use novelfs_library::backing::EntryKind;

/// The version of an object: two reads that see the same version see the
/// same bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Version {
    /// An object, by its ETag (in its quoted form, whatever the store's
    /// answer gave) and its size.
    ETag { etag: String, size: u64 },
    /// A directory of a bucket: a common prefix, with no object behind it.
    Prefix,
    /// An object of a store whose listings give no ETag (some
    /// S3-compatible servers): by its size and last-modified time, which
    /// such a listing does give. A GET read in this version is one whose
    /// answer has that size and that time (to the second, all an HTTP date
    /// holds).
    SizeAndTime { size: u64, modified: (u64, u32) },
}

/// A version's hash reaches the inode journal and the published index
/// (inode numbers, directory stamps), which outlive the build that wrote
/// them: each variant's tag is fixed (an ETag 1, a prefix 2: what a
/// derived `Hash` gave them when the first indexes were written), so that
/// an index or journal another build wrote is read the same.
impl std::hash::Hash for Version {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            Version::ETag { etag, size } => {
                1isize.hash(state);
                etag.hash(state);
                size.hash(state);
            }
            Version::Prefix => 2isize.hash(state),
            Version::SizeAndTime { size, modified } => {
                3isize.hash(state);
                size.hash(state);
                modified.hash(state);
            }
        }
    }
}

impl Version {
    /// The object's size in bytes, when the version records it.
    pub fn size(&self) -> Option<u64> {
        match self {
            Version::ETag { size, .. } | Version::SizeAndTime { size, .. } => Some(*size),
            Version::Prefix => None,
        }
    }

    /// An object's version from what a store says of it: its ETag when it
    /// gives one (an empty one is none), else its size and time.
    pub fn of_object(etag: Option<String>, size: u64, modified: SystemTime) -> Version {
        match etag {
            Some(etag) if !etag.is_empty() => Version::ETag { etag, size },
            _ => {
                let t = modified
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                Version::SizeAndTime {
                    size,
                    modified: (t.as_secs(), t.subsec_nanos()),
                }
            }
        }
    }

    /// Whether an object answered with `size` and `modified` is in this
    /// version, for a version no ETag tells (`SizeAndTime`): the times
    /// compared to the second, the precision of a GET's `Last-Modified`.
    /// `None` for a version an ETag tells.
    pub fn held_by(&self, size: u64, modified: SystemTime) -> Option<bool> {
        let Version::SizeAndTime {
            size: want,
            modified: (secs, _),
        } = self
        else {
            return None;
        };
        let got = modified
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        Some(*want == size && *secs == got)
    }
}

/// One entry of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The plain name in its directory, byte for byte.
    pub name: OsString,
    pub kind: EntryKind,
    /// Bytes for a file; 0 for a directory of a bucket.
    pub size: u64,
    pub version: Version,
    pub modified: SystemTime,
}

/// An object's bytes (the whole object, or the range asked for) with the
/// version they were read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    pub bytes: Vec<u8>,
    pub version: Version,
}

/// One object, or one range of it, to read in a batch
/// (`Storage::read_many`): a big object is read as several ranges of one
/// batch, in flight together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadRequest {
    pub path: RelPath,
    /// The version to read: the read fails with `Changed` when the object
    /// is no longer in it.
    pub version: Option<Version>,
    /// The bytes to read; the whole object when `None`.
    pub range: Option<Range<u64>>,
}

impl ReadRequest {
    /// The whole object at `path`.
    pub fn new(path: RelPath, version: Option<Version>) -> Self {
        ReadRequest {
            path,
            version,
            range: None,
        }
    }

    /// The bytes `range` of the object at `path`.
    pub fn range(path: RelPath, version: Option<Version>, range: Range<u64>) -> Self {
        ReadRequest {
            path,
            version,
            range: Some(range),
        }
    }

    /// The bytes this read brings at most, when known: what it counts
    /// against a batch's budget.
    pub fn size(&self) -> Option<u64> {
        let whole = self.version.as_ref().and_then(Version::size);
        match (&self.range, whole) {
            (Some(r), Some(w)) => Some(r.end.min(w).saturating_sub(r.start)),
            (Some(r), None) => Some(r.end - r.start.min(r.end)),
            (None, w) => w,
        }
    }
}

/// How much of a batch is read at once: at most `requests` reads under way
/// and at most `bytes` of bodies fetched but not yet handed to the caller
/// (counted by the sizes the versions record; a read whose size is unknown
/// counts `UNKNOWN_SIZE`). One object bigger than `bytes` is still read,
/// alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InFlight {
    pub requests: usize,
    pub bytes: u64,
}

impl InFlight {
    /// What a read of unknown size counts against `bytes`.
    pub const UNKNOWN_SIZE: u64 = 64 * 1024;
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight {
            requests: 16,
            bytes: 64 * 1024 * 1024,
        }
    }
}

/// The results of a batch read, one per request, in the order asked.
pub type ReadMany<'a> = Box<dyn Iterator<Item = Result<Object, StorageError>> + Send + 'a>;

/// A library's storage.
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// The library as messages name it: its root directory, or its
    /// `s3://` URL.
    fn describe(&self) -> String;

    /// Whether the library can be read at all, with the reason when not:
    /// a missing root or bucket, refused credentials, an unreachable
    /// endpoint. Costs one access.
    fn check(&self) -> Result<(), StorageError>;

    /// The entries of the directory `dir` (the root is `RelPath::root()`),
    /// sorted by name byte for byte, with each entry's size, version and
    /// time. `NotFound` when there is no such directory.
    fn list(&self, dir: &RelPath) -> Result<Vec<Entry>, StorageError>;

    /// The entry at `path`.
    fn stat(&self, path: &RelPath) -> Result<Entry, StorageError>;

    /// Every file of the library with its path, in as few requests as
    /// the store allows: what a publisher lists each round. This default
    /// lists each directory; a bucket lists its keys without a delimiter
    /// (1,000 a request, whatever the directories).
    fn list_all(&self) -> Result<Vec<(RelPath, Entry)>, StorageError> {
        let mut files = Vec::new();
        let mut dirs = vec![RelPath::root()];
        while let Some(dir) = dirs.pop() {
            for e in self.list(&dir)? {
                let path = dir.join(&e.name)?;
                match e.kind {
                    EntryKind::Dir => dirs.push(path),
                    EntryKind::File => files.push((path, e)),
                }
            }
        }
        Ok(files)
    }

    /// Writes `bytes` as the object at `path` (one PUT; a local file is
    /// written aside and renamed over): what `novelfs index --publish`
    /// leaves beside a library. Every other call only reads.
    fn put(&self, path: &RelPath, bytes: Vec<u8>) -> Result<(), StorageError>;

    /// Removes the object at `path` (one DELETE): what a publisher does
    /// to the pieces of its snapshots no mount needs any more. A store that
    /// cannot says why.
    fn delete(&self, path: &RelPath) -> Result<(), StorageError> {
        Err(StorageError::other(format!(
            "{}: cannot remove {path}",
            self.describe()
        )))
    }

    /// The object at `path`, whole. With `version`, fails with `Changed`
    /// unless the bytes are of that version.
    fn read(&self, path: &RelPath, version: Option<&Version>) -> Result<Object, StorageError>;

    /// The object at `path`, whole, unless its ETag is still `etag`
    /// (`If-None-Match`): `None` when it is (a 304, no body). What a mount
    /// following a published snapshot asks once per TTL. A store without
    /// ETags reads the object.
    fn read_if_none_match(
        &self,
        path: &RelPath,
        etag: Option<&str>,
    ) -> Result<Option<Object>, StorageError> {
        let _ = etag;
        self.read(path, None).map(Some)
    }

    /// The bytes `range` of the object at `path` (fewer at its end). With
    /// `version`, fails with `Changed` unless they are of that version.
    fn read_range(
        &self,
        path: &RelPath,
        range: Range<u64>,
        version: Option<&Version>,
    ) -> Result<Object, StorageError>;

    /// Where what it costs is counted, for storage that is remote.
    fn counters(&self) -> Option<std::sync::Arc<Counters>> {
        None
    }

    /// Reads many objects, keeping up to `limits` of them under way at
    /// once, and gives their results in the order of `requests`. This
    /// default reads one after another, which is what a local disk needs.
    fn read_many(&self, requests: Vec<ReadRequest>, limits: InFlight) -> ReadMany<'_> {
        let _ = limits;
        Box::new(requests.into_iter().map(move |r| match r.range {
            Some(range) => self.read_range(&r.path, range, r.version.as_ref()),
            None => self.read(&r.path, r.version.as_ref()),
        }))
    }
}
