//! A library in an S3 bucket (or anything speaking its API), through
//! object_store's S3 client: ListObjectsV2 for listings, one GET per
//! object, If-Match on the ETag for a read of a given version.
//!
//! Every access (one GET with its body, one LIST page) is bounded by the
//! timeout given at construction; object_store's retries of 5xx, SlowDown
//! and dropped connections happen inside that bound.

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder, AwsCredential};
use object_store::list::{PaginatedListOptions, PaginatedListStore};
use object_store::path::Path as KeyPath;
use object_store::{BackoffConfig, ClientOptions, RetryConfig, StaticCredentialProvider};

use crate::counters::{Counters, Remote};
use crate::{RelPath, StorageError};

mod classify;
mod credentials;
mod ops;
mod wire;

use ops::Access;
mod profile;
mod url;

pub use url::S3Url;

/// Where the credentials come from.
#[derive(Clone, Default)]
pub enum Credentials {
    /// The AWS chain: the environment (`AWS_ACCESS_KEY_ID`, ...), then the
    /// profile of the shared files (`--profile`, `AWS_PROFILE`, or
    /// `default`), then web identity, the container's and the instance's
    /// metadata service.
    #[default]
    Chain,
    /// Keys the caller already has.
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
pub struct S3Options {
    /// `--endpoint-url`: `http://HOST[:PORT]` or `https://...`; AWS's own
    /// endpoint for the region when `None`.
    pub endpoint_url: Option<String>,
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

impl Default for S3Options {
    fn default() -> Self {
        S3Options {
            endpoint_url: None,
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

/// A library under `s3://BUCKET/PREFIX`.
pub struct S3Storage {
    url: S3Url,
    endpoint: String,
    timeout: Duration,
    store: Arc<AmazonS3>,
    /// The same bucket with no retries, for `check`: a refused connection
    /// or credential is told at once, not after a timeout's worth of tries.
    probe: Arc<AmazonS3>,
    rt: tokio::runtime::Runtime,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for S3Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Storage")
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
    let bad = |why: &str| StorageError::Other(format!("endpoint URL: {why}"));
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

/// Whether the endpoint's host cannot take a bucket name in front of it.
fn host_is_address(endpoint: &str) -> bool {
    let authority = endpoint.split_once("://").map_or(endpoint, |(_, a)| a);
    let host = if authority.starts_with('[') {
        return true;
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    host == "localhost" || host.parse::<std::net::Ipv4Addr>().is_ok()
}

/// `http://BUCKET.HOST:PORT` for the endpoint `http://HOST:PORT`.
fn virtual_hosted(endpoint: &str, bucket: &str) -> String {
    match endpoint.split_once("://") {
        Some((scheme, authority)) => format!("{scheme}://{bucket}.{authority}"),
        None => endpoint.to_string(),
    }
}

fn static_provider(
    key_id: String,
    secret: String,
    token: Option<String>,
) -> Arc<StaticCredentialProvider<AwsCredential>> {
    Arc::new(StaticCredentialProvider::new(AwsCredential {
        key_id,
        secret_key: secret,
        token,
    }))
}

impl S3Storage {
    /// A store for the library at `url`. Makes no request: `check` says
    /// whether the bucket can be read.
    pub fn new(url: S3Url, opts: &S3Options) -> Result<Self, StorageError> {
        let timeout = opts.timeout.max(Duration::from_millis(1));
        let endpoint = opts
            .endpoint_url
            .as_deref()
            .map(check_endpoint)
            .transpose()?;
        // The region and the keys of a profile: the one named, or (when the
        // environment holds no keys) AWS_PROFILE's or the default one.
        let env_keys = std::env::var_os("AWS_ACCESS_KEY_ID").is_some();
        let profile_name = opts.profile.clone().or_else(|| {
            (!env_keys)
                .then(|| std::env::var("AWS_PROFILE").ok())
                .flatten()
        });
        let profile = match (&opts.credentials, &profile_name) {
            (Credentials::Chain, Some(name)) => match profile::load(name) {
                Some(p) => Some(p),
                None if opts.profile.is_some() || std::env::var_os("AWS_PROFILE").is_some() => {
                    return Err(StorageError::Other(format!(
                        "profile {name}: not in the shared credentials or config file"
                    )));
                }
                None => None,
            },
            (Credentials::Chain, None) if !env_keys => profile::load("default"),
            _ => None,
        };
        if let (Some(p), Some(name)) = (&profile, &profile_name)
            && let Some(key) = &p.unsupported
            && p.access_key_id.is_none()
        {
            return Err(StorageError::Other(format!(
                "profile {name}: its {key} is not supported; give it static keys or use the environment"
            )));
        }
        let region = opts
            .region
            .clone()
            .or_else(|| profile.as_ref().and_then(|p| p.region.clone()))
            .or_else(|| std::env::var("AWS_REGION").ok())
            .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
            .unwrap_or_else(|| "us-east-1".to_string());
        // Over plain http, with keys at hand, nothing is ever sent over TLS
        // (the credentials chain's https step, STS for a web identity, is
        // taken only without keys): the system's certificates, which each
        // client would read and parse, file by file, at every start, are
        // left unread.
        let keys_at_hand = match &opts.credentials {
            Credentials::Static { .. } | Credentials::Anonymous => true,
            Credentials::Chain => {
                (env_keys && std::env::var_os("AWS_SECRET_ACCESS_KEY").is_some())
                    || profile
                        .as_ref()
                        .is_some_and(|p| p.access_key_id.is_some() && p.secret_access_key.is_some())
            }
        };
        let no_tls = keys_at_hand
            && endpoint
                .as_deref()
                .is_some_and(|e| e.starts_with("http://"));
        let endpoint_display = endpoint
            .clone()
            .unwrap_or_else(|| format!("https://s3.{region}.amazonaws.com"));

        let rest = credentials::Rest::from_env();
        let counters = opts.counters.clone().unwrap_or_else(Counters::new);
        counters.set_remote(Remote::Bucket);
        let build = |retries: bool| -> Result<AmazonS3, StorageError> {
            let mut b = AmazonS3Builder::from_env()
                .with_http_connector(wire::Counting {
                    counters: counters.clone(),
                })
                .with_bucket_name(url.bucket())
                .with_region(&region)
                // One try may take half the access's bound, so that a
                // request that stalls is tried again within it (a body cut
                // short by this is resumed where it stopped, by a ranged
                // GET of the same ETag).
                .with_client_options(
                    ClientOptions::new()
                        .with_no_system_certificates(no_tls)
                        .with_timeout(timeout / 2)
                        .with_connect_timeout((timeout / 4).min(Duration::from_secs(3))),
                )
                .with_retry(if retries {
                    // The last try ends and its error is told before the
                    // access's own bound cuts it short: a refused
                    // connection is `Unreachable`, not a `Timeout`.
                    RetryConfig {
                        backoff: BackoffConfig {
                            init_backoff: Duration::from_millis(50).min(timeout / 8),
                            max_backoff: timeout / 4,
                            base: 2.0,
                        },
                        max_retries: 10,
                        retry_timeout: timeout * 3 / 4,
                    }
                } else {
                    RetryConfig {
                        max_retries: 0,
                        retry_timeout: Duration::ZERO,
                        ..RetryConfig::default()
                    }
                });
            if let Some(ep) = &endpoint {
                let path_style = opts.force_path_style || host_is_address(ep);
                b = b
                    .with_allow_http(ep.starts_with("http://"))
                    .with_virtual_hosted_style_request(!path_style)
                    .with_endpoint(if path_style {
                        ep.clone()
                    } else {
                        virtual_hosted(ep, url.bucket())
                    });
            } else {
                b = b.with_virtual_hosted_style_request(!opts.force_path_style);
            }
            b = match &opts.credentials {
                Credentials::Static {
                    key_id,
                    secret,
                    token,
                } => b.with_credentials(static_provider(
                    key_id.clone(),
                    secret.clone(),
                    token.clone(),
                )),
                Credentials::Anonymous => b.with_skip_signature(true),
                Credentials::Chain => match &profile {
                    Some(p) if opts.profile.is_some() || !env_keys => {
                        match (&p.access_key_id, &p.secret_access_key) {
                            (Some(k), Some(s)) => b.with_credentials(static_provider(
                                k.clone(),
                                s.clone(),
                                p.session_token.clone(),
                            )),
                            _ => b,
                        }
                    }
                    _ => b,
                },
            };
            // Without keys at hand, what object_store tries last (web
            // identity, container, instance metadata) failing is told as
            // no credentials found, naming where they were looked for.
            if matches!(opts.credentials, Credentials::Chain) && !keys_at_hand {
                let inner = b.clone().build().map_err(|e| {
                    StorageError::Other(format!("{url}: cannot set up the S3 client: {e}"))
                })?;
                let profile = profile_name.as_deref().unwrap_or("default");
                b = b.with_credentials(credentials::Told::new(
                    &rest,
                    inner.credentials().clone(),
                    profile,
                ));
            }
            b.build().map_err(|e| {
                StorageError::Other(format!("{url}: cannot set up the S3 client: {e}"))
            })
        };
        let store = Arc::new(build(true)?);
        let probe = Arc::new(build(false)?);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(opts.worker_threads.max(1))
            .thread_name("novelfs-s3")
            .enable_all()
            .build()
            .map_err(|e| {
                StorageError::Other(format!("cannot start the S3 client's threads: {e}"))
            })?;
        Ok(S3Storage {
            url,
            endpoint: endpoint_display,
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

    pub fn url(&self) -> &S3Url {
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
            Self::list_page(&probe, &prefix, None, Some(1)).await
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

    fn classify(&self, e: &object_store::Error, what: &str, path: &RelPath) -> StorageError {
        let cx = classify::Context {
            bucket: self.url.bucket(),
            endpoint: &self.endpoint,
            timeout: self.timeout,
        };
        classify::classify(e, what, &path.to_string(), &cx)
    }

    /// One LIST page of every key under `prefix`, with no delimiter.
    async fn list_page_flat(
        store: &AmazonS3,
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
        store: &AmazonS3,
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
        let result = match self.rt.block_on(wire::scope(async move {
            tokio::time::timeout(timeout, fut).await
        })) {
            Ok(r) => r.map_err(|e| self.classify(&e, what, path)),
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
    fn an_address_endpoint_is_path_style_and_a_name_can_be_virtual_hosted() {
        assert!(host_is_address("http://127.0.0.1:9000"));
        assert!(host_is_address("http://localhost:9000"));
        assert!(host_is_address("http://[::1]:9000"));
        assert!(!host_is_address("https://s3.example.test"));
        assert_eq!(
            virtual_hosted("https://s3.example.test:8443", "library"),
            "https://library.s3.example.test:8443"
        );
    }

    #[test]
    fn static_credentials_do_not_show_in_debug() {
        let opts = S3Options {
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
