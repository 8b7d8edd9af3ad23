//! What every cloud's client is set up with: the counting HTTP client,
//! one try's bound and the retries within an access's, TLS only where it
//! is needed; each cloud's module adds its endpoint and credentials.

use std::sync::Arc;
use std::time::Duration;

use object_store::list::PaginatedListStore;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};

use super::{BucketUrl, StoreOptions, wire};
use crate::StorageError;
use crate::counters::Counters;

/// What every cloud's client is: a store that lists page by page.
pub(crate) trait Store: ObjectStore + PaginatedListStore {}

impl<T: ObjectStore + PaginatedListStore> Store for T {}

/// A cloud's clients for one bucket: `store` retries within an access's
/// bound, `probe` never does; `endpoint` is where they go, for messages.
pub(super) struct Clients {
    pub(super) store: Arc<dyn Store>,
    pub(super) probe: Arc<dyn Store>,
    pub(super) endpoint: String,
}

/// What every cloud's client is set up with.
pub(super) struct Setup<'a> {
    pub(super) url: &'a BucketUrl,
    pub(super) opts: &'a StoreOptions,
    /// The endpoint given, checked, without its trailing `/`.
    pub(super) endpoint: Option<String>,
    pub(super) timeout: Duration,
    pub(super) counters: Arc<Counters>,
}

impl Setup<'_> {
    /// The HTTP client that counts what it sends.
    pub(super) fn connector(&self) -> wire::Counting {
        wire::Counting {
            counters: self.counters.clone(),
        }
    }

    /// One try may take half the access's bound, so that a request that
    /// stalls is tried again within it (a body cut short by this is
    /// resumed where it stopped, by a ranged GET of the same ETag). With
    /// `credentials_at_hand` and a plain-http endpoint nothing is ever sent
    /// over TLS (a chain's https steps are taken only without them): the
    /// system's certificates, which each client would read and parse, file
    /// by file, at every start, are left unread.
    pub(super) fn client_options(&self, credentials_at_hand: bool) -> ClientOptions {
        let no_tls = credentials_at_hand
            && self
                .endpoint
                .as_deref()
                .is_some_and(|e| e.starts_with("http://"));
        ClientOptions::new()
            .with_no_system_certificates(no_tls)
            .with_allow_http(
                self.endpoint
                    .as_deref()
                    .is_some_and(|e| e.starts_with("http://")),
            )
            .with_timeout(self.timeout / 2)
            .with_connect_timeout((self.timeout / 4).min(Duration::from_secs(3)))
    }

    /// The retries within one access's bound, or none (`probe`).
    pub(super) fn retry(&self, retries: bool) -> RetryConfig {
        let timeout = self.timeout;
        if retries {
            // The last try ends and its error is told before the access's
            // own bound cuts it short: a refused connection is
            // `Unreachable`, not a `Timeout`.
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
        }
    }

    pub(super) fn cannot_set_up(&self, e: object_store::Error) -> StorageError {
        let what = format!(
            "{}: cannot set up the {} client",
            self.url,
            self.url.cloud().store_name()
        );
        StorageError::failed(what, e)
    }
}
