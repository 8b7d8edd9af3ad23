#!/usr/bin/env bash
# Runs every test: unit tests, the reference cases through the CLI and through
# a real FUSE mount, property tests, and the vendored fuser's own unit tests
# (with its io_uring transport). The workspace's default members include
# the storage crate, whose S3 tests run against moto_server through
# tests/s3/proxy.py. Needs /dev/fuse and root for the mount tests.
# Every part runs even when one before it fails; the failures are listed at
# the end and the exit status is 1 if any part failed.
set -uo pipefail
cd "$(dirname "$0")/.."
failed=()
part() {
    local name=$1
    shift
    echo "=== $name: $*"
    if ! "$@" 2>&1; then
        failed+=("$name")
    fi
}
# The release build is the second build tests/it/failover/upgrade.rs upgrades a
# mount to and back (after .ci/run's package build, nothing to do).
part release cargo build --release --locked
# --no-fail-fast: a failing test binary does not keep the others from running.
# The tests' switches (crates/library/src/test_switch.rs) are read only
# with this feature; the release build above has none.
part novelfs cargo test --all-targets --no-fail-fast --features novelfs/test-switches -- --nocapture
part fuser cargo test -p fuser --all-targets --no-fail-fast --features io-uring
if [ ${#failed[@]} -gt 0 ]; then
    echo "scripts/test.sh: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "scripts/test.sh: every part passed"
