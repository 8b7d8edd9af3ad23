//! The counting of requests where they are sent: an HTTP client around
//! object_store's own (reqwest's), which counts every attempt as it goes
//! on the wire, by kind as the tests' proxy sorts them (a GET of the
//! bucket with `list-type=2`, S3's and Google's, or of the container with
//! `comp=list`, Azure's, a LIST; a GET with `Range` a ranged GET), and
//! each `304 Not Modified`; an attempt that gets no response (refused,
//! reset, timed out) is counted apart, as unanswered, by its kind.
//! object_store's retries, and its resumption of
//! a body cut short, are attempts of the same access: an access runs in
//! `scope`, and an attempt after its first is a retry; an access that
//! fails, once its retries are spent, is an error (`count_error`).
//!
//! The wire also keeps the answer of an access's last attempt when it is
//! one of failure, its HTTP status and its body (the store's error
//! document): what its error is classified by. object_store keeps both in
//! a private type, so that its error gives them back only as words.

use std::sync::Arc;

use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpService, ReqwestConnector,
};
use object_store::{ClientOptions, Result};

use crate::StorageError;
use crate::counters::{Counter, Counters};

/// An answer of failure: its HTTP status and the start of its body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Failure {
    pub status: u16,
    pub body: String,
}

/// How much of an answer of failure's body is kept: a store's error
/// document is a few hundred bytes.
const BODY_KEPT: usize = 4096;

/// What the wire saw of the access the task runs.
#[derive(Default)]
struct Seen {
    /// The attempts made so far.
    attempts: std::cell::Cell<u64>,
    /// The answer of the last attempt, while it is one of failure (none
    /// once an attempt gets no answer, or a success).
    failed: std::cell::RefCell<Option<Failure>>,
}

tokio::task_local! {
    static SEEN: Seen;
}

/// Runs `access` as one access: its attempts after the first count as
/// retries. Its output comes with the answer of failure its last attempt
/// got, if any.
pub(super) async fn scope<F: Future>(access: F) -> (F::Output, Option<Failure>) {
    SEEN.scope(Seen::default(), async move {
        let output = access.await;
        let failed = SEEN.with(|seen| seen.failed.take());
        (output, failed)
    })
    .await
}

/// Makes reqwest's client and counts what it sends into `counters`.
#[derive(Debug)]
pub(super) struct Counting {
    pub(super) counters: Arc<Counters>,
}

impl HttpConnector for Counting {
    fn connect(&self, options: &ClientOptions) -> Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(CountingService {
            inner,
            counters: self.counters.clone(),
        }))
    }
}

#[derive(Debug)]
struct CountingService {
    inner: HttpClient,
    counters: Arc<Counters>,
}

/// The kind of `req`, as `tests/s3/proxy.py` counts it.
fn kind(req: &HttpRequest) -> Counter {
    let method = req.method().as_str();
    match method {
        "GET" => {
            let query = req.uri().query().unwrap_or("");
            if query
                .split('&')
                .any(|kv| kv == "list-type=2" || kv == "comp=list")
            {
                Counter::List
            } else if req.headers().contains_key("range") {
                Counter::RangedGet
            } else {
                Counter::Get
            }
        }
        "HEAD" => Counter::Head,
        "PUT" => Counter::Put,
        _ => Counter::Other,
    }
}

/// One attempt on the wire: a request of its kind once the bucket
/// answers it, else (an error before any response, or the attempt given
/// up while it waited) an unanswered one, so that the requests agree with
/// what reached the bucket.
struct Attempt<'a> {
    counters: &'a Counters,
    kind: Counter,
    answered: bool,
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        let counter = match self.answered {
            true => self.kind,
            false => self.kind.unanswered(),
        };
        self.counters.count(counter);
    }
}

#[async_trait::async_trait]
impl HttpService for CountingService {
    async fn call(&self, req: HttpRequest) -> std::result::Result<HttpResponse, HttpError> {
        let mut attempt = Attempt {
            counters: &self.counters,
            kind: kind(&req),
            answered: false,
        };
        let earlier = SEEN
            .try_with(|seen| {
                seen.failed.take();
                seen.attempts.replace(seen.attempts.get() + 1)
            })
            .unwrap_or(0);
        if earlier > 0 {
            self.counters.count(Counter::Retries);
        }
        let response = self.inner.execute(req).await?;
        attempt.answered = true;
        let status = response.status();
        if status.as_u16() == 304 {
            self.counters.count(Counter::NotModified);
        }
        let failed = status.is_client_error()
            || status.is_server_error()
            || (status.is_redirection() && status.as_u16() != 304);
        if !failed {
            return Ok(response);
        }
        if status.is_redirection() {
            // Its status alone: object_store follows a redirect, or fails
            // a bare one without its body, and so does its classification.
            let failure = Failure {
                status: status.as_u16(),
                body: String::new(),
            };
            let _ = SEEN.try_with(|seen| seen.failed.replace(Some(failure)));
            return Ok(response);
        }
        // An answer of failure is read whole here (object_store reads it
        // whole too, for its error) and handed on as it came.
        let (parts, body) = response.into_parts();
        let bytes = body.bytes().await?;
        let kept = &bytes[..bytes.len().min(BODY_KEPT)];
        let failure = Failure {
            status: status.as_u16(),
            body: String::from_utf8_lossy(kept).into_owned(),
        };
        let _ = SEEN.try_with(|seen| seen.failed.replace(Some(failure)));
        Ok(HttpResponse::from_parts(parts, bytes.into()))
    }
}

/// Counts `result` of an access among the errors when it is one other than
/// a missing or changed object.
pub(super) fn count_error<T>(counters: &Counters, result: &std::result::Result<T, StorageError>) {
    if let Err(e) = result
        && !e.is_not_found()
        && !matches!(e, StorageError::Changed { .. })
    {
        counters.count(Counter::Errors);
    }
}
