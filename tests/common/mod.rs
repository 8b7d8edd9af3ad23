//! Shared test support: the reference library and its cases.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

/// One line of `tests/golden/cases.jsonl` (format in tests/golden/README.md).
#[derive(Debug, Clone)]
pub struct Case {
    pub book: String,
    pub chapter: String,
    pub offset: Option<u64>,
    pub limit: Option<u64>,
    pub text: Option<String>,
    pub json: Option<Value>,
    pub chain: Option<Vec<u64>>,
    pub error: Option<String>,
    pub state: Option<Value>,
}

pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Builds the reference library in a fresh temp dir; returns (guard, canonical root).
pub fn reference_library() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("lib");
    let status = std::process::Command::new("python3")
        .arg(golden_dir().join("make_library.py"))
        .arg(&root)
        .status()
        .expect("python3 runs");
    assert!(status.success(), "make_library.py failed");
    let root = std::fs::canonicalize(&root).unwrap();
    (dir, root)
}

/// The cases with `@ROOT@` replaced by `root`.
pub fn cases(root: &Path) -> Vec<Case> {
    let raw = std::fs::read_to_string(golden_dir().join("cases.jsonl")).expect("cases.jsonl");
    let root = root.to_str().unwrap();
    raw.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: Value = serde_json::from_str(&line.replace("@ROOT@", root)).expect("case parses");
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            Case {
                book: s("book").unwrap(),
                chapter: s("chapter").unwrap(),
                offset: v.get("offset").and_then(Value::as_u64),
                limit: v.get("limit").and_then(Value::as_u64),
                text: s("text"),
                json: v.get("json").cloned(),
                chain: v.get("chain").and_then(Value::as_array).map(|a| a.iter().map(|x| x.as_u64().unwrap()).collect()),
                error: s("error"),
                state: v.get("state").cloned(),
            }
        })
        .collect()
}

/// The exact bytes `JSON.stringify(v, null, 2) + "\n"` gives for a golden value
/// (serde_json keeps key order with `preserve_order`).
pub fn pretty_json(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap() + "\n"
}
