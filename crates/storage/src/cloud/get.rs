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
pub(super) async fn get(
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
    pub(super) async fn bounded<T>(
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
