//! object_store's errors as `StorageError`s. object_store keeps the HTTP
//! status and S3's error body inside a private error type, so the S3 error
//! code is read from the error's text (`<Code>NoSuchBucket</Code>`: S3's
//! codes are a stable part of its API) and the transport failure from the
//! public `HttpError` in the error's source chain.

use std::error::Error as _;
use std::time::Duration;

use object_store::client::{HttpError, HttpErrorKind};

use crate::StorageError;

/// The S3 error code in an error body, e.g. `NoSuchBucket`.
pub fn s3_code(text: &str) -> Option<&str> {
    let start = text.find("<Code>")? + "<Code>".len();
    let len = text[start..].find("</Code>")?;
    Some(&text[start..start + len])
}

/// The HTTP status in object_store's text (`status code: 404`).
fn status(text: &str) -> Option<u16> {
    let at = text.find("status code: ")? + "status code: ".len();
    text[at..].get(..3)?.parse().ok()
}

fn http_kind(e: &object_store::Error) -> Option<HttpErrorKind> {
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<HttpError>() {
            return Some(h.kind());
        }
        source = s.source();
    }
    None
}

/// The innermost cause's text, without object_store's request line (which
/// repeats the URL) and cut short.
fn cause(e: &object_store::Error) -> String {
    let mut last: &dyn std::error::Error = e;
    while let Some(s) = last.source() {
        last = s;
    }
    let text = last.to_string();
    text.chars().take(200).collect()
}

/// Where an access went and how long it may take, for the errors it gives.
pub struct Context<'a> {
    pub bucket: &'a str,
    pub endpoint: &'a str,
    pub timeout: Duration,
}

/// What `e` means for the access `what` (e.g. `GET s3://b/k`) to the
/// object or directory `path`.
pub fn classify(e: &object_store::Error, what: &str, path: &str, cx: &Context) -> StorageError {
    let (bucket, endpoint) = (cx.bucket, cx.endpoint);
    let text = e.to_string();
    let code = s3_code(&text);
    match code {
        Some("NoSuchBucket") => {
            return StorageError::NoBucket {
                bucket: bucket.to_string(),
            };
        }
        Some("NoSuchKey") => return StorageError::not_found(path),
        Some("PreconditionFailed") => {
            return StorageError::Changed {
                path: path.to_string(),
            };
        }
        Some(
            c @ ("AccessDenied"
            | "InvalidAccessKeyId"
            | "SignatureDoesNotMatch"
            | "ExpiredToken"
            | "InvalidToken"
            | "TokenRefreshRequired"
            | "AllAccessDisabled"
            | "AccountProblem"),
        ) => {
            return StorageError::AccessDenied {
                what: what.to_string(),
                code: c.to_string(),
            };
        }
        _ => {}
    }
    match e {
        object_store::Error::NotFound { .. } => return StorageError::not_found(path),
        object_store::Error::Precondition { .. } => {
            return StorageError::Changed {
                path: path.to_string(),
            };
        }
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => {
            return StorageError::AccessDenied {
                what: what.to_string(),
                code: code.unwrap_or("HTTP 403").to_string(),
            };
        }
        _ => {}
    }
    match status(&text) {
        Some(404) => return StorageError::not_found(path),
        Some(412) => {
            return StorageError::Changed {
                path: path.to_string(),
            };
        }
        Some(401 | 403) => {
            return StorageError::AccessDenied {
                what: what.to_string(),
                code: code.unwrap_or("HTTP 403").to_string(),
            };
        }
        _ => {}
    }
    match http_kind(e) {
        Some(HttpErrorKind::Connect) => StorageError::Unreachable {
            endpoint: endpoint.to_string(),
            reason: cause(e),
        },
        // The client's own bound on one try is the access's bound too.
        Some(HttpErrorKind::Timeout) => StorageError::Timeout {
            what: what.to_string(),
            after: cx.timeout,
        },
        kind => {
            let why = match (status(&text), code, kind) {
                (Some(s), Some(c), _) => format!("HTTP {s} {c}"),
                (Some(s), None, _) => format!("HTTP {s}"),
                (None, _, Some(k)) => format!("{k:?} error: {}", cause(e)),
                (None, _, None) => cause(e),
            };
            StorageError::Other(format!("{what}: {why}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_s3_code_and_status_are_read_from_the_text() {
        let text = "Generic S3 error: Error performing GET http://127.0.0.1:1/b?list-type=2 in 2ms - Server returned non-2xx status code: 404 Not Found: <?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>x</Message></Error>";
        assert_eq!(s3_code(text), Some("NoSuchBucket"));
        assert_eq!(status(text), Some(404));
        assert_eq!(s3_code("no code here"), None);
        assert_eq!(status("no status"), None);
    }
}
