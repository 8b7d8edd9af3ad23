//! `cargo fuzz run lookup` — the invariants are in `fuzz/checks.rs`
//! (`checks::lookup`), shared with `tests/fuzz_regressions.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::lookup(data));
