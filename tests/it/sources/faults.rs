//! Faults under a live mount: the library vanishing under it, a chapter
//! that cannot be read, the daemon killed or stopped while reads are in
//! flight. (tests/it/mount/fs/freshness.rs already covers a vanished novels/
//! dir, tests/it/mount/lifecycle.rs the stale mount a SIGKILL leaves with its
//! explanation and `--force`, and SIGTERM during small reads; these do not
//! repeat them.)

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::common::readers::{sigkill_mid_read, start_readers};
use crate::common::{errno, is_mounted, sorted_names, strict_mount, within};

const BOOK: &str = "书";

fn lines(n: usize) -> String {
    crate::common::prose_lines(n, "")
}

#[test]
fn a_book_removed_while_mounted_is_gone_and_the_root_still_lists() {
    require_fuse!();
    let (_g, root) = crate::common::book_library(&[("第1章 起.md", lines(3).as_bytes())]);
    std::fs::create_dir_all(root.join("novels/别的书")).unwrap();
    std::fs::write(root.join("novels/别的书/第1章.md"), "别的").unwrap();
    let mut m = strict_mount(&root, &[]);
    let page = m.path().join("书/1/offset-1.txt");
    let before = std::fs::read(&page).unwrap();
    let mut open = std::fs::File::open(&page).unwrap();

    std::fs::remove_dir_all(root.join("novels").join(BOOK)).unwrap();
    for p in [
        "书",
        "书/1",
        "书/第1章 起.md",
        "书/第1章 起.md/offset-1.txt",
        "书/1/offset-1.json",
        "书/起",
    ] {
        let e = std::fs::metadata(m.path().join(p)).unwrap_err();
        assert_eq!(errno(&e), libc::ENOENT, "{p}: {e}");
    }
    assert_eq!(
        sorted_names(m.path()).unwrap(),
        ["novel_books.json", "novel_books.txt", "别的书"]
    );
    assert!(
        std::fs::read_to_string(m.path().join("别的书/1/offset-1.txt"))
            .unwrap()
            .contains("1: 别的")
    );
    // A handle opened before keeps the page it opened.
    let mut kept = Vec::new();
    std::io::Read::read_to_end(&mut open, &mut kept).unwrap();
    assert_eq!(kept, before);
    assert!(m.alive());
}

#[test]
fn the_whole_root_removed_gives_errors_not_hangs_and_sigterm_still_unmounts() {
    require_fuse!();
    let (g, root) = crate::common::book_library(&[("第1章 起.md", lines(3).as_bytes())]);
    let mut m = strict_mount(&root, &[]);
    let mnt = m.path().to_path_buf();
    assert!(std::fs::read(mnt.join("书/1/offset-1.txt")).is_ok());
    let held_dir = std::fs::read_dir(mnt.join(BOOK)).unwrap(); // a directory handle open across the removal
    std::fs::remove_dir_all(&root).unwrap();

    let results = within(20, "requests on a mount whose ROOT is gone", {
        let mnt = mnt.clone();
        move || {
            let mut out = Vec::new();
            out.push(("ls /", sorted_names(&mnt).map(|v| v.len())));
            for p in [
                "书",
                "书/1",
                "书/1/offset-1.txt",
                "书/第1章 起.md/offset-1.json",
                "nothing",
            ] {
                out.push((p, std::fs::read(mnt.join(p)).map(|b| b.len())));
                out.push((p, std::fs::metadata(mnt.join(p)).map(|_| 0)));
            }
            out.push(("stat /", std::fs::metadata(&mnt).map(|_| 0)));
            out
        }
    });
    for (what, r) in &results {
        match (what, r) {
            // The root lists only an ERROR saying that novels/ is gone.
            (&"ls /", r) => assert_eq!(r.as_ref().ok(), Some(&1), "ls of the root: {r:?}"),
            (&"stat /", r) => assert!(r.is_ok(), "the mount root still stats: {r:?}"),
            // A library that cannot be listed is an error, not an empty
            // one: EIO, never ENOENT (contract §2.1).
            (p, Err(e)) => assert_eq!(errno(e), libc::EIO, "{p}: {e}"),
            (p, Ok(_)) => panic!("{p} still readable after ROOT was removed"),
        }
    }
    let rest: Vec<_> = held_dir.map(|e| e.map(|e| e.file_name())).collect();
    assert!(
        rest.iter().all(|e| e.is_ok()) || rest.iter().all(|e| e.is_err()),
        "{rest:?}"
    );
    let why = std::fs::read_to_string(mnt.join("ERROR")).unwrap();
    assert!(why.contains("No such file or directory"), "{why}");
    assert!(m.alive(), "daemon alive with ROOT gone");

    // The same path re-created is served again (the library is found by path).
    std::fs::create_dir_all(root.join("novels/书")).unwrap();
    std::fs::write(root.join("novels/书/第2章 回.md"), "回来了").unwrap();
    assert!(
        std::fs::read_to_string(mnt.join("书/2/offset-1.txt"))
            .unwrap()
            .contains("1: 回来了")
    );
    std::fs::remove_dir_all(&root).unwrap();

    let status = m.terminate().expect("running");
    assert!(status.success(), "exit {status}");
    assert!(!is_mounted(&mnt), "mount left behind");
    drop(g);
}

#[test]
fn a_chapter_over_max_chapter_bytes_lists_an_error_that_says_so() {
    require_fuse!();
    let (_g, root) =
        crate::common::book_library(&[("第1章 起.md", b"short"), ("第2章 承.md", b"fine")]);
    let src = root.join("novels/书/第1章 起.md");
    let mut m = strict_mount(&root, &["--max-chapter-bytes", "64K"]);
    assert!(
        std::fs::read_to_string(m.path().join("书/1/offset-1.txt"))
            .unwrap()
            .contains("1: short")
    );

    // As root, chmod 000 does not stop reading; a file over the limit does.
    std::fs::write(&src, lines(3000)).unwrap();
    let size = std::fs::metadata(&src).unwrap().len();
    assert!(size > 64 * 1024);
    let dir = m.path().join("书/1");
    assert_eq!(sorted_names(&dir).unwrap(), ["ERROR"]);
    let error = std::fs::read_to_string(dir.join("ERROR")).unwrap();
    assert!(
        error.starts_with("错误：")
            && error.contains(&format!("文件大小 {size} 字节超过上限 65536 字节"))
            && error.contains("--max-chapter-bytes"),
        "{error}"
    );
    assert_eq!(
        errno(&std::fs::read(dir.join("offset-1.txt")).unwrap_err()),
        libc::EIO
    );
    assert!(
        std::fs::read_to_string(m.path().join("书/2/offset-1.txt"))
            .unwrap()
            .contains("1: fine"),
        "other chapters unaffected"
    );
    assert!(m.alive());

    // Back under the limit: pages again, no ERROR.
    std::fs::write(&src, lines(10)).unwrap();
    assert_eq!(
        sorted_names(&dir).unwrap(),
        ["offset-1.json", "offset-1.txt"]
    );
    assert_eq!(
        errno(&std::fs::read(dir.join("ERROR")).unwrap_err()),
        libc::ENOENT
    );
    let status = m.terminate().expect("running");
    assert!(status.success());
}

/// 200,000 lines: 500 pages in the chain.
fn big_library() -> (tempfile::TempDir, PathBuf) {
    crate::common::book_library(&[("第1章 长.md", lines(200_000).as_bytes())])
}

#[test]
fn sigterm_with_reads_in_flight_on_a_big_chapter_unmounts_cleanly() {
    require_fuse!();
    let (_g, root) = big_library();
    let mut m = strict_mount(&root, &[]);
    let mnt = m.path().to_path_buf();
    let dir = mnt.join("书/1");
    let t = Instant::now();
    assert_eq!(sorted_names(&dir).unwrap().len(), 1000, "500 pages listed");
    let first_listing = t.elapsed();
    let readers = start_readers(dir.clone(), 500, 6);
    // A handle held open across the signal makes the unmount busy: the
    // daemon falls back to a lazy unmount and exits once it is closed.
    let held = std::fs::File::open(dir.join("offset-1.txt")).unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let before = readers.done.load(Ordering::Relaxed);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(m.pid() as i32, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(300));
    drop(held);
    let (done, errors) = readers.finish(20);
    let status = m.terminate().expect("daemon was running");
    println!(
        "sigterm: first listing of 1000 names {first_listing:?}; {before} reads before SIGTERM, {done} in all; errors after it {errors:?}; exit {status}"
    );
    assert!(before > 0, "readers made progress");
    assert!(status.success(), "exit status {status}");
    assert!(!is_mounted(&mnt), "mount left behind");
    // After the unmount the paths are plain (empty) directories.
    assert!(
        errors.keys().all(|k| k == "ENOENT" || k == "ENOTCONN"),
        "{errors:?}"
    );
}

#[test]
fn sigkill_with_reads_in_flight_fails_them_fast() {
    require_fuse!();
    let (_g, root) = big_library();
    let mut m = strict_mount(&root, &[]);
    let mnt = m.path().to_path_buf();
    assert_eq!(
        sorted_names(&mnt.join("书/1")).unwrap().len(),
        1000,
        "loaded before the readers start"
    );
    let child = m.child.take().unwrap();
    let errors = sigkill_mid_read(child, mnt.join("书/1"), 500, Duration::from_secs(2));
    // ENOTCONN once the connection is gone; ECONNABORTED for a request the
    // kernel had already sent to the daemon when it died.
    assert!(
        errors
            .keys()
            .all(|k| k == "ENOTCONN" || k == "ECONNABORTED"),
        "{errors:?}"
    );
    assert!(
        errors.get("ENOTCONN").copied().unwrap_or(0) > 0,
        "the readers saw the daemon go"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("unmount")
        .arg(&mnt)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!is_mounted(&mnt));
}
