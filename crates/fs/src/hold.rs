//! A seam for the mount tests, in the real daemon: with
//! `NOVELFS_TEST_HOLD_LOADS=DIR` in its environment, every load of a chapter
//! file bigger than `BIG_CHAPTER_BYTES` creates `DIR/loading.N` once it is
//! under way and then waits until `DIR/release` exists. A test thereby
//! keeps big loads in progress for as long as it needs to check that other
//! requests are answered meanwhile. Unset (always, outside tests), it costs
//! one look at a cached value per big load.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub(crate) const HOLD_LOADS_ENV: &str = "NOVELFS_TEST_HOLD_LOADS";

fn hold_dir() -> Option<&'static PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| novelfs_library::test_switch::var(HOLD_LOADS_ENV).map(PathBuf::from))
        .as_ref()
}

/// Holds the load of a big chapter file while the test says so (the
/// loader calls it for big files only).
pub(crate) fn big_load() {
    let Some(dir) = hold_dir() else {
        return;
    };
    static LOADS: AtomicU64 = AtomicU64::new(0);
    let n = LOADS.fetch_add(1, Ordering::Relaxed);
    let _ = std::fs::write(dir.join(format!("loading.{n}")), b"");
    while !dir.join("release").exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
}
