//! Where a library is: a local directory, or a bucket (`s3://BUCKET`,
//! `gs://BUCKET`, `az://CONTAINER`, each with an optional `/PREFIX`: the
//! keys under the prefix laid out as a local root: `novels/BOOK/CHAPTER`).
//! Every command that takes a library root resolves it here, once, into a
//! `Library` that reads through the right backing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use novelfs_fs::persist;
use novelfs_kit::cause::{Failed, Failure};
use novelfs_library::{Library, NovelError};
use novelfs_storage::backing::{BucketBacking, PendingHead};

use super::verdict::Cost;
use novelfs_storage::{BucketStorage, BucketUrl, Cloud, RelPath, Storage, StoreOptions, Version};

/// How a bucket's check made elsewhere went (a waiting CLI's, heard by
/// `verdict::hear`), and what it cost.
pub(crate) type CheckedElsewhere<'a> = Option<&'a dyn Fn() -> Result<Cost, String>>;

/// Set (to anything), a mount checks its bucket in two round trips, the
/// bucket's then `novels/`'s, as it would without `BucketStorage::check_dir`:
/// the tests' switch that shows what the one LIST saves.
pub(crate) const CHECK_APART_VAR: &str = "NOVELFS_TEST_S3_CHECK_APART";

/// Where a library root names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LibraryAt {
    Dir(PathBuf),
    Bucket(BucketUrl),
}

/// How a library in a bucket is read beside how it is reached
/// (`StoreOptions`, whose `timeout` bounds one access): how long a listing
/// is kept, and how many bytes of chapters may be fetched ahead.
#[derive(Debug, Clone)]
pub(crate) struct BucketReading {
    pub(crate) ttl: Duration,
    pub(crate) ahead_bytes: u64,
    /// Whether the published snapshot is followed where there is one.
    pub(crate) follow: bool,
    /// How long past their freshness what was read before is served while
    /// the bucket does not answer (`--stale-if-error`).
    pub(crate) stale_if_error: Duration,
    /// How often a directory read is compared with the snapshot followed
    /// (`--drift`; zero: never).
    pub(crate) drift: Duration,
}

/// The cloud whose scheme `root` reads as, mistyped (`s3:/b`, `gs:b`,
/// `az//b`, `S3://b`): taken for a path, it would only be "not a
/// library".
fn mistyped_scheme(root: &str) -> Option<Cloud> {
    if Cloud::of_url(root).is_some() {
        return None;
    }
    let lower = root.to_ascii_lowercase();
    Cloud::ALL.into_iter().find(|c| {
        let s = c.scheme();
        lower.starts_with(&format!("{s}:")) || lower.starts_with(&format!("{s}//"))
    })
}

impl LibraryAt {
    /// `root` as given: a bucket's URL, else a directory.
    pub(crate) fn parse(root: &Path) -> Result<LibraryAt, String> {
        let text = root.to_string_lossy();
        if let Some(cloud) = mistyped_scheme(&text)
            && !root.exists()
        {
            return Err(format!(
                "ROOT {text:?} is neither a directory nor a {word}: a {word} is written {scheme}://{upper}[/PREFIX]",
                word = cloud.bucket_word(),
                scheme = cloud.scheme(),
                upper = cloud.bucket_word().to_ascii_uppercase(),
            ));
        }
        if Cloud::of_url(&text).is_some() {
            let url: BucketUrl = text
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

    /// The client of the bucket at `url`, reached as `options` say, its
    /// requests counted where `novelfs status` finds them.
    pub(crate) fn storage(
        url: &BucketUrl,
        options: &StoreOptions,
    ) -> Result<BucketStorage, String> {
        let options = StoreOptions {
            counters: super::counted::shared(),
            ..options.clone()
        };
        BucketStorage::new(url.clone(), &options).map_err(|e| e.to_string())
    }

    /// Whether the library can be read at all, with one clear line naming
    /// why not: no `novels/` in a directory; a missing bucket, refused
    /// credentials, an unreachable endpoint or no `novels/` in a bucket.
    pub(crate) fn check(&self, options: &StoreOptions) -> Result<(), String> {
        match self {
            LibraryAt::Dir(root) => Library::check_root(root).map_err(|e| e.to_string()),
            LibraryAt::Bucket(url) => Self::checked_storage(url, options).map(drop),
        }
    }

    /// `check` of a bucket, and what it cost, by counter: the requests the
    /// waiting CLI sends, which the daemon counts as its own (`verdict`).
    pub(crate) fn check_costing(&self, options: &StoreOptions) -> (Result<(), String>, Cost) {
        let LibraryAt::Bucket(url) = self else {
            return (self.check(options), Vec::new());
        };
        let storage = match Self::storage(url, options) {
            Ok(storage) => storage,
            Err(e) => return (Err(e), Vec::new()),
        };
        let checked = Self::check_library(&storage, url);
        let reading = storage.counters().read();
        let cost = reading.values.into_iter().filter(|(_, n)| *n > 0).collect();
        (checked, cost)
    }

    /// The bucket's storage once one LIST of `novels/` has said it holds a
    /// library (see `check`): the one round trip a mount waits for before
    /// it is ready.
    fn checked_storage(url: &BucketUrl, options: &StoreOptions) -> Result<BucketStorage, String> {
        let storage = Self::storage(url, options)?;
        Self::check_library(&storage, url)?;
        Ok(storage)
    }

    /// One LIST of `novels/` (see `checked_storage`).
    fn check_library(storage: &BucketStorage, url: &BucketUrl) -> Result<(), String> {
        if novelfs_library::test_switch::var(CHECK_APART_VAR).is_some() {
            // The test switch: the bucket first, in a round trip of its own.
            storage.check().map_err(|e| format!("{url}: {e}"))?;
        }
        let novels = RelPath::new("novels").map_err(|e| e.to_string())?;
        match storage.check_dir(&novels) {
            Ok(()) => Ok(()),
            Err(e) if e.is_not_found() => Err(NovelError::NotALibrary {
                root: url.to_string(),
            }
            .to_string()),
            Err(e) => Err(format!("{url}: {e}")),
        }
    }

    /// The whole index an older novelfs published beside a bucket's
    /// library, put in place of the mount's own in `dir` unless that is
    /// already the version published (its ETag is kept beside it): one
    /// LIST, and one GET when it changed. `Ok(false)` when none is
    /// published.
    pub(crate) fn fetch_published(
        &self,
        options: &StoreOptions,
        dir: &Path,
        library: &Library,
    ) -> Result<bool, Failure> {
        let LibraryAt::Bucket(url) = self else {
            return Ok(false);
        };
        let storage = Self::storage(url, options)?;
        let key = RelPath::new(persist::PUBLISHED)?;
        let folder = RelPath::new(".novelfs")?;
        let listed = match storage.list(&folder) {
            Ok(entries) => entries,
            Err(e) if e.is_not_found() => return Ok(false),
            Err(e) => return Err(Failed::by(url.to_string(), e).into()),
        };
        let etag = listed
            .into_iter()
            .find(|e| e.name == "index.sqlite")
            .and_then(|e| match e.version {
                Version::ETag { etag, .. } => Some(etag),
                _ => None,
            });
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
            .map_err(|e| Failed::by(url.to_string(), e))?;
        persist::import(dir, library, &object.bytes)?;
        std::fs::write(&mark, &etag).map_err(|e| Failed::by(mark.display().to_string(), e))?;
        Ok(true)
    }

    /// The library, read through its backing. A bucket's is checked first
    /// (as `check` does, in its one LIST) through the client that then
    /// reads it, unless `checked_elsewhere` says how it went (the waiting
    /// CLI checks it while the daemon starts); a directory is the caller's
    /// to check.
    pub(crate) fn open(
        &self,
        options: &StoreOptions,
        reading: BucketReading,
        checked_elsewhere: CheckedElsewhere<'_>,
    ) -> Result<Library, String> {
        self.open_following(options, reading, checked_elsewhere)
            .map(|(library, _)| library)
    }

    /// `open`, and with `reading.follow` the bucket's published snapshot
    /// followed: its head is asked for beside the check (no round trip
    /// more before the mount is ready), and given back (it names the
    /// published index).
    pub(crate) fn open_following(
        &self,
        options: &StoreOptions,
        reading: BucketReading,
        checked_elsewhere: CheckedElsewhere<'_>,
    ) -> Result<(Library, Option<Arc<PendingHead>>), String> {
        match self {
            LibraryAt::Dir(root) => {
                if let Some(c) = super::counted::shared() {
                    c.set_remote(novelfs_storage::counters::Remote::Local);
                }
                let library = novelfs_storage::open_local(root)
                    .map_err(|e| format!("cannot open library {}: {e}", root.display()))?;
                Ok((library, None))
            }
            LibraryAt::Bucket(url) => {
                let storage = Arc::new(Self::storage(url, options)?);
                let head = match reading.follow {
                    true => PendingHead::ask(storage.clone() as Arc<dyn Storage>),
                    false => {
                        let none = novelfs_storage::counters::SnapshotState::NotAskedFor;
                        storage.counters().set_snapshot(none, "", 0);
                        None
                    }
                };
                match checked_elsewhere {
                    None => Self::check_library(&storage, url)?,
                    // The CLI's requests are the mount's: counted here.
                    Some(verdict) => {
                        for (counter, n) in verdict()? {
                            storage.counters().add(counter, n);
                        }
                    }
                }
                let backing = BucketBacking::new(
                    storage as Arc<dyn Storage>,
                    reading.ttl,
                    reading.ahead_bytes,
                    options.timeout,
                );
                backing.set_stale_if_error(reading.stale_if_error);
                backing.set_drift(reading.drift);
                if let Some(head) = &head {
                    backing.follow_pending(head.clone());
                }
                Ok((
                    novelfs_storage::open_bucket(backing, &url.to_string()),
                    head,
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistyped_scheme_is_told_and_a_path_or_url_is_not() {
        for bad in [
            "s3:/shelf/lib",
            "s3:shelf",
            "S3://shelf",
            "s3//shelf/lib",
            "S3:/x",
            "gs:/shelf",
            "GS://shelf",
            "az:shelf",
            "az//shelf",
        ] {
            assert!(mistyped_scheme(bad).is_some(), "{bad}");
            assert!(LibraryAt::parse(Path::new(bad)).is_err(), "{bad}");
        }
        for good in [
            "s3://shelf/lib",
            "/srv/s3:/x",
            "./s3:x",
            "s3",
            "s3-library",
            "gs://shelf",
            "az://shelf/lib",
            "azure",
            ".",
        ] {
            assert!(mistyped_scheme(good).is_none(), "{good}");
        }
    }
}
