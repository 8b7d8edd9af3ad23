//! A fleet on one bucket: mounts that follow the snapshot the publisher
//! writes beside the library (`novelfs index … --publish`) list nothing,
//! ask once per TTL whether a newer one was published, show a chapter
//! published again within the TTL and a bit, serve a chapter replaced but
//! not published whole (old or new), and go back to listing when their
//! publisher stops confirming its snapshot.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::bucket::native::library;
use crate::common::bucket::Bucket;
use crate::common::eventually_within;
use crate::common::s3_server::Emulator;

/// Publishes the bucket's index and snapshot (`extra`: more arguments),
/// signed with the access key `key_id`, so that the proxy's log tells the
/// publisher's requests from the mounts'.
fn publish(bucket: &Bucket, index_dir: &Path, extra: &[&str]) {
    let out = publisher(bucket, index_dir, extra).output().unwrap();
    assert!(out.status.success(), "{out:?}");
}

const PUBLISHER_KEY: &str = "novelfs-publisher";

fn publisher(bucket: &Bucket, index_dir: &Path, extra: &[&str]) -> Command {
    let endpoint = bucket.server.endpoint();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_novelfs"));
    cmd.args(["index", &bucket.url()])
        .args(bucket.args(&endpoint, &["--publish"]))
        .args(extra)
        .arg("--index-dir")
        .arg(index_dir)
        .envs(bucket.env())
        .env("AWS_ACCESS_KEY_ID", PUBLISHER_KEY);
    cmd
}

/// The requests of the mounts (not the publisher's) since the last reset,
/// by kind.
fn mounts_requests(bucket: &Bucket, kind: &str) -> usize {
    bucket
        .server
        .log()
        .iter()
        .filter(|r| r.key_id != PUBLISHER_KEY && r.kind == kind)
        .count()
}

/// One agent's round: the books, a book's chapters, a chapter's page.
fn round(mnt: &Path, book: usize, chapter: usize) {
    std::fs::read(mnt.join("novel_books.txt")).unwrap();
    let book = mnt.join(format!("书{book:02}"));
    std::fs::read(book.join("novel_chapters.txt")).unwrap();
    let page = book.join(format!("第{chapter:04}章.md/offset-1.txt"));
    std::fs::read(page).unwrap();
}

fn fresh_mount(bucket: &Bucket, index_dir: &Path, extra: &[&str]) -> crate::common::Mount {
    let mut args = vec!["--ttl", "1", "--index-dir", index_dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let m = bucket.mount(&args);
    std::fs::metadata(m.path()).unwrap();
    m
}

/// Agent rounds on a mount of a published bucket, past several TTLs:
/// not one LIST, and about one GET a round besides the head's checks (at
/// most one per TTL). The same rounds on a mount that lists
/// (`--freshness listing`) LIST every book: the count tells them apart.
#[test]
fn a_mount_that_follows_the_published_snapshot_lists_nothing() {
    follows_and_lists_nothing(Emulator::Moto);
}

/// The same in Google Cloud Storage (fake-gcs-server answers the head's
/// `If-None-Match` with the head itself: a GET, never a LIST).
#[test]
fn a_mount_that_follows_a_snapshot_published_in_gcs_lists_nothing() {
    follows_and_lists_nothing(Emulator::FakeGcs);
}

#[test]
fn a_mount_that_follows_a_snapshot_published_in_azure_lists_nothing() {
    follows_and_lists_nothing(Emulator::Azurite);
}

/// Rounds on a mount of a published bucket of `emulator` (the publisher's
/// requests are over before they are counted).
fn follows_and_lists_nothing(emulator: Emulator) {
    let (_dir, root) = library(6, 20);
    let Some(bucket) = Bucket::with_cloud(&root, emulator) else {
        return;
    };
    let machines = tempfile::tempdir().unwrap();
    publish(&bucket, &machines.path().join("publisher"), &[]);
    let mut lists = Vec::new();
    for (i, freshness) in ["published", "listing"].into_iter().enumerate() {
        let fresh = machines.path().join(format!("fresh{i}"));
        let m = fresh_mount(&bucket, &fresh, &["--freshness", freshness]);
        bucket.server.reset_counts();
        let began = Instant::now();
        let rounds = 6;
        for r in 0..rounds {
            round(m.path(), (r * 5) % 6, 1 + (r * 7) % 20);
            std::thread::sleep(Duration::from_millis(600));
        }
        let elapsed = began.elapsed().as_secs_f64();
        // Late requests of the last round land before they are counted.
        std::thread::sleep(Duration::from_millis(500));
        let list = mounts_requests(&bucket, "LIST");
        let get = mounts_requests(&bucket, "GET");
        eprintln!(
            "{emulator:?} {freshness}: {rounds} rounds in {elapsed:.1} s: {list} LIST, {get} GET"
        );
        lists.push(list);
        if freshness == "published" {
            assert_eq!(list, 0, "a mount that follows its snapshot lists nothing");
            // A page and a head's check per TTL: at most one of each per
            // round here, and a round lasts more than half a TTL; and the
            // snapshot's piece of each book the first time it is read
            // (the rounds read all six).
            let checks = elapsed.ceil() as usize + 1;
            let pieces = 6;
            assert!(
                get <= rounds + checks + pieces,
                "{get} GETs for {rounds} rounds (pages), at most {checks} checks and {pieces} \
                 books' pieces"
            );
        }
    }
    assert!(
        lists[1] >= 6,
        "a mount that lists LISTs the books it reads: {}",
        lists[1]
    );
}

/// A chapter replaced in the bucket: before it is published, its page
/// is the old chapter or the new one, whole, never an error; once
/// published, every one of eight mounts shows it within the TTL (1 s)
/// and 2 s.
#[test]
fn a_chapter_published_again_shows_in_every_mount_within_the_ttl() {
    let (_dir, root) = library(2, 10);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let machines = tempfile::tempdir().unwrap();
    publish(&bucket, &machines.path().join("publisher"), &[]);
    let mounts: Vec<_> = (0..8)
        .map(|i| fresh_mount(&bucket, &machines.path().join(format!("fresh{i}")), &[]))
        .collect();
    let page = |m: &crate::common::Mount| {
        std::fs::read_to_string(m.path().join("书01/第0003章.md/offset-1.txt")).unwrap()
    };
    for m in &mounts {
        assert!(page(m).contains("天地玄黄"));
    }
    let new_text = format!("第3章\n{}\n新的一章\n", "春眠不觉晓。".repeat(30));
    bucket.put("novels/书01/第0003章.md", new_text.as_bytes());
    // Not published: the old page or the new one, whole.
    for _ in 0..5 {
        for m in &mounts {
            let text = page(m);
            let old = text.contains("天地玄黄") && !text.contains("春眠");
            let new = text.contains("春眠") && !text.contains("天地玄黄");
            assert!(old || new, "a page of one version: {text}");
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    publish(&bucket, &machines.path().join("publisher"), &[]);
    let published = Instant::now();
    // Every mount is read as its agent reads it, all the while.
    let mut shown: Vec<Option<f64>> = vec![None; mounts.len()];
    eventually_within(
        "the published chapter shows",
        Duration::from_secs(15),
        || {
            for (i, m) in mounts.iter().enumerate() {
                if shown[i].is_none() && page(m).contains("春眠") {
                    shown[i] = Some(published.elapsed().as_secs_f64());
                }
            }
            shown.iter().all(Option::is_some).then_some(())
        },
    );
    eprintln!("the new chapter shows in each mount after {shown:.2?} s");
    // TTL (1 s) and 2 s, with room for a busy machine's slower mounts.
    assert!(published.elapsed() < Duration::from_secs(6));
}

/// A publisher run with `--every 1` that stops: its mounts list nothing
/// while it confirms the snapshot, and list again once it has not for
/// twice its cadence (a forgotten publisher never freezes a library).
#[test]
fn a_mount_lists_again_once_its_publisher_stops_confirming() {
    let (_dir, root) = library(3, 5);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let machines = tempfile::tempdir().unwrap();
    let index_dir = machines.path().join("publisher");
    let mut running = publisher(&bucket, &index_dir, &["--every", "1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let head = ".novelfs/snapshot.json";
    eventually_within("the publisher publishes", Duration::from_secs(60), || {
        bucket
            .server
            .log()
            .iter()
            .any(|r| r.kind == "PUT" && r.path.ends_with(head))
            .then_some(())
    });
    let m = fresh_mount(&bucket, &machines.path().join("fresh"), &[]);
    bucket.server.reset_counts();
    for r in 0..4 {
        round(m.path(), r % 3, 1 + r % 5);
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(
        mounts_requests(&bucket, "LIST"),
        0,
        "followed while confirmed"
    );
    let _ = running.kill();
    let _ = running.wait();
    let stopped = Instant::now();
    // Past twice the cadence (2 s, counted in whole seconds) and a TTL,
    // the mount lists what it reads.
    let listed = eventually_within(
        "the mount lists once the publisher stopped",
        Duration::from_secs(20),
        || {
            round(m.path(), 1, 2);
            std::thread::sleep(Duration::from_millis(300));
            let n = mounts_requests(&bucket, "LIST");
            (n > 0).then_some(n)
        },
    );
    let after = stopped.elapsed();
    eprintln!(
        "{listed} LISTs, the first within {:.1} s of the stop",
        after.as_secs_f64()
    );
    assert!(
        after >= Duration::from_secs(2),
        "not before twice the cadence"
    );
}

/// A snapshot published once, then a book added and a chapter added in
/// the bucket, never published: a mount that reads the books and that
/// book shows both within its drift bound (`--drift 1`) and the TTL, at
/// about one LIST a drift period; with `--drift 0` it never lists, and the
/// snapshot is all it shows.
#[test]
fn a_change_never_published_shows_within_the_drift_bound() {
    let (_dir, root) = library(3, 5);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let machines = tempfile::tempdir().unwrap();
    publish(&bucket, &machines.path().join("publisher"), &[]);
    let drifting = fresh_mount(&bucket, &machines.path().join("a"), &["--drift", "1"]);
    let frozen = fresh_mount(&bucket, &machines.path().join("b"), &["--drift", "0"]);
    let names = |dir: &Path| crate::common::sorted_names(dir).unwrap_or_default();
    for m in [&drifting, &frozen] {
        assert!(!names(m.path()).contains(&"新书".to_string()));
        assert_eq!(names(&m.path().join("书01")).len(), 5 + 2);
    }
    bucket.put("novels/书01/第0006章.md", "第6章\n新的一章\n".as_bytes());
    bucket.put("novels/新书/第0001章.md", "第1章\n新书的开头\n".as_bytes());
    bucket.server.reset_counts();
    let changed = Instant::now();
    eventually_within(
        "the book and the chapter never published show",
        Duration::from_secs(20),
        || {
            let books = names(drifting.path());
            let chapters = names(&drifting.path().join("书01"));
            std::thread::sleep(Duration::from_millis(100));
            (books.contains(&"新书".to_string()) && chapters.contains(&"第0006章.md".to_string()))
                .then_some(())
        },
    );
    let took = changed.elapsed();
    eprintln!("shown after {took:.2?}");
    let page = drifting.path().join("新书/第0001章.md/offset-1.txt");
    assert!(
        std::fs::read_to_string(page)
            .unwrap()
            .contains("新书的开头")
    );
    // A check a period (1 s), for the two directories read: the second
    // comes a period after the first; then a TTL (1 s) and a busy machine.
    assert!(took < Duration::from_secs(8), "{took:?}");
    assert!(!names(frozen.path()).contains(&"新书".to_string()));
    assert!(!names(&frozen.path().join("书01")).contains(&"第0006章.md".to_string()));
    let lists = mounts_requests(&bucket, "LIST");
    let periods = took.as_secs() as usize + 1;
    // Each drift check is one LIST; the directories found drifted are
    // listed from then on, once per TTL while they are read.
    assert!(
        lists <= 2 * periods + 4,
        "{lists} LISTs in {took:?} with a drift period of 1 s"
    );
}

/// The publisher's first run over a bucket at 20 ms a request: its
/// chapters are read with many GETs in flight (a book fetched ahead while
/// the one before is outlined), each once; a second run, nothing changed,
/// reads none.
#[test]
fn the_publishers_first_run_keeps_many_gets_in_flight() {
    let (_dir, root) = library(6, 60);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let machines = tempfile::tempdir().unwrap();
    bucket.server.set("latency_ms=20");
    bucket.server.reset_counts();
    let began = Instant::now();
    publish(&bucket, &machines.path().join("publisher"), &[]);
    let took = began.elapsed();
    let counts = bucket.server.counts();
    let chapter_gets = bucket.gets(true);
    eprintln!("first run of 360 chapters at 20 ms: {took:.2?}, {counts:?}");
    assert_eq!(chapter_gets, 360, "each chapter once");
    assert!(
        counts.max_in_flight >= 16,
        "GETs in flight: {}",
        counts.max_in_flight
    );
    bucket.server.reset_counts();
    publish(&bucket, &machines.path().join("publisher"), &[]);
    let again = bucket.gets(true);
    assert_eq!(again, 0, "nothing changed: no chapter read");
}

/// A bucket whose listings give no ETag (the proxy strips them, as some
/// S3-compatible servers list): the publisher trusts each chapter by its
/// listed size and time as it would by an ETag, so it reads each once and
/// a second run reads none, and a mount that follows its snapshot reads a
/// page with no LIST.
#[test]
fn a_listing_without_etags_is_published_as_one_with_them() {
    let (_dir, root) = library(3, 20);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    bucket.server.set("list_etags=0");
    let machines = tempfile::tempdir().unwrap();
    publish(&bucket, &machines.path().join("publisher"), &[]);
    let counts = bucket.server.counts();
    assert_eq!(bucket.gets(true), 60, "each chapter once: {counts:?}");
    assert!(counts.list <= 10, "{counts:?}");
    bucket.server.reset_counts();
    publish(&bucket, &machines.path().join("publisher"), &[]);
    assert_eq!(bucket.gets(true), 0, "nothing changed: no chapter read");
    let m = fresh_mount(&bucket, &machines.path().join("fresh"), &[]);
    bucket.server.reset_counts();
    round(m.path(), 1, 7);
    round(m.path(), 2, 20);
    assert_eq!(mounts_requests(&bucket, "LIST"), 0);
    assert_eq!(bucket.gets(true), 2, "one GET a page");
}
