//! `novel_books.*` of a library in a bucket: the walk of the books asks
//! for the next book (its listing and first chapters) before it is done
//! with the one it is on, so that GETs stay in flight across a book's
//! end; read from the times the test's proxy logs for each request.

use crate::bucket::library;
use crate::common::bucket::Bucket;
use crate::common::s3_server::{Request, url_path};

/// The GETs of the chapters of book `b` (of `bucket::library`), in the
/// chapters' order.
fn gets_of(log: &[Request], b: usize) -> Vec<&Request> {
    let dir = url_path(&format!("novels/书{b:02}/"));
    let mut gets: Vec<&Request> = log
        .iter()
        .filter(|r| r.kind == "GET" && r.path.contains(&dir))
        .collect();
    gets.sort_by(|x, y| x.path.cmp(&y.path));
    gets
}

/// Three books (walked in turn: fewer than a walk spreads over both CPUs)
/// at 100 ms a request. A book the walk did not ask for ahead has its
/// first chapter read alone, its reader waiting for it, and the next
/// chapters asked for once it came; a book asked for ahead has its first
/// chapters fetched together, the second under way before the first is
/// answered. Every chapter is fetched once and every book listed once.
#[test]
fn a_walk_of_the_books_fetches_the_next_books_first_chapters_ahead() {
    require_fuse!();
    let (books, chapters) = (3, 80);
    let (_dir, root) = library(books, chapters);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    bucket.server.set("latency_ms=100");
    let m = bucket.mount(&["--ttl", "60"]);
    std::fs::metadata(m.path()).unwrap();
    bucket.server.reset_counts();
    let text = std::fs::read_to_string(m.path().join("novel_books.txt")).unwrap();
    assert!(text.contains(&format!("书{:02}", books - 1)), "{text}");
    let log = bucket.server.log();
    let counts = bucket.server.counts();
    eprintln!("novel_books.txt of {books} books: {counts:?}");
    for b in 0..books {
        let gets = gets_of(&log, b);
        assert_eq!(gets.len(), chapters, "book {b}: one GET a chapter");
        let (first, second) = (gets[0], gets[1]);
        assert!(first.path.contains(&url_path("第0001章")), "{first:?}");
        let together = second.start < first.end.unwrap();
        // The first book is the walk's first: nothing asked for it ahead.
        assert_eq!(
            together,
            b > 0,
            "book {b}: its second chapter's GET at {:.3} s, its first's {:.3}-{:.3} s",
            second.start,
            first.start,
            first.end.unwrap()
        );
    }
    assert_eq!(counts.get, (books * chapters) as u64, "{counts:?}");
    assert!(counts.list <= books as u64 + 1, "{counts:?}");
    assert_eq!(counts.head, 0, "{counts:?}");
}
