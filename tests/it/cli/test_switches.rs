//! The tests' switches (`NOVELFS_TEST_*`, `NOVELFS_AHEAD_OFF`) are read
//! only by a build with the `test-switches` feature: the release binary
//! (`scripts/test.sh` builds it first, as the package does) holds none of
//! their names, so nothing in a user's environment reaches them, while the
//! binary these tests run was built with them.

use crate::failover::upgrade::release_build;

const NAMES: [&str; 2] = ["NOVELFS_TEST_", "NOVELFS_AHEAD_OFF"];

fn holds(binary: &std::path::Path, name: &str) -> bool {
    let bytes = std::fs::read(binary).unwrap();
    bytes.windows(name.len()).any(|w| w == name.as_bytes())
}

#[test]
fn the_release_binary_reads_no_test_switch() {
    let tests_binary = std::path::Path::new(env!("CARGO_BIN_EXE_novelfs"));
    // The check can tell: the binary the tests run reads them.
    for name in NAMES {
        assert!(holds(tests_binary, name), "the tests' binary reads {name}");
    }
    let Some(release) = release_build() else {
        crate::common::skip("no release build newer than the sources (cargo build --release)");
        return;
    };
    for name in NAMES {
        assert!(
            !holds(&release, name),
            "{} reads the test switch {name}",
            release.display()
        );
    }
}
