//! A bucket that stops answering: what the mount does until it answers
//! again (`--stale-if-error`).
//!
//! Every access goes through one `Outage` (`Guarded` wraps the storage).
//! An access that gets no answer (`StorageError::is_outage`: a timeout, a
//! refused connection, a 5xx or a broken connection once the retries were
//! spent) marks the source down. While it is down, accesses fail at once
//! (a circuit breaker) for `RETRY_AFTER`; then one access at a time (the
//! probe) asks the source, and the others keep failing at once. So a
//! request that needs many accesses waits for at most one timeout, not
//! one per access. Any answer (an object, a listing, a 404) marks the
//! source up again.
//!
//! Meanwhile the listings and bodies read before are served past their
//! freshness for up to `stale_for` after it (`stale_ok`), each serve
//! counted (`Counter::StaleServes`). The log says once that the source
//! stopped answering and once that it answers again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use novelfs_kit::lock;

use crate::{
    Counter, Counters, Entry, InFlight, Object, ReadMany, ReadRequest, RelPath, Storage,
    StorageError, Version,
};

/// The machine-readable log events of an outage (`novelfs_fs::events`
/// lists them with the others): one when the source stops answering, one
/// when it answers again.
pub const SOURCE_DOWN: &str = "event=source_down";
pub const SOURCE_UP: &str = "event=source_up";

/// How long accesses fail at once after one got no answer, before the
/// next probe asks the source: short, so that service is back within
/// about this of the source (and a probe's timeout).
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// `--stale-if-error`'s default: an hour, as HTTP caches' stale-if-error
/// is commonly set, long enough to ride out a regional storage incident
/// while a reader keeps reading what it opened.
pub const DEFAULT_STALE_FOR: Duration = Duration::from_secs(3600);

#[derive(Debug, Default)]
struct State {
    /// When the source last failed to answer, while it has not answered
    /// since.
    down_since: Option<Instant>,
    /// Accesses fail at once until then.
    closed_until: Option<Instant>,
    /// Whether a probe is under way.
    probing: bool,
}

/// Whether one source answers, as its accesses found.
#[derive(Debug)]
pub struct Outage {
    /// What the log calls the source.
    source: String,
    /// How long past its freshness a held copy is served while the source
    /// does not answer, in milliseconds (0: never).
    stale_for_ms: AtomicU64,
    counters: Option<Arc<Counters>>,
    state: Mutex<State>,
}

/// What an access may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// The source answers: go.
    Go,
    /// The source is down and this access asks whether it is back.
    Probe,
}

impl Outage {
    pub fn new(source: String, counters: Option<Arc<Counters>>) -> Arc<Outage> {
        Arc::new(Outage {
            source,
            stale_for_ms: AtomicU64::new(DEFAULT_STALE_FOR.as_millis() as u64),
            counters,
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Sets how long past its freshness a held copy is served while the
    /// source does not answer.
    pub fn set_stale_for(&self, d: Duration) {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.stale_for_ms.store(ms, Ordering::Relaxed);
    }

    pub fn stale_for(&self) -> Duration {
        Duration::from_millis(self.stale_for_ms.load(Ordering::Relaxed))
    }

    /// Whether the source did not answer its last access.
    pub fn is_down(&self) -> bool {
        self.state().down_since.is_some()
    }

    /// Whether `past` its freshness is within the stale window.
    pub fn within_stale_window(&self, past: Duration) -> bool {
        past < self.stale_for()
    }

    /// Whether a copy `past` its freshness may be served now: the source
    /// is down and `past` is within the stale window.
    pub fn stale_ok(&self, past: Duration) -> bool {
        past < self.stale_for() && self.is_down()
    }

    /// Counts one serve of a copy past its freshness.
    pub fn served_stale(&self) {
        if let Some(c) = &self.counters {
            c.count(Counter::StaleServes);
        }
    }

    /// Whether an access may ask the source now, at `now`: the error it
    /// fails with at once when not.
    pub fn admit(&self, now: Instant) -> Result<Pass, StorageError> {
        let mut s = self.state();
        let Some(since) = s.down_since else {
            return Ok(Pass::Go);
        };
        if s.probing || s.closed_until.is_some_and(|t| now < t) {
            return Err(StorageError::Unreachable {
                endpoint: self.source.clone(),
                reason: format!(
                    "not answering (for {:.1} s; asked again at most every {} s)",
                    now.saturating_duration_since(since).as_secs_f64(),
                    RETRY_AFTER.as_secs()
                ),
            });
        }
        s.probing = true;
        Ok(Pass::Probe)
    }

    /// What an access `pass` let through found at `now`.
    pub fn record<T>(&self, pass: Pass, now: Instant, result: &Result<T, StorageError>) {
        let mut s = self.state();
        if pass == Pass::Probe {
            s.probing = false;
        }
        match result {
            Err(e) if e.is_outage() => {
                s.closed_until = Some(now + RETRY_AFTER);
                if s.down_since.is_none() {
                    s.down_since = Some(now);
                    drop(s);
                    log::debug!("{SOURCE_DOWN}");
                    let e = novelfs_kit::cause::Chain(e);
                    let stale = self.stale_for();
                    if stale.is_zero() {
                        log::warn!(
                            "{} stopped answering ({e}): nothing held is served in its place (--stale-if-error 0)",
                            self.source
                        );
                    } else {
                        log::warn!(
                            "{} stopped answering ({e}): what was read before is served for up to {} s past its freshness until it answers",
                            self.source,
                            stale.as_secs()
                        );
                    }
                }
            }
            _ => {
                if let Some(since) = s.down_since.take() {
                    s.closed_until = None;
                    drop(s);
                    log::debug!("{SOURCE_UP}");
                    log::warn!(
                        "{} answers again (after {:.1} s)",
                        self.source,
                        now.saturating_duration_since(since).as_secs_f64()
                    );
                }
            }
        }
    }

    /// `access` as one access: failed at once while the source is down and
    /// not probed by it.
    pub fn one<T>(
        &self,
        access: impl FnOnce() -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let pass = self.admit(Instant::now())?;
        let result = access();
        self.record(pass, Instant::now(), &result);
        result
    }
}

/// A storage whose accesses go through an `Outage`.
#[derive(Debug)]
pub struct Guarded {
    inner: Arc<dyn Storage>,
    outage: Arc<Outage>,
}

impl Guarded {
    pub fn new(inner: Arc<dyn Storage>, outage: Arc<Outage>) -> Guarded {
        Guarded { inner, outage }
    }
}

impl Storage for Guarded {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn check(&self) -> Result<(), StorageError> {
        self.outage.one(|| self.inner.check())
    }

    fn list(&self, dir: &RelPath) -> Result<Vec<Entry>, StorageError> {
        self.outage.one(|| self.inner.list(dir))
    }

    fn stat(&self, path: &RelPath) -> Result<Entry, StorageError> {
        self.outage.one(|| self.inner.stat(path))
    }

    fn put(&self, path: &RelPath, bytes: Vec<u8>) -> Result<(), StorageError> {
        self.outage.one(|| self.inner.put(path, bytes))
    }

    fn delete(&self, path: &RelPath) -> Result<(), StorageError> {
        self.outage.one(|| self.inner.delete(path))
    }

    fn read(&self, path: &RelPath, version: Option<&Version>) -> Result<Object, StorageError> {
        self.outage.one(|| self.inner.read(path, version))
    }

    fn read_if_none_match(
        &self,
        path: &RelPath,
        etag: Option<&str>,
    ) -> Result<Option<Object>, StorageError> {
        self.outage
            .one(|| self.inner.read_if_none_match(path, etag))
    }

    fn read_range(
        &self,
        path: &RelPath,
        range: std::ops::Range<u64>,
        version: Option<&Version>,
    ) -> Result<Object, StorageError> {
        self.outage
            .one(|| self.inner.read_range(path, range, version))
    }

    fn counters(&self) -> Option<Arc<Counters>> {
        self.inner.counters()
    }

    /// The batch goes as one access: its first result says whether the
    /// source answers, and each later one is recorded as it comes.
    fn read_many(&self, requests: Vec<ReadRequest>, limits: InFlight) -> ReadMany<'_> {
        let mut pass = match self.outage.admit(Instant::now()) {
            Ok(pass) => pass,
            Err(e) => {
                let n = requests.len();
                return Box::new(std::iter::repeat_n(e, n).map(Err));
            }
        };
        let outage = self.outage.clone();
        Box::new(self.inner.read_many(requests, limits).inspect(move |r| {
            outage.record(pass, Instant::now(), r);
            pass = Pass::Go;
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use novelfs_library::backing::SourceKind;

    fn timeout() -> StorageError {
        StorageError::Timeout {
            what: "GET s3://b/novels/书/第1章.md".into(),
            after: Duration::from_secs(5),
        }
    }

    #[test]
    fn what_is_an_outage_and_what_is_an_answer() {
        assert!(timeout().is_outage());
        assert!(
            StorageError::Unreachable {
                endpoint: "http://127.0.0.1:9".into(),
                reason: "connection refused".into()
            }
            .is_outage()
        );
        let cause = || novelfs_kit::cause::Cause::new(std::io::Error::other("an answer"));
        let server_error = StorageError::ServerError {
            what: "GET s3://b/k".into(),
            status: 503,
            code: Some("SlowDown".into()),
            cause: cause(),
        };
        assert!(server_error.is_outage());
        let reset = StorageError::Broken {
            what: "GET s3://b/k".into(),
            how: "Request".into(),
            cause: cause(),
        };
        assert!(reset.is_outage());
        for answer in [
            StorageError::not_found("novels/书"),
            StorageError::Changed { path: "k".into() },
            StorageError::AccessDenied {
                what: "LIST".into(),
                code: "AccessDenied".into(),
            },
            StorageError::NoBucket {
                bucket: "bucket b".into(),
            },
            StorageError::failed("GET s3://b/k: HTTP 400", std::io::Error::other("an answer")),
        ] {
            assert!(!answer.is_outage(), "{answer}");
        }
    }

    #[test]
    fn after_no_answer_accesses_fail_at_once_then_one_probe_goes() {
        let o = Outage::new("s3://b".into(), None);
        let t0 = Instant::now();
        assert_eq!(o.admit(t0), Ok(Pass::Go));
        assert!(!o.is_down());
        o.record(Pass::Go, t0, &Err::<(), _>(timeout()));
        assert!(o.is_down());
        // Within RETRY_AFTER: every access fails at once.
        let e = o.admit(t0 + RETRY_AFTER / 2).unwrap_err();
        assert_eq!(e.source_kind(), SourceKind::Transient);
        assert!(e.is_outage(), "a fast failure is one of the outage");
        // Then one probe, and only one, goes.
        let later = t0 + RETRY_AFTER;
        assert_eq!(o.admit(later), Ok(Pass::Probe));
        assert!(o.admit(later).is_err(), "a second probe at once");
        // The probe gets no answer: closed again for RETRY_AFTER.
        o.record(Pass::Probe, later, &Err::<(), _>(timeout()));
        assert!(o.admit(later + RETRY_AFTER / 2).is_err());
        let again = later + RETRY_AFTER;
        assert_eq!(o.admit(again), Ok(Pass::Probe));
        // Any answer, a 404 too, says the source is back.
        o.record(
            Pass::Probe,
            again,
            &Err::<(), _>(StorageError::not_found("novels/x")),
        );
        assert!(!o.is_down());
        assert_eq!(o.admit(again), Ok(Pass::Go));
        assert_eq!(o.admit(again), Ok(Pass::Go));
    }

    #[test]
    fn a_refusal_does_not_close_the_circuit() {
        let o = Outage::new("s3://b".into(), None);
        let now = Instant::now();
        let denied = StorageError::AccessDenied {
            what: "GET".into(),
            code: "AccessDenied".into(),
        };
        o.record(Pass::Go, now, &Err::<(), _>(denied));
        assert!(!o.is_down());
        assert_eq!(o.admit(now), Ok(Pass::Go));
    }

    #[test]
    fn stale_copies_serve_only_while_down_and_within_the_window() {
        let counters = Counters::new();
        let o = Outage::new("s3://b".into(), Some(counters.clone()));
        o.set_stale_for(Duration::from_secs(10));
        assert!(!o.stale_ok(Duration::ZERO), "the source answers");
        o.record(Pass::Go, Instant::now(), &Err::<(), _>(timeout()));
        assert!(o.stale_ok(Duration::from_secs(9)));
        assert!(!o.stale_ok(Duration::from_secs(10)), "past the window");
        o.served_stale();
        assert_eq!(counters.get(Counter::StaleServes), 1);
        o.set_stale_for(Duration::ZERO);
        assert!(!o.stale_ok(Duration::ZERO), "switched off");
    }

    #[test]
    fn a_request_of_many_accesses_waits_for_one_timeout_at_most() {
        use std::sync::atomic::AtomicUsize;
        let o = Outage::new("s3://b".into(), None);
        let asked = AtomicUsize::new(0);
        let access = || {
            o.one(|| {
                asked.fetch_add(1, Ordering::Relaxed);
                Err::<(), _>(timeout())
            })
        };
        for _ in 0..10 {
            assert!(access().is_err());
        }
        assert_eq!(asked.load(Ordering::Relaxed), 1, "one access asked");
    }
}
