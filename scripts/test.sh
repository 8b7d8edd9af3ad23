#!/usr/bin/env bash
# Runs every test: unit tests, the reference cases through the CLI and through
# a real FUSE mount, property tests. Needs /dev/fuse and root for the mount tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --all-targets -- --nocapture 2>&1
