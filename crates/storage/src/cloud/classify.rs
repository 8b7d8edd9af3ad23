//! object_store's errors as `StorageError`s, each kind decided here once:
//! from object_store's error variant, the last answer of failure (its
//! HTTP status and the store's error code in its body,
//! `<Code>NoSuchBucket</Code>`: S3's codes, which Google's XML API
//! shares, and Azure's are a stable part of their APIs), which the wire
//! keeps (`wire::scope`: object_store keeps it in a private type), and the
//! transport's failure (the public `HttpError` in the error's source
//! chain); never from the error's words. The error itself is kept as the
//! cause.

use std::error::Error as _;
use std::time::Duration;

use object_store::client::{HttpError, HttpErrorKind};

use super::wire::Failure;
use crate::StorageError;

/// The S3 error code in an error body, e.g. `NoSuchBucket`.
pub fn s3_code(text: &str) -> Option<&str> {
    element(text, "Code")
}

/// The text of the first element `name` of an S3 error body.
fn element<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let start = text.find(&open)? + open.len();
    let len = text[start..].find(&format!("</{name}>"))?;
    Some(&text[start..start + len])
}

/// The region an S3 error body names: its `<Region>` (an
/// `AuthorizationHeaderMalformed`'s), or the one in its `<Endpoint>` (a
/// `PermanentRedirect`'s: `BUCKET.s3.REGION.amazonaws.com`, the older
/// `s3-REGION.amazonaws.com`, or `s3.amazonaws.com`, us-east-1). Only a
/// name of a region's letters, digits and dashes is taken: the text is
/// the server's.
fn region_in(text: &str) -> Option<String> {
    let region = match element(text, "Region") {
        Some(r) => r,
        None => {
            let host = element(text, "Endpoint")?;
            let labels: Vec<&str> = host.split('.').collect();
            let s3 = labels
                .iter()
                .position(|l| *l == "s3" || l.starts_with("s3-"))?;
            match labels[s3].strip_prefix("s3-") {
                Some(r) => r,
                None => match labels.get(s3 + 1) {
                    Some(&"amazonaws") | None => "us-east-1",
                    Some(r) => r,
                },
            }
        }
    };
    let plausible = (2..=32).contains(&region.len())
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    plausible.then(|| region.to_string())
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
    pub cloud: super::Cloud,
    pub bucket: &'a str,
    pub endpoint: &'a str,
    pub timeout: Duration,
}

/// What `e` means for the access `what` (e.g. `GET s3://b/k`) to the
/// object or directory `path`, whose last attempt was answered with
/// `failed` (none when it got no answer, or a success).
pub fn classify(
    e: object_store::Error,
    failed: Option<Failure>,
    what: &str,
    path: &str,
    cx: &Context,
) -> StorageError {
    let (bucket, endpoint) = (cx.bucket, cx.endpoint);
    // Told before the body is read: a metadata service's answer (a 403,
    // say) is not the bucket's.
    if let Some(missing) = super::credentials::missing_in(&e) {
        return StorageError::NoCredentials {
            looked: missing.told(),
        };
    }
    let status = failed.as_ref().map(|f| f.status);
    let body = failed.as_ref().map_or("", |f| f.body.as_str());
    let code = s3_code(body);
    // Named by the two answers to a request sent to the wrong region.
    let region = region_in(body);
    match code {
        // S3's and Google's code; Azure's.
        Some("NoSuchBucket" | "ContainerNotFound") => {
            return StorageError::NoBucket {
                bucket: format!("{} {bucket}", cx.cloud.bucket_word()),
            };
        }
        Some("PermanentRedirect") => {
            return StorageError::WrongRegion {
                bucket: bucket.to_string(),
                region,
            };
        }
        // Malformed by the region it was signed for (the answer names the
        // bucket's), or else by its credential (no access key, say).
        Some("AuthorizationHeaderMalformed") if region.is_some() => {
            return StorageError::WrongRegion {
                bucket: bucket.to_string(),
                region,
            };
        }
        Some("NoSuchKey" | "BlobNotFound") => return StorageError::not_found(path),
        Some("PreconditionFailed" | "ConditionNotMet") => {
            return StorageError::Changed {
                path: path.to_string(),
            };
        }
        Some(
            c @ ("AccessDenied"
            | "AuthorizationHeaderMalformed"
            | "InvalidAccessKeyId"
            | "SignatureDoesNotMatch"
            | "ExpiredToken"
            | "InvalidToken"
            | "TokenRefreshRequired"
            | "AllAccessDisabled"
            | "AccountProblem"
            // Azure's.
            | "AuthenticationFailed"
            | "AuthorizationFailure"
            | "AuthorizationPermissionMismatch"
            | "NoAuthenticationInformation"
            | "PublicAccessNotPermitted"
            | "InsufficientAccountPermissions"),
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
    match status {
        // A redirect object_store did not follow, without a Location (S3's
        // PermanentRedirect: its body names the endpoint, which
        // object_store drops).
        Some(301 | 302 | 307 | 308) => {
            return StorageError::WrongRegion {
                bucket: bucket.to_string(),
                region,
            };
        }
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
        Some(s @ 500..=599) => {
            return StorageError::ServerError {
                what: what.to_string(),
                status: s,
                code: code.map(str::to_string),
                cause: e.into(),
            };
        }
        Some(s) => {
            return StorageError::OtherStatus {
                what: what.to_string(),
                status: s,
                code: code.map(str::to_string),
                cause: e.into(),
            };
        }
        None => {}
    }
    match http_kind(&e) {
        Some(HttpErrorKind::Connect) => StorageError::Unreachable {
            endpoint: endpoint.to_string(),
            reason: cause(&e),
        },
        // The client's own bound on one try is the access's bound too.
        Some(HttpErrorKind::Timeout) => StorageError::Timeout {
            what: what.to_string(),
            after: cx.timeout,
        },
        Some(how) => StorageError::Broken {
            what: what.to_string(),
            how: format!("{how:?}"),
            cause: e.into(),
        },
        None => StorageError::failed(what, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use novelfs_library::backing::SourceKind;

    fn cx() -> Context<'static> {
        Context {
            cloud: crate::Cloud::S3,
            bucket: "shelf",
            endpoint: "https://s3.us-east-1.amazonaws.com",
            timeout: Duration::from_secs(5),
        }
    }

    fn answer(status: u16, body: &str) -> Option<Failure> {
        Some(Failure {
            status,
            body: body.to_string(),
        })
    }

    fn as_error(text: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: text.to_string().into(),
        }
    }

    #[test]
    fn the_s3_code_is_read_from_the_body() {
        let text = "Generic S3 error: Error performing GET http://127.0.0.1:1/b?list-type=2 in 2ms - Server returned non-2xx status code: 404 Not Found: <?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>x</Message></Error>";
        assert_eq!(s3_code(text), Some("NoSuchBucket"));
        assert_eq!(s3_code("no code here"), None);
    }

    /// What a failure is comes from the status of its answer and the
    /// transport's kind of failure, never from its words: a 503 whose text
    /// says nothing of HTTP is an outage; a 400 to a key whose name reads
    /// like a server error, or a 404 whose body tells of one, is not.
    #[test]
    fn a_failure_is_classified_by_its_status_not_its_words() {
        let path = "novels/书/第1章.md";
        let get = "GET s3://shelf/novels/书/第1章.md";
        let quiet = classify(
            as_error("the server gave up"),
            answer(503, ""),
            get,
            path,
            &cx(),
        );
        assert!(quiet.is_outage(), "{quiet}");
        assert_eq!(quiet.source_kind(), SourceKind::Transient);
        let odd_path = "novels/书/第1章: HTTP 500 error: 丢失.md";
        let odd_get = "GET s3://shelf/novels/书/第1章: HTTP 500 error: 丢失.md";
        let bad_request = "Server returned non-2xx status code: 400 Bad Request: <Error><Code>InvalidArgument</Code></Error>";
        let refused = classify(
            as_error(bad_request),
            answer(400, bad_request),
            odd_get,
            odd_path,
            &cx(),
        );
        assert!(!refused.is_outage(), "{refused}");
        assert_eq!(refused.source_kind(), SourceKind::Other);
        let said = "Server returned non-2xx status code: 404 Not Found: upstream said: HTTP 503";
        let gone = classify(as_error(said), answer(404, said), get, path, &cx());
        assert!(gone.is_not_found(), "{gone}");
        // No answer: the transport's kind of failure decides.
        let transport = |kind| object_store::Error::Generic {
            store: "S3",
            source: Box::new(HttpError::new(kind, std::io::Error::other("HTTP 200"))),
        };
        let cut = classify(
            transport(HttpErrorKind::Interrupted),
            None,
            get,
            path,
            &cx(),
        );
        assert!(matches!(cut, StorageError::Broken { .. }), "{cut}");
        assert!(cut.is_outage());
        let refused = classify(transport(HttpErrorKind::Connect), None, get, path, &cx());
        assert!(
            matches!(refused, StorageError::Unreachable { .. }),
            "{refused}"
        );
        // The store's code is read from the answer's body, not from the
        // error's words.
        let worded_code = as_error("<Error><Code>NoSuchBucket</Code></Error>");
        let busy = classify(worded_code, answer(503, ""), get, path, &cx());
        assert!(
            matches!(busy, StorageError::ServerError { code: None, .. }),
            "{busy:?}"
        );
        let no_bucket = classify(
            as_error("x"),
            answer(404, "<Error><Code>NoSuchBucket</Code></Error>"),
            "LIST s3://shelf/novels/",
            "novels/",
            &cx(),
        );
        assert!(
            matches!(no_bucket, StorageError::NoBucket { .. }),
            "{no_bucket:?}"
        );
        // Neither a status nor a transport's failure: no answer is known
        // to be missing, whatever the words say.
        let worded = classify(as_error("Request error: HTTP 503"), None, get, path, &cx());
        assert!(!worded.is_outage(), "{worded}");
        // The cause is kept, the words of the summary apart from it.
        let chain = novelfs_kit::cause::Chain(&quiet).to_string();
        assert_eq!(
            chain,
            format!("{get}: HTTP 503: Generic S3 error: the server gave up")
        );
    }

    /// The bodies AWS sends for a bucket asked for in the wrong region.
    #[test]
    fn a_wrong_regions_answer_names_the_buckets_region() {
        let malformed = "Server returned non-2xx status code: 400 Bad Request: <Error><Code>AuthorizationHeaderMalformed</Code><Message>The authorization header is malformed; the region 'us-east-1' is wrong; expecting 'eu-west-3'</Message><Region>eu-west-3</Region><RequestId>X</RequestId></Error>";
        assert_eq!(region_in(malformed).as_deref(), Some("eu-west-3"));
        let redirect = |endpoint: &str| {
            format!(
                "Server returned non-2xx status code: 301 Moved Permanently: <Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint.</Message><Endpoint>{endpoint}</Endpoint><Bucket>shelf</Bucket></Error>"
            )
        };
        for (endpoint, region) in [
            (
                "shelf.s3.ap-northeast-1.amazonaws.com",
                Some("ap-northeast-1"),
            ),
            ("s3.eu-west-3.amazonaws.com", Some("eu-west-3")),
            ("shelf.s3-us-west-2.amazonaws.com", Some("us-west-2")),
            ("shelf.s3.amazonaws.com", Some("us-east-1")),
            ("shelf.s3.<script>.amazonaws.com", None),
            ("elsewhere.example", None),
        ] {
            assert_eq!(
                region_in(&redirect(endpoint)).as_deref(),
                region,
                "{endpoint}"
            );
        }
        assert_eq!(region_in("no region at all"), None);
        let bare = "Error performing GET https://s3.us-east-1.amazonaws.com/shelf?list-type=2 in 20ms, after 0 retries - Received redirect without LOCATION, this normally indicates an incorrectly configured region";
        for (text, status, region) in [
            (bare, 301, None),
            (malformed, 400, Some("eu-west-3".to_string())),
        ] {
            let list = "LIST s3://shelf/novels/";
            assert_eq!(
                classify(as_error(text), answer(status, text), list, "novels/", &cx()),
                StorageError::WrongRegion {
                    bucket: "shelf".into(),
                    region
                }
            );
        }
        let no_key = "Server returned non-2xx status code: 400 Bad Request: <Error><Code>AuthorizationHeaderMalformed</Code><Message>The authorization header is malformed; a non-empty Access Key (AKID) must be provided in the credential.</Message></Error>";
        assert_eq!(
            classify(
                as_error(no_key),
                answer(400, no_key),
                "LIST s3://shelf/novels/",
                "novels/",
                &cx()
            ),
            StorageError::AccessDenied {
                what: "LIST s3://shelf/novels/".into(),
                code: "AuthorizationHeaderMalformed".into()
            }
        );
    }
}
