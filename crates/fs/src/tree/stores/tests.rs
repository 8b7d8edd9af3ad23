//! Pages stored ahead of a reader (`store_ahead`), without a mount: the
//! tree plays the kernel, listing with READDIRPLUS and reading pages.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::time::Duration;

use super::super::test_fixture::{Fixture, fixture};
use super::*;
use crate::ahead::{AHEAD_BYTES, AHEAD_CHAPTERS};
use crate::node::{Attr, ROOT_INO};
use crate::outline::GUESS_MAX_BYTES;

/// `n` numbered lines of `width` characters.
fn lines(n: usize, tag: &str) -> String {
    (1..=n)
        .map(|i| format!("{tag}{i}{}\n", "字".repeat(20)))
        .collect()
}

fn library(chapters: &[(&str, String)]) -> Fixture {
    let files: Vec<(&str, &str)> = chapters.iter().map(|(n, b)| (*n, b.as_str())).collect();
    fixture(&files)
}

fn lookup(fs: &NovelFs, parent: u64, name: &str) -> Attr {
    fs.lookup(parent, OsStr::new(name)).unwrap()
}

/// What a READDIRPLUS of `ino` gives the kernel: name → attributes, each
/// counted as a lookup. Then, as the kernel does once the reader has that
/// reply, the READDIR past it, which ends the listing: the stores sent
/// before its answer are taken and kept for the next `drain`.
fn list_plus(fs: &NovelFs, ino: u64) -> BTreeMap<String, Attr> {
    crate::tree::test_fixture::reported(fs);
    let listing = fs.listing(ino, 0).unwrap();
    let listed = listing
        .entries
        .iter()
        .filter_map(|e| Some((e.name.to_string_lossy().into_owned(), fs.listed_plus(e)?)))
        .collect();
    let end = listing.offset_after(listing.entries.len() + 1);
    fs.listing(ino, end).unwrap();
    for s in fs.stores_at_listing(ino, end) {
        AT_LISTING_ENDS.with_borrow_mut(|at| at.push((s.ino, s.bytes.to_vec())));
        fs.store_finished(s, StoreOutcome::Stored);
    }
    listed
}

thread_local! {
    /// Pages stored at the end of `list_plus`'s listings, not drained yet.
    static AT_LISTING_ENDS: std::cell::RefCell<Vec<(u64, Vec<u8>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Every page stored since the last call: at the end of a listing, then
/// every store the store thread plans within a moment, each answered as
/// the kernel would if it holds the inode: taken.
fn drain(fs: &NovelFs) -> Vec<(u64, Vec<u8>)> {
    let mut stored = AT_LISTING_ENDS.with_borrow_mut(std::mem::take);
    loop {
        let batch = fs.stores_ahead(Some(Duration::from_millis(200)));
        if batch.is_empty() {
            return stored;
        }
        for s in batch {
            stored.push((s.ino, s.bytes.to_vec()));
            fs.store_finished(s, StoreOutcome::Stored);
        }
    }
}

fn book(lib: &Fixture) -> u64 {
    lookup(&lib.fs, ROOT_INO, "书").ino
}

/// A library of one book of `chapters`, the book listed: its chapter
/// directories by name.
fn listed_book(chapters: &[(&str, String)]) -> (Fixture, BTreeMap<String, Attr>) {
    let lib = library(chapters);
    let listed = list_plus(&lib.fs, book(&lib));
    (lib, listed)
}

#[test]
fn a_read_page_stores_the_rest_of_its_chapter_then_the_listed_chapters_after_it() {
    let (lib, chapters) = listed_book(&[
        ("第1章.md", lines(1000, "甲")),
        ("第2章.md", lines(10, "乙")),
        ("第3章.md", lines(450, "丙")),
    ]);
    let fs = &lib.fs;
    let one = list_plus(fs, chapters["第1章.md"].ino);
    let two = list_plus(fs, chapters["第2章.md"].ino);
    assert!(drain(fs).is_empty(), "listings alone store nothing");
    fs.read(one["offset-1.txt"].ino, 0, 4096).unwrap();
    let stored = drain(fs);
    let want: Vec<u64> = [
        &one["offset-401.txt"],
        &one["offset-801.txt"],
        &two["offset-1.txt"],
    ]
    .iter()
    .map(|a| a.ino)
    .collect();
    let got: Vec<u64> = stored.iter().map(|s| s.0).collect();
    assert_eq!(
        got, want,
        "the rest of the chapter, then the next listed one, as text"
    );
    for (ino, bytes) in &stored {
        assert_eq!(
            *bytes,
            fs.read(*ino, 0, u32::MAX).unwrap(),
            "what a READ returns"
        );
    }
    // The third chapter's pages become storable once it is listed, and the
    // reader is taken to be there.
    let three = list_plus(fs, chapters["第3章.md"].ino);
    let got: Vec<u64> = drain(fs).iter().map(|s| s.0).collect();
    assert_eq!(
        got,
        [three["offset-1.txt"].ino, three["offset-401.txt"].ino]
    );
    assert!(drain(fs).is_empty(), "each page is stored once");
}

#[test]
fn a_json_reader_gets_json_pages() {
    let (lib, chapters) =
        listed_book(&[("第1章.md", lines(500, "甲")), ("第2章.md", lines(3, "乙"))]);
    let fs = &lib.fs;
    let one = list_plus(fs, chapters["第1章.md"].ino);
    let two = list_plus(fs, chapters["第2章.md"].ino);
    fs.read(one["offset-1.json"].ino, 0, 4096).unwrap();
    let got: Vec<u64> = drain(fs).iter().map(|s| s.0).collect();
    assert_eq!(got, [one["offset-401.json"].ino, two["offset-1.json"].ino]);
}

#[test]
fn only_pages_the_kernel_holds_are_stored() {
    let (lib, chapters) = listed_book(&[
        ("第1章.md", lines(1000, "甲")),
        ("第2章.md", lines(3, "乙")),
    ]);
    let fs = &lib.fs;
    let one = chapters["第1章.md"].ino;
    // Looked up by name, never listed: the other pages are not held.
    let first = lookup(fs, one, "offset-1.txt");
    fs.read(first.ino, 0, 4096).unwrap();
    assert!(drain(fs).is_empty(), "no page the kernel does not hold");
    let pages = list_plus(fs, one);
    let got: Vec<u64> = drain(fs).iter().map(|s| s.0).collect();
    assert_eq!(
        got,
        [pages["offset-401.txt"].ino, pages["offset-801.txt"].ino]
    );
    // Forgotten: the kernel dropped every lookup of the second chapter's
    // pages (after the end of their listing stored them).
    let two = list_plus(fs, chapters["第2章.md"].ino);
    drain(fs);
    for a in two.values() {
        fs.forget(a.ino, 1);
    }
    fs.read(pages["offset-801.txt"].ino, 0, 4096).unwrap();
    assert!(drain(fs).is_empty(), "a forgotten page is not stored");
}

#[test]
fn a_changed_chapter_is_stored_as_its_new_inode_with_its_new_bytes() {
    let (lib, chapters) =
        listed_book(&[("第1章.md", lines(10, "甲")), ("第2章.md", lines(10, "乙"))]);
    let fs = &lib.fs;
    let one = list_plus(fs, chapters["第1章.md"].ino);
    let old = list_plus(fs, chapters["第2章.md"].ino)["offset-1.txt"];
    let old_bytes = fs.read(old.ino, 0, u32::MAX).unwrap();
    std::fs::write(lib.book_dir.join("第2章.md"), lines(12, "丁")).unwrap();
    let new = list_plus(fs, chapters["第2章.md"].ino)["offset-1.txt"];
    assert_ne!(new.ino, old.ino, "another version, another inode");
    fs.read(one["offset-1.txt"].ino, 0, 4096).unwrap();
    let stored = drain(fs);
    assert_eq!(stored.len(), 1, "only the current version: {stored:?}");
    assert_eq!(stored[0].0, new.ino);
    assert!(String::from_utf8_lossy(&stored[0].1).contains("丁1"));
    assert_eq!(
        fs.read(old.ino, 0, u32::MAX).unwrap(),
        old_bytes,
        "the old inode keeps its bytes"
    );
}

#[test]
fn a_reader_gets_at_most_the_chapters_and_bytes_ahead() {
    let many: Vec<(String, String)> = (1..=3 * AHEAD_CHAPTERS)
        .map(|i| (format!("第{i}章.md"), lines(5, "甲")))
        .collect();
    let refs: Vec<(&str, String)> = many.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    let (lib, chapters) = listed_book(&refs);
    let fs = &lib.fs;
    let pages: Vec<BTreeMap<String, Attr>> = (1..=3 * AHEAD_CHAPTERS)
        .map(|i| list_plus(fs, chapters[&format!("第{i}章.md")].ino))
        .collect();
    fs.read(pages[0]["offset-1.txt"].ino, 0, 4096).unwrap();
    let got: Vec<u64> = drain(fs).iter().map(|s| s.0).collect();
    let want: Vec<u64> = pages[1..=AHEAD_CHAPTERS]
        .iter()
        .map(|p| p["offset-1.txt"].ino)
        .collect();
    assert_eq!(got, want, "the next {AHEAD_CHAPTERS} chapters");

    // Pages of about 54 KB: the bytes bound stops first.
    let big = "字".repeat(19_000);
    let lib = library(&[("第1章.md", format!("{big}\n").repeat(400))]);
    let fs = &lib.fs;
    let chapter = list_plus(fs, book(&lib))["第1章.md"].ino;
    let pages = list_plus(fs, chapter);
    fs.read(pages["offset-1.txt"].ino, 0, 4096).unwrap();
    let stored = drain(fs);
    let total: usize = stored.iter().map(|s| s.1.len()).sum();
    assert!(
        !stored.is_empty() && total as u64 <= AHEAD_BYTES,
        "{total} bytes"
    );
    let sizes: Vec<u64> = pages
        .iter()
        .filter(|(n, _)| n.ends_with(".txt"))
        .map(|(_, a)| a.size)
        .collect();
    assert!(
        stored.len() < sizes.len() - 1,
        "{} of {} pages: {sizes:?}",
        stored.len(),
        sizes.len()
    );
}

#[test]
fn a_refused_store_waits_for_its_retry_and_is_not_planned_again_meanwhile() {
    let (lib, chapters) =
        listed_book(&[("第1章.md", lines(10, "甲")), ("第2章.md", lines(10, "乙"))]);
    let fs = &lib.fs;
    let one = list_plus(fs, chapters["第1章.md"].ino);
    let two = list_plus(fs, chapters["第2章.md"].ino)["offset-1.txt"];
    fs.read(one["offset-1.txt"].ino, 0, 4096).unwrap();
    let first = fs.stores_ahead(Some(Duration::from_secs(1)));
    assert_eq!(first.iter().map(|s| s.ino).collect::<Vec<_>>(), [two.ino]);
    for s in first {
        fs.store_finished(s, StoreOutcome::NotHeld);
    }
    // The plan goes on at once (its stores were sent first): the refused
    // store comes back only as its retry, once due, never planned anew.
    let rest = fs.stores_ahead(Some(Duration::ZERO));
    assert!(
        rest.iter().all(|s| s.ino != two.ino || s.refused() == 1),
        "planned again while its retry waits"
    );
    for s in rest {
        fs.store_finished(s, StoreOutcome::NotHeld);
    }
    // Listings of its chapter while the retry waits send it at their end
    // (the kernel holds the inode by then), once.
    for _ in 0..3 {
        list_plus(fs, chapters["第2章.md"].ino);
    }
    let again: Vec<u64> = drain(fs).iter().map(|s| s.0).collect();
    assert_eq!(again, [two.ino], "one store, retried");
    assert!(drain(fs).is_empty());
}

#[test]
fn a_big_chapter_ahead_ends_the_plan_undecoded() {
    let big = lines((GUESS_MAX_BYTES as usize) / 60 + 100, "乙");
    assert!(big.len() as u64 > GUESS_MAX_BYTES);
    let (lib, chapters) = listed_book(&[
        ("第1章.md", lines(5, "甲")),
        ("第2章.md", big),
        ("第3章.md", lines(5, "丙")),
    ]);
    let fs = &lib.fs;
    let one = list_plus(fs, chapters["第1章.md"].ino);
    // The listings' outlines ahead are the outline thread's decodes, not
    // the plan's.
    crate::tree::test_fixture::outlined_ahead(fs);
    let decodes = fs.decodes();
    fs.read(one["offset-1.txt"].ino, 0, 4096).unwrap();
    assert!(drain(fs).is_empty());
    assert_eq!(fs.decodes(), decodes, "nothing decoded ahead");
}

#[test]
fn a_page_opened_is_stored_once_unless_the_kernel_has_it() {
    let (lib, chapters) = listed_book(&[
        ("第1章.md", lines(1000, "甲")),
        ("第2章.md", lines(10, "乙")),
    ]);
    let fs = &lib.fs;
    let one = list_plus(fs, chapters["第1章.md"].ino);
    let two = list_plus(fs, chapters["第2章.md"].ino);
    // Opened (its IOCTL) before any READ: stored, as a READ would return it.
    let first = one["offset-1.txt"].ino;
    let store = fs
        .store_on_open(first)
        .expect("a page never given is stored");
    assert_eq!(store.ino, first);
    assert_eq!(*store.bytes, fs.read(first, 0, u32::MAX).unwrap());
    fs.store_finished(store, StoreOutcome::Stored);
    assert!(fs.store_on_open(first).is_none(), "stored once");
    // The opened page made a reader: the store thread follows it, and
    // skips what the open stored.
    let rest: Vec<u64> = drain(fs).iter().map(|s| s.0).collect();
    assert!(rest.contains(&one["offset-401.txt"].ino), "{rest:?}");
    assert!(!rest.contains(&first), "{rest:?}");
    // A page the kernel got through a READ is not stored on its next open.
    let read = two["offset-1.txt"].ino;
    fs.read(read, 0, 4096).unwrap();
    assert!(fs.store_on_open(read).is_none(), "given by its READ");
    // Only pages: a directory is never stored.
    assert!(fs.store_on_open(chapters["第1章.md"].ino).is_none());
    assert!(fs.store_on_open(book(&lib)).is_none());
}

#[test]
fn the_end_of_a_chapter_listing_stores_its_planned_pages() {
    let (lib, chapters) = listed_book(&[
        ("第1章.md", lines(10, "甲")),
        ("第2章.md", lines(450, "乙")),
    ]);
    let fs = &lib.fs;
    let one = list_plus(fs, chapters["第1章.md"].ino);
    fs.read(one["offset-1.txt"].ino, 0, 4096).unwrap();
    // The store thread plans; the second chapter is not listed yet, so
    // nothing of it can be stored.
    assert!(drain(fs).is_empty());
    let dir = chapters["第2章.md"].ino;
    let listing = fs.listing(dir, 0).unwrap();
    let two: BTreeMap<String, Attr> = listing
        .entries
        .iter()
        .filter_map(|e| Some((e.name.to_string_lossy().into_owned(), fs.listed_plus(e)?)))
        .collect();
    assert!(
        fs.stores_at_listing(dir, 0).is_empty(),
        "not before the reader has the first reply"
    );
    // The store thread, woken by the listing, leaves the chapter's pages to
    // its end: had it claimed one and been slow to send it, the reader
    // would have READ it as well.
    assert!(drain(fs).is_empty(), "the store thread raced the listing");
    let end = listing.offset_after(listing.entries.len() + 1);
    let stores = fs.stores_at_listing(dir, end);
    let got: Vec<u64> = stores.iter().map(|s| s.ino).collect();
    assert_eq!(got, [two["offset-1.txt"].ino, two["offset-401.txt"].ino]);
    for s in stores {
        assert_eq!(*s.bytes, fs.read(s.ino, 0, u32::MAX).unwrap());
        fs.store_finished(s, StoreOutcome::Stored);
    }
    assert!(fs.stores_at_listing(dir, end).is_empty(), "each page once");
    assert!(
        drain(fs).iter().all(|(ino, _)| !got.contains(ino)),
        "the store thread skips them"
    );
}

#[test]
fn a_page_the_store_thread_sends_is_not_stored_again_meanwhile() {
    let (lib, chapters) = listed_book(&[
        ("第1章.md", lines(1000, "甲")),
        ("第2章.md", lines(10, "乙")),
    ]);
    let fs = &lib.fs;
    let one = list_plus(fs, chapters["第1章.md"].ino);
    fs.read(one["offset-1.txt"].ino, 0, 4096).unwrap();
    let batch = fs.stores_ahead(Some(Duration::from_millis(200)));
    let next = one["offset-401.txt"].ino;
    assert_eq!(batch.iter().map(|s| s.ino).collect::<Vec<_>>(), [next]);
    // Between the store thread's plan and the kernel's answer to its
    // store, the reader opens that page (or lists its chapter to the end):
    // the page is on its way already.
    assert!(fs.store_on_open(next).is_none(), "stored twice");
    for s in batch {
        fs.store_finished(s, StoreOutcome::Stored);
    }
}

#[test]
fn a_refused_store_of_a_chapter_goes_at_the_end_of_its_listing() {
    let (lib, chapters) = listed_book(&[
        ("第1章.md", lines(1000, "甲")),
        ("第2章.md", lines(10, "乙")),
    ]);
    let fs = &lib.fs;
    let dir = chapters["第1章.md"].ino;
    let one = list_plus(fs, dir);
    fs.read(one["offset-1.txt"].ino, 0, 4096).unwrap();
    let batch = fs.stores_ahead(Some(Duration::from_millis(200)));
    let next = one["offset-401.txt"].ino;
    assert_eq!(batch.iter().map(|s| s.ino).collect::<Vec<_>>(), [next]);
    for s in batch {
        fs.store_finished(s, StoreOutcome::NotHeld);
    }
    // The reader lists the chapter again, to its end: the kernel holds the
    // inode by then, and the refused store goes before the reply, not after
    // a retry delay the reader's open would not wait for.
    let stores = fs.stores_at_listing(dir, u64::MAX);
    assert_eq!(
        stores.iter().map(|s| s.ino).collect::<Vec<_>>()[..1],
        [next]
    );
    for s in stores {
        fs.store_finished(s, StoreOutcome::Stored);
    }
    assert!(
        drain(fs).iter().all(|(ino, _)| *ino != next),
        "and only then"
    );
}

#[test]
fn a_walk_wakes_the_store_thread_every_few_chapters_and_gets_every_page() {
    let n = 4 * AHEAD_CHAPTERS;
    let many: Vec<(String, String)> = (1..=n)
        .map(|i| (format!("第{i}章.md"), lines(5, "甲")))
        .collect();
    let refs: Vec<(&str, String)> = many.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    let (lib, chapters) = listed_book(&refs);
    let fs = &lib.fs;
    let dir = |i: usize| chapters[&format!("第{i}章.md")].ino;
    let first = list_plus(fs, dir(1));
    fs.read(first["offset-1.txt"].ino, 0, 4096).unwrap();
    drain(fs);
    let woken = || {
        fs.ahead
            .kernel()
            .woken_by_listings
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    let before = woken();
    // A walk: each chapter listed to its end, the store thread given its
    // turn after each listing, as on a second CPU.
    let mut stored = Vec::new();
    let mut listed = Vec::new();
    for i in 2..=n {
        listed.push(list_plus(fs, dir(i))["offset-1.txt"].ino);
        stored.extend(drain(fs).into_iter().map(|s| s.0));
    }
    assert_eq!(stored, listed, "every page of the walk, once, in order");
    let wakes = woken() - before;
    assert!(
        wakes > 0 && wakes <= (n - 1).div_ceil(2),
        "{wakes} wake-ups for {} listings",
        n - 1
    );
}

/// A book of three one-page chapters, each chapter listed: the inodes of
/// their first text pages.
fn three_listed_chapters() -> (Fixture, [u64; 3]) {
    let (lib, chapters) = listed_book(&[
        ("第1章.md", lines(5, "甲")),
        ("第2章.md", lines(5, "乙")),
        ("第3章.md", lines(5, "丙")),
    ]);
    let page =
        |i: usize| list_plus(&lib.fs, chapters[&format!("第{i}章.md")].ino)["offset-1.txt"].ino;
    let pages = [page(1), page(2), page(3)];
    (lib, pages)
}

#[test]
fn pages_given_to_the_kernel_are_not_kept() {
    let (lib, pages) = three_listed_chapters();
    let fs = &lib.fs;
    fs.read(pages[0], 0, 4096).unwrap();
    let stored: Vec<u64> = drain(fs).into_iter().map(|s| s.0).collect();
    assert_eq!(stored, pages[1..], "the pages after the one read");
    assert_eq!(fs.pages.len(), 1, "only the page a READ asked for is kept");
}

#[test]
fn a_reader_wakes_the_store_thread_only_while_it_waits() {
    let (lib, [first, second, _]) = three_listed_chapters();
    let fs = &lib.fs;
    let kernel = fs.ahead.kernel();
    let spared = || {
        kernel
            .wakes_spared
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    // No thread waits: the read's event wakes nothing.
    let before = spared();
    fs.read(first, 0, 4096).unwrap();
    assert_eq!(spared() - before, 1, "a wake-up with no one waiting");
    drain(fs);
    // A thread waiting is woken by the next read, long before its bound.
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let start = std::time::Instant::now();
            fs.stores_ahead(Some(Duration::from_secs(60)));
            start.elapsed()
        });
        let start = std::time::Instant::now();
        while !kernel.waiting() {
            assert!(start.elapsed() < Duration::from_secs(20), "never waited");
            std::thread::sleep(Duration::from_millis(1));
        }
        let before = spared();
        fs.read(second, 0, 4096).unwrap();
        assert_eq!(spared(), before, "the waiting thread was not woken");
        let waited = waiter.join().unwrap();
        assert!(waited < Duration::from_secs(30), "woken after {waited:?}");
    });
}

#[test]
fn one_track_drives_the_disk_the_outlines_and_the_stores() {
    let many: Vec<(String, String)> = (1..=20)
        .map(|i| (format!("第{i}章.md"), lines(5, "甲")))
        .collect();
    let refs: Vec<(&str, String)> = many.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    let lib = library(&refs);
    let fs = &lib.fs;
    // Out of the page cache: the disk is asked for the files after a
    // chapter loaded that was not there.
    let mut evicted = true;
    for (name, _) in &many {
        let file = std::fs::File::open(lib.book_dir.join(name)).unwrap();
        file.sync_all().unwrap();
        use std::os::fd::AsRawFd;
        // SAFETY: advice on an open descriptor; no memory involved.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        evicted &= !novelfs_storage::backing::in_page_cache(&file, 1);
    }
    let chapters = list_plus(fs, book(&lib));
    crate::tree::test_fixture::outlined_ahead(fs);
    // A walk read page by page: each chapter listed, then its page read.
    let (mut stored, mut listed) = (Vec::new(), Vec::new());
    for i in 1..=5 {
        let pages = list_plus(fs, chapters[&format!("第{i}章.md")].ino);
        listed.push(pages["offset-1.txt"].ino);
        fs.read(pages["offset-1.txt"].ino, 0, 4096).unwrap();
        stored.extend(drain(fs).into_iter().map(|s| s.0));
    }
    assert_eq!(fs.ahead.tracks(), 1, "one reader, one track");
    let track = fs.ahead.track_of(OsStr::new("书")).expect("its track");
    assert_eq!(track.next, 5, "on the fifth chapter");
    assert_eq!(
        track.pages_read,
        [4],
        "the kernel's page: on the same track"
    );
    assert!(track.outlined_to > 5, "outlined ahead of it: {track:?}");
    if evicted {
        assert!(track.disk_to > 5, "read ahead of it: {track:?}");
    }
    assert_eq!(stored, listed[1..], "stored ahead of it, once listed");
}
