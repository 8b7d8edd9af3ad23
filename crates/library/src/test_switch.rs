//! The switches the tests turn mechanisms off with, or plant faults
//! through (`NOVELFS_TEST_*`, `NOVELFS_AHEAD_OFF`): read from the
//! environment only in a build with the `test-switches` feature, which
//! `scripts/test.sh` turns on. A release build never reads them, so no
//! variable in a user's environment changes what the product does.

/// The switch `name`'s value, in a build with test switches; else `None`.
#[inline]
pub fn var(name: &str) -> Option<String> {
    #[cfg(feature = "test-switches")]
    {
        std::env::var(name).ok()
    }
    #[cfg(not(feature = "test-switches"))]
    {
        let _ = name;
        None
    }
}

/// Whether the comma-separated list in switch `name` names `member`.
#[inline]
pub fn lists(name: &str, member: &str) -> bool {
    var(name).is_some_and(|v| v.split(',').any(|m| m.trim() == member))
}
