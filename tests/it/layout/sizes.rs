//! How big a part of the sources may grow: a file holds at most
//! `MAX_LINES` lines before its unit tests (`#[cfg(test)]`), and a folder
//! at most `MAX_FILES` files, so that each file is one job read at once
//! and each folder's names say what is in it. Files that only tests read
//! (declared under `#[cfg(test)]`, as `tests.rs` and `*_tests.rs` are)
//! have no bound.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Lines of a source file before its unit tests.
pub(super) const MAX_LINES: usize = 400;

/// Files in one folder of sources.
pub(super) const MAX_FILES: usize = 15;

/// The lines of `text` before its first `#[cfg(test)]` line.
fn lines_before_tests(text: &str) -> usize {
    text.lines()
        .take_while(|l| !l.starts_with("#[cfg(test)]"))
        .count()
}

/// Every size bound the sources under `src` break: `files` are its Rust
/// files, each with whether only tests read it; `name` gives a file's
/// name in a report (its path from the workspace).
pub(super) fn size_problems(
    files: &[(PathBuf, bool)],
    name: impl Fn(&Path) -> String,
) -> Vec<String> {
    let mut found = Vec::new();
    let mut per_folder: BTreeMap<&Path, usize> = BTreeMap::new();
    for (file, test) in files {
        *per_folder.entry(file.parent().unwrap()).or_default() += 1;
        if *test {
            continue;
        }
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let lines = lines_before_tests(&text);
        let shown = name(file);
        if lines > MAX_LINES {
            found.push(format!(
                "{shown} has {lines} lines before its tests (at most {MAX_LINES}): split it by job"
            ));
        }
    }
    for (folder, n) in per_folder {
        if n > MAX_FILES {
            found.push(format!(
                "{} holds {n} files (at most {MAX_FILES}): group them into folders by what they do",
                name(folder)
            ));
        }
    }
    found
}

/// A fake folder of sources: `files` as (name, lines before tests, test
/// only), each file that many lines and then a test module.
fn fake_sources(files: &[(&str, usize, bool)]) -> (tempfile::TempDir, Vec<(PathBuf, bool)>) {
    let dir = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    for &(name, lines, test) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut text = "// code\n".repeat(lines);
        text.push_str("#[cfg(test)]\nmod tests {\n");
        text.push_str(&"    // test\n".repeat(MAX_LINES * 2));
        text.push_str("}\n");
        std::fs::write(&path, text).unwrap();
        out.push((path, test));
    }
    (dir, out)
}

#[test]
fn a_long_file_or_a_full_folder_fails_and_tests_are_free() {
    let (dir, files) = fake_sources(&[
        ("a/within.rs", MAX_LINES, false),
        ("a/long_tests.rs", MAX_LINES * 3, true),
        ("b/long.rs", MAX_LINES + 1, false),
    ]);
    let name = |p: &Path| p.strip_prefix(dir.path()).unwrap().display().to_string();
    let found = size_problems(&files, name);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("b/long.rs has 401 lines"), "{found:?}");

    let many: Vec<(String, usize, bool)> = (0..=MAX_FILES)
        .map(|i| (format!("full/f{i}.rs"), 1, i == 0))
        .collect();
    let many: Vec<(&str, usize, bool)> =
        many.iter().map(|(n, l, t)| (n.as_str(), *l, *t)).collect();
    let (dir, files) = fake_sources(&many);
    let name = |p: &Path| p.strip_prefix(dir.path()).unwrap().display().to_string();
    let found = size_problems(&files, name);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("full holds 16 files"), "{found:?}");
}
