//! One view, one answer: a book that a new published snapshot (or a new
//! listing) adds is found by name as soon as `novel_books.txt` lists it,
//! even where its name was looked up, and answered missing, before.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::bucket::native::{library, publish};
use crate::common::bucket::Bucket;

/// Looks `新书` up (missing, as the kernel then remembers) while reading
/// `novel_books.txt` until it lists the book, up to `within`; whether
/// it came.
fn listed_while_looked_up(mnt: &Path, within: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        let _ = std::fs::metadata(mnt.join("新书"));
        let books = std::fs::read_to_string(mnt.join("novel_books.txt")).unwrap();
        if books.contains("新书") {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn a_new_book_is_found_at_once(freshness: &str) {
    require_fuse!();
    let (dir, root) = library(2, 3);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let publisher = dir.path().join("publisher");
    publish(&bucket, &publisher);
    let fresh = dir.path().join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    let m = bucket.mount(&[
        "--ttl",
        "3",
        "--index-dir",
        fresh.to_str().unwrap(),
        "--freshness",
        freshness,
    ]);
    let mnt = m.path().to_path_buf();
    assert!(!listed_while_looked_up(&mnt, Duration::ZERO));
    let e = std::fs::metadata(mnt.join("新书")).expect_err("no such book yet");
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);

    bucket.put("novels/新书/第1章.md", "第1章\n新的一天\n".as_bytes());
    if freshness == "published" {
        publish(&bucket, &publisher);
    }
    assert!(
        listed_while_looked_up(&mnt, Duration::from_secs(15)),
        "novel_books.txt never listed the new book"
    );
    let found = std::fs::metadata(mnt.join("新书/novel_chapters.txt"));
    let t = Instant::now();
    while std::fs::metadata(mnt.join("新书/novel_chapters.txt")).is_err()
        && t.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("DEBUG found after {:?}", t.elapsed());
    assert!(
        found.is_ok(),
        "listed in novel_books.txt, yet /新书/novel_chapters.txt: {found:?}"
    );
}

#[test]
fn a_book_a_new_snapshot_adds_is_found_as_soon_as_it_is_listed() {
    a_new_book_is_found_at_once("published");
}

#[test]
fn a_book_a_new_listing_adds_is_found_as_soon_as_it_is_listed() {
    a_new_book_is_found_at_once("listing");
}
