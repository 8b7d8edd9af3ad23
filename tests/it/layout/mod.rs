//! The source layout's rules, checked on the sources themselves: no crate
//! depends on one above it (the tree never talks to FUSE), inside each
//! crate each top-level module names none of those its `LAYERS` rules ban,
//! no files nor top-level modules import each other in a circle, no file
//! or folder grows past the bounds of `sizes` (400 product lines in a
//! file, 15 files in a folder), and every `unsafe` says why it is sound
//! (`safety`).
//!
//! The check reads the crate as rustc does: modules from their `mod`
//! declarations (`#[path]` and `#[cfg(test)]` included), `crate::`,
//! `super::` and `self::` paths resolved against the module they are
//! written in, in `use` trees and in code alike. Unit-test modules
//! (`#[cfg(test)] mod … { … }` and files declared under `#[cfg(test)]`) may
//! reach anywhere and are left out of the import graph.

mod fake_crates;
mod layers;
mod safety;
mod scan;
mod sizes;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use layers::{LAYERS, layers_of, stale_rules};
use scan::{ModPath, Scan, scan};
use sizes::{HELD, size_problems};

/// A module in a file of its own.
struct FileModule {
    path: ModPath,
    file: PathBuf,
    /// Declared under `#[cfg(test)]`, or inside such a module.
    test: bool,
    scan: Scan,
}

/// The crate under `src` as rustc reads it, from `src/lib.rs` down.
struct Crate {
    files: Vec<FileModule>,
    /// Every module (inline ones too) and the index of its file.
    modules: BTreeMap<ModPath, usize>,
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut krate = Crate {
            files: Vec::new(),
            modules: BTreeMap::new(),
        };
        krate.add(src.join("lib.rs"), Vec::new(), false, true);
        krate
    }

    fn add(&mut self, file: PathBuf, path: ModPath, test: bool, owns_dir: bool) {
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let scan = scan(&text, &path);
        let me = self.files.len();
        self.modules.insert(path.clone(), me);
        for m in &scan.inline_modules {
            self.modules.insert(m.clone(), me);
        }
        let dir = file.parent().unwrap().to_path_buf();
        let children: Vec<(PathBuf, ModPath, bool)> = scan
            .declared
            .iter()
            .map(|d| {
                let mut child = d.at.clone();
                child.push(d.name.clone());
                let file = match &d.path_attr {
                    Some(p) if d.inline.is_empty() => dir.join(p),
                    _ => {
                        let mut base = dir.clone();
                        if !owns_dir {
                            base.push(file.file_stem().unwrap());
                        }
                        base.extend(&d.inline);
                        let flat = base.join(format!("{}.rs", d.name));
                        if flat.exists() {
                            flat
                        } else {
                            base.join(&d.name).join("mod.rs")
                        }
                    }
                };
                (file, child, test || d.in_test)
            })
            .collect();
        self.files.push(FileModule {
            path,
            file: file.clone(),
            test,
            scan,
        });
        for (file, child, test) in children {
            let owns_dir = file.file_name().is_some_and(|n| n == "mod.rs");
            self.add(file, child, test, owns_dir);
        }
    }

    /// The file a path written in module `at` names, if it is one of the
    /// crate's: the file of the longest prefix that is a module.
    fn resolve(&self, at: &ModPath, segments: &[String]) -> Option<usize> {
        let (mut full, rest) = match segments.first()?.as_str() {
            "crate" => (Vec::new(), &segments[1..]),
            "self" => (at.clone(), &segments[1..]),
            "super" => {
                let supers = segments.iter().take_while(|s| *s == "super").count();
                let mut base = at.clone();
                base.truncate(at.len().checked_sub(supers)?);
                (base, &segments[supers..])
            }
            first => {
                let mut child = at.clone();
                child.push(first.to_string());
                // Not a child module: another crate's path.
                self.modules.get(&child)?;
                (at.clone(), segments)
            }
        };
        let mut found = self.modules.get(&full).copied();
        for seg in rest {
            full.push(seg.clone());
            match self.modules.get(&full) {
                Some(f) => found = Some(*f),
                None => break,
            }
        }
        found
    }

    /// Which files each file's code (unit tests left out) names; a module
    /// naming its own submodules (declaring, re-exporting) does not count.
    fn imports(&self) -> Vec<BTreeSet<usize>> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, f)| {
                if f.test {
                    return BTreeSet::new();
                }
                f.scan
                    .paths
                    .iter()
                    .filter(|w| !w.in_test)
                    .filter_map(|w| self.resolve(&w.at, &w.segments))
                    .filter(|&t| t != i && !self.files[t].path.starts_with(&f.path))
                    .collect()
            })
            .collect()
    }

    /// The top-level module a file is part of (`crate` for the root).
    fn top(&self, file: usize) -> String {
        let path = &self.files[file].path;
        path.first().cloned().unwrap_or_else(|| "crate".into())
    }

    fn name(&self, file: usize, src: &Path) -> String {
        let f = &self.files[file].file;
        f.strip_prefix(src).unwrap_or(f).display().to_string()
    }
}

/// The strongly connected components of a graph of more than one node
/// (Tarjan's algorithm): each is a set of nodes that reach one another.
fn circles<N: Ord + Clone>(graph: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    struct Tarjan<'g, N> {
        graph: &'g BTreeMap<N, BTreeSet<N>>,
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on_stack: BTreeSet<N>,
        found: Vec<Vec<N>>,
    }
    impl<N: Ord + Clone> Tarjan<'_, N> {
        fn visit(&mut self, v: &N) {
            let n = self.index.len();
            self.index.insert(v.clone(), n);
            self.low.insert(v.clone(), n);
            self.stack.push(v.clone());
            self.on_stack.insert(v.clone());
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v.clone(), low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v.clone(), low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    self.on_stack.remove(&w);
                    let done = w == *v;
                    component.push(w);
                    if done {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.found
}

/// Every broken layout rule of the crate under `src`, whose layers are
/// `rules` (module, banned).
fn problems(src: &Path, rules: &[(&str, &[&str])]) -> Vec<String> {
    let krate = Crate::read(src);
    let imports = krate.imports();
    let mut found = stale_rules(&krate, rules);
    for (i, f) in krate.files.iter().enumerate() {
        let top = krate.top(i);
        if f.test || top == "crate" {
            continue;
        }
        for (module, banned) in rules {
            if *module != top && (*module != "*" || banned.contains(&top.as_str())) {
                continue;
            }
            for w in f.scan.paths.iter().filter(|w| !w.in_test) {
                if let Some(t) = krate.resolve(&w.at, &w.segments)
                    && banned.contains(&krate.top(t).as_str())
                {
                    found.push(format!(
                        "{} names {} ({module} never names {})",
                        krate.name(i, src),
                        w.segments.join("::"),
                        krate.top(t),
                    ));
                }
            }
        }
    }
    let files: BTreeMap<usize, BTreeSet<usize>> = imports.iter().cloned().enumerate().collect();
    for circle in circles(&files) {
        let names: Vec<String> = circle.iter().map(|&f| krate.name(f, src)).collect();
        found.push(format!("files import each other: {}", names.join(", ")));
    }
    found.extend(folder_ties(&krate, &imports, &files, src));
    found
}

/// Circles among the modules of one folder: for each module with children,
/// a file under child A naming a file under child B is a tie A -> B, and
/// ties that go round mean the folder's parts cannot be read or changed one
/// at a time even when no two files import each other. At the crate's top
/// every circle is reported; deeper down, a circle that a circle of files
/// already spans is left to that report.
fn folder_ties(
    krate: &Crate,
    imports: &[BTreeSet<usize>],
    files: &BTreeMap<usize, BTreeSet<usize>>,
    src: &Path,
) -> Vec<String> {
    let file_circles = circles(files);
    let mut levels: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let mut through: BTreeMap<(ModPath, String, String), Vec<String>> = BTreeMap::new();
    for (from, targets) in imports.iter().enumerate() {
        for &to in targets {
            let (a, b) = (&krate.files[from].path, &krate.files[to].path);
            let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            if a.len() <= common || b.len() <= common {
                continue;
            }
            let (level, x, y) = (a[..common].to_vec(), a[common].clone(), b[common].clone());
            levels
                .entry(level.clone())
                .or_default()
                .entry(x.clone())
                .or_default()
                .insert(y.clone());
            through.entry((level, x, y)).or_default().push(format!(
                "{} -> {}",
                krate.name(from, src),
                krate.name(to, src)
            ));
        }
    }
    let mut found = Vec::new();
    for (level, graph) in &levels {
        for circle in circles(graph) {
            let child_of = |f: usize| krate.files[f].path.get(level.len()).cloned();
            let spanned = !level.is_empty()
                && file_circles.iter().any(|c| {
                    let children: BTreeSet<String> = c
                        .iter()
                        .filter(|&&f| krate.files[f].path.starts_with(level))
                        .filter_map(|&f| child_of(f))
                        .filter(|ch| circle.contains(ch))
                        .collect();
                    children.len() > 1
                });
            if spanned {
                continue;
            }
            let mut ties = Vec::new();
            for ((l, x, y), edges) in &through {
                if l == level && circle.contains(x) && circle.contains(y) {
                    ties.extend(edges.iter().cloned());
                }
            }
            let what = if level.is_empty() {
                "top-level modules".to_string()
            } else {
                format!("the folders inside {}", level.join("/"))
            };
            found.push(format!(
                "{what} import each other: {} (through {})",
                circle.join(", "),
                ties.join(", ")
            ));
        }
    }
    found
}

/// The workspace's crates, bottom up: where each one's sources are, the
/// manifest that lists its dependencies, and whether it must stay free of
/// fuser. The compiler keeps a crate from naming one it does not depend on,
/// so the manifests are where the layers between crates are checked. The
/// kit, beside the others, depends on none of them.
const CRATES: [(&str, bool); 5] = [
    ("crates/kit", true),
    ("crates/library", true),
    ("crates/storage", true),
    ("crates/fs", true),
    (".", false),
];

/// What the tool's semantics never depend on: an I/O runtime or an object
/// store client comes in with the storage crate, above them.
const NOT_UNDER_THE_SEMANTICS: [&str; 4] = ["tokio", "object_store", "futures-util", "fuser"];

/// The workspace's crates that `manifest_dir`'s manifest depends on.
fn workspace_dependencies(manifest_dir: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest_dir.join("Cargo.toml")).unwrap();
    let mut deps = BTreeSet::new();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_string();
        } else if section == "[dependencies]"
            && let Some((name, _)) = line.split_once('=')
        {
            deps.insert(name.trim().to_string());
        }
    }
    deps
}

#[test]
fn the_sources_keep_their_layout() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    let mut held = BTreeSet::new();
    for (dir, free_of_fuser) in CRATES {
        let manifest_dir = root.join(dir);
        let src = manifest_dir.join("src");
        let krate = Crate::read(&src);
        let mut on_disk = Vec::new();
        rust_files(&src, &mut on_disk);
        on_disk.retain(|f| *f != src.join("main.rs"));
        let read: BTreeSet<&PathBuf> = krate.files.iter().map(|f| &f.file).collect();
        let unread: Vec<_> = on_disk.iter().filter(|f| !read.contains(f)).collect();
        assert!(
            on_disk.len() > 3 && unread.is_empty(),
            "every source file of {dir} is read from src/lib.rs down; not: {unread:?}"
        );
        let deps = workspace_dependencies(&manifest_dir);
        if free_of_fuser {
            assert!(!deps.contains("fuser"), "{dir} depends on fuser: {deps:?}");
            for f in &krate.files {
                assert!(!f.scan.names_fuser, "{} names fuser", f.file.display());
            }
        }
        if dir == "crates/library" {
            for name in NOT_UNDER_THE_SEMANTICS {
                assert!(!deps.contains(name), "{dir} depends on {name}");
            }
        }
        let below: Vec<&str> = CRATES
            .iter()
            .map(|(d, _)| *d)
            .take_while(|d| *d != dir)
            .collect();
        for (other, _) in CRATES {
            let name = format!("novelfs-{}", other.rsplit('/').next().unwrap());
            if other != dir && !below.contains(&other) {
                assert!(
                    !deps.contains(&name),
                    "{dir} depends on {name}, a crate above it"
                );
            }
        }
        all.extend(problems(&src, &layers_of(dir)));
        let test_only: BTreeSet<&PathBuf> = krate
            .files
            .iter()
            .filter(|f| f.test)
            .map(|f| &f.file)
            .collect();
        let files: Vec<(PathBuf, bool)> = on_disk
            .iter()
            .map(|f| (f.clone(), test_only.contains(f)))
            .collect();
        all.extend(size_problems(
            &files,
            |p| p.strip_prefix(root).unwrap_or(p).display().to_string(),
            HELD,
            &mut held,
        ));
    }
    for (name, size) in HELD {
        if !held.contains(name) {
            all.push(format!(
                "{name} is held at {size} but is within the bound now (or gone): drop its entry"
            ));
        }
    }
    for (dir, _, _) in LAYERS {
        assert!(
            CRATES.iter().any(|(d, _)| d == dir),
            "a layer rule for {dir}, not one of the crates"
        );
    }
    let src = root.join("src");
    let krate = Crate::read(&src);
    let module =
        |path: &[&str]| krate.modules[&path.iter().map(|s| s.to_string()).collect::<ModPath>()];
    let session = module(&["mount", "serving", "session"]);
    let attach = module(&["mount", "os", "attach"]);
    let fuse = module(&["mount", "serving", "fuse"]);
    let deadline = module(&["mount", "serving", "deadline"]);
    assert!(
        krate.imports()[session].contains(&attach) && krate.imports()[fuse].contains(&deadline),
        "the scan sees `use crate::mount::os::attach` and `use super::deadline`"
    );
    assert!(all.is_empty(), "layout problems:\n{}", all.join("\n"));
}

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
