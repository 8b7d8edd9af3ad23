//! What each crate's top-level modules may not name (`LAYERS`), and the
//! rules that name a module the crate lacks.

use super::*;

/// The layers inside each crate (between crates the compiler and the
/// manifests keep them, see `CRATES`): in the crate at `.0`, the
/// top-level module `.1` never names the top-level modules `.2` (`*`:
/// no top-level module but the crate's root names them). Unit tests may
/// name anything. Every module a rule names must exist in its crate
/// (`stale_rules`), so a rule cannot outlive a move of the code.
pub(super) const LAYERS: &[(&str, &str, &[&str])] = &[
    // The kit's tools are independent of one another.
    ("crates/kit", "flight", &["lru", "thread"]),
    ("crates/kit", "lru", &["flight", "thread"]),
    ("crates/kit", "thread", &["flight", "lru"]),
    // The seam knows nothing of the semantics that read through it.
    (
        "crates/library",
        "backing",
        &[
            "number",
            "scan",
            "lookup",
            "text",
            "pages",
            "index",
            "stream",
            "chapters",
            "chapter_io",
        ],
    ),
    // Decoding (§1.4) and numbers (§1.2) are below scanning, lookup and
    // everything that renders or walks chapters.
    (
        "crates/library",
        "text",
        &[
            "number", "scan", "lookup", "pages", "index", "stream", "chapters",
        ],
    ),
    (
        "crates/library",
        "number",
        &["scan", "lookup", "pages", "index", "stream", "chapters"],
    ),
    // Scanning (§1.1) and lookup (§1.3) never name what renders pages
    // or index files.
    (
        "crates/library",
        "scan",
        &["lookup", "pages", "index", "stream", "chapters"],
    ),
    (
        "crates/library",
        "lookup",
        &["pages", "index", "stream", "chapters"],
    ),
    // The object-store clients and the in-memory bucket know nothing of
    // the backings that read through them, nor of each other; the
    // storage's plain values (paths, errors, counters) name neither.
    ("crates/storage", "cloud", &["backing", "memory"]),
    ("crates/storage", "memory", &["backing", "cloud"]),
    ("crates/storage", "path", &["backing", "cloud", "memory"]),
    ("crates/storage", "error", &["backing", "cloud", "memory"]),
    (
        "crates/storage",
        "counters",
        &["backing", "cloud", "memory"],
    ),
    // The tree (`NovelFs`) is the crate's top: it tells the parts below
    // it what they need (through its `stores`), none of them names it.
    ("crates/fs", "*", &["tree"]),
    // The library on disk knows nothing of what is built from it.
    (
        "crates/fs",
        "source",
        &[
            "ahead", "outline", "indexes", "pages", "listing", "inodes", "persist",
        ],
    ),
    // Freshness judges stamps; it never names what it keeps fresh.
    (
        "crates/fs",
        "freshness",
        &[
            "source", "ahead", "outline", "indexes", "inodes", "persist", "pages", "listing",
        ],
    ),
    // The persistent index stores outlines; it never names the cache
    // of outlines, the source or the inodes that use it.
    (
        "crates/fs",
        "persist",
        &["source", "outline", "inodes", "ahead", "indexes"],
    ),
    // What a name is, and the caches: plain values under everything.
    (
        "crates/fs",
        "node",
        &["source", "cache", "inodes", "outline", "ahead", "indexes"],
    ),
    (
        "crates/fs",
        "cache",
        &[
            "source",
            "outline",
            "indexes",
            "inodes",
            "ahead",
            "persist",
            "freshness",
        ],
    ),
    // The kernel side never names the commands.
    (".", "mount", &["cli"]),
];

/// The rules of `LAYERS` for the crate at `dir`: (module, banned).
pub(super) fn layers_of(dir: &str) -> Vec<(&'static str, &'static [&'static str])> {
    LAYERS
        .iter()
        .filter(|(d, _, _)| *d == dir)
        .map(|&(_, m, banned)| (m, banned))
        .collect()
}

/// The modules that `rules` name and that are not top-level modules of
/// `krate`: a rule about a module that moved away never fires.
pub(super) fn stale_rules(krate: &Crate, rules: &[(&str, &[&str])]) -> Vec<String> {
    let mut found = Vec::new();
    for (module, banned) in rules {
        for name in std::iter::once(module).chain(banned.iter()) {
            if *name != "*" && !krate.modules.contains_key(&vec![name.to_string()]) {
                found.push(format!(
                    "the layer rule of {module} names {name}, not a top-level module of the crate"
                ));
            }
        }
    }
    found
}
