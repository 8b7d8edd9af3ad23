//! A fresh mount of a bucket to its first page: what it waits for, one
//! round trip after another, read from the times the test's proxy logs
//! for each request.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::bucket::{Bucket, credentials};
use crate::common::is_mounted;
use crate::common::s3_server::Request;

const LATENCY: Duration = Duration::from_millis(100);

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The most requests of `answered` that ran one after another, none
/// overlapping the next: the round trips a reader waited for in turn
/// (the earliest-ending first, as intervals are scheduled).
fn round_trips_in_turn(answered: &[Request]) -> Vec<Request> {
    let mut by_end = answered.to_vec();
    by_end.sort_by(|a, b| a.end.partial_cmp(&b.end).unwrap());
    let mut chain: Vec<Request> = Vec::new();
    for r in by_end {
        if chain.last().is_none_or(|last| r.start >= last.end.unwrap()) {
            chain.push(r);
        }
    }
    chain
}

/// The mount checks the bucket in one LIST (`novels/`'s, which tells a
/// missing bucket, refused credentials and no library apart) and, beside
/// it, asks for the published snapshot's head (a GET: none is published
/// here), then the book is listed and its chapter fetched: three round
/// trips in turn, two LISTs and two GETs answered before the page is,
/// nothing else. At 100 ms
/// a request, nothing but those and the processes' start is waited for.
/// With `NOVELFS_TEST_S3_CHECK_APART=1` in the tests' environment (the
/// daemon inherits it) the mount checks the bucket and `novels/` in two
/// round trips, as without `check_dir`: four in turn, three LISTs.
#[test]
fn a_fresh_mount_waits_for_three_round_trips_to_its_first_page() {
    require_fuse!();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("lib");
    for b in 0..3 {
        let book = root.join(format!("novels/书{b:02}"));
        std::fs::create_dir_all(&book).unwrap();
        for c in 1..=30 {
            let text = format!("第{c}章\n{}\n", "天地玄黄，宇宙洪荒。".repeat(30));
            std::fs::write(book.join(format!("第{c:03}章.md")), text).unwrap();
        }
    }
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    bucket
        .server
        .set(&format!("latency_ms={}", LATENCY.as_millis()));
    bucket.server.reset_counts();
    let t = Instant::now();
    let m = bucket.mount(&["--ttl", "60"]);
    let page = std::fs::read(m.path().join("书00/1/offset-1.txt")).unwrap();
    let done = now();
    let took = t.elapsed();
    assert!(String::from_utf8_lossy(&page).contains("第1章"));
    let answered: Vec<Request> = bucket
        .server
        .log()
        .into_iter()
        .filter(|r| r.end.is_some_and(|e| e <= done))
        .collect();
    let in_turn = round_trips_in_turn(&answered);
    eprintln!(
        "mount + first page: {took:?}; answered before it: {:?}; in turn: {:?}",
        answered
            .iter()
            .map(|r| (r.kind.as_str(), r.end.unwrap() - r.start))
            .collect::<Vec<_>>(),
        in_turn.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>()
    );
    let kinds = |kind: &str| answered.iter().filter(|r| r.kind == kind).count();
    assert_eq!(
        (kinds("LIST"), kinds("GET"), answered.len()),
        (2, 2, 4),
        "the check's LIST and beside it the published snapshot's head (none \
         here), the book's LIST, the chapter's GET: {answered:?}"
    );
    assert_eq!(in_turn.len(), 3, "round trips in turn: {in_turn:?}");
    // The three round trips, and the processes' start and the kernel's
    // requests, however busy the machine: no retry's backoff, no second
    // client's start-up, no timeout waited out.
    assert!(
        took < 3 * LATENCY + Duration::from_millis(1500),
        "mount + first page took {took:?}"
    );
}

/// A daemonized mount checks its bucket from the waiting command, beside
/// the daemon's fork, exec and start, not once its server has started:
/// with the server's start held back (`NOVELFS_TEST_SLOW_START_MS`) by as
/// long as a request takes, the mount is ready in about one of them, not
/// two, and the server does not check again (one LIST in all). With
/// `NOVELFS_TEST_S3_CHECK_IN_DAEMON=1` the server checks once started, as
/// a foreground mount does, and the mount takes both.
#[test]
fn a_daemonized_mount_checks_its_bucket_while_the_daemon_starts() {
    require_fuse!();
    const WAIT: Duration = Duration::from_secs(2);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("lib");
    let book = root.join("novels/书");
    std::fs::create_dir_all(&book).unwrap();
    std::fs::write(book.join("第1章.md"), "第1章\n天地玄黄。\n").unwrap();
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    bucket
        .server
        .set(&format!("latency_ms={}", WAIT.as_millis()));
    bucket.server.reset_counts();
    let mnt = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .args(["mount", &bucket.url()])
        .arg(mnt.path())
        .args(["--endpoint-url", &bucket.server.endpoint()])
        .args(["--no-index", "--io-uring", "off", "--source-timeout", "30"])
        .envs(credentials())
        .env("NOVELFS_TEST_SLOW_START_MS", WAIT.as_millis().to_string())
        .output()
        .unwrap();
    let took = t.elapsed();
    let mounted = is_mounted(mnt.path());
    let lists = bucket.server.counts().list;
    let _ = std::process::Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("unmount")
        .arg(mnt.path())
        .output();
    assert!(out.status.success() && mounted, "{out:?}");
    assert_eq!(lists, 1, "the command's check, and no other");
    // One wait and the processes' start, however busy the machine; both
    // waits one after the other would be twice the wait.
    assert!(
        took < WAIT + WAIT / 2,
        "the mount took {took:?}: its check waited for the daemon's start"
    );
}

/// A published library of `books` books of `chapters` chapters, mounted
/// on a fresh machine (an empty index folder): the bytes of the answers
/// (GETs and LISTs) written before its first page was, and then, for a
/// book not read yet, the GETs its `novel_chapters.txt` costs: of the
/// publisher's objects, of the library's.
struct FreshMount {
    bytes_before_first_page: u64,
    requests_before_first_page: usize,
    chapters_index_gets: (usize, usize),
    /// Then `novel_books.txt`: the bytes and the GETs it cost, and how
    /// long its read took.
    books_index: (u64, usize),
    books_index_took: Duration,
    /// The snapshot's root object's bytes.
    root_bytes: u64,
}

/// `latency_ms`: each request's latency once the library is published.
fn fresh_mount_of_published(books: usize, chapters: usize, latency_ms: u64) -> Option<FreshMount> {
    let (_dir, root) = crate::bucket::native::library(books, chapters);
    let bucket = Bucket::with(&root)?;
    let machines = tempfile::tempdir().unwrap();
    crate::bucket::native::publish(&bucket, &machines.path().join("publisher"));
    bucket.server.set(&format!("latency_ms={latency_ms}"));
    let fresh = machines.path().join("fresh");
    bucket.server.reset_counts();
    let m = bucket.mount(&["--ttl", "60", "--index-dir", fresh.to_str().unwrap()]);
    let page = std::fs::read(m.path().join("书00/第0001章.md/offset-1.txt")).unwrap();
    let done = now();
    assert!(String::from_utf8_lossy(&page).contains("第1章"));
    let answered: Vec<Request> = bucket
        .server
        .log()
        .into_iter()
        .filter(|r| r.end.is_some_and(|e| e <= done))
        .collect();
    // The mount's own read-ahead of the book's next chapters lands after.
    std::thread::sleep(Duration::from_millis(500));
    bucket.server.reset_counts();
    let listed = std::fs::read(m.path().join("书01/novel_chapters.txt")).unwrap();
    assert!(String::from_utf8_lossy(&listed).contains("第0001章"));
    let chapters_index_gets = (bucket.gets(false), bucket.gets(true));
    bucket.server.reset_counts();
    let began = Instant::now();
    std::fs::read(m.path().join("novel_books.txt")).unwrap();
    let books_index_took = began.elapsed();
    let log = bucket.server.log();
    let books_index = (log.iter().map(|r| r.bytes).sum(), log.len());
    // The first piece a mount fetches is the root the head names.
    let root_bytes = answered
        .iter()
        .filter(|r| crate::common::bucket::percent_decoded(&r.path).contains("/.novelfs/pieces/"))
        .min_by(|a, b| a.start.partial_cmp(&b.start).unwrap())
        .map_or(0, |r| r.bytes);
    Some(FreshMount {
        bytes_before_first_page: answered.iter().map(|r| r.bytes).sum(),
        requests_before_first_page: answered.len(),
        chapters_index_gets,
        books_index,
        books_index_took,
        root_bytes,
    })
}

/// A fresh mount of a published library fetches its snapshot's root and
/// the pieces of what it reads, each book's outlines in its piece: ten
/// times the books cost the bytes before the first page the root's row of
/// each book more (not the library's index, whose size is the library's),
/// and a book's `novel_chapters.txt` costs its piece, not a GET per
/// chapter.
#[test]
fn a_fresh_mount_fetches_before_its_first_page_what_does_not_grow_with_the_library() {
    require_fuse!();
    const CHAPTERS: usize = 20;
    let Some(small) = fresh_mount_of_published(4, CHAPTERS, 0) else {
        return;
    };
    let big = fresh_mount_of_published(40, CHAPTERS, 0).unwrap();
    eprintln!(
        "before the first page: 4 books {} B in {} requests, 40 books {} B in {} requests; \
         a book's novel_chapters.txt: {:?} GETs (publisher's, library's)",
        small.bytes_before_first_page,
        small.requests_before_first_page,
        big.bytes_before_first_page,
        big.requests_before_first_page,
        big.chapters_index_gets
    );
    // The root's row of a book, and the book's prefix in the check's
    // listing of `novels/`.
    let per_book = 200;
    assert!(
        big.bytes_before_first_page <= small.bytes_before_first_page + 36 * per_book,
        "36 books more cost {} B before the first page (at most {per_book} B a book)",
        big.bytes_before_first_page
            - small
                .bytes_before_first_page
                .min(big.bytes_before_first_page)
    );
    let (pieces, chapters) = big.chapters_index_gets;
    assert_eq!(pieces, 1, "the book's piece, once");
    // The chapters fetched ahead of a reader of the book, at most.
    assert!(
        chapters < CHAPTERS / 2,
        "{chapters} chapter GETs for a book's index of {CHAPTERS} chapters"
    );
}

/// The bytes a fresh mount fetches before its first page, at
/// `NOVELFS_TEST_MEASURE_BOOKS` books (20 unless set) of
/// `NOVELFS_TEST_MEASURE_CHAPTERS` chapters (100 unless set),
/// each request taking `NOVELFS_TEST_MEASURE_LATENCY_MS` (0 unless set)
/// once published; then what `novel_books.txt` costs it, and the root's
/// size: a measurement, not a check.
#[test]
#[ignore]
fn measure_a_fresh_mount_before_its_first_page() {
    require_fuse!();
    let books = std::env::var("NOVELFS_TEST_MEASURE_BOOKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let latency_ms = std::env::var("NOVELFS_TEST_MEASURE_LATENCY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let chapters = std::env::var("NOVELFS_TEST_MEASURE_CHAPTERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let t = Instant::now();
    let Some(m) = fresh_mount_of_published(books, chapters, latency_ms) else {
        return;
    };
    eprintln!(
        "{books} books, {} chapters at {latency_ms} ms: {} B before the first page in {} requests; a book's \
         novel_chapters.txt: {:?} GETs (publisher's, library's); novel_books.txt: {:?} (bytes, \
         requests) in {:?}; the root {} B ({} B a book); {:?} in all",
        books * chapters,
        m.bytes_before_first_page,
        m.requests_before_first_page,
        m.chapters_index_gets,
        m.books_index,
        m.books_index_took,
        m.root_bytes,
        m.root_bytes / books as u64,
        t.elapsed()
    );
}

/// A library an older novelfs published has its whole index beside it
/// (`.novelfs/index.sqlite`) and no snapshot this one follows: a fresh
/// mount takes that index at start, and a book's `novel_chapters.txt`
/// reads none of its chapters.
#[test]
fn a_whole_index_an_older_novelfs_published_still_serves_a_fresh_mount() {
    require_fuse!();
    const CHAPTERS: usize = 20;
    let (_dir, root) = crate::bucket::native::library(3, CHAPTERS);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let machines = tempfile::tempdir().unwrap();
    let publisher = machines.path().join("publisher");
    crate::bucket::native::publish(&bucket, &publisher);
    // What an older publisher left: the index file whole, and no head of
    // this novelfs's format.
    let file = std::fs::read_dir(&publisher)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "sqlite"))
        .expect("the publisher's index file");
    bucket.put(".novelfs/index.sqlite", &std::fs::read(file).unwrap());
    bucket.delete(".novelfs/snapshot.json");
    let fresh = machines.path().join("fresh");
    let m = bucket.mount(&["--ttl", "60", "--index-dir", fresh.to_str().unwrap()]);
    std::fs::metadata(m.path()).unwrap();
    bucket.server.reset_counts();
    let listed = std::fs::read(m.path().join("书01/novel_chapters.txt")).unwrap();
    assert!(String::from_utf8_lossy(&listed).contains("第0001章"));
    let chapters = bucket.gets(true);
    // The chapters fetched ahead of a reader of the book, at most.
    assert!(
        chapters < CHAPTERS / 2,
        "{chapters} chapter GETs for a book's index of {CHAPTERS} chapters"
    );
}
