//! `novel_books` on a mount of a published library: printed from the
//! figures the snapshot's root gives each book, without a piece or a
//! chapter fetched, and the same bytes as a mount that follows no
//! snapshot prints, wherever the figures do not hold (a book read, a book
//! changed and never published, a smaller size limit).

use std::path::Path;
use std::time::Duration;

use crate::bucket::native::publish;
use crate::common::bucket::Bucket;
use crate::common::eventually_within;

/// Books of different sizes (so that `novel_books`' order is by their
/// characters), a file that is no chapter beside chapters, and a notes
/// folder that is no book.
fn library() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("lib");
    for b in 0..5usize {
        let book = root.join(format!("novels/书{b:02}"));
        std::fs::create_dir_all(&book).unwrap();
        for c in 1..=(3 + b) {
            let text = format!(
                "第{c}章\n{}\n",
                "天地玄黄，宇宙洪荒。".repeat(5 + 7 * c + b)
            );
            std::fs::write(book.join(format!("第{c:04}章.md")), text).unwrap();
        }
    }
    std::fs::write(root.join("novels/书02/封面.jpg"), b"not a chapter").unwrap();
    std::fs::create_dir_all(root.join("novels/创作资料")).unwrap();
    std::fs::write(root.join("novels/创作资料/人物.md"), "人物\n").unwrap();
    (dir, root)
}

/// `novel_books.txt` and `.json` of the mount at `m`, and the text's
/// size and mtime as a lookup gives them.
fn books_of(m: &Path) -> (String, String, u64, std::time::SystemTime) {
    let meta = std::fs::metadata(m.join("novel_books.txt")).unwrap();
    (
        std::fs::read_to_string(m.join("novel_books.txt")).unwrap(),
        std::fs::read_to_string(m.join("novel_books.json")).unwrap(),
        meta.len(),
        meta.modified().unwrap(),
    )
}

fn mount(bucket: &Bucket, index_dir: &Path, extra: &[&str]) -> crate::common::Mount {
    let mut args = vec!["--index-dir", index_dir.to_str().unwrap()];
    if !extra.contains(&"--ttl") {
        args.extend(["--ttl", "60"]);
    }
    args.extend_from_slice(extra);
    let m = bucket.mount(&args);
    std::fs::metadata(m.path()).unwrap();
    m
}

/// A fresh mount of a published library prints `novel_books` from the
/// snapshot's root: besides the mount's check (a LIST) and the head,
/// the root is the one object fetched, no book's piece, no chapter. Its
/// bytes, size and mtime are those of a mount that follows no snapshot
/// (`--freshness listing`), before and after a book is read (its piece
/// fetched: that book is counted from its listing and its rows); a mount
/// whose size limit is below a chapter counts that book as one without a
/// snapshot does.
#[test]
fn novel_books_of_a_fresh_mount_costs_the_root_alone() {
    require_fuse!();
    let (_dir, root) = library();
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let machines = tempfile::tempdir().unwrap();
    publish(&bucket, &machines.path().join("publisher"));
    bucket.server.reset_counts();
    let fresh = mount(&bucket, &machines.path().join("fresh"), &[]);
    let from_root = books_of(fresh.path());
    let log = bucket.server.log();
    let pieces = log
        .iter()
        .filter(|r| {
            r.kind == "GET"
                && crate::common::bucket::percent_decoded(&r.path).contains("/.novelfs/pieces/")
        })
        .count();
    let kinds = |kind: &str| log.iter().filter(|r| r.kind == kind).count();
    assert_eq!(
        (kinds("LIST"), bucket.gets(true), pieces, log.len()),
        (1, 0, 1, 3),
        "the mount's check, the head and the root, nothing else: {log:?}"
    );
    let listing = mount(
        &bucket,
        &machines.path().join("listing"),
        &["--freshness", "listing"],
    );
    let listed = books_of(listing.path());
    assert!(listed.0.contains("- 书04: 7 章"), "{}", listed.0);
    assert_eq!(from_root, listed, "novel_books from the root");
    std::fs::read(fresh.path().join("书03/novel_chapters.txt")).unwrap();
    assert_eq!(books_of(fresh.path()), listed, "with a book read");
    // 书04's last chapter is over 1 KiB: counted as unreadable by both.
    let small = ["--max-chapter-bytes", "1KiB"];
    let limited = mount(&bucket, &machines.path().join("limited"), &small);
    let mut args = small.to_vec();
    args.extend(["--freshness", "listing"]);
    let limited_listing = mount(&bucket, &machines.path().join("limited-listing"), &args);
    let limited_books = books_of(limited.path());
    assert_ne!(limited_books.0, listed.0, "a chapter over the limit");
    assert_eq!(limited_books, books_of(limited_listing.path()));
}

/// A book changed in the bucket and never published: once a mount that
/// reads it finds it drifted from the snapshot (`--drift 1`), its
/// `novel_books` counts that book from its listing, not from the root's
/// figures, which are the book's as published: the same bytes as a mount
/// that follows no snapshot.
#[test]
fn novel_books_counts_a_book_changed_and_never_published_from_its_listing() {
    require_fuse!();
    let (_dir, root) = library();
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let machines = tempfile::tempdir().unwrap();
    publish(&bucket, &machines.path().join("publisher"));
    let drifting = mount(
        &bucket,
        &machines.path().join("drifting"),
        &["--drift", "1", "--ttl", "1"],
    );
    let published = books_of(drifting.path());
    let longer = format!("第1章\n{}\n", "寒来暑往，秋收冬藏。".repeat(300));
    bucket.put("novels/书01/第0001章.md", longer.as_bytes());
    let listing = mount(
        &bucket,
        &machines.path().join("listing"),
        &["--freshness", "listing"],
    );
    let changed = books_of(listing.path());
    assert_ne!(published.0, changed.0, "the change shows in novel_books");
    eventually_within(
        "the drifted book is counted from its listing",
        Duration::from_secs(20),
        || {
            crate::common::sorted_names(&drifting.path().join("书01")).unwrap();
            std::thread::sleep(Duration::from_millis(200));
            (books_of(drifting.path()).0 == changed.0).then_some(())
        },
    );
    assert_eq!(books_of(drifting.path()), books_of(listing.path()));
}
