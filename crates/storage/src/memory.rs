//! A bucket in memory, behind the same `Storage` trait as a real one:
//! keys with their bytes, ETags and times, listed as S3 lists them, and
//! every request counted by kind and by the bytes it moved. What the
//! tests of the code above the trait (the published snapshot, its
//! publisher and its followers) run against.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Mutex;
use std::time::SystemTime;

use novelfs_kit::lock;

use crate::{Entry, EntryKind, Object, RelPath, Storage, StorageError, Version};

struct Stored {
    bytes: Vec<u8>,
    etag: String,
    modified: SystemTime,
}

/// What the bucket was asked, by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Asked {
    pub lists: u64,
    pub gets: u64,
    pub puts: u64,
    pub deletes: u64,
    /// Bytes of bodies sent to the caller.
    pub bytes_out: u64,
    /// Bytes of bodies written.
    pub bytes_in: u64,
}

#[derive(Default)]
pub struct MemoryStorage {
    /// Every request fails as a stalled bucket's would (a timeout).
    failing: std::sync::atomic::AtomicBool,
    /// Its listings give no ETag (its GETs do), as some S3-compatible
    /// servers list.
    listed_without_etags: std::sync::atomic::AtomicBool,
    objects: Mutex<BTreeMap<String, Stored>>,
    asked: Mutex<Asked>,
    etags: Mutex<u64>,
}

impl std::fmt::Debug for MemoryStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryStorage")
    }
}

impl MemoryStorage {
    pub fn new() -> MemoryStorage {
        MemoryStorage::default()
    }

    /// From now on every request times out (`true`), or is answered.
    pub fn set_failing(&self, failing: bool) {
        self.failing
            .store(failing, std::sync::atomic::Ordering::SeqCst);
    }

    /// From now on its listings give no ETag (`false`), as some
    /// S3-compatible servers list, or give them.
    pub fn set_listing_etags(&self, given: bool) {
        self.listed_without_etags
            .store(!given, std::sync::atomic::Ordering::SeqCst);
    }

    fn answers(&self, what: &str) -> Result<(), StorageError> {
        match self.failing.load(std::sync::atomic::Ordering::SeqCst) {
            true => Err(StorageError::Timeout {
                what: what.to_string(),
                after: std::time::Duration::ZERO,
            }),
            false => Ok(()),
        }
    }

    /// What it was asked so far.
    pub fn asked(&self) -> Asked {
        *lock(&self.asked)
    }

    /// The keys it holds, in order.
    pub fn keys(&self) -> Vec<String> {
        lock(&self.objects).keys().cloned().collect()
    }

    /// Writes `key` as a client of the bucket would (not counted).
    pub fn insert(&self, key: &str, bytes: &[u8]) {
        let etag = self.next_etag();
        lock(&self.objects).insert(
            key.to_string(),
            Stored {
                bytes: bytes.to_vec(),
                etag,
                modified: SystemTime::now(),
            },
        );
    }

    /// Makes the object at `key` written `by` earlier than it was.
    pub fn age(&self, key: &str, by: std::time::Duration) {
        if let Some(s) = lock(&self.objects).get_mut(key) {
            s.modified -= by;
        }
    }

    fn next_etag(&self) -> String {
        let mut n = lock(&self.etags);
        *n += 1;
        format!("\"e{n}\"")
    }

    /// The entry of `s`, as a listing (`listed`) or a HEAD gives it.
    fn entry(&self, name: &str, s: &Stored, listed: bool) -> Entry {
        let without = self
            .listed_without_etags
            .load(std::sync::atomic::Ordering::SeqCst);
        let etag = (!(listed && without)).then(|| s.etag.clone());
        Entry {
            name: name.into(),
            kind: EntryKind::File,
            size: s.bytes.len() as u64,
            version: Version::of_object(etag, s.bytes.len() as u64, s.modified),
            modified: s.modified,
        }
    }

    fn not_found(path: &RelPath) -> StorageError {
        StorageError::NotFound {
            path: path.to_string(),
        }
    }

    fn object(&self, path: &RelPath, version: Option<&Version>) -> Result<Object, StorageError> {
        let objects = lock(&self.objects);
        let s = objects
            .get(&path.to_string())
            .ok_or_else(|| Self::not_found(path))?;
        let now = Version::ETag {
            etag: s.etag.clone(),
            size: s.bytes.len() as u64,
        };
        let changed = || StorageError::Changed {
            path: path.to_string(),
        };
        match version {
            Some(Version::ETag { etag, .. }) if *etag != s.etag => return Err(changed()),
            // Pinned to a version no ETag tells: the answer's size and time
            // decide, and the object read is that version.
            Some(v @ Version::SizeAndTime { .. }) => {
                return match v.held_by(s.bytes.len() as u64, s.modified) {
                    Some(true) => Ok(Object {
                        bytes: s.bytes.clone(),
                        version: v.clone(),
                    }),
                    _ => Err(changed()),
                };
            }
            _ => {}
        }
        Ok(Object {
            bytes: s.bytes.clone(),
            version: now,
        })
    }

    fn count(&self, f: impl FnOnce(&mut Asked)) {
        f(&mut lock(&self.asked));
    }
}

impl Storage for MemoryStorage {
    fn describe(&self) -> String {
        "memory://".into()
    }

    fn check(&self) -> Result<(), StorageError> {
        Ok(())
    }

    fn list(&self, dir: &RelPath) -> Result<Vec<Entry>, StorageError> {
        self.answers("LIST")?;
        self.count(|a| a.lists += 1);
        let prefix = match dir.to_string() {
            d if d.is_empty() => d,
            d => format!("{d}/"),
        };
        let objects = lock(&self.objects);
        let mut entries: Vec<Entry> = Vec::new();
        for (key, s) in objects.range(prefix.clone()..) {
            let Some(rest) = key.strip_prefix(&prefix) else {
                break;
            };
            match rest.split_once('/') {
                Some((sub, _)) => {
                    if entries.last().is_none_or(|e| e.name != sub) {
                        entries.push(Entry {
                            name: sub.into(),
                            kind: EntryKind::Dir,
                            size: 0,
                            version: Version::Prefix,
                            modified: std::time::UNIX_EPOCH,
                        });
                    }
                }
                None => entries.push(self.entry(rest, s, true)),
            }
        }
        if entries.is_empty() && !prefix.is_empty() {
            return Err(Self::not_found(dir));
        }
        Ok(entries)
    }

    fn stat(&self, path: &RelPath) -> Result<Entry, StorageError> {
        let objects = lock(&self.objects);
        let key = path.to_string();
        let s = objects.get(&key).ok_or_else(|| Self::not_found(path))?;
        Ok(self.entry(key.rsplit('/').next().unwrap_or(&key), s, false))
    }

    /// Every key, 1,000 a LIST as S3 gives them.
    fn list_all(&self) -> Result<Vec<(RelPath, Entry)>, StorageError> {
        self.answers("LIST")?;
        let objects = lock(&self.objects);
        let pages = objects.len().div_ceil(1000).max(1) as u64;
        self.count(|a| a.lists += pages);
        objects
            .iter()
            .map(|(key, s)| {
                let name = key.rsplit('/').next().unwrap_or(key);
                Ok((RelPath::new(key)?, self.entry(name, s, true)))
            })
            .collect()
    }

    fn put(&self, path: &RelPath, bytes: Vec<u8>) -> Result<(), StorageError> {
        self.answers("PUT")?;
        self.count(|a| {
            a.puts += 1;
            a.bytes_in += bytes.len() as u64;
        });
        let etag = self.next_etag();
        lock(&self.objects).insert(
            path.to_string(),
            Stored {
                bytes,
                etag,
                modified: SystemTime::now(),
            },
        );
        Ok(())
    }

    fn delete(&self, path: &RelPath) -> Result<(), StorageError> {
        self.count(|a| a.deletes += 1);
        lock(&self.objects).remove(&path.to_string());
        Ok(())
    }

    fn read(&self, path: &RelPath, version: Option<&Version>) -> Result<Object, StorageError> {
        self.answers("GET")?;
        self.count(|a| a.gets += 1);
        let object = self.object(path, version)?;
        self.count(|a| a.bytes_out += object.bytes.len() as u64);
        Ok(object)
    }

    fn read_if_none_match(
        &self,
        path: &RelPath,
        etag: Option<&str>,
    ) -> Result<Option<Object>, StorageError> {
        self.answers("GET")?;
        self.count(|a| a.gets += 1);
        let object = self.object(path, None)?;
        if let (Some(known), Version::ETag { etag, .. }) = (etag, &object.version)
            && known == etag
        {
            return Ok(None);
        }
        self.count(|a| a.bytes_out += object.bytes.len() as u64);
        Ok(Some(object))
    }

    fn read_range(
        &self,
        path: &RelPath,
        range: Range<u64>,
        version: Option<&Version>,
    ) -> Result<Object, StorageError> {
        let mut object = self.read(path, version)?;
        let end = (range.end as usize).min(object.bytes.len());
        let start = (range.start as usize).min(end);
        object.bytes = object.bytes[start..end].to_vec();
        Ok(object)
    }
}
