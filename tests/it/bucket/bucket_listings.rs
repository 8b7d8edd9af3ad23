//! A bucket's listings as a reader pays for them: a listing past its TTL
//! is made again while its readers keep the old one for a short while (no
//! reader waits a LIST, and a change still shows within the TTL and 1 s),
//! and a walk of the books lists them many at once ahead of itself.
//! Each test fails with its mechanism switched off
//! (`NOVELFS_TEST_LISTINGS_OFF=stale` or `=ahead` in the test's
//! environment, which the mount inherits).

use std::time::{Duration, Instant};

use crate::bucket::native::{library, publish};
use crate::common::bucket::Bucket;

/// At 100 ms a request, a reader that reads a page every 50 ms for four
/// TTLs never waits a LIST (100 ms at least): each listing past its TTL is
/// made again behind it. A chapter replaced meanwhile still shows within
/// the TTL and 1 s.
#[test]
fn a_steady_reader_across_ttl_expiries_never_waits_a_list() {
    require_fuse!();
    let (_dir, root) = library(1, 4);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let m = bucket.mount(&["--ttl", "1"]);
    let book = m.path().join("书00");
    let page = |n: usize| std::fs::read_to_string(book.join(format!("第{n:04}章.md/offset-1.txt")));
    for n in 1..=4 {
        page(n).unwrap();
    }
    bucket.server.set("latency_ms=100");
    bucket.server.reset_counts();
    let (mut slowest, mut waits) = (Duration::ZERO, 0);
    let mut replaced_at = None;
    let mut shown_after = None;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(4) {
        // Chapters 2 to 4, unchanged: their bodies are held, so a read
        // waits on nothing but a listing.
        for n in 2..=4 {
            let t = Instant::now();
            assert!(page(n).unwrap().contains("天地玄黄"));
            let took = t.elapsed();
            slowest = slowest.max(took);
            if took >= Duration::from_millis(100) {
                waits += 1;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if replaced_at.is_none() && start.elapsed() > Duration::from_millis(1500) {
            bucket.put("novels/书00/第0001章.md", "新的第一章\n".as_bytes());
            replaced_at = Some(Instant::now());
        }
        if let Some(at) = replaced_at
            && shown_after.is_none()
            && page(1).is_ok_and(|p| p.contains("新的第一章"))
        {
            shown_after = Some(at.elapsed());
        }
    }
    let counts = bucket.server.counts();
    eprintln!(
        "slowest read {slowest:?}, {waits} waited 100 ms or more; {counts:?}; the replaced chapter shown after {shown_after:?}"
    );
    assert!(counts.list >= 3, "listings were made again: {counts:?}");
    assert_eq!(waits, 0, "no read waits a LIST (slowest {slowest:?})");
    let shown = shown_after.expect("the replaced chapter shows");
    // Its GET (100 ms) comes on top of the TTL and 1 s.
    assert!(shown < Duration::from_millis(2100), "shown after {shown:?}");
}

/// A fresh mount of a bucket with a published index counts 40 books from
/// their listings alone: at 200 ms a request they are made many at once,
/// so `novel_books.txt` takes far less than the 40 × 200 ms (20 × 200 ms on
/// two CPUs) of one LIST after another.
#[test]
fn a_published_index_lists_the_books_many_at_once() {
    require_fuse!();
    let books = 40;
    let (dir, root) = library(books, 2);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    publish(&bucket, &dir.path().join("built-here"));
    let fresh = dir.path().join("fresh-machine");
    // A mount that lists (one that follows the published snapshot lists
    // nothing: tests/it/bucket/fleet.rs).
    let m = bucket.mount(&[
        "--index-dir",
        fresh.to_str().unwrap(),
        "--ttl",
        "60",
        "--freshness",
        "listing",
    ]);
    std::fs::metadata(m.path()).unwrap();
    bucket.server.set("latency_ms=200");
    bucket.server.reset_counts();
    let start = Instant::now();
    let text = std::fs::read_to_string(m.path().join("novel_books.txt")).unwrap();
    let took = start.elapsed();
    let counts = bucket.server.counts();
    eprintln!("novel_books.txt of {books} books at 200 ms a request: {took:?}, {counts:?}");
    assert_eq!(text.matches("书").count(), books, "{text}");
    // The books' rows come with their pieces of the published snapshot
    // (one GET a book, and the head and root once): no chapter is read.
    assert_eq!(bucket.gets(true), 0, "chapters read: {counts:?}");
    assert!(bucket.gets(false) <= books + 2, "{counts:?}");
    assert_eq!(counts.head, 0, "{counts:?}");
    assert!(
        counts.list <= books as u64 + 1,
        "one LIST a book: {counts:?}"
    );
    assert!(counts.max_in_flight > 2, "more than one a CPU: {counts:?}");
    // Two CPUs' worth of books one after another: 4 s. Many at once take
    // a few round trips, and a busy machine's work beside them.
    let one_by_one = Duration::from_millis(200) * books as u32 / 2;
    assert!(
        took * 2 < one_by_one,
        "{took:?} against {one_by_one:?} one after another"
    );
}
