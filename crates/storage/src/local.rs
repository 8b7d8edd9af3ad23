//! A library in a local directory, read with `std::fs` without following
//! symlinks (the rules of the library layer's scans and chapter reads).
//! Each system call on the library's files is one `access`, a big read
//! made in `access::READ_CHUNK`s.

use std::ffi::OsString;
use std::fs::{File, Metadata, OpenOptions};
use std::ops::Range;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::access;
use crate::{Entry, Kind, LocalStamp, Object, RelPath, Storage, StorageError, Version};

/// How often a read is tried again when the file changes while it is
/// read, before it gives up with `Changed`.
const READ_ATTEMPTS: usize = 3;

/// A library rooted at a local directory.
#[derive(Debug, Clone)]
pub struct LocalStorage {
    root: PathBuf,
}

/// The stamp of `meta`.
pub fn stamp(meta: &Metadata) -> LocalStamp {
    LocalStamp {
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.size(),
        mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
        ctime_ns: meta.ctime() as i128 * 1_000_000_000 + meta.ctime_nsec() as i128,
    }
}

fn entry(name: OsString, meta: &Metadata) -> Option<Entry> {
    let kind = if meta.is_file() {
        Kind::File
    } else if meta.is_dir() {
        Kind::Dir
    } else {
        return None;
    };
    Some(Entry {
        name,
        kind,
        size: meta.len(),
        version: Version::Local(stamp(meta)),
        modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
    })
}

/// Whether an error says only that the path is not there (a component
/// missing, or not a directory, or a symlink where `O_NOFOLLOW` refused it).
fn is_absence(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP)
    )
}

impl LocalStorage {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        LocalStorage { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `ROOT/path`, built in one allocation.
    pub fn full_path(&self, path: &RelPath) -> PathBuf {
        if path.is_root() {
            return self.root.clone();
        }
        let mut p =
            PathBuf::with_capacity(self.root.as_os_str().len() + 1 + path.as_os_str().len());
        p.push(&self.root);
        p.push(path.as_os_str());
        p
    }

    fn io_error(&self, path: &RelPath, e: std::io::Error) -> StorageError {
        if is_absence(&e) {
            StorageError::not_found(path.to_string())
        } else {
            StorageError::Other(format!("{}: {e}", self.full_path(path).display()))
        }
    }

    /// Opens the regular file at `path` without following a symlink (and
    /// without blocking on a FIFO swapped in), with the metadata of the
    /// file actually opened.
    fn open(&self, path: &RelPath) -> Result<(File, Metadata), StorageError> {
        if path.is_root() {
            return Err(StorageError::not_found(path.to_string()));
        }
        let f = access::one(|| {
            OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(self.full_path(path))
        })
        .map_err(|e| self.io_error(path, e))?;
        let meta = access::one(|| f.metadata()).map_err(|e| self.io_error(path, e))?;
        if !meta.is_file() {
            return Err(StorageError::not_found(path.to_string()));
        }
        Ok((f, meta))
    }

    /// Reads with `read_once` from the file at `path`, checking that the
    /// file is of `version` (when given) before and after, so that bytes
    /// read while it was rewritten in place are never returned.
    fn read_checked(
        &self,
        path: &RelPath,
        version: Option<&Version>,
        read_once: impl Fn(&File, &Metadata) -> std::io::Result<Vec<u8>>,
    ) -> Result<Object, StorageError> {
        let changed = || StorageError::Changed {
            path: path.to_string(),
        };
        for _ in 0..READ_ATTEMPTS {
            let (f, meta) = self.open(path)?;
            let before = Version::Local(stamp(&meta));
            if version.is_some_and(|v| *v != before) {
                return Err(changed());
            }
            let bytes = read_once(&f, &meta).map_err(|e| self.io_error(path, e))?;
            let after = access::one(|| f.metadata()).map_err(|e| self.io_error(path, e))?;
            if Version::Local(stamp(&after)) == before {
                return Ok(Object {
                    bytes,
                    version: before,
                });
            }
            if version.is_some() {
                return Err(changed());
            }
        }
        Err(changed())
    }
}

impl Storage for LocalStorage {
    fn describe(&self) -> String {
        self.root.display().to_string()
    }

    fn check(&self) -> Result<(), StorageError> {
        let meta = access::one(|| std::fs::metadata(&self.root))
            .map_err(|e| StorageError::Other(format!("{}: {e}", self.root.display())))?;
        if !meta.is_dir() {
            return Err(StorageError::Other(format!(
                "{}: not a directory",
                self.root.display()
            )));
        }
        access::one(|| std::fs::read_dir(&self.root))
            .map(drop)
            .map_err(|e| StorageError::Other(format!("{}: {e}", self.root.display())))
    }

    /// One `readdir` and one `lstat` per entry; symlinks and special files
    /// are left out, and an entry gone between the two is too.
    fn list(&self, dir: &RelPath) -> Result<Vec<Entry>, StorageError> {
        let full = self.full_path(dir);
        let meta =
            access::one(|| std::fs::symlink_metadata(&full)).map_err(|e| self.io_error(dir, e))?;
        if !meta.is_dir() {
            return Err(StorageError::not_found(dir.to_string()));
        }
        let mut entries = Vec::new();
        let mut listing =
            access::one(|| std::fs::read_dir(&full)).map_err(|e| self.io_error(dir, e))?;
        while let Some(e) = access::one(|| listing.next()) {
            let e = e.map_err(|e| self.io_error(dir, e))?;
            match access::one(|| e.file_type()) {
                Ok(t) if t.is_file() || t.is_dir() => {}
                _ => continue,
            }
            let meta = match access::one(|| std::fs::symlink_metadata(e.path())) {
                Ok(m) => m,
                Err(err) if is_absence(&err) => continue,
                Err(err) => return Err(self.io_error(dir, err)),
            };
            entries.extend(entry(e.file_name(), &meta));
        }
        entries.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(entries)
    }

    fn stat(&self, path: &RelPath) -> Result<Entry, StorageError> {
        let meta = access::one(|| std::fs::symlink_metadata(self.full_path(path)))
            .map_err(|e| self.io_error(path, e))?;
        let name = path.file_name().unwrap_or_default().to_owned();
        entry(name, &meta).ok_or_else(|| StorageError::not_found(path.to_string()))
    }

    fn put(&self, path: &RelPath, bytes: Vec<u8>) -> Result<(), StorageError> {
        let full = self.full_path(path);
        let aside = full.with_extension("novelfs-part");
        if let Some(dir) = full.parent() {
            access::one(|| std::fs::create_dir_all(dir)).map_err(|e| self.io_error(path, e))?;
        }
        access::one(|| std::fs::write(&aside, bytes)).map_err(|e| self.io_error(path, e))?;
        access::one(|| std::fs::rename(&aside, &full)).map_err(|e| self.io_error(path, e))
    }

    fn read(&self, path: &RelPath, version: Option<&Version>) -> Result<Object, StorageError> {
        self.read_checked(path, version, |f, meta| {
            // The size `fstat` gave, then whatever the file grew by.
            let mut bytes = vec![0; meta.len() as usize];
            let done = access::read_at(f, &mut bytes, 0)?;
            bytes.truncate(done);
            let mut more = [0u8; 8192];
            loop {
                match access::read_at(f, &mut more, bytes.len() as u64)? {
                    0 => break,
                    n => bytes.extend_from_slice(&more[..n]),
                }
            }
            Ok(bytes)
        })
    }

    fn read_range(
        &self,
        path: &RelPath,
        range: Range<u64>,
        version: Option<&Version>,
    ) -> Result<Object, StorageError> {
        self.read_checked(path, version, |f, meta| {
            let end = range.end.min(meta.len());
            let len = end.saturating_sub(range.start) as usize;
            let mut bytes = vec![0; len];
            let done = access::read_at(f, &mut bytes, range.start)?;
            bytes.truncate(done);
            Ok(bytes)
        })
    }
}
