//! What can go wrong reading a library, typed so that the layers above
//! can answer each case on its own (a chapter gone, a chapter changed
//! under a reader, a source that cannot be reached) and give the reader
//! an errno that says it.

use std::fmt;
use std::time::Duration;

/// One failed access to a library's storage.
///
/// Its `Display` text names the object and the cause, never a credential:
/// the texts carry only paths, bucket names, endpoints (which hold no
/// user information, see `BucketUrl`), S3 error codes and durations.
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
    /// Anything else, already worded for a log line.
    Other(String),
}

impl StorageError {
    /// The errno a reader of the file system gets for this error.
    ///
    /// `Changed` is `ESTALE`: the object a handle was opened on is gone in
    /// that version, which is what a stale NFS handle means; `EAGAIN` would
    /// invite the same read again, which fails the same way while the
    /// caller keeps asking for the old version. A missing bucket, an
    /// unreachable endpoint and a timeout are the source failing, not the
    /// file: `EIO`, as a local disk failing would give.
    pub fn errno(&self) -> i32 {
        match self {
            StorageError::NotFound { .. } => libc::ENOENT,
            StorageError::Changed { .. } => libc::ESTALE,
            StorageError::AccessDenied { .. } | StorageError::NoCredentials { .. } => libc::EACCES,
            StorageError::NoBucket { .. }
            | StorageError::WrongRegion { .. }
            | StorageError::Unreachable { .. }
            | StorageError::Timeout { .. }
            | StorageError::Other(_) => libc::EIO,
        }
    }

    /// Whether the error says only that the path is not there.
    pub fn is_not_found(&self) -> bool {
        matches!(self, StorageError::NotFound { .. })
    }

    /// Whether the error is the source failing as a whole (every access
    /// would fail the same way until it recovers), not one object.
    pub fn is_source_failure(&self) -> bool {
        matches!(
            self,
            StorageError::NoBucket { .. }
                | StorageError::WrongRegion { .. }
                | StorageError::AccessDenied { .. }
                | StorageError::NoCredentials { .. }
                | StorageError::Unreachable { .. }
                | StorageError::Timeout { .. }
        )
    }

    /// Whether the error says the storage did not answer (no answer in
    /// time, no connection, a server error or a broken connection once the
    /// retries were spent): what a held copy may stand in for while it
    /// lasts (`--stale-if-error`). A refusal (credentials, a missing
    /// bucket) is an answer: nothing held stands in for it.
    pub fn is_outage(&self) -> bool {
        match self {
            StorageError::Timeout { .. } | StorageError::Unreachable { .. } => true,
            // `cloud::classify` words a 5xx `WHAT: HTTP 5xx` and a transport
            // failure `WHAT: KIND error: CAUSE`.
            StorageError::Other(text) => text.contains(": HTTP 5") || text.contains(" error: "),
            _ => false,
        }
    }

    pub(crate) fn not_found(path: impl Into<String>) -> Self {
        StorageError::NotFound { path: path.into() }
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
            StorageError::Other(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for StorageError {}

impl From<StorageError> for std::io::Error {
    fn from(e: StorageError) -> Self {
        let kind = match &e {
            StorageError::NotFound { .. } => std::io::ErrorKind::NotFound,
            StorageError::AccessDenied { .. } | StorageError::NoCredentials { .. } => {
                std::io::ErrorKind::PermissionDenied
            }
            StorageError::Timeout { .. } => std::io::ErrorKind::TimedOut,
            _ => std::io::ErrorKind::Other,
        };
        std::io::Error::new(kind, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_errno() {
        let cases = [
            (StorageError::not_found("novels/书/第1章.md"), libc::ENOENT),
            (
                StorageError::Changed {
                    path: "novels/书/第1章.md".into(),
                },
                libc::ESTALE,
            ),
            (
                StorageError::NoBucket {
                    bucket: "bucket library".into(),
                },
                libc::EIO,
            ),
            (
                StorageError::WrongRegion {
                    bucket: "library".into(),
                    region: Some("eu-west-3".into()),
                },
                libc::EIO,
            ),
            (
                StorageError::AccessDenied {
                    what: "s3://library".into(),
                    code: "InvalidAccessKeyId".into(),
                },
                libc::EACCES,
            ),
            (
                StorageError::Unreachable {
                    endpoint: "http://127.0.0.1:9".into(),
                    reason: "connection refused".into(),
                },
                libc::EIO,
            ),
            (
                StorageError::Timeout {
                    what: "GET novels/书/第1章.md".into(),
                    after: Duration::from_secs(5),
                },
                libc::EIO,
            ),
            (StorageError::Other("x".into()), libc::EIO),
        ];
        for (e, errno) in cases {
            assert_eq!(e.errno(), errno, "{e}");
            assert!(!e.to_string().is_empty());
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
