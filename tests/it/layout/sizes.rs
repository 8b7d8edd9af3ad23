//! How big a part of the sources may grow: a file holds at most
//! `MAX_LINES` product lines (every line outside the items gated on
//! `#[cfg(test)]`, wherever those sit in the file), and a folder at most
//! `MAX_FILES` files, so that each file is one job read at once and each
//! folder's names say what is in it. Files that only tests read (declared
//! under `#[cfg(test)]`, as `tests.rs` and `*_tests.rs` are) have no
//! bound. Today's offenders are `HELD` at their size until split.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Product lines of a source file.
pub(super) const MAX_LINES: usize = 400;

/// Files in one folder of sources.
pub(super) const MAX_FILES: usize = 15;

/// Whether a line of code is an attribute that leaves what follows out
/// of every build but the tests'.
fn gates_on_test(code_line: &str) -> bool {
    let l: String = code_line.chars().filter(|c| !c.is_whitespace()).collect();
    l.starts_with("#[cfg(test)]") || l.starts_with("#[cfg(all(test,")
}

/// The lines of `text` outside the items gated on `#[cfg(test)]`,
/// wherever they sit: a `#[cfg(test)] mod seams;` declaration, a `mod
/// tests { … }` block at the end or in the middle, a test-only `fn`,
/// `impl` or `use`. An item runs from its attribute to the `;` or the
/// closing brace that ends it (comments and strings are not code).
pub(super) fn product_lines(text: &str) -> usize {
    let code = super::safety::code_only(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut product = 0;
    let mut i = 0;
    'lines: while i < lines.len() {
        if !gates_on_test(lines[i]) {
            product += 1;
            i += 1;
            continue;
        }
        // The attribute's own line, then on to the end of its item:
        // past the attribute's `]`, the first `;` or `,` (a field, an
        // argument) outside any bracket, or the `}` that closes the
        // item's first brace; a bracket closing what the item is in ends
        // it on the line before, which is product code again.
        let start = i;
        let mut depth = 0i32;
        let mut opened = false;
        let mut in_attr = true;
        'item: while i < lines.len() {
            for c in lines[i].chars() {
                match c {
                    '[' | '(' => depth += 1,
                    '{' if !in_attr => {
                        depth += 1;
                        opened = true;
                    }
                    ']' | ')' | '}' => {
                        depth -= 1;
                        if in_attr && depth == 0 {
                            in_attr = false;
                        } else if depth < 0 {
                            i += usize::from(i == start);
                            continue 'lines;
                        } else if c == '}' && opened && depth == 0 {
                            break 'item;
                        }
                    }
                    ';' | ',' if !in_attr && depth == 0 && !opened => break 'item,
                    _ => {}
                }
            }
            i += 1;
        }
        i += 1;
    }
    product
}

/// Every size bound the sources under `src` break: `files` are its Rust
/// files, each with whether only tests read it; `name` gives a file's
/// name in a report (its path from the workspace). A file or folder in
/// `held` (name, size) may be as big as its entry says and no bigger;
/// each entry that holds an offender today goes into `used`.
pub(super) fn size_problems<'h>(
    files: &[(PathBuf, bool)],
    name: impl Fn(&Path) -> String,
    held: &[(&'h str, usize)],
    used: &mut BTreeSet<&'h str>,
) -> Vec<String> {
    let mut found = Vec::new();
    let mut per_folder: BTreeMap<&Path, usize> = BTreeMap::new();
    let mut check = |shown: String, size: usize, max: usize, what: &str, how: &str| {
        if size <= max {
            return;
        }
        match held.iter().find(|(n, _)| *n == shown) {
            Some(&(n, bound)) => {
                used.insert(n);
                if size > bound {
                    found.push(format!(
                        "{shown} has {size} {what}, more than the {bound} it is held at \
                         (at most {max}): {how}, do not grow it"
                    ));
                }
            }
            None => found.push(format!("{shown} has {size} {what} (at most {max}): {how}")),
        }
    };
    for (file, test) in files {
        *per_folder.entry(file.parent().unwrap()).or_default() += 1;
        if *test {
            continue;
        }
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        check(
            name(file),
            product_lines(&text),
            MAX_LINES,
            "product lines",
            "split it by job",
        );
    }
    for (folder, n) in per_folder {
        check(
            name(folder),
            n,
            MAX_FILES,
            "files",
            "group them into folders by what they do",
        );
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

/// The size problems of `files` under `dir`, named from `dir`.
fn problems_in(
    dir: &tempfile::TempDir,
    files: &[(PathBuf, bool)],
    held: &[(&'static str, usize)],
) -> (Vec<String>, BTreeSet<&'static str>) {
    let name = |p: &Path| p.strip_prefix(dir.path()).unwrap().display().to_string();
    let mut used = BTreeSet::new();
    let found = size_problems(files, name, held, &mut used);
    (found, used)
}

#[test]
fn a_long_file_or_a_full_folder_fails_and_tests_are_free() {
    let (dir, files) = fake_sources(&[
        ("a/within.rs", MAX_LINES, false),
        ("a/long_tests.rs", MAX_LINES * 3, true),
        ("b/long.rs", MAX_LINES + 1, false),
    ]);
    let (found, _) = problems_in(&dir, &files, &[]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("b/long.rs has 401 product lines"),
        "{found:?}"
    );

    let many: Vec<(String, usize, bool)> = (0..=MAX_FILES)
        .map(|i| (format!("full/f{i}.rs"), 1, i == 0))
        .collect();
    let many: Vec<(&str, usize, bool)> =
        many.iter().map(|(n, l, t)| (n.as_str(), *l, *t)).collect();
    let (dir, files) = fake_sources(&many);
    let (found, _) = problems_in(&dir, &files, &[]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("full has 16 files"), "{found:?}");
}

/// Product lines are counted wherever the tests sit: a `#[cfg(test)] mod
/// seams;` at the top no longer hides the file below it.
#[test]
fn product_lines_after_a_test_module_at_the_top_count() {
    let product = "fn f() {\n    let x = [0u8; 4];\n}\n".repeat(MAX_LINES / 3 + 1);
    let planted = format!(
        "#[cfg(test)]\nmod seams;\n{product}\
         struct S {{\n    a: u8,\n    #[cfg(test)]\n    seams: Vec<u8>,\n}}\n\
         #[cfg(test)]\n#[allow(dead_code)]\nfn helper() -> [u8; 2] {{\n    // }} a brace in a comment\n    let s = \"}}\";\n    [0; 2]\n}}\n\
         #[cfg(test)] use std::collections::BTreeMap;\n\
         #[cfg(test)]\nimpl Thing {{\n    fn g() {{}}\n}}\n\
         #[cfg(test)]\nmod tests {{\n    #[test]\n    fn t() {{\n        assert!(true);\n    }}\n}}\n\
         #[cfg(any(test, feature = \"memory\"))]\npub mod memory;\n"
    );
    // The product code, the struct but its test-only field, and the last
    // two lines (built outside tests too).
    assert_eq!(product_lines(&planted), (MAX_LINES / 3 + 1) * 3 + 3 + 2);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("source/mod.rs");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, &planted).unwrap();
    let files = vec![(file, false)];
    let (found, _) = problems_in(&dir, &files, &[]);
    assert_eq!(
        found,
        vec!["source/mod.rs has 407 product lines (at most 400): split it by job"]
    );
}

/// A file held at its size of today passes at that size and fails one
/// line over it; one not held fails over the bound.
#[test]
fn a_held_file_fails_when_it_grows() {
    let (dir, files) = fake_sources(&[
        ("a/held.rs", MAX_LINES + 20, false),
        ("a/new.rs", MAX_LINES + 1, false),
    ]);
    let (found, used) = problems_in(&dir, &files, &[("a/held.rs", MAX_LINES + 20)]);
    assert_eq!(
        found,
        vec!["a/new.rs has 401 product lines (at most 400): split it by job"]
    );
    assert_eq!(used, ["a/held.rs"].into());
    let (found, _) = problems_in(&dir, &files, &[("a/held.rs", MAX_LINES + 19)]);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with("a/held.rs has 420 product lines, more than the 419 it is held at"),
        "{found:?}"
    );
}

/// Today's files over `MAX_LINES` product lines and folders over
/// `MAX_FILES` files (by their path from the workspace), each held at its
/// size of today until it is split: one that grows fails, and so does an
/// entry for one that is within the bound again (drop it then). A new
/// offender is never added here: split it.
pub(super) const HELD: &[(&str, usize)] = &[];
