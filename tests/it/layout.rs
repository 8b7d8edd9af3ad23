//! The source layout's rules, checked on the sources themselves: the tree
//! (`src/fs`) never talks to FUSE, and no two files import each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The code of a file, without comments (a comment may name fuser).
fn code(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_tree_never_imports_fuser() {
    let mut files = Vec::new();
    rust_files(&src().join("fs"), &mut files);
    assert!(files.len() > 5, "src/fs holds the tree");
    for f in files {
        let code = code(&f);
        assert!(
            !code.contains("fuser"),
            "{} uses fuser: the tree stays FUSE-free (the adapter is src/mount/fuse.rs)",
            f.display()
        );
    }
}

/// The module path of a source file: `src/mount/attach.rs` is
/// `mount::attach`, `src/fs/freshness/mod.rs` is `fs::freshness`.
fn module_of(file: &Path) -> String {
    let rel = file.strip_prefix(src()).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts.join("::")
}

/// The modules a file's code names through `crate::…` or `super::…`,
/// resolved to module paths of files that exist.
fn imports(file: &Path, code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let me = module_of(file);
    let is_mod_rs = matches!(
        file.file_stem().and_then(|s| s.to_str()),
        Some("mod" | "lib")
    );
    let mut parent: Vec<&str> = me.split("::").filter(|s| !s.is_empty()).collect();
    if !is_mod_rs {
        parent.pop();
    }
    let mut found = BTreeSet::new();
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent)] {
        for (i, _) in code.match_indices(prefix) {
            if code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest = &code[i + prefix.len()..];
            let path: Vec<&str> = rest
                .split("::")
                .map(|seg| {
                    seg.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .next()
                        .unwrap_or("")
                })
                .take_while(|seg| !seg.is_empty())
                .collect();
            let mut full: Vec<&str> = base.clone();
            for seg in path {
                full.push(seg);
                let candidate = full.join("::");
                if modules.contains(&candidate) && candidate != me {
                    found.insert(candidate);
                }
            }
        }
    }
    // A module's own children are not imports of it.
    found.retain(|m| !m.starts_with(&format!("{me}::")) || me.is_empty());
    found
}

#[test]
fn no_two_files_import_each_other() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        // Unit tests may reach anywhere.
        let code = code(f);
        let code = code.split("#[cfg(test)]").next().unwrap_or("");
        graph.insert(module_of(f), imports(f, code, &modules));
    }
    assert!(
        graph["mount::session"].contains("mount::attach"),
        "the import scan sees `use super::attach`"
    );
    let mut cycles = Vec::new();
    for (a, targets) in &graph {
        for b in targets {
            if a < b && graph.get(b).is_some_and(|t| t.contains(a)) {
                cycles.push(format!("{a} <-> {b}"));
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "files that import each other: {cycles:?}"
    );
}
