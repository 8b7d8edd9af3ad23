#!/usr/bin/env bash
# Runs every test: unit tests, the reference cases through the CLI and through
# a real FUSE mount, property tests, and the vendored fuser's own unit tests
# (with its io_uring transport), and the storage crate's tests (S3 ones
# against moto_server through tests/s3/proxy.py). Needs /dev/fuse and root
# for the mount tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --all-targets -- --nocapture 2>&1
cargo test -p fuser --all-targets --features io-uring 2>&1
cargo test -p novelfs-storage --all-targets -- --nocapture 2>&1
