//! The storage operations on a bucket: listings page by page, a PUT, and
//! the reads, each one GET (`get`) or a batch of them in flight
//! (`batch`), each access bounded by the store's timeout.

use std::ops::Range;
use std::sync::Arc;
use std::time::SystemTime;

use object_store::{GetOptions, ObjectStore, ObjectStoreExt};

use crate::{
    Entry, EntryKind, InFlight, Object, ReadMany, ReadRequest, RelPath, Storage, StorageError,
    Version,
};

use super::BucketStorage;
use super::batch::ReadManyIter;
use super::get::version;
use crate::counters::Counters;

/// A listed object as the entry `name` of its directory: its size, its
/// ETag as its version, its time.
fn object_entry(name: std::ffi::OsString, o: &object_store::ObjectMeta) -> Entry {
    Entry {
        name,
        kind: EntryKind::File,
        size: o.size,
        version: version(o.e_tag.clone(), o.size, o.last_modified.into()),
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
                            kind: EntryKind::Dir,
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
                kind: EntryKind::File,
                size: meta.size,
                version: version(meta.e_tag, meta.size, meta.last_modified.into()),
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
                    kind: EntryKind::Dir,
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

    /// One DELETE, bounded by the access timeout.
    fn delete(&self, path: &RelPath) -> Result<(), StorageError> {
        let (key, kp) = self.key_path(path)?;
        let access = self.access();
        let shown = path.to_string();
        self.rt.block_on(async move {
            let what = format!("DELETE {}", access.url.display_key(&key));
            let delete = access.store.delete(&kp);
            access.bounded(what, &shown, delete).await
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
                            version: version(meta.e_tag, meta.size, meta.last_modified.into()),
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
