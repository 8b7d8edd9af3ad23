//! `cargo fuzz run paging` — the invariants are in `fuzz/checks.rs`
//! (`checks::paging`), shared with `tests/fuzz_regressions.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::paging(data));
