//! A library in a bucket read out of order and in order: a reader who
//! jumps from chapter to chapter costs about the GET of each chapter it
//! reads, not the window fetched ahead of a reader going on; a reader going
//! through a book in order still has many GETs in flight ahead of it.
//! Counted at the test's proxy in front of moto.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::bucket::native::library;
use crate::common::bucket::Bucket;
use crate::common::s3_server::{Counts, S3Server};

/// The proxy's counts once no request has come for a while: what was
/// fetched ahead of the reads counts with them, however late a busy
/// machine sends it.
fn settled(server: &S3Server) -> Counts {
    let quiet = Duration::from_millis(1500);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = server.counts();
    loop {
        std::thread::sleep(quiet);
        let now = server.counts();
        if now == last || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

/// `n` distinct (book, chapter) pairs of a library of `books` books of
/// `chapters` chapters, spread by a fixed pseudo-random sequence (the same
/// every run), none within 8 chapters of another of its book
/// (a reader going on in order skips fewer).
fn random_chapters(n: usize, books: usize, chapters: usize) -> Vec<(usize, usize)> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut picked: Vec<(usize, usize)> = Vec::new();
    while picked.len() < n {
        let b = next() as usize % books;
        let c = 1 + next() as usize % chapters;
        if !picked.iter().any(|&(pb, pc)| pb == b && pc.abs_diff(c) < 8) {
            picked.push((b, c));
        }
    }
    picked
}

/// Reads the first page of each of `picked` (book, chapter) under `root`.
fn read_first_pages(root: &Path, picked: &[(usize, usize)]) {
    for (b, c) in picked {
        let page = root.join(format!("书{b:02}/第{c:04}章.md/offset-1.txt"));
        let text = std::fs::read_to_string(&page).unwrap();
        assert!(text.contains(&format!("第{c}章")), "{page:?}: {text}");
    }
}

/// GETs a page read when a fresh mount of `bucket` (with `env` in the
/// daemon's environment) reads the first pages of `picked`.
fn gets_a_read(
    bucket: &Bucket,
    picked: &[(usize, usize)],
    env: &[(&'static str, std::ffi::OsString)],
) -> f64 {
    let m = bucket.mount_with_env(&["--ttl", "60"], env);
    std::fs::metadata(m.path()).unwrap();
    bucket.server.reset_counts();
    read_first_pages(m.path(), picked);
    let counts = settled(&bucket.server);
    let per_read = (counts.get + counts.ranged_get) as f64 / picked.len() as f64;
    eprintln!("{env:?}: {per_read:.2} GETs a page read; {counts:?}");
    per_read
}

/// 40 first pages of chapters picked at random among 2,000 (20 books of
/// 100) cost at most 1.5 GETs each: a first read in a book fetches nothing
/// ahead, and a jump within a book starts again from nothing. With the
/// reach switched off (`NOVELFS_AHEAD_OFF=reach`), in the same run, each
/// read has the window after it fetched.
#[test]
fn random_pages_cost_about_a_get_each() {
    require_fuse!();
    let (books, chapters, reads) = (20, 100, 40);
    let (_dir, root) = library(books, chapters);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let picked = random_chapters(reads, books, chapters);
    let whole = gets_a_read(&bucket, &picked, &[("NOVELFS_AHEAD_OFF", "reach".into())]);
    assert!(whole > 5.0, "switched off: {whole:.2} GETs a page read");
    let per_read = gets_a_read(&bucket, &picked, &[]);
    assert!(per_read <= 1.5, "{per_read:.2} GETs a page read");
}

/// A reader going through a book in order (its listing, then each
/// chapter's first page) at 20 ms a request: the chapters ahead of it are
/// fetched many at once (8 GETs in flight at some point), each once.
#[test]
fn an_in_order_reader_has_many_gets_in_flight_and_each_chapter_once() {
    require_fuse!();
    let chapters = 150;
    let (_dir, root) = library(1, chapters);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    bucket.server.set("latency_ms=20");
    let m = bucket.mount(&["--ttl", "60"]);
    let book = m.path().join("书00");
    let mut names: Vec<String> = std::fs::read_dir(&book)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    assert_eq!(names.len(), chapters);
    bucket.server.reset_counts();
    for name in &names {
        let text = std::fs::read_to_string(book.join(name).join("offset-1.txt")).unwrap();
        assert!(text.contains("寻找之词"), "{name}: {text}");
    }
    let counts = settled(&bucket.server);
    eprintln!("{chapters} chapters in order at 20 ms a request: {counts:?}");
    assert!(
        counts.max_in_flight >= 8,
        "GETs went out together: {counts:?}"
    );
    let per_chapter = (counts.get + counts.ranged_get) as f64 / chapters as f64;
    assert!(
        per_chapter <= 1.05,
        "{per_chapter:.2} GETs a chapter: {counts:?}"
    );
}

/// A book's own index read after a lone page of it (its reader's reach:
/// nothing ahead) still has its chapters fetched many at once, as a walk's
/// (8 GETs in flight at some point at 20 ms a request), each once.
#[test]
fn a_books_index_after_a_lone_read_fetches_its_chapters_together() {
    require_fuse!();
    let chapters = 100;
    let (_dir, root) = library(1, chapters);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    bucket.server.set("latency_ms=20");
    let m = bucket.mount(&["--ttl", "60"]);
    read_first_pages(m.path(), &[(0, 50)]);
    settled(&bucket.server);
    bucket.server.reset_counts();
    let text = std::fs::read_to_string(m.path().join("书00/novel_chapters.txt")).unwrap();
    assert!(text.contains("第0100章"), "{text}");
    let counts = settled(&bucket.server);
    eprintln!("novel_chapters.txt after a lone read: {counts:?}");
    assert!(counts.max_in_flight >= 8, "{counts:?}");
    assert!(counts.get <= chapters as u64, "a GET a chapter: {counts:?}");
}
