//! Pages stored into the kernel's page cache ahead of a reader
//! (FUSE_NOTIFY_STORE, contract §2.4a), through a real mount on both
//! transports: the pages that follow a page read reach the reader without
//! a READ, byte for byte what `novelfs read` prints; a bare listing stores
//! nothing; a chapter changed on disk after its pages were stored is read
//! as it is now. The daemon's requests and stores are watched in its log.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::daemon_log::DaemonLog;
use crate::common::{Mount, book_library, eventually, uring};
use novelfs::events::STORED;

const LOG: &str = "novelfs=debug,fuser=debug";

/// `n` numbered lines, about 60 bytes each.
fn lines(n: usize, tag: &str) -> String {
    (1..=n)
        .map(|i| format!("{tag}{i} {}\n", "月光落在旧街的石板上".repeat(2)))
        .collect()
}

/// One book: a chapter of three pages, one of two, one of one.
fn library() -> (tempfile::TempDir, PathBuf) {
    let one = lines(1000, "甲");
    let two = lines(450, "乙");
    let three = lines(10, "丙");
    book_library(&[
        ("第1章 起.md", one.as_bytes()),
        ("第2章 承.md", two.as_bytes()),
        ("第3章 转.md", three.as_bytes()),
    ])
}

fn mount(root: &Path, io_uring: bool) -> Option<Mount> {
    let state = root.join("no-state.json");
    let args = ["--state-file", state.to_str().unwrap()];
    if !io_uring {
        return Some(Mount::with_log(root, &args, LOG));
    }
    uring::available().then(|| uring::mount_with_log(root, &args, LOG))
}

/// What `novelfs read` prints for a page of the book.
fn cli_page(root: &Path, chapter: &str, offset: u64) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .args(["read", "--root"])
        .arg(root)
        .args(["--state-file"])
        .arg(root.join("no-state.json"))
        .args(["书", chapter, "--offset", &offset.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "novelfs read {chapter} {offset}");
    out.stdout
}

/// Lists the book and each chapter directory, as a reader walking it does
/// (READDIRPLUS: the kernel then holds every page's inode).
fn list_all(book: &Path) {
    for chapter in std::fs::read_dir(book).unwrap() {
        let chapter = chapter.unwrap().path();
        if chapter.is_dir() {
            std::fs::read_dir(&chapter).unwrap().for_each(drop);
        }
    }
}

/// Whether the daemon logged a store (`events::STORED`) of a page whose
/// path ends with `page`, from line `from` on.
fn stored(log: &DaemonLog, from: usize, page: &str) -> bool {
    log.event_paths(from..usize::MAX, STORED)
        .iter()
        .any(|p| p.ends_with(page))
}

fn pages_follow_without_reads(io_uring: bool) {
    require_fuse!();
    let (_guard, root) = library();
    let Some(mut m) = mount(&root, io_uring) else {
        return;
    };
    let log = DaemonLog::follow(&mut m);
    let book = m.path().join("书");
    list_all(&book);
    let start = log.mark(m.path(), "listed");
    assert!(
        !stored(&log, 0, "/"),
        "listing alone stored pages: {:?}",
        log.lines_from(0)
    );
    let first = book.join("第1章 起.md/offset-1.txt");
    assert_eq!(
        std::fs::read(&first).unwrap(),
        cli_page(&root, "第1章 起.md", 1)
    );
    // The rest of the chapter, then the next chapter, stored into the
    // inodes the listing gave the kernel.
    let rest = [
        ("第1章 起.md", 401),
        ("第1章 起.md", 801),
        ("第2章 承.md", 1),
        ("第2章 承.md", 401),
    ];
    for (chapter, offset) in rest {
        let page = format!("{chapter}/offset-{offset}.txt");
        eventually(&format!("{page} stored"), || {
            stored(&log, start, &page).then_some(())
        });
    }
    let mark = log.mark(m.path(), "stored");
    for (chapter, offset) in rest {
        let bytes = std::fs::read(book.join(chapter).join(format!("offset-{offset}.txt"))).unwrap();
        assert!(
            bytes == cli_page(&root, chapter, offset),
            "{chapter} offset {offset}: the stored page is not what novelfs read prints"
        );
    }
    let _ = std::fs::metadata(m.path().join("read-done"));
    let requests = log.requests_until(mark, "read-done");
    let reads = requests.iter().filter(|op| *op == "READ").count();
    assert!(
        reads < rest.len(),
        "{reads} READs for {} pages stored ahead: {requests:?}",
        rest.len()
    );
    assert_eq!(
        reads, 0,
        "every page stored was read from the page cache: {requests:?}"
    );
    assert!(m.alive());
}

#[test]
fn pages_after_the_one_read_come_without_reads() {
    pages_follow_without_reads(false);
}

#[test]
fn pages_after_the_one_read_come_without_reads_through_io_uring() {
    pages_follow_without_reads(true);
}

#[test]
fn a_bare_find_stores_nothing() {
    require_fuse!();
    let (_guard, root) = library();
    let mut m = mount(&root, false).unwrap();
    let log = DaemonLog::follow(&mut m);
    let found = Command::new("find").arg(m.path()).output().unwrap();
    assert!(found.status.success());
    let listed = String::from_utf8_lossy(&found.stdout);
    assert!(listed.contains("offset-801.txt"), "{listed}");
    let ls = Command::new("ls")
        .arg("-lR")
        .arg(m.path())
        .output()
        .unwrap();
    assert!(ls.status.success());
    let listed = log.mark(m.path(), "listed");
    // A moment for a store that would follow the listing.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let after_listing = log.mark(m.path(), "waited");
    // A read does store the pages that follow it: the events are there to
    // be seen, and none of them came before the read.
    std::fs::read(m.path().join("书/第1章 起.md/offset-1.txt")).unwrap();
    eventually("a read stores the next page", || {
        stored(&log, after_listing, "第1章 起.md/offset-401.txt").then_some(())
    });
    let before_read = log.event_paths(0..after_listing, STORED);
    assert!(
        before_read.is_empty(),
        "a listing stored pages: {before_read:?} (listing ended at line {listed})"
    );
}

#[test]
fn a_chapter_changed_after_its_pages_were_stored_is_read_fresh() {
    require_fuse!();
    let (_guard, root) = library();
    let mut m = mount(&root, false).unwrap();
    let log = DaemonLog::follow(&mut m);
    let book = m.path().join("书");
    list_all(&book);
    std::fs::read(book.join("第1章 起.md/offset-1.txt")).unwrap();
    eventually("the next chapter stored", || {
        stored(&log, 0, "第2章 承.md/offset-1.txt").then_some(())
    });
    let source = root.join("novels/书/第2章 承.md");
    std::fs::write(&source, lines(20, "丁")).unwrap();
    let want = cli_page(&root, "第2章 承.md", 1);
    assert!(String::from_utf8_lossy(&want).contains("丁1 "));
    let page = book.join("第2章 承.md/offset-1.txt");
    eventually("the changed chapter read as it is now", || {
        (std::fs::read(&page).unwrap() == want).then_some(())
    });
    // And stays so: nothing stored later brings the old bytes back.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(std::fs::read(&page).unwrap(), want);
    assert!(
        std::fs::metadata(book.join("第2章 承.md/offset-401.txt")).is_err(),
        "the new version has one page"
    );
}

/// Python's `open()` asks whether the file is a terminal (an IOCTL) before
/// it reads: the page is stored then, and the read that follows sends no
/// READ. A second open finds it in the page cache: nothing stored again.
fn opened_from_python(io_uring: bool) {
    require_fuse!();
    let (_guard, root) = library();
    let Some(mut m) = mount(&root, io_uring) else {
        return;
    };
    let log = DaemonLog::follow(&mut m);
    let dir = m.path().join("书/第3章 转.md");
    std::fs::read_dir(&dir).unwrap().for_each(drop);
    let page = dir.join("offset-1.txt");
    let start = log.mark(m.path(), "listed");
    let read = |tag: &str| {
        let out = Command::new("python3")
            .args([
                "-c",
                "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read())",
            ])
            .arg(&page)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "python3: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let end = log.mark(m.path(), tag);
        (out.stdout, log.requests_until(start, tag), end)
    };
    let (bytes, requests, end) = read("first-open");
    assert_eq!(bytes, cli_page(&root, "第3章 转.md", 1));
    assert!(requests.iter().any(|op| op == "IOCTL"), "{requests:?}");
    assert!(
        !requests.iter().any(|op| op == "READ"),
        "the page was stored on its open: {requests:?}"
    );
    assert!(stored(&log, start, "第3章 转.md/offset-1.txt"));
    let (again, _, _) = read("second-open");
    assert_eq!(again, bytes);
    assert!(
        !stored(&log, end, "第3章 转.md/offset-1.txt"),
        "stored again: {:?}",
        log.lines_from(end)
    );
    assert!(m.alive());
}

#[test]
fn a_page_opened_from_python_is_stored_on_its_open() {
    opened_from_python(false);
}

#[test]
fn a_page_opened_from_python_is_stored_on_its_open_through_io_uring() {
    opened_from_python(true);
}
