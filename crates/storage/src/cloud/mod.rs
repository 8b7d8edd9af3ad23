//! A library in a bucket of S3 (or anything speaking its API), Google
//! Cloud Storage or Azure Blob Storage, through object_store's client for
//! each: a LIST with delimiter `/` for a directory, one GET per object,
//! `If-Match` on the ETag for a read of a given version. The three differ
//! only in how their client is set up (`aws`, `gcp`, `azure`: endpoint,
//! credentials chain); every request after that is the same code.
//!
//! Every access (one GET with its body, one LIST page) is bounded by the
//! timeout given at construction; object_store's retries of 5xx, SlowDown
//! and dropped connections happen inside that bound.

use std::sync::Arc;
use std::time::Duration;

use object_store::list::PaginatedListOptions;
use object_store::path::Path as KeyPath;

use crate::counters::{Counters, Remote};
use crate::{RelPath, StorageError};

mod aws;
mod azure;
mod batch;
mod classify;
mod credentials;
mod gcp;
mod get;
mod ops;
mod profile;
mod setup;
mod url;
mod wire;

use get::Access;
use setup::{Clients, Setup, Store};

pub use url::{BucketUrl, Cloud};

/// Where the credentials come from.
#[derive(Clone, Default)]
pub enum Credentials {
    /// The cloud's own chain. AWS: the environment (`AWS_ACCESS_KEY_ID`,
    /// ...), then the profile of the shared files (`--profile`,
    /// `AWS_PROFILE`, or `default`), then web identity, the container's and
    /// the instance's metadata service. Google: a service account
    /// (`GOOGLE_SERVICE_ACCOUNT`, `GOOGLE_APPLICATION_CREDENTIALS`), the
    /// application default credentials of `gcloud`, the metadata server.
    /// Azure: the account's key or a SAS (`AZURE_STORAGE_ACCOUNT_KEY`,
    /// `AZURE_STORAGE_SAS_KEY`), a service principal, workload identity,
    /// `az login`'s token (`AZURE_USE_AZURE_CLI=true`), managed identity.
    #[default]
    Chain,
    /// S3 keys the caller already has.
    Static {
        key_id: String,
        secret: String,
        token: Option<String>,
    },
    /// No signature: a public bucket.
    Anonymous,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Chain => f.write_str("Chain"),
            Credentials::Static { .. } => f.write_str("Static { .. }"),
            Credentials::Anonymous => f.write_str("Anonymous"),
        }
    }
}

/// How to reach a bucket, named as mountpoint-s3 names its options.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// `--endpoint-url`: `http://HOST[:PORT]` or `https://...`; the
    /// cloud's own endpoint when `None` (for S3 the region's). For Azure,
    /// an address (an emulator's) is followed by the account's name, as
    /// Azurite serves it; a name is the account's own URL.
    pub endpoint_url: Option<String>,
    /// `--account`: Azure's storage account (else
    /// `AZURE_STORAGE_ACCOUNT_NAME`).
    pub account: Option<String>,
    /// `--region`; else the profile's, else `AWS_REGION` /
    /// `AWS_DEFAULT_REGION`, else `us-east-1`.
    pub region: Option<String>,
    /// `--profile`: a named profile of the shared files.
    pub profile: Option<String>,
    /// `--force-path-style`: `ENDPOINT/BUCKET/KEY` instead of
    /// `BUCKET.ENDPOINT/KEY`. An endpoint whose host is an IP address or
    /// `localhost` has no names under it, so it is always path style.
    pub force_path_style: bool,
    pub credentials: Credentials,
    /// `--source-timeout`: the bound on one access.
    pub timeout: Duration,
    /// Worker threads of the store's runtime.
    pub worker_threads: usize,
    /// Where its requests are counted: counters of its own when `None`.
    pub counters: Option<Arc<Counters>>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            endpoint_url: None,
            account: None,
            region: None,
            profile: None,
            force_path_style: false,
            credentials: Credentials::Chain,
            timeout: Duration::from_secs(5),
            worker_threads: 2,
            counters: None,
        }
    }
}

/// A library under `s3://BUCKET/PREFIX`, `gs://BUCKET/PREFIX` or
/// `az://CONTAINER/PREFIX`.
pub struct BucketStorage {
    url: BucketUrl,
    endpoint: String,
    timeout: Duration,
    store: Arc<dyn Store>,
    /// The same bucket with no retries, for `check`: a refused connection
    /// or credential is told at once, not after a timeout's worth of tries.
    probe: Arc<dyn Store>,
    rt: tokio::runtime::Runtime,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for BucketStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketStorage")
            .field("url", &self.url.to_string())
            .field("endpoint", &self.endpoint)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// `endpoint` when it is an `http(s)://HOST[:PORT][/]` URL with no user
/// information, path or query (so that no secret can ride in it into a
/// message), without its trailing `/`.
fn check_endpoint(endpoint: &str) -> Result<String, StorageError> {
    let bad = |why: &str| StorageError::other(format!("endpoint URL: {why}"));
    let rest = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"))
        .ok_or_else(|| bad("it must begin with http:// or https://"))?;
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() {
        return Err(bad("it has no host"));
    }
    if authority.contains('@') {
        return Err(bad("it must not hold a user name or password"));
    }
    if authority.contains(['/', '?', '#']) {
        return Err(bad("it must be only http(s)://HOST[:PORT]"));
    }
    Ok(endpoint.trim_end_matches('/').to_string())
}

impl BucketStorage {
    /// A store for the library at `url`. Makes no request: `check` says
    /// whether the bucket can be read.
    pub fn new(url: BucketUrl, opts: &StoreOptions) -> Result<Self, StorageError> {
        let timeout = opts.timeout.max(Duration::from_millis(1));
        let endpoint = opts
            .endpoint_url
            .as_deref()
            .map(check_endpoint)
            .transpose()?;
        let counters = opts.counters.clone().unwrap_or_else(Counters::new);
        counters.set_remote(Remote::Bucket);
        let setup = Setup {
            url: &url,
            opts,
            endpoint,
            timeout,
            counters: counters.clone(),
        };
        let Clients {
            store,
            probe,
            endpoint,
        } = match url.cloud() {
            Cloud::S3 => aws::clients(&setup)?,
            Cloud::Gcs => gcp::clients(&setup)?,
            Cloud::Azure => azure::clients(&setup)?,
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(opts.worker_threads.max(1))
            .thread_name("novelfs-s3")
            .enable_all()
            .build()
            .map_err(|e| StorageError::failed("cannot start the bucket client's threads", e))?;
        Ok(BucketStorage {
            url,
            endpoint,
            timeout,
            store,
            probe,
            rt,
            counters,
        })
    }

    fn access(&self) -> Access {
        Access {
            store: self.store.clone(),
            url: self.url.clone(),
            endpoint: self.endpoint.clone(),
            timeout: self.timeout,
            counters: self.counters.clone(),
        }
    }

    /// What its requests have cost.
    pub fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    pub fn url(&self) -> &BucketUrl {
        &self.url
    }

    /// The bound on one access.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether the directory `dir` can be read, in one LIST of at most one
    /// key under it, not retried: tells a missing bucket, refused
    /// credentials, an unreachable endpoint and (`NotFound`) no such
    /// directory apart. The root of a bucket always is one. A mount checks
    /// its library's `novels/` so, in the one round trip it waits for.
    pub fn check_dir(&self, dir: &RelPath) -> Result<(), StorageError> {
        let prefix = self
            .url
            .dir_prefix(dir)
            .ok_or_else(|| StorageError::not_found(dir.to_string()))?;
        let what = if dir.is_root() {
            format!("LIST {}", self.url)
        } else {
            format!("LIST {}", self.url.display_key(&prefix))
        };
        let probe = self.probe.clone();
        let page = self.bounded(&what, dir, async move {
            Self::list_page(&*probe, &prefix, None, Some(1)).await
        })?;
        if !dir.is_root()
            && page.result.objects.is_empty()
            && page.result.common_prefixes.is_empty()
        {
            return Err(StorageError::not_found(dir.to_string()));
        }
        Ok(())
    }

    fn key_path(&self, path: &RelPath) -> Result<(String, KeyPath), StorageError> {
        let key = self
            .url
            .key(path)
            .ok_or_else(|| StorageError::not_found(path.to_string()))?;
        let kp = KeyPath::parse(&key).map_err(|_| StorageError::not_found(path.to_string()))?;
        Ok((key, kp))
    }

    fn classify(
        &self,
        e: object_store::Error,
        failed: Option<wire::Failure>,
        what: &str,
        path: &RelPath,
    ) -> StorageError {
        let cx = classify::Context {
            cloud: self.url.cloud(),
            bucket: self.url.bucket(),
            endpoint: &self.endpoint,
            timeout: self.timeout,
        };
        classify::classify(e, failed, what, &path.to_string(), &cx)
    }

    /// One LIST page of every key under `prefix`, with no delimiter.
    async fn list_page_flat(
        store: &dyn Store,
        prefix: &str,
        page_token: Option<String>,
    ) -> object_store::Result<object_store::list::PaginatedListResult> {
        let opts = PaginatedListOptions {
            page_token,
            ..Default::default()
        };
        store
            .list_paginated((!prefix.is_empty()).then_some(prefix), opts)
            .await
    }

    /// One LIST page of `prefix` (ending in `/`, or empty) from `store`.
    async fn list_page(
        store: &dyn Store,
        prefix: &str,
        page_token: Option<String>,
        max_keys: Option<usize>,
    ) -> object_store::Result<object_store::list::PaginatedListResult> {
        let opts = PaginatedListOptions {
            delimiter: Some("/".into()),
            page_token,
            max_keys,
            ..Default::default()
        };
        store
            .list_paginated((!prefix.is_empty()).then_some(prefix), opts)
            .await
    }

    /// `fut` bounded by the access timeout, its error classified.
    fn bounded<T>(
        &self,
        what: &str,
        path: &RelPath,
        fut: impl Future<Output = object_store::Result<T>>,
    ) -> Result<T, StorageError> {
        // The timer is made inside the runtime, whose clock it needs.
        let timeout = self.timeout;
        let (result, failed) = self.rt.block_on(wire::scope(async move {
            tokio::time::timeout(timeout, fut).await
        }));
        let result = match result {
            Ok(r) => r.map_err(|e| self.classify(e, failed, what, path)),
            Err(_) => Err(StorageError::Timeout {
                what: what.to_string(),
                after: self.timeout,
            }),
        };
        wire::count_error(&self.counters, &result);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_scheme_host_and_port_only() {
        assert_eq!(
            check_endpoint("http://127.0.0.1:9000/").unwrap(),
            "http://127.0.0.1:9000"
        );
        assert_eq!(
            check_endpoint("https://s3.example.test").unwrap(),
            "https://s3.example.test"
        );
        for bad in [
            "127.0.0.1:9000",
            "http://",
            "http://user:pw@127.0.0.1:9000",
            "http://127.0.0.1:9000/bucket",
            "http://127.0.0.1:9000?x=1",
        ] {
            let e = check_endpoint(bad).unwrap_err().to_string();
            assert!(!e.contains("pw"), "{bad}: {e}");
        }
    }

    #[test]
    fn static_credentials_do_not_show_in_debug() {
        let opts = StoreOptions {
            credentials: Credentials::Static {
                key_id: "AKIAEXAMPLEKEY".into(),
                secret: "very-secret".into(),
                token: Some("session-token".into()),
            },
            ..Default::default()
        };
        let text = format!("{opts:?}");
        for secret in ["AKIAEXAMPLEKEY", "very-secret", "session-token"] {
            assert!(!text.contains(secret), "{text}");
        }
    }
}
