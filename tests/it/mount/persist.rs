//! The persistent index (`novelfs index`, `--index-dir`): a mount with one
//! serves byte for byte what a mount without one serves, lists and sizes
//! without decoding what the index holds, and sees every edit made after
//! the index was written.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::daemon_log::DaemonLog;
use crate::common::{Mount, reference_library};
use novelfs::events::DECODED;

/// Runs `novelfs index ROOT --index-dir DIR`; its stdout.
fn index(root: &Path, dir: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("index")
        .arg(root)
        .arg("--index-dir")
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "novelfs index failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Every name under `dir` with what it is: a directory's entries, a
/// file's size and bytes, a link's target, or the errno of each.
pub(crate) fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    walk(dir, Path::new(""), &mut out);
    out
}

fn walk(base: &Path, rel: &Path, out: &mut Vec<String>) {
    let at = base.join(rel);
    let mut names: Vec<_> = match std::fs::read_dir(&at) {
        Ok(entries) => entries.map(|e| e.unwrap().file_name()).collect(),
        Err(e) => return out.push(format!("{}: {e}", rel.display())),
    };
    names.sort();
    out.push(format!("{}/: {names:?}", rel.display()));
    for name in names {
        let rel = rel.join(&name);
        let path = base.join(&rel);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            walk(base, &rel, out);
        } else if meta.file_type().is_symlink() {
            out.push(format!(
                "{} -> {:?}",
                rel.display(),
                std::fs::read_link(&path)
            ));
        } else {
            let bytes = std::fs::read(&path).map_err(|e| e.raw_os_error());
            out.push(format!(
                "{} ({} bytes): {bytes:?}",
                rel.display(),
                meta.len()
            ));
        }
    }
}

fn settle() {
    // Past the racy window of the files just written (a clock tick on a
    // local disk; whole seconds elsewhere).
    std::thread::sleep(Duration::from_millis(2100));
}

#[test]
fn novelfs_index_reports_what_it_did() {
    let (_guard, root) = reference_library();
    settle();
    let dir = tempfile::tempdir().unwrap();
    let first = index(&root, dir.path());
    assert!(first.contains(" reused, 0 removed"), "{first}");
    assert!(!first.contains(": 0 chapters indexed"), "{first}");
    let second = index(&root, dir.path());
    assert!(second.contains(": 0 chapters indexed"), "{second}");
}

#[test]
fn a_mount_with_an_index_serves_what_one_without_serves() {
    require_fuse!();
    let (_guard, root) = reference_library();
    settle();
    let dir = tempfile::tempdir().unwrap();
    index(&root, dir.path());
    let state = root.join("no-state.json");
    let state = state.to_str().unwrap();
    let with = Mount::new(
        &root,
        &[
            "--state-file",
            state,
            "--index-dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let without = Mount::new(&root, &["--state-file", state]);
    assert_eq!(tree(with.path()), tree(without.path()));
}

fn small_library(chapters: usize) -> tempfile::TempDir {
    let lib = tempfile::tempdir().unwrap();
    for b in 0..3 {
        let book = lib.path().join(format!("novels/书{b}"));
        std::fs::create_dir_all(&book).unwrap();
        for c in 1..=chapters {
            let text: String = (0..c * 40).map(|i| format!("第{c}章第{i}行\n")).collect();
            std::fs::write(book.join(format!("第{c}章.md")), text).unwrap();
        }
    }
    lib
}

#[test]
fn listing_an_indexed_library_decodes_nothing() {
    require_fuse!();
    let lib = small_library(20);
    settle();
    let dir = tempfile::tempdir().unwrap();
    index(lib.path(), dir.path());
    let state = lib.path().join("no-state.json");
    let mut mount = Mount::with_log(
        lib.path(),
        &[
            "--state-file",
            state.to_str().unwrap(),
            "--index-dir",
            dir.path().to_str().unwrap(),
        ],
        "novelfs=debug,fuser=debug",
    );
    let log = DaemonLog::follow(&mut mount);
    let mnt = mount.path();
    let books = std::fs::read(mnt.join("novel_books.txt")).unwrap();
    assert!(!books.is_empty());
    for b in 0..3 {
        let book = mnt.join(format!("书{b}"));
        std::fs::read(book.join("novel_chapters.json")).unwrap();
        for c in 1..=20 {
            for page in std::fs::read_dir(book.join(format!("第{c}章.md"))).unwrap() {
                page.unwrap().metadata().unwrap();
            }
        }
    }
    let end = log.mark(mnt, "zz-sentinel");
    let decodes = log.event_paths(0..end, DECODED);
    assert!(decodes.is_empty(), "{decodes:#?}");
}

#[test]
fn edits_after_indexing_are_seen() {
    require_fuse!();
    let lib = small_library(4);
    settle();
    let dir = tempfile::tempdir().unwrap();
    index(lib.path(), dir.path());
    let book = lib.path().join("novels/书1");
    // Grown; the same size and mtime with other bytes; deleted; added;
    // renamed.
    std::fs::write(book.join("第1章.md"), "多了一行\n".repeat(300)).unwrap();
    let second = book.join("第2章.md");
    let mtime = std::fs::metadata(&second).unwrap().modified().unwrap();
    let bytes = std::fs::read(&second).unwrap();
    std::fs::write(&second, bytes.iter().rev().copied().collect::<Vec<_>>()).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&second)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    std::fs::remove_file(book.join("第3章.md")).unwrap();
    std::fs::write(book.join("第9章.md"), "新\n").unwrap();
    std::fs::rename(book.join("第4章.md"), book.join("第5章.md")).unwrap();
    let state = lib.path().join("no-state.json");
    let state = state.to_str().unwrap();
    let with = Mount::new(
        lib.path(),
        &[
            "--state-file",
            state,
            "--index-dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let without = Mount::new(lib.path(), &["--state-file", state]);
    assert_eq!(tree(with.path()), tree(without.path()));
}

#[test]
fn an_index_killed_mid_build_is_used_or_rebuilt() {
    require_fuse!();
    let lib = small_library(300);
    settle();
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("index")
        .arg(lib.path())
        .arg("--index-dir")
        .arg(dir.path())
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    let state = lib.path().join("no-state.json");
    let state = state.to_str().unwrap();
    let with = Mount::new(
        lib.path(),
        &[
            "--state-file",
            state,
            "--index-dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let without = Mount::new(lib.path(), &["--state-file", state]);
    assert_eq!(tree(with.path()), tree(without.path()));
    drop(with);
    let again = index(lib.path(), dir.path());
    assert!(again.contains(" 0 removed"), "{again}");
}

#[test]
fn two_mounts_and_an_index_at_once_all_serve_the_same_bytes() {
    require_fuse!();
    let lib = small_library(40);
    settle();
    let dir = tempfile::tempdir().unwrap();
    let state = lib.path().join("no-state.json");
    let state = state.to_str().unwrap();
    let indexed = || {
        Mount::new(
            lib.path(),
            &[
                "--state-file",
                state,
                "--index-dir",
                dir.path().to_str().unwrap(),
            ],
        )
    };
    let (first, second) = (indexed(), indexed());
    let without = Mount::new(lib.path(), &["--state-file", state]);
    let expected = tree(without.path());
    // Both mounts record what they read while `novelfs index` writes the
    // same file: one writer at a time, each waiting its turn.
    let building = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("index")
        .arg(lib.path())
        .arg("--index-dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let walks = std::thread::scope(|s| {
        let walks = [&first, &second].map(|m| s.spawn(|| tree(m.path())));
        walks.map(|w| w.join().unwrap())
    });
    let built = building.wait_with_output().unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    for walk in walks {
        assert_eq!(walk, expected);
    }
    // Fresh mounts of what the three wrote serve the same bytes again.
    drop((first, second));
    let (first, second) = (indexed(), indexed());
    assert_eq!(tree(first.path()), expected);
    assert_eq!(tree(second.path()), expected);
}
