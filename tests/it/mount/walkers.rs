//! The tools agents search with (ripgrep above all) through a real mount:
//! what their probes of ignore files cost, and whether their walk, which
//! takes a book's chapters last first on several threads, reads pages the
//! kernel was given ahead as `grep -r`'s does. Costs are counted in the
//! requests the daemon logs and the chapters it decodes, never timed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::daemon_log::DaemonLog;
use crate::common::{Mount, errno, find_tool, prose_lines, skip};
use novelfs::events::DECODED;

const LOG: &str = "novelfs=debug,fuser=debug";

/// What ripgrep and git ask for in every directory they enter.
const PROBES: [&str; 4] = [".gitignore", ".ignore", ".rgignore", ".git"];

/// `books` books of `chapters` chapters each, every chapter `lines` lines.
fn library(books: usize, chapters: usize, lines: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    for b in 1..=books {
        let book = root.join(format!("novels/书{b}"));
        std::fs::create_dir_all(&book).unwrap();
        for c in 1..=chapters {
            let text = prose_lines(lines, &format!("{b}-{c}"));
            std::fs::write(book.join(format!("第{c}章 篇{c}.md")), text).unwrap();
        }
    }
    (dir, root)
}

fn state_args(root: &Path) -> Vec<String> {
    let state = root.join("no-state.json");
    vec!["--state-file".into(), state.to_string_lossy().into_owned()]
}

fn ripgrep() -> Option<PathBuf> {
    let rg = find_tool(&["rg"]);
    if rg.is_none() {
        skip("no rg on PATH (Debian's ripgrep)");
    }
    rg
}

/// The chapter directories of the mount's books.
fn chapter_dirs(mnt: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for book in std::fs::read_dir(mnt).unwrap() {
        let book = book.unwrap().path();
        if !book.is_dir() {
            continue;
        }
        for chapter in std::fs::read_dir(&book).unwrap() {
            let chapter = chapter.unwrap().path();
            if chapter.is_dir() {
                dirs.push(chapter);
            }
        }
    }
    dirs.sort();
    dirs
}

/// The requests logged from line `from` on, up to a LOOKUP of `sentinel`
/// made now.
fn requests_since(log: &DaemonLog, mnt: &Path, from: usize, sentinel: &str) -> Vec<String> {
    let _ = std::fs::symlink_metadata(mnt.join(sentinel));
    log.requests_until(from, sentinel)
}

fn count(requests: &[String], op: &str) -> usize {
    requests.iter().filter(|r| *r == op).count()
}

#[test]
fn an_ignore_file_probe_in_a_chapter_directory_loads_no_chapter() {
    require_fuse!();
    let (_guard, root) = library(2, 6, 3);
    let mut args = state_args(&root);
    args.push("--no-index".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut m = Mount::with_log(&root, &args, LOG);
    let log = DaemonLog::follow(&mut m);
    // Each chapter directory looked up by its name, none listed (a listing
    // would have its chapters outlined ahead): a chapter is decoded only
    // when something needs its pages.
    let mut chapters = Vec::new();
    for b in 1..=2 {
        for c in 1..=6 {
            let chapter = m.path().join(format!("书{b}/第{c}章 篇{c}.md"));
            assert!(chapter.is_dir());
            chapters.push(chapter);
        }
    }
    assert_eq!(chapters.len(), 12);
    let from = log.mark(m.path(), "probes-begin");
    for chapter in &chapters {
        for probe in PROBES {
            let e = std::fs::symlink_metadata(chapter.join(probe)).unwrap_err();
            assert_eq!(errno(&e), libc::ENOENT, "{}/{probe}", chapter.display());
        }
    }
    let requests = requests_since(&log, m.path(), from, "probes-end");
    let end = log.mark(m.path(), "probes-end");
    assert_eq!(
        count(&requests, "LOOKUP"),
        chapters.len() * PROBES.len(),
        "one LOOKUP a probe: {requests:?}"
    );
    let decoded = log.event_paths(from..end, DECODED);
    assert!(
        decoded.is_empty(),
        "probes of ignore files decoded chapters: {decoded:?}"
    );
    // Kept by the kernel: probing again asks the daemon nothing.
    for chapter in &chapters {
        for probe in PROBES {
            assert!(std::fs::symlink_metadata(chapter.join(probe)).is_err());
        }
    }
    let again = requests_since(&log, m.path(), end, "again-end");
    assert_eq!(count(&again, "LOOKUP"), 0, "asked again: {again:?}");
    assert!(m.alive());
}

/// With the library gone from under a mount that keeps its names for an
/// hour, a probe in a chapter directory the kernel still holds is still
/// "no such name": it is answered without the chapter or the library (a
/// look at either would find them gone and answer EIO).
#[test]
fn an_ignore_file_probe_needs_neither_the_chapter_nor_the_library() {
    require_fuse!();
    let (_guard, root) = library(1, 3, 3);
    let mut args = state_args(&root);
    args.extend(["--no-watch", "--ttl", "3600"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let m = Mount::new(&root, &args);
    let chapter = m.path().join("书1/第2章 篇2.md");
    assert!(chapter.is_dir());
    std::fs::rename(root.join("novels"), root.join("gone")).unwrap();
    for probe in PROBES {
        let e = std::fs::symlink_metadata(chapter.join(probe)).unwrap_err();
        assert_eq!(
            errno(&e),
            libc::ENOENT,
            "{probe} with the library gone: {e}"
        );
    }
    // A page, which does need the chapter, is not known to be missing.
    let e = std::fs::symlink_metadata(chapter.join("offset-1.txt")).unwrap_err();
    assert_eq!(errno(&e), libc::EIO, "a page with the library gone: {e}");
    std::fs::rename(root.join("gone"), root.join("novels")).unwrap();
}

fn rg(rg: &Path, args: &[&str], mnt: &Path) -> std::process::Output {
    let out = Command::new(rg).args(args).arg(mnt).output().unwrap();
    // 1: nothing matched, which `rg -l WORD` of a word found nowhere says.
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "rg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn a_second_ripgrep_walk_sends_almost_no_lookups() {
    require_fuse!();
    let Some(rg_bin) = ripgrep() else { return };
    let (_guard, root) = library(4, 25, 3);
    let args = state_args(&root);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut m = Mount::with_log(&root, &args, LOG);
    let log = DaemonLog::follow(&mut m);
    let from = log.mark(m.path(), "first-begin");
    let first = rg(&rg_bin, &["--files"], m.path());
    let files = String::from_utf8_lossy(&first.stdout).lines().count();
    // 2 pages (text and JSON) a chapter, 2 index files a book, 2 at the root.
    assert_eq!(files, 4 * 25 * 2 + 4 * 2 + 2);
    let first_requests = requests_since(&log, m.path(), from, "first-end");
    let from = log.mark(m.path(), "first-end");
    let first_lookups = count(&first_requests, "LOOKUP");
    assert!(
        first_lookups >= 4 * 25 * 3,
        "the first walk probes every chapter directory: {first_lookups} LOOKUPs"
    );
    rg(&rg_bin, &["--files"], m.path());
    let second = requests_since(&log, m.path(), from, "second-end");
    let second_lookups = count(&second, "LOOKUP");
    assert!(
        second_lookups * 100 <= first_lookups,
        "the second walk sent {second_lookups} LOOKUPs, the first {first_lookups}: {second:?}"
    );
    assert!(m.alive());
}

/// `rg -l WORD` of a word found nowhere reads every page: its workers
/// take a book's chapters last first, each listing a chapter and reading
/// its pages, so a chapter's pages are stored into the kernel at the end of
/// its listing whatever way the walk goes, and few pages are READ.
fn ripgrep_reads_from_the_kernel(io_uring: bool) {
    require_fuse!();
    let Some(rg_bin) = ripgrep() else { return };
    let (_guard, root) = library(2, 100, 30);
    let args = state_args(&root);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut m = if io_uring {
        if !crate::common::uring::available() {
            return;
        }
        crate::common::uring::mount_with_log(&root, &args, LOG)
    } else {
        Mount::with_log(&root, &args, LOG)
    };
    let log = DaemonLog::follow(&mut m);
    let from = log.mark(m.path(), "walk-begin");
    let out = rg(&rg_bin, &["-l", "无此之词"], m.path());
    assert!(out.stdout.is_empty());
    let requests = requests_since(&log, m.path(), from, "walk-end");
    let pages = 2 * 100 * 2;
    let reads = count(&requests, "READ");
    // Every book's first chapters and index files come before any read
    // there, and a worker may open a page its partner listed before that
    // listing ended: a sixth of the pages reach the daemon as READs (all
    // of them when the walk's pages are not stored), a third at most.
    assert_eq!(chapter_dirs(m.path()).len(), 200);
    assert!(reads * 3 <= pages, "{reads} READs for {pages} pages");
    assert!(m.alive());
}

#[test]
fn a_ripgrep_walk_reads_pages_the_kernel_was_given() {
    ripgrep_reads_from_the_kernel(false);
}

#[test]
fn a_ripgrep_walk_reads_pages_the_kernel_was_given_through_io_uring() {
    ripgrep_reads_from_the_kernel(true);
}
