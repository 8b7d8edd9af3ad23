//! A cold `grep -r` of a bucket's library fetches each chapter once, in
//! every cloud: a reader that comes to a chapter whose GET is under way
//! (the read-ahead's, or another reader's) waits for that GET rather than
//! sending its own, and a read-ahead queued meanwhile does not send one
//! either. Counted at the proxy: GETs of chapters, by chapter.

use std::collections::BTreeMap;
use std::process::Command;

use crate::bucket::native::library;
use crate::common::bucket::Bucket;
use crate::common::s3_server::Emulator;

/// 6 books of 100 chapters, `grep -r` over a fresh mount: the chapters'
/// GETs (at most 1% over one a chapter), and no chapter fetched more than
/// once.
fn grep_once(emulator: Emulator) {
    require_fuse!();
    let (books, chapters) = (6, 100);
    let (_dir, root) = library(books, chapters);
    let Some(bucket) = Bucket::with_cloud(&root, emulator) else {
        return;
    };
    let m = bucket.mount(&["--ttl", "60"]);
    std::fs::metadata(m.path()).unwrap();
    bucket.server.reset_counts();
    let out = Command::new("grep")
        .args(["-r", "-l", "寻找之词"])
        .arg(m.path())
        .output()
        .unwrap();
    let found = String::from_utf8_lossy(&out.stdout).lines().count();
    assert!(found >= books * chapters, "grep found {found} files");
    let mut by_chapter: BTreeMap<String, usize> = BTreeMap::new();
    for r in bucket.server.log() {
        if matches!(r.kind.as_str(), "GET" | "RANGED_GET") && r.path.contains("novels") {
            *by_chapter.entry(r.path).or_default() += 1;
        }
    }
    let gets: usize = by_chapter.values().sum();
    let twice: Vec<(&String, &usize)> = by_chapter.iter().filter(|(_, n)| **n > 1).collect();
    eprintln!(
        "{emulator:?}: {gets} chapter GETs for {} chapters; fetched more than once: {twice:?}",
        books * chapters
    );
    assert_eq!(by_chapter.len(), books * chapters, "every chapter fetched");
    assert!(
        gets * 100 <= books * chapters * 101,
        "{gets} GETs for {} chapters",
        books * chapters
    );
    // Within the 1% above, none at all: each chapter's GET is joined.
    assert!(twice.is_empty(), "fetched more than once: {}", twice.len());
}

#[test]
fn a_cold_grep_of_s3_fetches_each_chapter_once() {
    grep_once(Emulator::Moto);
}

#[test]
fn a_cold_grep_of_gcs_fetches_each_chapter_once() {
    grep_once(Emulator::FakeGcs);
}

#[test]
fn a_cold_grep_of_azure_fetches_each_chapter_once() {
    grep_once(Emulator::Azurite);
}
