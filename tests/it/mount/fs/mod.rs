//! The filesystem's operations through a real mount of a small local
//! library, one module per operation: reading, looking up names, what a
//! file's attributes say, writes refused, and how a change in the library
//! shows. The mount's own start and end are in `mount::lifecycle`.

mod attributes;
mod freshness;
mod lookup;
mod read;
mod writes;

use std::path::{Path, PathBuf};

use crate::common::Mount;
use crate::common::{errno, eventually};

const BOOK: &str = "书";

/// A small library: ROOT/novels/书/… ; returns (guard, root).
pub(super) fn small_library(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let files: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (*n, b.as_bytes())).collect();
    crate::common::book_library(&files)
}

pub(super) fn strict(root: &Path) -> Mount {
    crate::common::strict_mount(root, &[])
}

/// The three ways a mount stays fresh: asking every time (`--ttl 0`); the
/// watch, here with a TTL so long that only its notifications can make a
/// change show; and no watch, where the TTL (0.5 s) bounds staleness.
const MODES: [(&str, &str); 3] = [("strict", "0"), ("watched", "3600"), ("unwatched", "0.5")];

fn mount_in(root: &Path, ttl: &str, state: &str) -> Mount {
    let mut args = vec!["--ttl", ttl, "--state-file", state];
    if ttl == "0.5" {
        args.push("--no-watch");
    }
    Mount::new(root, &args)
}

/// Waits until the page at `page` shows `text` as its line 1.
fn first_line_shows(page: &Path, text: &str, what: &str) {
    eventually(what, || {
        read_string(page).filter(|s| s.contains(&format!("1: {text}\n")))
    });
}

fn read_string(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

fn read_errno(p: &Path) -> Option<i32> {
    std::fs::read(p).err().map(|e| errno(&e))
}

/// The names a directory lists, sorted, without the index files (every
/// root and book lists them; `tests/it/mount/indexes.rs` checks them).
fn sorted_names(p: &Path) -> Option<Vec<String>> {
    let names = crate::common::sorted_names(p).ok()?;
    Some(
        names
            .into_iter()
            .filter(|n| !n.starts_with("novel_books.") && !n.starts_with("novel_chapters."))
            .collect(),
    )
}

fn lines(n: usize, tag: &str) -> String {
    crate::common::prose_lines(n, tag)
}
