//! One GET of a bucket's object (a range of it), pinned to a version with
//! `If-Match`, bounded by the store's timeout, its error classified: what
//! every read, alone or in a batch, comes down to.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use object_store::path::Path as KeyPath;
use object_store::{GetOptions, GetRange};

use super::{BucketUrl, Store, classify, wire};
use crate::counters::{Counter, Counters};
use crate::{Object, RelPath, StorageError, Version};

/// How a GET is pinned to `version`: `If-Match` with its ETag, or (a
/// version no ETag tells) a look at the answer's size and time; `Err(())`
/// for a version no object of a bucket can have.
fn pin(version: Option<&Version>) -> Result<Option<Pin>, ()> {
    match version {
        None => Ok(None),
        Some(Version::ETag { etag, .. }) => Ok(Some(Pin::IfMatch(etag.clone()))),
        Some(v @ Version::SizeAndTime { .. }) => Ok(Some(Pin::SizeAndTime(v.clone()))),
        Some(Version::Prefix) => Err(()),
    }
}

/// What a pinned GET holds its answer to.
#[derive(Clone, Debug)]
pub(super) enum Pin {
    /// The store's `If-Match`, and the answer's ETag (a server that
    /// ignores the header is caught too).
    IfMatch(String),
    /// The answer's size and time: the version a listing without ETags
    /// gave.
    SizeAndTime(Version),
}

/// An object's version from the ETag its store gives, in one form
/// whatever the answer it came in: quoted, as HTTP's `ETag` and `If-Match`
/// write it (Google's and Azure's listings give it bare, their GETs
/// quoted), so that a listed version and a read one compare equal. Without
/// an ETag, by its size and time.
pub(super) fn version(
    e_tag: Option<String>,
    size: u64,
    modified: std::time::SystemTime,
) -> Version {
    let etag = e_tag.map(|etag| {
        if etag.is_empty() || etag.starts_with('"') || etag.starts_with("W/\"") {
            etag
        } else {
            format!("\"{etag}\"")
        }
    });
    Version::of_object(etag, size, modified)
}

/// One GET of `key` (a range of it, with `range`), body and all. A body
/// of another version than `pin` is `Precondition`, as the store's 412
/// would be: a server that ignores `If-Match` (an emulator) never hands
/// over the wrong version's bytes. Read in a version no ETag tells, the
/// object is that version (its GET's ETag is no part of it), so that what
/// is read compares equal to what was listed.
pub(super) async fn get(
    store: &dyn Store,
    counters: &Counters,
    key: &KeyPath,
    pin: Option<Pin>,
    range: Option<Range<u64>>,
) -> object_store::Result<Object> {
    let opts = GetOptions {
        if_match: match &pin {
            Some(Pin::IfMatch(etag)) => Some(etag.clone()),
            _ => None,
        },
        range: range.map(GetRange::Bounded),
        ..Default::default()
    };
    let result = store.get_opts(key, opts).await?;
    let meta = result.meta.clone();
    let mut got = version(meta.e_tag.clone(), meta.size, meta.last_modified.into());
    let refused = |answered: String| object_store::Error::Precondition {
        path: key.to_string(),
        source: answered.into(),
    };
    match pin {
        Some(Pin::IfMatch(want)) => {
            if let Version::ETag { etag, .. } = &got
                && want != *etag
            {
                return Err(refused(format!(
                    "the store answered {etag} for If-Match {want}"
                )));
            }
        }
        Some(Pin::SizeAndTime(want)) => {
            if want.held_by(meta.size, meta.last_modified.into()) != Some(true) {
                return Err(refused(format!(
                    "the store answered {} bytes of {} for {want:?}",
                    meta.size, meta.last_modified
                )));
            }
            got = want;
        }
        None => {}
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
    pub(super) async fn read(
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
        let m = pin(version.as_ref()).map_err(|_| StorageError::Changed {
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
    pub(super) async fn bounded<T>(
        &self,
        what: String,
        shown: &str,
        access: impl std::future::Future<Output = object_store::Result<T>>,
    ) -> Result<T, StorageError> {
        let (result, failed) = wire::scope(tokio::time::timeout(self.timeout, access)).await;
        let result = match result {
            Ok(r) => r.map_err(|e| {
                let cx = classify::Context {
                    cloud: self.url.cloud(),
                    bucket: self.url.bucket(),
                    endpoint: &self.endpoint,
                    timeout: self.timeout,
                };
                classify::classify(e, failed, &what, shown, &cx)
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
