//! `novel_books.*` of a library in a bucket: the walk of a book asks for
//! its first chapters at once as it begins it, rather than reading the
//! first alone and then a start's narrow window; read from the times the
//! test's proxy logs for each request.

use crate::bucket::native::library;
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

/// Whether another of each book's chapters was asked for before its first
/// was answered, in a walk of `novel_books.txt` through a fresh mount of
/// `bucket` (with `env` in the daemon's environment); the requests made.
/// Any other: the window's GETs go out from several fetcher threads, and
/// on a busy machine the one with the second chapter may run last.
fn walked(
    bucket: &Bucket,
    books: usize,
    chapters: usize,
    env: &[(&'static str, std::ffi::OsString)],
) -> (Vec<bool>, crate::common::s3_server::Counts) {
    let m = bucket.mount_with_env(&["--ttl", "60"], env);
    std::fs::metadata(m.path()).unwrap();
    bucket.server.reset_counts();
    let text = std::fs::read_to_string(m.path().join("novel_books.txt")).unwrap();
    assert!(text.contains(&format!("书{:02}", books - 1)), "{text}");
    let log = bucket.server.log();
    let together = (0..books)
        .map(|b| {
            let gets = gets_of(&log, b);
            assert_eq!(gets.len(), chapters, "book {b}: one GET a chapter");
            let first = gets[0];
            assert!(first.path.contains(&url_path("第0001章")), "{first:?}");
            let next = gets[1..].iter().map(|r| r.start).fold(f64::MAX, f64::min);
            eprintln!(
                "book {b}: its next GET at {next:.3} s, its first chapter's {:.3}-{:.3} s",
                first.start,
                first.end.unwrap()
            );
            next < first.end.unwrap()
        })
        .collect();
    (together, bucket.server.counts())
}

/// Three books (walked in turn: fewer than a walk spreads over both CPUs)
/// at 100 ms a request: each book's first chapters are fetched together,
/// others under way before its first is answered; with the walk's
/// window switched off (`NOVELFS_AHEAD_OFF=walks`), in the same run, the
/// first is read alone, its reader waiting for it, and the next asked for
/// once it came. Every chapter is fetched once and every book listed once.
/// The proxy holds each book's first chapter until another GET of its book
/// comes (or 2 s): how soon a fetcher thread runs on a busy machine does
/// not decide the order, only whether another chapter was asked for before
/// the first was answered.
#[test]
fn a_walk_of_the_books_fetches_each_books_first_chapters_together() {
    require_fuse!();
    let (books, chapters) = (3, 80);
    let (_dir, root) = library(books, chapters);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let first = url_path("第0001章");
    bucket
        .server
        .set(&format!("latency_ms=100&hold={first}&hold_ms=2000"));
    let (alone, _) = walked(
        &bucket,
        books,
        chapters,
        &[("NOVELFS_AHEAD_OFF", "walks".into())],
    );
    assert_eq!(alone, vec![false; books], "switched off");
    let (together, counts) = walked(&bucket, books, chapters, &[]);
    eprintln!("novel_books.txt of {books} books: {counts:?}");
    assert_eq!(together, vec![true; books]);
    assert_eq!(counts.get, (books * chapters) as u64, "{counts:?}");
    assert!(counts.list <= books as u64 + 1, "{counts:?}");
    assert_eq!(counts.head, 0, "{counts:?}");
}

/// The LISTs of book `b`'s directory in `log`.
fn lists_of(log: &[Request], b: usize) -> usize {
    let book = url_path(&format!("书{b:02}"));
    log.iter()
        .filter(|r| r.kind == "LIST" && r.path.contains(&book))
        .count()
}

/// Two books of 300 chapters at 500 ms a request with `--ttl 2`: each
/// book's walk (its LIST, then its chapters' GETs, 64 at most in flight:
/// 3 s at least) outlasts the TTL, yet each book is listed once, since the
/// GETs that bring its chapters are as fresh as a new listing would be
/// (each body is read within the TTL of its GET: a round trip, and the
/// reading of at most a window of 64 chapters before it, which a starved
/// debug build on a busy machine stretches past 1 s). With that switched
/// off (`NOVELFS_TEST_LISTINGS_OFF=listed`), in the same run, a book read
/// past its listing's TTL is listed again.
#[test]
fn a_book_walked_past_its_listings_ttl_is_listed_once() {
    require_fuse!();
    let (books, chapters) = (2, 300);
    let (_dir, root) = library(books, chapters);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    bucket.server.set("latency_ms=500");
    let walk = |env: &[(&'static str, std::ffi::OsString)]| {
        let m = bucket.mount_with_env(&["--ttl", "2"], env);
        std::fs::metadata(m.path()).unwrap();
        bucket.server.reset_counts();
        let text = std::fs::read_to_string(m.path().join("novel_books.txt")).unwrap();
        assert!(text.contains(&format!("书{:02}", books - 1)), "{text}");
        let log = bucket.server.log();
        (0..books)
            .map(|b| {
                let gets = gets_of(&log, b);
                // Every chapter fetched; GETs beyond one a chapter are the
                // other walk test's to count, the LISTs this one's.
                assert!(gets.len() >= chapters, "book {b}: a GET a chapter");
                let first = log
                    .iter()
                    .find(|r| r.kind == "LIST" && r.path.contains(&url_path(&format!("书{b:02}"))))
                    .expect("the book's LIST");
                let last = gets.iter().filter_map(|r| r.end).fold(0.0, f64::max);
                (lists_of(&log, b), last - first.start)
            })
            .collect::<Vec<_>>()
    };
    let again = walk(&[("NOVELFS_TEST_LISTINGS_OFF", "listed".into())]);
    eprintln!("switched off: (LISTs, seconds from LIST to last GET) a book: {again:?}");
    assert!(
        again.iter().any(|(lists, _)| *lists > 1),
        "switched off: {again:?}"
    );
    let once = walk(&[]);
    eprintln!("(LISTs, seconds from LIST to last GET) a book: {once:?}");
    for (b, (lists, took)) in once.iter().enumerate() {
        assert!(
            *took > 2.0,
            "book {b}'s walk within the TTL shows nothing: {once:?}"
        );
        assert_eq!(*lists, 1, "book {b}: {once:?}");
    }
}
