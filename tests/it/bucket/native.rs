//! A library in a bucket, mounted natively (`novelfs mount s3://…`): what
//! a user pays in requests (counted by kind at the test's proxy in front of
//! moto), latency hidden by GETs in flight, changes in the bucket showing
//! within the TTL, and a bucket that is missing, unreachable or stalls
//! giving a clear error, never a hang or an empty library.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::bucket::{Bucket, credentials};
use crate::common::errno;
use crate::common::s3_server::{Emulator, url_path};

/// A library of `books` books of `chapters` chapters each, every chapter a
/// few hundred bytes with a word `grep` finds once per chapter.
pub(crate) fn library(books: usize, chapters: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("lib");
    for b in 0..books {
        let book = root.join(format!("novels/书{b:02}"));
        std::fs::create_dir_all(&book).unwrap();
        for c in 1..=chapters {
            let text = format!("第{c}章\n{}\n寻找之词\n", "天地玄黄，宇宙洪荒。".repeat(20));
            std::fs::write(book.join(format!("第{c:04}章.md")), text).unwrap();
        }
    }
    (dir, root)
}

/// Reads every file under `dir` as `grep -r` does; the number of files.
/// `novelfs index --publish` of `bucket`, built in `index_dir`: the
/// index a fresh machine's mount then takes from the bucket.
pub(crate) fn publish(bucket: &Bucket, index_dir: &Path) {
    let endpoint = bucket.server.endpoint();
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .args(["index", &bucket.url()])
        .args(bucket.args(&endpoint, &["--publish"]))
        .arg("--index-dir")
        .arg(index_dir)
        .envs(bucket.env())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

fn read_all(dir: &Path) -> usize {
    let mut files = 0;
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                dirs.push(e.path());
            } else if t.is_file() {
                std::fs::read(e.path()).unwrap();
                files += 1;
            }
        }
    }
    files
}

#[test]
fn a_walk_costs_a_list_per_directory_and_a_get_per_chapter_and_nothing_again() {
    walk_costs(Emulator::Moto, 400);
}

/// The same walk of a Google Cloud Storage bucket (fake-gcs-server).
#[test]
fn a_walk_of_a_gcs_bucket_costs_what_a_walk_of_s3_costs() {
    walk_costs(Emulator::FakeGcs, 200);
}

/// The same walk of an Azure container (Azurite).
#[test]
fn a_walk_of_an_azure_container_costs_what_a_walk_of_s3_costs() {
    walk_costs(Emulator::Azurite, 200);
}

/// Every page of `chapters` chapters in each of 3 books read from a bucket
/// of `emulator`, cold then again: a LIST per directory, a GET per
/// chapter and no HEAD, then nothing.
fn walk_costs(emulator: Emulator, chapters: usize) {
    require_fuse!();
    let books = 3;
    let (_dir, root) = library(books, chapters);
    let Some(bucket) = Bucket::with_cloud(&root, emulator) else {
        return;
    };
    let m = bucket.mount(&["--ttl", "60"]);
    let files = read_all(m.path());
    assert!(files > books * chapters * 2, "every page read: {files}");
    let cold = bucket.server.counts();
    eprintln!(
        "cold walk of {} chapters in {emulator:?}: {cold:?}",
        books * chapters
    );
    assert_eq!(cold.head, 0, "no HEAD per chapter");
    // One LIST per book (1,000 keys a page) and novels/, and the mount's
    // check (one LIST of novels/).
    assert!(cold.list <= books as u64 + 1 + 1, "{cold:?}");
    let gets = (books * chapters) as f64;
    assert!(cold.get as f64 <= 1.05 * gets, "{cold:?}");
    bucket.server.reset_counts();
    read_all(m.path());
    let warm = bucket.server.counts();
    assert_eq!(
        (warm.get, warm.head),
        (0, 0),
        "the same walk again within the TTL: {warm:?}"
    );
}

/// Reads the first page of each chapter of `书00` in order; how long it
/// took, and the proxy's counts for it.
fn read_in_order(
    bucket: &Bucket,
    m: &crate::common::Mount,
    chapters: usize,
) -> (Duration, crate::common::s3_server::Counts) {
    let book = m.path().join("书00");
    let mut names: Vec<String> = std::fs::read_dir(&book)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    assert_eq!(names.len(), chapters);
    bucket.server.reset_counts();
    let start = Instant::now();
    for name in &names {
        std::fs::read(book.join(name).join("offset-1.txt")).unwrap();
    }
    (start.elapsed(), bucket.server.counts())
}

/// At 50 ms a request, a reader going through a book in order waits for
/// a batch of GETs, not for each chapter's: against the same walk with
/// the chapters fetched ahead switched off (`NOVELFS_AHEAD_OFF=disk`), in
/// the same run, so a busy machine slows both (the latency is well above
/// what a busy machine adds to each chapter's work).
#[test]
fn reading_a_book_in_order_pays_the_latency_once_per_batch() {
    require_fuse!();
    let chapters = 120;
    let (_dir, root) = library(1, chapters);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    bucket.server.set("latency_ms=50");
    let one_by_one = {
        let m = bucket.mount_with_env(&["--ttl", "60"], &[("NOVELFS_AHEAD_OFF", "disk".into())]);
        read_in_order(&bucket, &m, chapters)
    };
    let m = bucket.mount(&["--ttl", "60"]);
    let ahead = read_in_order(&bucket, &m, chapters);
    eprintln!(
        "{chapters} chapters in order at 50 ms a request: {:?} with GETs ahead ({:?}), {:?} one by one ({:?})",
        ahead.0, ahead.1, one_by_one.0, one_by_one.1
    );
    assert!(
        ahead.1.get <= chapters as u64 + 1,
        "one GET a chapter: {:?}",
        ahead.1
    );
    assert!(
        ahead.1.max_in_flight >= 4,
        "GETs went out together: {:?}",
        ahead.1
    );
    assert!(
        ahead.0 * 2 < one_by_one.0,
        "{:?} with GETs ahead against {:?} one by one",
        ahead.0,
        one_by_one.0
    );
}

#[test]
fn a_replaced_added_or_deleted_chapter_shows_within_the_ttl() {
    changes_show(Emulator::Moto);
}

#[test]
fn a_chapter_changed_in_a_gcs_bucket_shows_within_the_ttl() {
    changes_show(Emulator::FakeGcs);
}

#[test]
fn a_chapter_changed_in_an_azure_container_shows_within_the_ttl() {
    changes_show(Emulator::Azurite);
}

fn changes_show(emulator: Emulator) {
    require_fuse!();
    let (_dir, root) = library(1, 3);
    let Some(bucket) = Bucket::with_cloud(&root, emulator) else {
        return;
    };
    let m = bucket.mount(&["--ttl", "1"]);
    let book = m.path().join("书00");
    let page = |name: &str| std::fs::read_to_string(book.join(name).join("offset-1.txt"));
    assert!(page("第0001章.md").unwrap().contains("天地玄黄"));
    bucket.put("novels/书00/第0001章.md", "新的第一章\n".as_bytes());
    bucket.put("novels/书00/第0009章.md", "加上的一章\n".as_bytes());
    bucket.delete("novels/书00/第0002章.md");
    let changed = Instant::now();
    let within = Duration::from_secs(1) + Duration::from_secs(1);
    loop {
        let replaced = page("第0001章.md").is_ok_and(|p| p.contains("新的第一章"));
        let added = page("第0009章.md").is_ok_and(|p| p.contains("加上的一章"));
        let deleted = page("第0002章.md").is_err_and(|e| errno(&e) == libc::ENOENT);
        let listed = std::fs::read_to_string(book.join("novel_chapters.txt")).unwrap();
        let index = listed.contains("第0009章") && !listed.contains("第0002章");
        if replaced && added && deleted && index {
            break;
        }
        assert!(
            changed.elapsed() < within + Duration::from_secs(2),
            "after {:?}: replaced {replaced}, added {added}, deleted {deleted}, index {index}",
            changed.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("changes shown after {:?}", changed.elapsed());
}

/// `novelfs mount` of a bucket that cannot be read: exit 1 with one line
/// saying why, and nothing mounted.
fn mount_fails(url: &str, endpoint: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .args(["mount", url])
        .arg(dir.path())
        .args([
            "--endpoint-url",
            endpoint,
            "--no-index",
            "--source-timeout",
            "3",
        ])
        .envs(credentials())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(!crate::common::is_mounted(dir.path()));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(!err.contains("novelfs-test-secret"), "no secret: {err}");
    err
}

#[test]
fn a_missing_bucket_an_unreachable_endpoint_or_no_library_is_one_clear_line() {
    require_fuse!();
    let (_dir, root) = library(1, 1);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let endpoint = bucket.server.endpoint();
    let err = mount_fails("s3://no-such-bucket", &endpoint);
    assert!(err.contains("no-such-bucket"), "{err}");
    let closed = format!("http://127.0.0.1:{}", crate::common::free_port());
    let err = mount_fails(&bucket.url(), &closed);
    assert!(err.contains("unreachable"), "{err}");
    let err = mount_fails(&format!("{}/elsewhere", bucket.url()), &endpoint);
    assert!(err.contains("novels/"), "{err}");
}

/// A bucket in another region than the one the mount signs for: AWS
/// answers `PermanentRedirect` (a 301 whose body names an endpoint of the
/// bucket's region, which object_store does not pass on) or
/// `AuthorizationHeaderMalformed` (a 400 naming the region), which the
/// proxy sends in moto's stead. The mount fails with one line saying so
/// and naming `--region` (and the region, where the answer reaches
/// novelfs with it), after one request: none is retried.
#[test]
fn a_bucket_in_another_region_is_one_line_naming_its_region() {
    require_fuse!();
    let (_dir, root) = library(1, 1);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let endpoint = bucket.server.endpoint();
    let redirect = concat!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Error><Code>PermanentRedirect</Code>"#,
        "<Message>The bucket you are attempting to access must be addressed using the ",
        "specified endpoint. Please send all future requests to this endpoint.</Message>",
        "<Endpoint>novelfs-test.s3.eu-west-3.amazonaws.com</Endpoint>",
        "<Bucket>novelfs-test</Bucket><RequestId>R</RequestId><HostId>H</HostId></Error>"
    );
    let malformed = concat!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Error><Code>AuthorizationHeaderMalformed</Code>"#,
        "<Message>The authorization header is malformed; the region 'us-east-1' is wrong; ",
        "expecting 'eu-west-3'</Message><Region>eu-west-3</Region>",
        "<RequestId>R</RequestId><HostId>H</HostId></Error>"
    );
    for (status, body, said) in [
        (301, redirect, "in another region: give its --region"),
        (
            400,
            malformed,
            "in region eu-west-3: give --region eu-west-3",
        ),
    ] {
        bucket.server.set(&format!(
            "reply=-1&reply_status={status}&reply_body={}",
            url_path(body)
        ));
        bucket.server.reset_counts();
        let err = mount_fails(&bucket.url(), &endpoint);
        assert!(err.contains(said), "{status}: {err}");
        let counts = bucket.server.counts();
        // The check's LIST, and beside it at most the published
        // snapshot's head: no retry, no second look.
        assert_eq!(counts.list, 1, "{status}: {counts:?}");
        assert!(counts.get <= 1, "{status}: {counts:?}");
    }
}

#[test]
fn a_stalled_server_fails_reads_in_time_and_they_recover() {
    stalled_then_recovers(Emulator::Moto);
}

#[test]
fn a_stalled_gcs_endpoint_fails_reads_in_time_and_they_recover() {
    stalled_then_recovers(Emulator::FakeGcs);
}

#[test]
fn a_stalled_azure_endpoint_fails_reads_in_time_and_they_recover() {
    stalled_then_recovers(Emulator::Azurite);
}

fn stalled_then_recovers(emulator: Emulator) {
    require_fuse!();
    let (_dir, root) = library(1, 40);
    let Some(bucket) = Bucket::with_cloud(&root, emulator) else {
        return;
    };
    let m = bucket.mount(&["--ttl", "60", "--source-timeout", "2"]);
    let book = m.path().join("书00");
    let first = book.join("第0001章.md/offset-1.txt");
    std::fs::read(&first).unwrap();
    bucket.server.set("stall=-1");
    // A chapter not read yet, far from the first (not fetched ahead).
    let last = book.join("第0040章.md/offset-1.txt");
    let start = Instant::now();
    let err = std::fs::read(&last).expect_err("the server answers nothing");
    let took = start.elapsed();
    assert_eq!(errno(&err), libc::EIO, "{err}");
    assert!(
        took < Duration::from_secs(8),
        "failed in {took:?}, not hung"
    );
    // What was read before is still served.
    std::fs::read(&first).unwrap();
    bucket.server.set("stall=0");
    let recovered = Instant::now();
    while std::fs::read(&last).is_err() {
        assert!(
            recovered.elapsed() < Duration::from_secs(10),
            "reads recover once the server answers"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `novelfs index s3://… --publish` leaves each book's index rows in its
/// piece of the snapshot; a fresh machine's mount (an empty index folder)
/// that lists its directories takes a book's rows with one GET as it
/// lists the book and writes `novel_books.txt` without a chapter's GET,
/// the same bytes as a mount that reads every chapter.
#[test]
fn a_published_index_lets_a_fresh_mount_count_the_library_without_a_get() {
    require_fuse!();
    let (books, chapters) = (3, 30);
    let (dir, root) = library(books, chapters);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    publish(&bucket, &dir.path().join("built-here"));
    let read_all_of =
        |m: &crate::common::Mount| std::fs::read(m.path().join("novel_books.txt")).unwrap();
    let expected = {
        let m = bucket.mount(&["--no-index"]);
        read_all_of(&m)
    };
    let fresh = dir.path().join("fresh-machine");
    bucket.server.reset_counts();
    // The index, as a mount that lists its directories takes it (a mount
    // that follows the snapshot: tests/it/bucket/fleet.rs).
    let m = bucket.mount(&[
        "--index-dir",
        fresh.to_str().unwrap(),
        "--freshness",
        "listing",
    ]);
    // Until the mount answers: with a holder the mount is listed before its
    // server has opened the library (and fetched the index).
    std::fs::metadata(m.path()).unwrap();
    let at_mount = bucket.server.counts();
    bucket.server.reset_counts();
    assert_eq!(read_all_of(&m), expected);
    let counted = bucket.server.counts();
    eprintln!("fresh mount: {at_mount:?}; novel_books.txt: {counted:?}");
    // The snapshot's head and root at most, as the mount starts; each
    // book's rows with its piece: no chapter is read.
    assert!(
        at_mount.get <= 2,
        "the head and the root, once: {at_mount:?}"
    );
    assert_eq!(bucket.gets(true), 0, "chapters read: {counted:?}");
    assert!(counted.get <= books as u64, "a piece a book: {counted:?}");
    assert_eq!(counted.head, 0, "{counted:?}");
    assert!(counted.list <= books as u64 + 1, "{counted:?}");
}

/// Readers looking at a book together when its listing is past the TTL
/// cause one listing of it, not one each: at 100 ms a request, eight
/// threads list the book (1,500 chapters, two pages of keys) and look up
/// a chapter at once, and the proxy counts the LISTs of one listing of
/// the book and one of `novels/`.
#[test]
fn readers_at_a_listings_expiry_share_one_listing() {
    require_fuse!();
    let chapters = 1500;
    let (_dir, root) = library(1, chapters);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let m = bucket.mount(&["--ttl", "1"]);
    let book = m.path().join("书00");
    assert_eq!(std::fs::read_dir(&book).unwrap().count(), chapters + 2);
    bucket.server.set("latency_ms=100");
    let mut book_listed = 0;
    for round in 0..3 {
        std::thread::sleep(Duration::from_millis(1300));
        bucket.server.reset_counts();
        let start = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            for i in 0..8 {
                let (book, start) = (&book, &start);
                s.spawn(move || {
                    start.wait();
                    if i % 2 == 0 {
                        std::fs::read_dir(book).unwrap().count();
                    } else {
                        std::fs::metadata(book.join(format!("第{:04}章.md", i * 100))).unwrap();
                    }
                });
            }
        });
        // Readers within the grace past the TTL are served the old
        // listing while one LIST makes it again in the background: its
        // requests are counted once they have all been made (no new one
        // for 400 ms).
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut counts = bucket.server.counts();
        loop {
            std::thread::sleep(Duration::from_millis(400));
            let now = bucket.server.counts();
            if (now.list == counts.list && now.list >= 2) || Instant::now() > deadline {
                break;
            }
            counts = now;
        }
        eprintln!("round {round}: {counts:?}");
        // The book's two pages, and perhaps novels/'s one; on a busy
        // machine, where a LIST may outlast the TTL, once more in the
        // background (each reader making its own would be 16). A round
        // whose readers came while the last round's listing made in the
        // background was still fresh (it landed late on a busy machine)
        // lists less; some round lists the book.
        assert!(
            counts.list <= 5,
            "one listing of the book and of novels/: {counts:?}"
        );
        if counts.list >= 2 {
            book_listed += 1;
        }
    }
    assert!(book_listed > 0, "no round listed the book");
}
