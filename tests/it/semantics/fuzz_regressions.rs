//! The fuzz harnesses' checks, run as ordinary tests (CI does not run the
//! fuzzer): every committed seed in `fuzz/corpus/<target>/seed-*` and every
//! minimized crash in `fuzz/regressions/<target>/` goes through the same
//! invariant checks as `cargo fuzz run <target>` (see fuzz/README.md).

#[path = "../../../fuzz/checks.rs"]
mod checks;

use std::path::{Path, PathBuf};

/// The committed inputs of one target: its seeds and its regressions.
fn inputs(target: &str) -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut files = Vec::new();
    for (dir, prefix) in [
        (fuzz.join("corpus").join(target), "seed-"),
        (fuzz.join("regressions").join(target), ""),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(prefix)
            {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn run(target: &str, check: fn(&[u8])) {
    let files = inputs(target);
    assert!(!files.is_empty(), "no committed inputs for {target}");
    for path in files {
        let data = std::fs::read(&path).unwrap();
        if let Err(panic) = std::panic::catch_unwind(|| check(&data)) {
            eprintln!("{target}: {} failed", path.display());
            std::panic::resume_unwind(panic);
        }
    }
}

#[test]
fn decode() {
    run("decode", checks::decode);
}

#[test]
fn chapter_number() {
    run("chapter_number", checks::chapter_number);
}

#[test]
fn lookup() {
    run("lookup", checks::lookup);
}

#[test]
fn page_name() {
    run("page_name", checks::page_name);
}

#[test]
fn paging() {
    run("paging", checks::paging);
}
