//! A library in an S3 bucket (moto_server on 127.0.0.1, mounted with s3fs;
//! see common/s3.rs): novelfs over the s3fs mount serves the same pages as
//! over a local copy, and how soon a chapter added, a chapter deleted and a
//! book added in the bucket show through novelfs.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::s3::S3;
use crate::common::{Mount, sorted_names};

/// Written instead of either root in `<path>`, so the pages of both
/// mounts can be compared byte for byte.
const PATH_ROOT: &str = "/library";

fn examples() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/library"))
}

fn novelfs_over(root: &Path, ttl: &str) -> Mount {
    Mount::new(
        root,
        &[
            "--ttl",
            ttl,
            "--path-root",
            PATH_ROOT,
            "--state-file",
            "/nonexistent/state.json",
        ],
    )
}

/// What `novelfs read` prints for `book`/`chapter` over the local copy.
fn read_local(book: &str, chapter: &str) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .args(["read", "--state-file", "/nonexistent/state.json"])
        .args(["--path-root", PATH_ROOT, "--root"])
        .arg(examples())
        .args([book, chapter])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn pages_over_s3fs_equal_novelfs_read_over_a_local_copy() {
    require_fuse!();
    let Some(bucket) = S3::mount(examples()) else {
        return;
    };
    let m = novelfs_over(&bucket.path(), "1");
    let books: Vec<String> = sorted_names(m.path())
        .unwrap()
        .into_iter()
        .filter(|n| m.path().join(n).is_dir())
        .collect();
    assert_eq!(
        books,
        sorted_names(&examples().join("novels")).unwrap(),
        "every book of the bucket is listed"
    );
    let mut pages = 0;
    for book in &books {
        let chapters = sorted_names(&m.path().join(book)).unwrap();
        // Chapter directories are named by their file names (contract §2.1).
        for chapter in chapters
            .iter()
            .filter(|c| m.path().join(book).join(c).is_dir())
        {
            let page = std::fs::read(m.path().join(book).join(chapter).join("offset-1.txt"))
                .unwrap_or_else(|e| panic!("{book}/{chapter}: {e}"));
            assert_eq!(
                String::from_utf8_lossy(&page),
                String::from_utf8_lossy(&read_local(book, chapter)),
                "{book}/{chapter}"
            );
            pages += 1;
        }
    }
    assert!(pages >= 8, "only {pages} pages compared");
}

/// How long `seen` takes to hold, polled until `limit`; `None` past it.
fn time_until(limit: Duration, mut seen: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if seen() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn text(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// s3fs gives every directory the mtime -1 and never changes it, so
/// novelfs, which re-lists a directory when its stamp moves, keeps a book's
/// old chapter list. Measured, logged, then held to the target of issue 24
/// (the TTL + s3fs's 1 s stat cache + 2 s). Ignored until freshness for
/// such sources lands (contract §2.5); run it with `--ignored` to measure.
#[test]
#[ignore = "novelfs does not yet re-list directories whose mtime stays put (s3fs); see contract §2.5"]
fn changes_in_the_bucket_show_in_every_view() {
    require_fuse!();
    let Some(bucket) = S3::mount(examples()) else {
        return;
    };
    let ttl = 1.0;
    let target = Duration::from_secs_f64(ttl + 1.0 + 2.0);
    let limit = Duration::from_secs(30);
    let m = novelfs_over(&bucket.path(), &ttl.to_string());
    let mnt = m.path().to_path_buf();
    let book = mnt.join("唐诗选");
    // Every view is read once first, so that novelfs holds them all.
    let before = sorted_names(&book).unwrap();
    let chapters_txt = book.join("novel_chapters.txt");
    let books_txt = mnt.join("novel_books.txt");
    let (first_chapters, first_books) = (text(&chapters_txt), text(&books_txt));
    assert!(!first_chapters.contains("新添的诗"), "{first_chapters}");

    let mut measured = Vec::new();
    let mut note = |what: &str, took: Option<Duration>| {
        eprintln!(
            "{what}: {}",
            took.map_or(format!("not within {limit:?}"), |d| format!("{d:.2?}"))
        );
        measured.push((what.to_string(), took));
    };

    let added = before.iter().filter(|c| book.join(c).is_dir()).count() + 1;
    let added_name = format!("{added:02}-新添的诗.md");
    let added_number = added.to_string();
    bucket.put(
        &format!("novels/唐诗选/{added_name}"),
        "新添的诗\n\n床前看月光。\n".as_bytes(),
    );
    note(
        "added chapter in ls of the book",
        time_until(limit, || {
            sorted_names(&book).is_ok_and(|n| n.contains(&added_name))
        }),
    );
    note(
        "added chapter by number",
        time_until(limit, || {
            book.join(&added_number).join("offset-1.txt").exists()
        }),
    );
    note(
        "added chapter in novel_chapters.txt",
        time_until(limit, || text(&chapters_txt).contains("新添的诗")),
    );

    bucket.delete(&format!("novels/唐诗选/{added_name}"));
    note(
        "deleted chapter gone from ls of the book",
        time_until(limit, || {
            sorted_names(&book).is_ok_and(|n| !n.contains(&added_name))
        }),
    );
    note(
        "deleted chapter gone by number",
        time_until(limit, || {
            !book.join(&added_number).join("offset-1.txt").exists()
        }),
    );
    note(
        "deleted chapter gone from novel_chapters.txt",
        time_until(limit, || !text(&chapters_txt).contains("新添的诗")),
    );
    note(
        "novel_books.txt counts the chapters it had before",
        time_until(limit, || text(&books_txt) == first_books),
    );

    bucket.put("novels/新书/第1章 开篇.md", "开篇\n\n第一行。\n".as_bytes());
    note(
        "new book in ls of the root",
        time_until(limit, || {
            sorted_names(&mnt).is_ok_and(|n| n.contains(&"新书".to_string()))
        }),
    );
    note(
        "new book's chapter by number",
        time_until(limit, || mnt.join("新书/1/offset-1.txt").exists()),
    );
    note(
        "new book in novel_books.txt",
        time_until(limit, || text(&books_txt).contains("新书")),
    );

    let late: Vec<_> = measured
        .iter()
        .filter(|(_, took)| took.is_none_or(|d| d > target))
        .collect();
    assert!(late.is_empty(), "later than {target:?}: {late:?}");
}
