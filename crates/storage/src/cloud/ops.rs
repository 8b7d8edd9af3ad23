//! The storage operations on a bucket: listings page by page, GETs with
//! `If-Match` and ranges, each access bounded by the store's timeout, and
//! batches read with many GETs in flight within a count and a byte bound.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use object_store::path::Path as KeyPath;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::{
    Entry, InFlight, Kind, Object, ReadMany, ReadRequest, RelPath, Storage, StorageError, Version,
};

use super::{BucketStorage, BucketUrl, Store, classify, wire};
use crate::counters::{Counter, Counters};

/// The If-Match value for reading `version`; `Err(())` for a version no
/// object of a bucket can have.
fn if_match(version: Option<&Version>) -> Result<Option<String>, ()> {
    match version {
        None => Ok(None),
        Some(Version::ETag { etag, .. }) => Ok(Some(etag.clone())),
        Some(_) => Err(()),
    }
}

/// An object's version from the ETag its store gives, in one form
/// whatever the answer it came in: quoted, as HTTP's `ETag` and `If-Match`
/// write it (Google's and Azure's listings give it bare, their GETs
/// quoted), so that a listed version and a read one compare equal.
pub(super) fn version(e_tag: Option<String>, size: u64) -> Version {
    let etag = e_tag.unwrap_or_default();
    let etag = if etag.is_empty() || etag.starts_with('"') || etag.starts_with("W/\"") {
        etag
    } else {
        format!("\"{etag}\"")
    };
    Version::ETag { etag, size }
}

/// One GET of `key` (a range of it, with `range`), body and all. A body
/// of another version than `if_match` is `Precondition`, as the store's
/// 412 would be: a server that ignores `If-Match` (an emulator) never
/// hands over the wrong version's bytes.
async fn get(
    store: &dyn Store,
    counters: &Counters,
    key: &KeyPath,
    if_match: Option<String>,
    range: Option<Range<u64>>,
) -> object_store::Result<Object> {
    let opts = GetOptions {
        if_match,
        range: range.map(GetRange::Bounded),
        ..Default::default()
    };
    let expected = opts.if_match.clone();
    let result = store.get_opts(key, opts).await?;
    let meta = result.meta.clone();
    let got = version(meta.e_tag.clone(), meta.size);
    if let (Some(want), Version::ETag { etag, .. }) = (expected, &got)
        && want != *etag
    {
        return Err(object_store::Error::Precondition {
            path: key.to_string(),
            source: format!("the store answered {etag} for If-Match {want}").into(),
        });
    }
    let len = result.range.end - result.range.start;
    let mut bytes = Vec::with_capacity(len as usize);
    let mut stream = result.into_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        counters.add(Counter::BytesFetched, chunk.len() as u64);
        bytes.extend_from_slice(&chunk);
    }
    Ok(Object {
        bytes,
        version: got,
    })
}

/// A listed object as the entry `name` of its directory: its size, its
/// ETag as its version, its time.
fn object_entry(name: std::ffi::OsString, o: &object_store::ObjectMeta) -> Entry {
    Entry {
        name,
        kind: Kind::File,
        size: o.size,
        version: version(o.e_tag.clone(), o.size),
        modified: o.last_modified.into(),
    }
}

impl Storage for BucketStorage {
    fn describe(&self) -> String {
        self.url.to_string()
    }

    fn counters(&self) -> Option<Arc<Counters>> {
        Some(self.counters().clone())
    }

    /// One LIST of at most one key, not retried: tells a missing bucket,
    /// refused credentials and an unreachable endpoint apart.
    fn check(&self) -> Result<(), StorageError> {
        self.check_dir(&RelPath::root())
    }

    /// ListObjectsV2 with delimiter `/`, every page, each page one access.
    /// Common prefixes are directories; objects give size, ETag and time.
    /// A directory marker (a key ending in `/`) is not an entry. An empty
    /// listing is `NotFound`, but for the root: a bucket has no empty
    /// directories.
    fn list(&self, dir: &RelPath) -> Result<Vec<Entry>, StorageError> {
        let prefix = self
            .url
            .dir_prefix(dir)
            .ok_or_else(|| StorageError::not_found(dir.to_string()))?;
        let what = format!("LIST {}", self.url.display_key(&prefix));
        let mut entries = Vec::new();
        let mut token = None;
        let mut any = false;
        loop {
            let store = self.store.clone();
            let p = prefix.clone();
            let page = self.bounded(&what, dir, async move {
                Self::list_page(&*store, &p, token, None).await
            })?;
            for cp in page.result.common_prefixes {
                any = true;
                if let Some(name) = cp.as_ref().strip_prefix(prefix.as_str()) {
                    let name = name.trim_end_matches('/');
                    if crate::is_plain_name(name.as_bytes()) {
                        entries.push(Entry {
                            name: name.into(),
                            kind: Kind::Dir,
                            size: 0,
                            version: Version::Prefix,
                            modified: SystemTime::UNIX_EPOCH,
                        });
                    }
                }
            }
            for o in page.result.objects {
                any = true;
                let Some(name) = o.location.as_ref().strip_prefix(prefix.as_str()) else {
                    continue;
                };
                if crate::is_plain_name(name.as_bytes()) {
                    entries.push(object_entry(name.into(), &o));
                }
            }
            token = page.page_token;
            if token.is_none() {
                break;
            }
        }
        if !any && !dir.is_root() {
            return Err(StorageError::not_found(dir.to_string()));
        }
        entries.sort_by(|a, b| {
            use std::os::unix::ffi::OsStrExt;
            a.name.as_bytes().cmp(b.name.as_bytes())
        });
        Ok(entries)
    }

    /// ListObjectsV2 without a delimiter, every page (1,000 keys each),
    /// each page one access. A key any of whose names is not plain, or a
    /// directory marker, is no file.
    fn list_all(&self) -> Result<Vec<(RelPath, Entry)>, StorageError> {
        let root = RelPath::root();
        let prefix = self
            .url
            .dir_prefix(&root)
            .ok_or_else(|| StorageError::not_found(root.to_string()))?;
        let what = format!("LIST {} (every key)", self.url.display_key(&prefix));
        let mut files = Vec::new();
        let mut token = None;
        loop {
            let store = self.store.clone();
            let p = prefix.clone();
            let page = self.bounded(&what, &root, async move {
                Self::list_page_flat(&*store, &p, token).await
            })?;
            for o in page.result.objects {
                let Some(rel) = o.location.as_ref().strip_prefix(prefix.as_str()) else {
                    continue;
                };
                if rel.ends_with('/') || !rel.split('/').all(|n| crate::is_plain_name(n.as_bytes()))
                {
                    continue;
                }
                let Ok(path) = RelPath::new(rel) else {
                    continue;
                };
                let name = path.file_name().unwrap_or_default().to_owned();
                let entry = object_entry(name, &o);
                files.push((path, entry));
            }
            token = page.page_token;
            if token.is_none() {
                break;
            }
        }
        // A directory marker comes back without its `/`: a name that is
        // also a directory of other keys is the directory.
        let dirs: std::collections::HashSet<std::path::PathBuf> = files
            .iter()
            .flat_map(|(p, _)| std::path::Path::new(p.as_os_str()).ancestors().skip(1))
            .map(std::path::Path::to_path_buf)
            .collect();
        files.retain(|(p, _)| !dirs.contains(std::path::Path::new(p.as_os_str())));
        Ok(files)
    }

    /// One HEAD, and for a name that is no object one LIST of at most one
    /// key under it (a directory). The library layer takes sizes and
    /// versions from `list`; this serves single lookups.
    fn stat(&self, path: &RelPath) -> Result<Entry, StorageError> {
        let (key, kp) = self.key_path(path)?;
        let name = path.file_name().unwrap_or_default().to_owned();
        let store = self.store.clone();
        let head = self.bounded(
            &format!("HEAD {}", self.url.display_key(&key)),
            path,
            async move { store.head(&kp).await },
        );
        match head {
            Ok(meta) => Ok(Entry {
                name,
                kind: Kind::File,
                size: meta.size,
                version: version(meta.e_tag, meta.size),
                modified: meta.last_modified.into(),
            }),
            Err(e) if e.is_not_found() => {
                let prefix = format!("{key}/");
                let what = format!("LIST {}", self.url.display_key(&prefix));
                let store = self.store.clone();
                let page = self.bounded(&what, path, async move {
                    Self::list_page(&*store, &prefix, None, Some(1)).await
                })?;
                if page.result.objects.is_empty() && page.result.common_prefixes.is_empty() {
                    return Err(e);
                }
                Ok(Entry {
                    name,
                    kind: Kind::Dir,
                    size: 0,
                    version: Version::Prefix,
                    modified: SystemTime::UNIX_EPOCH,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// One PUT, bounded by the access timeout.
    fn put(&self, path: &RelPath, bytes: Vec<u8>) -> Result<(), StorageError> {
        let (key, kp) = self.key_path(path)?;
        let access = self.access();
        let shown = path.to_string();
        self.rt.block_on(async move {
            let what = format!("PUT {}", access.url.display_key(&key));
            let put = access.store.put(&kp, bytes.into());
            access.bounded(what, &shown, put).await.map(drop)
        })
    }

    /// One GET (`If-Match` with `version`).
    fn read(&self, path: &RelPath, version: Option<&Version>) -> Result<Object, StorageError> {
        self.rt
            .block_on(self.access().read(path, version.cloned(), None))
    }

    /// One GET with `If-None-Match`: a 304 is `None`.
    fn read_if_none_match(
        &self,
        path: &RelPath,
        etag: Option<&str>,
    ) -> Result<Option<Object>, StorageError> {
        let (key, kp) = self.key_path(path)?;
        let access = self.access();
        let etag = etag.map(str::to_string);
        let shown = path.to_string();
        self.rt.block_on(async move {
            let what = format!("GET {}", access.url.display_key(&key));
            let store = access.store.clone();
            let got = async move {
                let opts = GetOptions {
                    if_none_match: etag,
                    ..Default::default()
                };
                match store.get_opts(&kp, opts).await {
                    Ok(result) => {
                        let meta = result.meta.clone();
                        let bytes = result.bytes().await?.to_vec();
                        Ok(Some(Object {
                            bytes,
                            version: version(meta.e_tag, meta.size),
                        }))
                    }
                    Err(object_store::Error::NotModified { .. }) => Ok(None),
                    Err(e) => Err(e),
                }
            };
            access.bounded(what, &shown, got).await
        })
    }

    /// One ranged GET (`If-Match` with `version`). A range that is empty,
    /// or starts at or past the end of an object of known size, is empty
    /// without a request.
    fn read_range(
        &self,
        path: &RelPath,
        range: Range<u64>,
        version: Option<&Version>,
    ) -> Result<Object, StorageError> {
        self.rt
            .block_on(self.access().read(path, version.cloned(), Some(range)))
    }

    /// Keeps up to `limits.requests` GETs under way, and up to
    /// `limits.bytes` of bodies fetched and not yet handed over; reads
    /// start in the order asked, so the next result to hand over always
    /// has its share of the budget.
    fn read_many(&self, requests: Vec<ReadRequest>, limits: InFlight) -> ReadMany<'_> {
        Box::new(ReadManyIter::start(self, requests, limits))
    }
}

/// Bytes are counted against the budget in KiB, so that a budget of many
/// GiB fits a semaphore's `u32` acquisitions.
const UNIT: u64 = 1024;

type Done = (
    Result<Object, StorageError>,
    OwnedSemaphorePermit,
    OwnedSemaphorePermit,
);

struct ReadManyIter<'a> {
    storage: &'a BucketStorage,
    results: std::sync::mpsc::Receiver<tokio::task::JoinHandle<Done>>,
    driver: tokio::task::JoinHandle<()>,
}

impl<'a> ReadManyIter<'a> {
    fn start(storage: &'a BucketStorage, requests: Vec<ReadRequest>, limits: InFlight) -> Self {
        let count = Arc::new(Semaphore::new(limits.requests.max(1)));
        let budget_units = limits.bytes.div_ceil(UNIT).clamp(1, u32::MAX as u64);
        let bytes = Arc::new(Semaphore::new(budget_units as usize));
        let (tx, rx) = std::sync::mpsc::channel();
        let access = storage.access();
        let driver = storage.rt.spawn(async move {
            for r in requests {
                let size = r.size().unwrap_or(InFlight::UNKNOWN_SIZE);
                let units = size.div_ceil(UNIT).clamp(1, budget_units) as u32;
                let Ok(c) = count.clone().acquire_owned().await else {
                    return;
                };
                let Ok(b) = bytes.clone().acquire_many_owned(units).await else {
                    return;
                };
                let access = access.clone();
                let task = tokio::spawn(async move {
                    let result = access.read(&r.path, r.version, r.range).await;
                    (result, c, b)
                });
                if tx.send(task).is_err() {
                    return;
                }
            }
        });
        ReadManyIter {
            storage,
            results: rx,
            driver,
        }
    }
}

/// What one GET needs, apart from the store's runtime, so that the
/// reads of a batch run as tasks of their own.
#[derive(Clone)]
pub(super) struct Access {
    pub(super) store: Arc<dyn Store>,
    pub(super) url: BucketUrl,
    pub(super) endpoint: String,
    pub(super) timeout: Duration,
    pub(super) counters: Arc<Counters>,
}

impl Access {
    /// One GET of the object at `path` (of `range` of it), bounded by the
    /// access timeout, with `If-Match` for `version`.
    async fn read(
        &self,
        path: &RelPath,
        version: Option<Version>,
        range: Option<Range<u64>>,
    ) -> Result<Object, StorageError> {
        let shown = path.to_string();
        let key = self
            .url
            .key(path)
            .ok_or_else(|| StorageError::not_found(&shown))?;
        let kp = KeyPath::parse(&key).map_err(|_| StorageError::not_found(&shown))?;
        let m = if_match(version.as_ref()).map_err(|_| StorageError::Changed {
            path: shown.clone(),
        })?;
        if let (Some(r), Some(v)) = (&range, &version)
            && (r.is_empty() || v.size().is_some_and(|s| r.start >= s))
        {
            return Ok(Object {
                bytes: Vec::new(),
                version: v.clone(),
            });
        }
        let what = match &range {
            Some(r) => format!(
                "GET {} bytes {}-{}",
                self.url.display_key(&key),
                r.start,
                r.end
            ),
            None => format!("GET {}", self.url.display_key(&key)),
        };
        self.bounded(
            what,
            &shown,
            get(&*self.store, &self.counters, &kp, m, range),
        )
        .await
    }

    /// `access` (what it is and the path it is of, for the error), bounded
    /// by the access timeout, its error classified.
    async fn bounded<T>(
        &self,
        what: String,
        shown: &str,
        access: impl std::future::Future<Output = object_store::Result<T>>,
    ) -> Result<T, StorageError> {
        let result = match wire::scope(tokio::time::timeout(self.timeout, access)).await {
            Ok(r) => r.map_err(|e| {
                let cx = classify::Context {
                    cloud: self.url.cloud(),
                    bucket: self.url.bucket(),
                    endpoint: &self.endpoint,
                    timeout: self.timeout,
                };
                classify::classify(&e, &what, shown, &cx)
            }),
            Err(_) => Err(StorageError::Timeout {
                what,
                after: self.timeout,
            }),
        };
        wire::count_error(&self.counters, &result);
        result
    }
}

impl Iterator for ReadManyIter<'_> {
    type Item = Result<Object, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        let task = self.results.recv().ok()?;
        match self.storage.rt.block_on(task) {
            // The permits go back as the result is handed over.
            Ok((result, _count, _bytes)) => Some(result),
            Err(e) => Some(Err(StorageError::Other(format!(
                "a read of the batch failed: {e}"
            )))),
        }
    }
}

impl Drop for ReadManyIter<'_> {
    fn drop(&mut self) {
        self.driver.abort();
        while let Ok(task) = self.results.try_recv() {
            task.abort();
        }
    }
}
