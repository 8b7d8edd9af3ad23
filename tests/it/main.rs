//! The integration tests, in one binary: each module is one concern
//! (see docs/testing.md). One binary links once instead of once per file.

#[macro_use]
mod common;
mod access;
mod agents;
mod bench_guard;
mod bucket;
mod cli;
mod failover;
mod layout;
mod mount;
mod semantics;
mod sources;
