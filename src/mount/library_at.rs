//! Where a library is: a local directory, or `s3://BUCKET[/PREFIX]` (the
//! keys under the prefix laid out as a local root: `novels/BOOK/CHAPTER`).
//! Every command that takes a library root resolves it here, once, into a
//! `Library` that reads through the right backing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use novelfs_fs::persist;
use novelfs_library::{Library, NovelError};
use novelfs_storage::backing::{BucketBacking, snapshot};
use novelfs_storage::{RelPath, S3Options, S3Storage, S3Url, Storage, StorageError, Version};

/// Set (to anything), a mount checks its bucket in two round trips, the
/// bucket's then `novels/`'s, as it would without `S3Storage::check_dir`:
/// the tests' switch that shows what the one LIST saves.
pub(crate) const CHECK_APART_VAR: &str = "NOVELFS_TEST_S3_CHECK_APART";

/// How to reach a bucket, named as mountpoint-s3 names its options; the
/// credentials come from the AWS chain (environment, shared files with
/// profiles, container and instance metadata), never from arguments.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct BucketOptions {
    pub(crate) endpoint_url: Option<String>,
    pub(crate) region: Option<String>,
    pub(crate) profile: Option<String>,
    pub(crate) force_path_style: bool,
}

/// Where a library root names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LibraryAt {
    Dir(PathBuf),
    Bucket(S3Url),
}

/// How a library in a bucket is read: what bounds one access, how long a
/// listing is kept, and how many bytes of chapters may be fetched ahead.
#[derive(Debug, Clone)]
pub(crate) struct BucketReading {
    pub(crate) timeout: Duration,
    pub(crate) ttl: Duration,
    pub(crate) ahead_bytes: u64,
    /// The published snapshot to follow (its head, as read at mount).
    pub(crate) follow: Option<snapshot::Head>,
    /// How long past their freshness what was read before is served while
    /// the bucket does not answer (`--stale-if-error`).
    pub(crate) stale_if_error: Duration,
}

impl LibraryAt {
    /// `root` as given: an `s3://` URL, else a directory.
    pub(crate) fn parse(root: &Path) -> Result<LibraryAt, String> {
        let text = root.to_string_lossy();
        if text.starts_with("s3://") {
            let url: S3Url = text
                .parse()
                .map_err(|e: novelfs_storage::StorageError| e.to_string())?;
            return Ok(LibraryAt::Bucket(url));
        }
        Ok(LibraryAt::Dir(root.to_path_buf()))
    }

    /// Whether the library is in a bucket.
    pub(crate) fn is_bucket(&self) -> bool {
        matches!(self, LibraryAt::Bucket(_))
    }

    fn storage(
        url: &S3Url,
        options: &BucketOptions,
        timeout: Duration,
    ) -> Result<S3Storage, String> {
        let s3 = S3Options {
            endpoint_url: options.endpoint_url.clone(),
            region: options.region.clone(),
            profile: options.profile.clone(),
            force_path_style: options.force_path_style,
            timeout,
            counters: super::counted::shared(),
            ..S3Options::default()
        };
        S3Storage::new(url.clone(), &s3).map_err(|e| e.to_string())
    }

    /// Whether the library can be read at all, with one clear line naming
    /// why not: no `novels/` in a directory; a missing bucket, refused
    /// credentials, an unreachable endpoint or no `novels/` in a bucket.
    pub(crate) fn check(&self, options: &BucketOptions, timeout: Duration) -> Result<(), String> {
        match self {
            LibraryAt::Dir(root) => Library::check_root(root).map_err(|e| e.to_string()),
            LibraryAt::Bucket(url) => Self::checked_storage(url, options, timeout).map(drop),
        }
    }

    /// The bucket's storage once one LIST of `novels/` has said it holds a
    /// library (see `check`): the one round trip a mount waits for before
    /// it is ready.
    fn checked_storage(
        url: &S3Url,
        options: &BucketOptions,
        timeout: Duration,
    ) -> Result<S3Storage, String> {
        let storage = Self::storage(url, options, timeout)?;
        if std::env::var_os(CHECK_APART_VAR).is_some() {
            // The test switch: the bucket first, in a round trip of its own.
            storage.check().map_err(|e| format!("{url}: {e}"))?;
        }
        let novels = RelPath::new("novels").map_err(|e| e.to_string())?;
        match storage.check_dir(&novels) {
            Ok(()) => Ok(storage),
            Err(e) if e.is_not_found() => Err(NovelError::NotALibrary {
                root: url.to_string(),
            }
            .to_string()),
            Err(e) => Err(format!("{url}: {e}")),
        }
    }

    /// Publishes beside the library in its bucket, for every mount of a
    /// fleet: `index` (an exported persistent index) when given, then the
    /// snapshot of the library's listing with the cadence `every` (see
    /// `novelfs_storage::backing::snapshot`). Whether the snapshot changed,
    /// and how many files it holds.
    pub(crate) fn publish(
        &self,
        options: &BucketOptions,
        timeout: Duration,
        index: Option<Vec<u8>>,
        every: Option<u64>,
    ) -> Result<(bool, u64), String> {
        let LibraryAt::Bucket(url) = self else {
            return Err("--publish: ROOT must be an s3:// bucket".into());
        };
        let storage = Self::storage(url, options, timeout)?;
        let fail = |e: StorageError| format!("{url}: {e}");
        let before = snapshot::published_head(&storage).map_err(fail)?;
        let listing = snapshot::walk(&storage).map_err(fail)?;
        let index_etag = match index {
            Some(bytes) => {
                let key = RelPath::new(persist::PUBLISHED).map_err(|e| e.to_string())?;
                storage.put(&key, bytes).map_err(fail)?;
                match storage.stat(&key).map_err(fail)?.version {
                    Version::ETag { etag, .. } => Some(etag),
                    _ => None,
                }
            }
            None => before.as_ref().and_then(|h| h.index.clone()),
        };
        let files = listing.files;
        let changed = snapshot::publish(&storage, listing, before.as_ref(), index_etag, every)
            .map_err(fail)?;
        Ok((changed, files))
    }

    /// Whether the library's listing differs from the published snapshot's
    /// (one LIST per directory, one GET).
    pub(crate) fn changed_since_published(
        &self,
        options: &BucketOptions,
        timeout: Duration,
    ) -> Result<bool, String> {
        let LibraryAt::Bucket(url) = self else {
            return Ok(true);
        };
        let storage = Self::storage(url, options, timeout)?;
        let fail = |e: StorageError| format!("{url}: {e}");
        let before = snapshot::published_head(&storage).map_err(fail)?;
        let listing = snapshot::walk(&storage).map_err(fail)?;
        Ok(before.is_none_or(|h| h.listing != listing.digest))
    }

    /// The head of the snapshot published beside a bucket's library
    /// (one GET), `None` when none is published or the root is a
    /// directory.
    pub(crate) fn published_head(
        &self,
        options: &BucketOptions,
        timeout: Duration,
    ) -> Result<Option<snapshot::Head>, String> {
        let LibraryAt::Bucket(url) = self else {
            return Ok(None);
        };
        let storage = Self::storage(url, options, timeout)?;
        snapshot::published_head(&storage).map_err(|e| format!("{url}: {e}"))
    }

    /// The index published beside a bucket's library, put in place of the
    /// mount's own in `dir` unless that is already the version published
    /// (its ETag is kept beside it): one LIST, and one GET when it changed.
    /// `Ok(false)` when none is published.
    pub(crate) fn fetch_published(
        &self,
        options: &BucketOptions,
        timeout: Duration,
        dir: &Path,
        library: &Library,
        from_head: Option<Option<String>>,
    ) -> Result<bool, String> {
        let LibraryAt::Bucket(url) = self else {
            return Ok(false);
        };
        let storage = Self::storage(url, options, timeout)?;
        let key = RelPath::new(persist::PUBLISHED).map_err(|e| e.to_string())?;
        // The snapshot's head names the index's ETag; without one, the
        // publisher's folder is listed for it.
        let etag = match from_head {
            Some(etag) => etag,
            None => {
                let folder = RelPath::new(".novelfs").map_err(|e| e.to_string())?;
                let listed = match storage.list(&folder) {
                    Ok(entries) => entries,
                    Err(e) if e.is_not_found() => return Ok(false),
                    Err(e) => return Err(format!("{url}: {e}")),
                };
                listed
                    .into_iter()
                    .find(|e| e.name == "index.sqlite")
                    .and_then(|e| match e.version {
                        Version::ETag { etag, .. } => Some(etag),
                        _ => None,
                    })
            }
        };
        let Some(etag) = etag else {
            return Ok(false);
        };
        let file = persist::index_file(dir, library);
        let mut mark = file.clone().into_os_string();
        mark.push(".published");
        let mark = PathBuf::from(mark);
        if file.exists() && std::fs::read_to_string(&mark).is_ok_and(|m| m == etag) {
            return Ok(true);
        }
        let pinned = Version::ETag {
            etag: etag.clone(),
            size: 0,
        };
        let object = storage
            .read(&key, Some(&pinned))
            .map_err(|e| format!("{url}: {e}"))?;
        persist::import(dir, library, &object.bytes)?;
        std::fs::write(&mark, &etag).map_err(|e| format!("{}: {e}", mark.display()))?;
        Ok(true)
    }

    /// The library, read through its backing. A bucket's is checked first
    /// (as `check` does, in its one LIST) through the client that then
    /// reads it, unless `checked_elsewhere` says how it went (the waiting
    /// CLI checks it while the daemon starts); a directory is the caller's
    /// to check.
    pub(crate) fn open(
        &self,
        options: &BucketOptions,
        reading: BucketReading,
        checked_elsewhere: Option<&dyn Fn() -> Result<(), String>>,
    ) -> Result<Library, String> {
        match self {
            LibraryAt::Dir(root) => {
                if let Some(c) = super::counted::shared() {
                    c.set_remote(novelfs_storage::counters::Remote::Local);
                }
                novelfs_storage::open_local(root)
                    .map_err(|e| format!("cannot open library {}: {e}", root.display()))
            }
            LibraryAt::Bucket(url) => {
                let storage = match checked_elsewhere {
                    None => Self::checked_storage(url, options, reading.timeout)?,
                    Some(verdict) => {
                        let storage = Self::storage(url, options, reading.timeout)?;
                        verdict()?;
                        storage
                    }
                };
                let storage: Arc<dyn Storage> = Arc::new(storage);
                let backing =
                    BucketBacking::new(storage, reading.ttl, reading.ahead_bytes, reading.timeout);
                backing.set_stale_if_error(reading.stale_if_error);
                if let Some(head) = reading.follow
                    && let Err(e) = backing.follow(head)
                {
                    log::warn!("the published snapshot is not followed ({e}): the mount lists");
                }
                log::info!("freshness: {}", backing.freshness());
                Ok(novelfs_storage::open_bucket(backing, &url.to_string()))
            }
        }
    }
}
