//! One loop over the reference cases, run three ways: through the `novelfs
//! read` binary, through `NovelFs` in-process (no FUSE), and through a real
//! mount. Each way answers the same questions; the tree ways also answer
//! for listings, `ERROR` files, sizes and aliases, which the CLI has no
//! notion of.

use std::path::Path;

use serde_json::Value;

use super::{Case, pretty_json};

/// How a way refuses a page: the CLI says the error text, a tree an errno.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    Text(String),
    Errno(i32),
}

/// What `lstat` says of a name in a tree.
#[derive(Debug, PartialEq)]
pub struct Stat {
    pub is_dir: bool,
    pub is_symlink: bool,
    pub size: u64,
    pub blocks: u64,
}

/// A tree of paths relative to the mount's root (components as in the cases).
pub trait Tree {
    /// The bytes of a file, following aliases.
    fn read(&self, path: &[&str]) -> Result<Vec<u8>, i32>;
    /// The names of a directory, following aliases, sorted.
    fn list(&self, path: &[&str]) -> Result<Vec<String>, i32>;
    /// `lstat` of the last component (aliases before it are followed).
    fn lstat(&self, path: &[&str]) -> Result<Stat, i32>;
    fn readlink(&self, path: &[&str]) -> Result<String, i32>;
}

pub trait Way {
    /// Makes the next calls see `state` as the switch file (`None`: no file).
    fn use_state(&mut self, state: Option<&Value>);
    /// The text page (or JSON with `json`) that `case` asks for.
    fn page(&self, case: &Case, json: bool) -> Result<Vec<u8>, Refusal> {
        let tree = self
            .tree()
            .expect("a way without a tree reads pages itself");
        let ext = if json { "json" } else { "txt" };
        let name = format!("{}.{ext}", page_name(case));
        tree.read(&[&case.book, &case.chapter, &name])
            .map_err(Refusal::Errno)
    }
    fn tree(&self) -> Option<&dyn Tree> {
        None
    }
}

pub fn page_name(case: &Case) -> String {
    let offset = case.offset.unwrap_or(1);
    match case.limit {
        Some(l) => format!("offset-{offset}-limit-{l}"),
        None => format!("offset-{offset}"),
    }
}

/// The errno a tree must give for an error case, from the error's text (§2).
pub fn expected_errno(error: &str) -> i32 {
    if error.contains("已在「写作助手功能」UI 中关闭") {
        libc::EACCES
    } else if error.contains("cannot detect text encoding") {
        libc::EIO
    } else {
        // not found, no book, offset out of range, bad limit/offset names,
        // and pages inside an ambiguous directory
        libc::ENOENT
    }
}

/// Runs every case through `way`; panics with every difference found.
pub fn check_every_case(way_name: &str, cases: &[Case], way: &mut dyn Way) {
    let mut failures = Vec::new();
    let mut checks = 0usize;
    let mut check = |ok: bool, what: String| {
        checks += 1;
        if !ok {
            failures.push(what);
        }
    };
    // Cases under a switch state go last, so a mount is re-made only once.
    let (plain, switched): (Vec<_>, Vec<_>) = cases
        .iter()
        .enumerate()
        .partition(|(_, c)| c.state.is_none());
    way.use_state(None);
    let mut state: Option<&Value> = None;
    for (n, case) in plain.into_iter().chain(switched) {
        if case.state.as_ref() != state {
            state = case.state.as_ref();
            way.use_state(state);
        }
        let label = format!(
            "{way_name} case {n}: {}/{}/{}",
            case.book,
            case.chapter,
            page_name(case)
        );
        if let Some(error) = &case.error {
            for json in [false, true] {
                let got = way.page(case, json);
                let ok = match &got {
                    Err(Refusal::Text(t)) => t == error,
                    Err(Refusal::Errno(e)) => *e == expected_errno(error),
                    Ok(_) => false,
                };
                check(
                    ok,
                    format!("{label} (json: {json}): want {error:?}, got {got:?}"),
                );
            }
            if let Some(tree) = way.tree() {
                check_error_files(tree, case, error, &label, &mut check);
            }
            continue;
        }
        let want_text = case.text.as_deref().expect("a page case has text");
        let want_json = pretty_json(case.json.as_ref().expect("a page case has json"));
        for (json, want) in [(false, want_text), (true, want_json.as_str())] {
            let got = way.page(case, json);
            check(
                got.as_deref().ok() == Some(want.as_bytes()),
                format!(
                    "{label} (json: {json}) differs: {:?}",
                    got.map(|b| String::from_utf8_lossy(&b).into_owned())
                ),
            );
        }
        if let Some(tree) = way.tree() {
            check_page_tree(tree, case, [want_text, &want_json], &label, &mut check);
        }
    }
    println!(
        "reference cases {way_name}: {} cases, {checks} checks, {} failures",
        cases.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {checks} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn check_error_files(
    tree: &dyn Tree,
    case: &Case,
    error: &str,
    label: &str,
    check: &mut impl FnMut(bool, String),
) {
    let body = format!("{error}\n");
    if case.state.is_some() {
        let root = tree.list(&[]);
        check(
            root.as_deref() == Ok(&["ERROR".to_string()][..]),
            format!("{label}: switched off, the root lists {root:?}"),
        );
        let got = tree.read(&["ERROR"]);
        check(
            got.as_deref() == Ok(body.as_bytes()),
            format!("{label}: switched off, ERROR holds {got:?}"),
        );
    } else if error.contains("无法确定要哪一份") || error.contains("cannot detect text encoding")
    {
        let dir = [case.book.as_str(), case.chapter.as_str()];
        let listing = tree.list(&dir);
        check(
            listing.as_deref() == Ok(&["ERROR".to_string()][..]),
            format!("{label}: listing {listing:?}, want only ERROR"),
        );
        let got = tree.read(&[&case.book, &case.chapter, "ERROR"]);
        check(
            got.as_deref() == Ok(body.as_bytes()),
            format!("{label}: ERROR holds {got:?}, want {error:?}"),
        );
    }
}

fn check_page_tree(
    tree: &dyn Tree,
    case: &Case,
    wants: [&str; 2],
    label: &str,
    check: &mut impl FnMut(bool, String),
) {
    for (ext, want) in ["txt", "json"].into_iter().zip(wants) {
        let name = format!("{}.{ext}", page_name(case));
        let got = tree.lstat(&[&case.book, &case.chapter, &name]);
        let len = want.len() as u64;
        check(
            matches!(&got, Ok(s) if !s.is_dir && s.size == len && s.blocks == len.div_ceil(512)),
            format!("{label}.{ext}: lstat {got:?}, want size {len}"),
        );
    }
    let file = case.json.as_ref().unwrap()["file"].as_str().unwrap();
    let dir = [case.book.as_str(), case.chapter.as_str()];
    let stat = tree.lstat(&dir);
    if case.chapter == file {
        check(
            matches!(&stat, Ok(s) if s.is_dir),
            format!("{label}: a file name must be a directory, got {stat:?}"),
        );
    } else {
        let target = tree.readlink(&dir);
        check(
            matches!(&stat, Ok(s) if s.is_symlink) && target.as_deref() == Ok(file),
            format!("{label}: alias should be a symlink to {file:?}, got {stat:?} -> {target:?}"),
        );
    }
    if let Some(chain) = &case.chain {
        let mut want: Vec<String> = chain
            .iter()
            .flat_map(|o| [format!("offset-{o}.json"), format!("offset-{o}.txt")])
            .collect();
        want.sort();
        let got = tree.list(&dir);
        check(
            got.as_ref() == Ok(&want),
            format!("{label}: listing {got:?}, want {want:?}"),
        );
    }
}

/// A tree read through the real filesystem below `root` (a mount point).
pub struct PathTree<'a>(pub &'a Path);

impl PathTree<'_> {
    fn at(&self, path: &[&str]) -> std::path::PathBuf {
        path.iter().fold(self.0.to_path_buf(), |p, c| p.join(c))
    }
}

fn errno(e: std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(-1)
}

impl Tree for PathTree<'_> {
    fn read(&self, path: &[&str]) -> Result<Vec<u8>, i32> {
        std::fs::read(self.at(path)).map_err(errno)
    }
    fn list(&self, path: &[&str]) -> Result<Vec<String>, i32> {
        let mut names = std::fs::read_dir(self.at(path))
            .map_err(errno)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(errno)?;
        names.sort();
        Ok(names)
    }
    fn lstat(&self, path: &[&str]) -> Result<Stat, i32> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(self.at(path)).map_err(errno)?;
        Ok(Stat {
            is_dir: m.is_dir(),
            is_symlink: m.file_type().is_symlink(),
            size: m.len(),
            blocks: m.blocks(),
        })
    }
    fn readlink(&self, path: &[&str]) -> Result<String, i32> {
        std::fs::read_link(self.at(path))
            .map(|t| t.to_string_lossy().into_owned())
            .map_err(errno)
    }
}
