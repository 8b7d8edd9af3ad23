//! Every `unsafe` block and `unsafe impl` of the sources says why it is
//! sound: a `// SAFETY:` comment directly above it, attributes and the
//! rest of the comment allowed between, or above the first line of the
//! statement it is written in (`let table =` on one line, `unsafe { … }`
//! on the next). clippy's `undocumented_unsafe_blocks` asks the same where
//! a crate denies it; this holds for every crate of the workspace
//! (`src/`, `crates/`; not `vendor/`, not `tests/`) on every test run.

use std::path::{Path, PathBuf};

/// Whether an `r` after `before` starts a raw string (`r"…"`, `br"…"`)
/// rather than ends a name.
fn raw_prefix(before: &[char]) -> bool {
    let word = |c: &char| c.is_alphanumeric() || *c == '_';
    match before {
        [.., p, 'b'] => !word(p),
        [.., p] => !word(p),
        [] => true,
    }
}

/// `text` with its comments and the insides of its string and char
/// literals blanked to spaces, lines kept where they are, so that a word
/// found in it is code.
pub(super) fn code_only(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(s[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && matches!(next, Some('"' | '#')) && raw_prefix(&s[..i]) {
            // A raw string: `r"…"`, `r#"…"#`.
            let hashes = s[i + 1..].iter().take_while(|&&h| h == '#').count();
            if s.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            out.push('"');
            i += 2 + hashes;
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            while i < s.len() && !s[i..].starts_with(&close) {
                out.push(blank(s[i]));
                i += 1;
            }
            out.push('"');
            i += close.len();
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < s.len() && s[i] != '"' {
                if s[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if let Some(&e) = s.get(i) {
                    out.push(blank(e));
                }
                i += 1;
            }
            out.push('"');
            i += 1;
        } else if c == '\'' && (next == Some('\\') || s.get(i + 2) == Some(&'\'')) {
            // A char literal (`'"'`, `'\''`); a lifetime stays as it is.
            out.push_str("   ");
            i += 3;
            if next == Some('\\') {
                // `'\''`, `'\u{…}'`: on to the closing quote.
                while i < s.len() && s[i] != '\'' {
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The lines (from 1) of `text` that open an `unsafe` block or an
/// `unsafe impl`.
fn unsafe_lines(text: &str) -> Vec<usize> {
    let code = code_only(text);
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = Vec::new();
    for (at, _) in code.match_indices("unsafe") {
        let before = code[..at].chars().next_back();
        let after = &code[at + "unsafe".len()..];
        if before.is_some_and(word) || after.chars().next().is_some_and(word) {
            continue;
        }
        let rest = after.trim_start();
        let opens = rest.starts_with('{')
            || (rest.starts_with("impl") && !rest["impl".len()..].starts_with(word));
        if opens {
            found.push(code[..at].matches('\n').count() + 1);
        }
    }
    found
}

/// Whether the `unsafe` on line `line` (from 1) has its `// SAFETY:`:
/// going up from it past comment lines, attributes, and the earlier
/// lines of the statement it is in (code lines that end neither a
/// statement nor a block: no `;`, `{` or `}` last), a comment line saying
/// `SAFETY:` comes before a blank line or a line that ends a statement.
fn documented(text: &str, code: &str, line: usize) -> bool {
    let raw: Vec<&str> = text.lines().collect();
    let code: Vec<&str> = code.lines().collect();
    for i in (0..line - 1).rev() {
        let above = raw[i].trim();
        if above.starts_with("//") {
            if above.contains("SAFETY:") {
                return true;
            }
        } else if above.starts_with("#[") || above.starts_with("#![") {
            continue;
        } else {
            let ends = code[i].trim_end().chars().next_back();
            if ends.is_none_or(|c| matches!(c, ';' | '{' | '}')) {
                return false;
            }
        }
    }
    false
}

/// Every `unsafe` of `text` without its `// SAFETY:`, as the lines (from
/// 1) it opens on.
pub(super) fn undocumented_unsafe(text: &str) -> Vec<usize> {
    let code = code_only(text);
    unsafe_lines(text)
        .into_iter()
        .filter(|&l| !documented(text, &code, l))
        .collect()
}

/// The Rust files under `dir`, but none under a `tests` folder.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path
                .file_name()
                .is_some_and(|n| n != "tests" && n != "target")
            {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_unsafe_block_says_why_it_is_sound() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    sources(&root.join("crates"), &mut files);
    let mut blocks = 0;
    let mut missing = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        blocks += unsafe_lines(&text).len();
        for line in undocumented_unsafe(&text) {
            let name = file.strip_prefix(root).unwrap_or(file).display();
            missing.push(format!("{name}:{line}"));
        }
    }
    // The scan finds the blocks there are (src/mount alone holds dozens).
    assert!(blocks > 50, "only {blocks} unsafe blocks found");
    assert!(
        missing.is_empty(),
        "unsafe without a `// SAFETY:` comment directly above (why it is sound):\n{}",
        missing.join("\n")
    );
}

#[test]
fn an_unsafe_block_without_its_safety_comment_fails() {
    let text = r##"
fn ok() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    // SAFETY: the mapping is SLOTS aligned u64s, written only as
    // atomics.
    let table: &'static [AtomicU64] =
        unsafe { std::slice::from_raw_parts(at.cast(), SLOTS) };
    // SAFETY: only the lines above count.
    #[allow(clippy::cast_possible_wrap)]
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    let s = "unsafe { not code }"; // unsafe { nor this }
    let r = r#"unsafe { "nor" this }"#;
    /* unsafe { nor this } */
    let unsafely = 1;
    let q = ('"', '\'', "\"unsafe {", b'"', &'a' as &'static char);
}

// SAFETY: Cell is only touched on the thread that owns the pool.
unsafe impl Send for Pool {}

fn planted() {
    let uid = unsafe { libc::geteuid() };
    // A comment, but not why.
    unsafe { libc::_exit(0) }
    // SAFETY: far above: a statement ends between.
    let a = 1;
    let b =
        unsafe { std::mem::zeroed() };
}

unsafe impl Sync for Pool {}
"##;
    assert_eq!(unsafe_lines(text).len(), 8, "{:?}", unsafe_lines(text));
    assert_eq!(undocumented_unsafe(text), vec![25, 27, 31, 34]);
}
