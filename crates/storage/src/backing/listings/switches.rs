//! The tests' switches of the listings: each mechanism they name is
//! switched off, to show it matters.

/// The environment variable naming the mechanisms switched off, for the
/// tests that show each one matters: `stale` (a listing past its TTL is
/// made again before it is served), `ahead` (no directory is listed
/// ahead of a walker) and `listed` (a chapter is opened from its
/// directory's listing within its TTL only: `BucketBacking::open`).
pub(super) const OFF_ENV: &str = "NOVELFS_TEST_LISTINGS_OFF";

pub(in crate::backing) fn switched_off(mechanism: &str) -> bool {
    novelfs_library::test_switch::lists(OFF_ENV, mechanism)
}
