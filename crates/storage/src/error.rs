//! What can go wrong reading a library, typed so that the layers above
//! can answer each case on its own (a chapter gone, a chapter changed
//! under a reader, a source that cannot be reached) and give the reader
//! an errno that says it.

use std::fmt;
use std::time::Duration;

use novelfs_kit::cause::Cause;
use novelfs_library::backing::{SourceFault, SourceKind};

/// One failed access to a library's storage.
///
/// Its variant is its kind, decided once where the failure is met (from
/// the HTTP status, object_store's error variant, the transport's error
/// kind): nothing reads it back from the words. Its `Display` text names
/// the object and what went wrong, never a credential: the texts carry
/// only paths, bucket names, endpoints (which hold no user information,
/// see `BucketUrl`), S3 error codes, HTTP statuses and durations. The
/// error a layer below gave is its `source()`, shown with the chain where
/// the failure is logged (`novelfs_kit::cause::Chain`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageError {
    /// No object or directory at that path.
    NotFound { path: String },
    /// The object is there but no longer in the version asked for.
    Changed { path: String },
    /// The bucket (an Azure container) itself does not exist: `bucket`
    /// names it as its store does (`bucket shelf`, `container shelf`).
    NoBucket { bucket: String },
    /// The bucket is in another region than the one its requests were
    /// signed for and sent to (S3's `PermanentRedirect` or
    /// `AuthorizationHeaderMalformed`); `region` when the answer names it.
    WrongRegion {
        bucket: String,
        region: Option<String>,
    },
    /// The storage refused the credentials (S3's error code says how).
    AccessDenied { what: String, code: String },
    /// No credentials were found to sign with: `looked` names where the
    /// chain looked for them.
    NoCredentials { looked: String },
    /// The endpoint could not be reached: connection refused, a name that
    /// does not resolve, no route.
    Unreachable { endpoint: String, reason: String },
    /// One access was not answered within its bound.
    Timeout { what: String, after: Duration },
    /// The storage answered the access `what` with a server error (an
    /// HTTP 5xx; `code` the store's error code when its body gives one)
    /// once the retries were spent.
    ServerError {
        what: String,
        status: u16,
        code: Option<String>,
        cause: Cause,
    },
    /// The connection broke before the answer to `what` was whole (reset,
    /// cut short, a body that does not decode) once the retries were
    /// spent; `how` is the transport's kind of failure.
    Broken {
        what: String,
        how: String,
        cause: Cause,
    },
    /// The storage answered the access `what` with an HTTP status of
    /// failure none of the kinds above is (a 400, a 429...), once the
    /// retries were spent.
    OtherStatus {
        what: String,
        status: u16,
        code: Option<String>,
        cause: Cause,
    },
    /// Anything else: `what` worded for a log line, with the error a layer
    /// below gave when there is one (its words follow `what`'s).
    Other { what: String, cause: Option<Cause> },
}

impl StorageError {
    /// What kind of failure this is, as the layers above the seam answer
    /// it (the tree's errno table gives each kind its errno): `Changed` is
    /// its own kind, since a reader pinned to a version must be told the
    /// object changed, not that the storage failed; no answer is
    /// `Transient`; a missing bucket or a wrong region is the source
    /// failing, not the file: `Other`, as a local disk failing would be.
    pub fn source_kind(&self) -> SourceKind {
        match self {
            StorageError::NotFound { .. } => SourceKind::NotFound,
            StorageError::Changed { .. } => SourceKind::Changed,
            StorageError::AccessDenied { .. } | StorageError::NoCredentials { .. } => {
                SourceKind::Denied
            }
            StorageError::Timeout { .. }
            | StorageError::Unreachable { .. }
            | StorageError::ServerError { .. }
            | StorageError::Broken { .. } => SourceKind::Transient,
            StorageError::NoBucket { .. }
            | StorageError::WrongRegion { .. }
            | StorageError::OtherStatus { .. }
            | StorageError::Other { .. } => SourceKind::Other,
        }
    }

    /// Whether the error says only that the path is not there.
    pub fn is_not_found(&self) -> bool {
        matches!(self, StorageError::NotFound { .. })
    }

    /// Whether the error says the storage did not answer (no answer in
    /// time, no connection, a server error or a broken connection once the
    /// retries were spent): what a held copy may stand in for while it
    /// lasts (`--stale-if-error`). A refusal (credentials, a missing
    /// bucket) is an answer: nothing held stands in for it.
    pub fn is_outage(&self) -> bool {
        self.source_kind() == SourceKind::Transient
    }

    pub(crate) fn not_found(path: impl Into<String>) -> Self {
        StorageError::NotFound { path: path.into() }
    }

    /// A failure of no kind of its own, worded for a log line.
    pub fn other(what: impl Into<String>) -> Self {
        StorageError::Other {
            what: what.into(),
            cause: None,
        }
    }

    /// `what` failed, caused by `cause`.
    pub fn failed(what: impl Into<String>, cause: impl Into<Cause>) -> Self {
        StorageError::Other {
            what: what.into(),
            cause: Some(cause.into()),
        }
    }
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageError::NotFound { path } => write!(f, "{path}: not found"),
            StorageError::Changed { path } => {
                write!(f, "{path}: changed since it was listed (version mismatch)")
            }
            StorageError::NoBucket { bucket } => write!(f, "{bucket} does not exist"),
            StorageError::WrongRegion {
                bucket,
                region: Some(region),
            } => write!(
                f,
                "bucket {bucket} is in region {region}: give --region {region}"
            ),
            StorageError::WrongRegion {
                bucket,
                region: None,
            } => write!(f, "bucket {bucket} is in another region: give its --region"),
            StorageError::AccessDenied { what, code } => {
                write!(f, "{what}: access denied ({code}); check the credentials")
            }
            StorageError::NoCredentials { looked } => write!(
                f,
                "no credentials found (looked in {looked}); \
                 give credentials there, or --no-sign-request for a public bucket"
            ),
            StorageError::Unreachable { endpoint, reason } => {
                write!(f, "endpoint {endpoint} unreachable: {reason}")
            }
            StorageError::Timeout { what, after } => {
                write!(f, "{what}: no answer within {:.1} s", after.as_secs_f64())
            }
            StorageError::ServerError {
                what, status, code, ..
            }
            | StorageError::OtherStatus {
                what, status, code, ..
            } => match code {
                Some(code) => write!(f, "{what}: HTTP {status} {code}"),
                None => write!(f, "{what}: HTTP {status}"),
            },
            StorageError::Broken { what, how, .. } => write!(f, "{what}: {how} error"),
            StorageError::Other {
                what,
                cause: Some(cause),
            } => write!(f, "{what}: {cause}"),
            StorageError::Other { what, cause: None } => f.write_str(what),
        }
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StorageError::ServerError { cause, .. }
            | StorageError::OtherStatus { cause, .. }
            | StorageError::Broken { cause, .. }
            | StorageError::Other {
                cause: Some(cause), ..
            } => Some(cause.get()),
            _ => None,
        }
    }
}

/// The error a reader of the library gets for `e`, the one mapping of the
/// crate: an `io::ErrorKind` of its kind (what code that knows only
/// `io::Error` reads), and `e` itself inside, with the kind and the
/// lasting-ness it declares (`SourceFault`), its words unchanged.
impl From<StorageError> for std::io::Error {
    fn from(e: StorageError) -> Self {
        use std::io::ErrorKind;
        let kind = e.source_kind();
        let io_kind = match (&e, kind) {
            (_, SourceKind::NotFound) => ErrorKind::NotFound,
            (_, SourceKind::Changed) => ErrorKind::StaleNetworkFileHandle,
            (_, SourceKind::Denied) => ErrorKind::PermissionDenied,
            (StorageError::Timeout { .. }, _) => ErrorKind::TimedOut,
            (StorageError::Unreachable { .. }, _) => ErrorKind::ConnectionRefused,
            (_, SourceKind::Transient) => ErrorKind::NotConnected,
            (_, SourceKind::Other) => ErrorKind::Other,
        };
        // Only a missing object says what is there: anything else is the
        // storage now (refused credentials may be renewed, a 5xx may pass,
        // an object replaced under a read is read again), never what a
        // file holds.
        let passing = kind != SourceKind::NotFound;
        let fault = SourceFault {
            kind,
            passing,
            error: std::sync::Arc::new(e),
        };
        std::io::Error::new(io_kind, fault)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each error, its kind, the `io::ErrorKind` it crosses the seam with,
    /// and whether it passes.
    fn table() -> Vec<(StorageError, SourceKind, std::io::ErrorKind, bool)> {
        use std::io::ErrorKind as K;
        vec![
            (
                StorageError::not_found("novels/书/第1章.md"),
                SourceKind::NotFound,
                K::NotFound,
                false,
            ),
            (
                StorageError::Changed {
                    path: "novels/书/第1章.md".into(),
                },
                SourceKind::Changed,
                K::StaleNetworkFileHandle,
                true,
            ),
            (
                StorageError::NoBucket {
                    bucket: "bucket library".into(),
                },
                SourceKind::Other,
                K::Other,
                true,
            ),
            (
                StorageError::WrongRegion {
                    bucket: "library".into(),
                    region: Some("eu-west-3".into()),
                },
                SourceKind::Other,
                K::Other,
                true,
            ),
            (
                StorageError::AccessDenied {
                    what: "s3://library".into(),
                    code: "InvalidAccessKeyId".into(),
                },
                SourceKind::Denied,
                K::PermissionDenied,
                true,
            ),
            (
                StorageError::NoCredentials {
                    looked: "the environment".into(),
                },
                SourceKind::Denied,
                K::PermissionDenied,
                true,
            ),
            (
                StorageError::Unreachable {
                    endpoint: "http://127.0.0.1:9".into(),
                    reason: "connection refused".into(),
                },
                SourceKind::Transient,
                K::ConnectionRefused,
                true,
            ),
            (
                StorageError::Timeout {
                    what: "GET novels/书/第1章.md".into(),
                    after: Duration::from_secs(5),
                },
                SourceKind::Transient,
                K::TimedOut,
                true,
            ),
            (
                StorageError::ServerError {
                    what: "GET s3://b/k".into(),
                    status: 503,
                    code: Some("SlowDown".into()),
                    cause: Cause::new(std::io::Error::other("a server's answer")),
                },
                SourceKind::Transient,
                K::NotConnected,
                true,
            ),
            (
                StorageError::Broken {
                    what: "GET s3://b/k".into(),
                    how: "Interrupted".into(),
                    cause: Cause::new(std::io::Error::other("connection reset")),
                },
                SourceKind::Transient,
                K::NotConnected,
                true,
            ),
            (StorageError::other("x"), SourceKind::Other, K::Other, true),
        ]
    }

    #[test]
    fn each_error_has_its_kind() {
        for (e, kind, _, _) in table() {
            assert_eq!(e.source_kind(), kind, "{e}");
            assert!(!e.to_string().is_empty());
        }
    }

    /// Crossing the seam, an error keeps its words and its kind, read back
    /// by the library alone from the `io::Error`.
    #[test]
    fn an_error_crosses_the_seam_with_its_kind_and_words() {
        for (e, kind, io_kind, passing) in table() {
            let words = e.to_string();
            let io = std::io::Error::from(e);
            assert_eq!(io.to_string(), words);
            assert_eq!(io.kind(), io_kind, "{words}");
            assert_eq!(SourceKind::of(&io), kind, "{words}");
            assert_eq!(novelfs_library::backing::passing(&io), passing, "{words}");
            let copy = SourceFault::copy(&io);
            assert_eq!(
                (copy.kind(), SourceKind::of(&copy), copy.to_string()),
                (io_kind, kind, words)
            );
        }
    }

    #[test]
    fn a_timeout_says_its_bound() {
        let e = StorageError::Timeout {
            what: "LIST s3://library/novels/".into(),
            after: Duration::from_millis(2500),
        };
        assert_eq!(
            e.to_string(),
            "LIST s3://library/novels/: no answer within 2.5 s"
        );
    }
}
