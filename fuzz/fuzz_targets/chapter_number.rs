//! `cargo fuzz run chapter_number` — the invariants are in `fuzz/checks.rs`
//! (`checks::chapter_number`), shared with `tests/fuzz_regressions.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::chapter_number(data));
