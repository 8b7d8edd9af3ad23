//! The counters as Prometheus metrics (`novelfs status --prometheus`):
//! each counter's metric, the label that sets it apart from the others of
//! that metric, and the metric's help.

use crate::counters::Counter;

impl Counter {
    /// Its Prometheus metric, the label that sets it apart from the others
    /// of that metric, and the metric's help.
    pub fn metric(
        self,
    ) -> (
        &'static str,
        Option<(&'static str, &'static str)>,
        &'static str,
    ) {
        const REQUESTS: &str = "novelfs_requests_total";
        const REQUESTS_HELP: &str =
            "HTTP requests the bucket answered (any status), retries included, by kind";
        const UNANSWERED: &str = "novelfs_unanswered_total";
        const UNANSWERED_HELP: &str = "HTTP attempts that got no answer from the bucket \
                                       (refused, reset or timed out before a response), by kind";
        let kind = |k| Some(("kind", k));
        match self {
            Counter::List => (REQUESTS, kind("list"), REQUESTS_HELP),
            Counter::Get => (REQUESTS, kind("get"), REQUESTS_HELP),
            Counter::RangedGet => (REQUESTS, kind("ranged_get"), REQUESTS_HELP),
            Counter::Head => (REQUESTS, kind("head"), REQUESTS_HELP),
            Counter::Put => (REQUESTS, kind("put"), REQUESTS_HELP),
            Counter::Other => (REQUESTS, kind("other"), REQUESTS_HELP),
            Counter::NotModified => (
                "novelfs_not_modified_total",
                None,
                "Conditional GETs answered 304 Not Modified",
            ),
            Counter::Retries => (
                "novelfs_retries_total",
                None,
                "HTTP attempts of an access after its first",
            ),
            Counter::Errors => (
                "novelfs_errors_total",
                None,
                "Accesses to the bucket that failed once retries were spent",
            ),
            Counter::BytesFetched => (
                "novelfs_fetched_bytes_total",
                None,
                "Bytes of object bodies received from the bucket",
            ),
            Counter::CacheHits => (
                "novelfs_body_cache_hits_total",
                None,
                "Chapter reads the bodies' cache answered",
            ),
            Counter::CacheMisses => (
                "novelfs_body_cache_misses_total",
                None,
                "Chapter reads the bodies' cache did not hold",
            ),
            Counter::StaleServes => (
                "novelfs_stale_serves_total",
                None,
                "Reads served from what was held while the bucket could not be asked",
            ),
            Counter::ListUnanswered => (UNANSWERED, kind("list"), UNANSWERED_HELP),
            Counter::GetUnanswered => (UNANSWERED, kind("get"), UNANSWERED_HELP),
            Counter::RangedGetUnanswered => (UNANSWERED, kind("ranged_get"), UNANSWERED_HELP),
            Counter::HeadUnanswered => (UNANSWERED, kind("head"), UNANSWERED_HELP),
            Counter::PutUnanswered => (UNANSWERED, kind("put"), UNANSWERED_HELP),
            Counter::OtherUnanswered => (UNANSWERED, kind("other"), UNANSWERED_HELP),
        }
    }
}
