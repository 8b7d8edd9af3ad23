//! The index files in the tree, without a mount: what listing them costs,
//! how they follow edits, reserved names and the per-tool switch.

use std::ffi::OsStr;
use std::path::PathBuf;

use super::super::super::test_fixture as one_book;
use super::*;
use crate::freshness::{self, Change, Invalidation};
use crate::node::ROOT_INO;
use crate::source::stamp_of_path;
use crate::tree::FsConfig;
use novelfs_library::NovelError;

struct Lib {
    dir: tempfile::TempDir,
    fs: NovelFs,
}

impl Lib {
    fn novels(&self) -> PathBuf {
        self.dir.path().join("novels")
    }
    fn state_file(&self) -> PathBuf {
        self.dir.path().join("state.json")
    }
}

/// A library of `books` (name, [(file, body)]) served by a `NovelFs`.
fn library(books: &[(&str, Vec<(String, String)>)]) -> Lib {
    let dir = tempfile::tempdir().unwrap();
    for (book, files) in books {
        let book_dir = dir.path().join("novels").join(book);
        std::fs::create_dir_all(&book_dir).unwrap();
        for (name, body) in files {
            std::fs::write(book_dir.join(name), body).unwrap();
        }
    }
    let config = FsConfig {
        state_file: Some(dir.path().join("state.json")),
        ..FsConfig::default()
    };
    let fs = NovelFs::new(novelfs_storage::open_local(dir.path()).unwrap(), config);
    Lib { dir, fs }
}

fn files(names: &[&str]) -> Vec<(String, String)> {
    names
        .iter()
        .map(|n| (n.to_string(), format!("{n}\n正文")))
        .collect()
}

fn walk(fs: &NovelFs, path: &[&str]) -> Result<Attr> {
    let mut attr = fs.getattr(ROOT_INO)?;
    for part in path {
        attr = fs.lookup(attr.ino, OsStr::new(part))?;
    }
    Ok(attr)
}

fn read_all(fs: &NovelFs, ino: u64) -> String {
    String::from_utf8(fs.read(ino, 0, u32::MAX).unwrap()).unwrap()
}

/// Lists `ino` as READDIRPLUS does: every entry with its attributes.
fn list_plus(fs: &NovelFs, ino: u64) -> Vec<(String, Attr)> {
    let listing = fs.listing(ino, 0).unwrap();
    listing
        .entries
        .iter()
        .map(|e| {
            let attr = fs.listed_plus(e).expect("listed entries exist");
            (e.name.to_string_lossy().into_owned(), attr)
        })
        .collect()
}

#[test]
fn listing_a_large_library_computes_no_index_and_each_chapter_is_decoded_once() {
    let books: Vec<(String, Vec<(String, String)>)> = (0..20)
        .map(|b| {
            let chapters = (1..=100)
                .map(|c| {
                    (
                        format!("第{c}章 章{c}.md"),
                        format!("书{b}第{c}章\n{}", "字".repeat(c)),
                    )
                })
                .collect();
            (format!("书{b:02}"), chapters)
        })
        .collect();
    let refs: Vec<(&str, Vec<(String, String)>)> =
        books.iter().map(|(b, c)| (b.as_str(), c.clone())).collect();
    let lib = library(&refs);
    let fs = &lib.fs;
    let root = list_plus(fs, ROOT_INO);
    assert_eq!(
        root.len(),
        20 + 2,
        "20 books and the library's two index files"
    );
    for (name, attr) in &root {
        if attr.kind == Kind::Directory {
            let book = list_plus(fs, attr.ino);
            assert_eq!(
                book.len(),
                100 + 2,
                "{name}: 100 chapters and two index files"
            );
        }
    }
    // What listing decodes is done ahead of a walk, off the request
    // thread: at most a window of each book's first chapters.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while fs.ahead.outliner().pending() > 0 {
        assert!(std::time::Instant::now() < deadline, "outline thread stuck");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(
        fs.decodes() as usize <= 20 * crate::ahead::WINDOW,
        "listing the root and every book decoded {} chapters",
        fs.decodes()
    );
    let books_txt = walk(fs, &["novel_books.txt"]).unwrap();
    assert_eq!(fs.decodes(), 2000, "novel_books decodes each chapter once");
    let text = read_all(fs, books_txt.ino);
    assert_eq!(text.len() as u64, books_txt.size);
    assert!(text.contains("- 书19: 100 章, "), "{text}");
    for (name, _) in root.iter().filter(|(_, a)| a.kind == Kind::Directory) {
        let chapters = walk(fs, &[name, "novel_chapters.json"]).unwrap();
        let json: serde_json::Value = serde_json::from_str(&read_all(fs, chapters.ino)).unwrap();
        assert_eq!(json["chapters"].as_array().unwrap().len(), 100);
    }
    walk(fs, &["书00", "第7章 章7.md", "offset-1.txt"]).unwrap();
    assert_eq!(
        fs.decodes(),
        2000,
        "the book indexes and the pages' outlines share the one decode"
    );
    // Once looked up, a book's listing gives the index files as a lookup does.
    let book = walk(fs, &["书00"]).unwrap();
    let listed = list_plus(fs, book.ino);
    let (_, txt) = listed
        .iter()
        .find(|(n, _)| n == "novel_chapters.txt")
        .unwrap();
    let looked = walk(fs, &["书00", "novel_chapters.txt"]).unwrap();
    assert_eq!((txt.ino, txt.size), (looked.ino, looked.size));
}

#[test]
fn an_edit_an_addition_and_a_removal_change_both_indexes() {
    let lib = library(&[("书", files(&["第1章 起.md", "第2章 承.md"]))]);
    let fs = &lib.fs;
    let book_dir = lib.novels().join("书");
    let both = || {
        // As the mount's notify thread does: what the watch reports is
        // handed over before the next read.
        assert!(fs.watch().is_some(), "the library is watched");
        one_book::reported(fs);
        let b = walk(fs, &["novel_books.txt"]).unwrap();
        let c = walk(fs, &["书", "novel_chapters.txt"]).unwrap();
        (b.ino, read_all(fs, b.ino), c.ino, read_all(fs, c.ino))
    };
    let before = both();
    assert!(before.1.contains("- 书: 2 章, 22 字"), "{}", before.1);
    std::fs::write(
        book_dir.join("第1章 起.md"),
        "改过的第一章，长了一些，再长一点",
    )
    .unwrap();
    let edited = both();
    assert_ne!(edited.0, before.0, "a new version is a new inode");
    assert!(edited.1.contains("- 书: 2 章, 27 字"), "{}", edited.1);
    assert!(
        edited.3.contains("第01章 起 — 16 字 / 1 行"),
        "{}",
        edited.3
    );
    assert_eq!(
        read_all(fs, before.2),
        before.3,
        "the old version keeps its bytes"
    );
    std::fs::write(book_dir.join("第3章 转.md"), "三").unwrap();
    let added = both();
    assert!(added.1.contains("- 书: 3 章, 28 字"), "{}", added.1);
    assert!(added.3.contains("(第3章 转.md, 更新于 "), "{}", added.3);
    std::fs::remove_file(book_dir.join("第2章 承.md")).unwrap();
    let removed = both();
    assert!(removed.1.contains("- 书: 2 章, 17 字"), "{}", removed.1);
    assert!(!removed.3.contains("第2章 承.md"), "{}", removed.3);
}

#[test]
fn a_chapter_change_drops_both_index_entries_from_the_kernel() {
    let lib = library(&[("书", files(&["第1章 起.md"]))]);
    let fs = &lib.fs;
    let books = walk(fs, &["novel_books.txt"]).unwrap();
    let chapters = walk(fs, &["书", "novel_chapters.txt"]).unwrap();
    let book = walk(fs, &["书"]).unwrap();
    let plan = fs.invalidations(&[Change::Chapter("书".into(), "第1章 起.md".into())]);
    let entry = |parent, name: &str| Invalidation::Entry {
        parent,
        name: name.into(),
    };
    assert!(
        plan.contains(&entry(ROOT_INO, "novel_books.txt")),
        "{plan:?}"
    );
    assert!(
        plan.contains(&entry(book.ino, "novel_chapters.txt")),
        "{plan:?}"
    );
    let other = fs.invalidations(&[Change::Chapters("别的书".into())]);
    assert!(other.contains(&entry(ROOT_INO, "novel_books.txt")));
    assert!(!other.contains(&entry(book.ino, "novel_chapters.txt")));
    assert_ne!(books.ino, chapters.ino);
}

#[test]
fn a_book_or_chapter_named_like_an_index_file_is_reached_by_its_aliases() {
    let lib = library(&[
        ("novel_books.txt", files(&["第1章 书名撞了.md"])),
        ("书", files(&["novel_chapters.txt", "第1章 起.md"])),
    ]);
    let fs = &lib.fs;
    let names: Vec<String> = list_plus(fs, ROOT_INO).into_iter().map(|e| e.0).collect();
    assert_eq!(names, ["书", "novel_books.txt", "novel_books.json"]);
    let index = walk(fs, &["novel_books.txt"]).unwrap();
    assert_eq!(index.kind, Kind::File, "the name is the library's index");
    let book = walk(fs, &[" novel_books.txt"]).unwrap();
    assert_eq!(book.kind, Kind::Directory, "an alias is the book itself");
    let alias = walk(fs, &[" novel_books.txt", "1"]).unwrap();
    assert_eq!(fs.readlink(alias.ino).unwrap(), "第1章 书名撞了.md");
    let page = walk(
        fs,
        &[" novel_books.txt", "第1章 书名撞了.md", "offset-1.txt"],
    )
    .unwrap();
    assert!(read_all(fs, page.ino).contains("/novels/novel_books.txt/第1章 书名撞了.md</path>"));
    let in_book: Vec<String> = {
        let b = walk(fs, &["书"]).unwrap();
        list_plus(fs, b.ino).into_iter().map(|e| e.0).collect()
    };
    assert_eq!(
        in_book,
        ["第1章 起.md", "novel_chapters.txt", "novel_chapters.json"],
        "the chapter of that name is not listed under it"
    );
    let chapter = walk(fs, &["书", "novel_chapters"]).unwrap();
    assert_eq!(
        chapter.kind,
        Kind::Directory,
        "its stem is its directory, not a symlink"
    );
    let page = walk(fs, &["书", "novel chapters", "offset-1.txt"]).unwrap();
    assert!(read_all(fs, page.ino).contains("1: novel_chapters.txt\n"));
    assert!(
        chapter.ttl <= Duration::from_secs(1),
        "kept only for the TTL"
    );
    let listing = read_all(fs, walk(fs, &["书", "novel_chapters.txt"]).unwrap().ino);
    assert!(
        listing.contains("(novel_chapters.txt, 更新于 "),
        "{listing}"
    );
}

fn switch(lib: &Lib, state: &str) {
    std::fs::write(lib.state_file(), state).unwrap();
    // Readings are reused for up to SWITCH_CHECK_INTERVAL.
    assert!(lib.fs.switch_flipped(), "the switch file changed");
}

#[test]
fn each_index_follows_its_own_tools_switch() {
    let lib = library(&[("书", files(&["第1章 起.md"]))]);
    let fs = &lib.fs;
    assert!(!fs.switch_flipped(), "the first reading only records");
    switch(&lib, r#"{"tools":{"novel_books":false}}"#);
    let off = walk(fs, &["novel_books.txt"]).unwrap();
    assert_eq!(
        read_all(fs, off.ino),
        NovelError::ToolSwitchedOff {
            tool: "novel_books"
        }
        .error_line()
    );
    let json = walk(fs, &["novel_books.json"]).unwrap();
    assert_eq!(
        read_all(fs, json.ino),
        format!(
            "{{\n  \"error\": {}\n}}\n",
            serde_json::to_string(read_all(fs, off.ino).trim_end()).unwrap()
        ),
        "the JSON holds the text's error line"
    );
    assert!(
        walk(fs, &["书", "novel_chapters.json"]).is_ok(),
        "novel_chapters is on"
    );
    switch(&lib, r#"{"tools":{"novel_chapters":false}}"#);
    let off = walk(fs, &["书", "novel_chapters.txt"]).unwrap();
    assert_eq!(
        read_all(fs, off.ino),
        NovelError::ToolSwitchedOff {
            tool: "novel_chapters"
        }
        .error_line()
    );
    let json = walk(fs, &["书", "novel_chapters.json"]).unwrap();
    assert_eq!(
        read_all(fs, json.ino),
        format!(
            "{{\n  \"error\": {}\n}}\n",
            serde_json::to_string(read_all(fs, off.ino).trim_end()).unwrap()
        ),
        "the JSON holds the text's error line"
    );
    let on = walk(fs, &["novel_books.json"]).unwrap();
    assert!(
        read_all(fs, on.ino).contains("\"chapters\": 1"),
        "novel_books is on"
    );
    // novel_read's switch closes the whole tree, index files included.
    switch(&lib, r#"{"tools":{"novel_read":false}}"#);
    let names: Vec<String> = list_plus(fs, ROOT_INO).into_iter().map(|e| e.0).collect();
    assert_eq!(names, ["ERROR"]);
    assert_eq!(
        walk(fs, &["novel_books.txt"]).map_err(|e| e.errno()),
        Err(libc::EACCES)
    );
    assert_eq!(
        fs.read(on.ino, 0, 10).map_err(|e| e.errno()),
        Err(libc::EACCES)
    );
}

#[test]
fn a_same_size_edit_in_the_second_of_a_read_changes_the_books_index() {
    let f = one_book::fixture(&[("第1章 起.md", "甲\n乙")]);
    let path = f.book_dir.join("第1章 起.md");
    let index = || {
        // `walk` hands what the watch reported over first, as the mount does.
        let file = one_book::walk(&f.fs, "书/novel_chapters.txt").unwrap();
        one_book::text_of(&f.fs, file.ino)
    };
    for attempt in 0..5 {
        // As many bytes, other characters: 甲 is three bytes.
        let (old, new) = if attempt % 2 == 0 {
            ("甲\n乙", "abc\n乙")
        } else {
            ("abc\n乙", "甲\n乙")
        };
        one_book::whole_second_stamps();
        one_book::rewrite(&path, old);
        let stamp = stamp_of_path(&path).unwrap();
        one_book::clock_at(&f, freshness::racy::changed(&stamp));
        let before = index();
        one_book::rewrite(&path, new);
        if stamp_of_path(&path) != Some(stamp) {
            continue; // Not within one second: again.
        }
        assert_ne!(index(), before, "the index of the bytes read before");
        return;
    }
    panic!("no two edits within one second in 5 attempts");
}

/// In a watched book the index as last looked at holds until the watch
/// reports a change in the book (no `lstat` of every chapter per lookup);
/// the report makes the next lookup look again.
#[test]
fn a_watched_books_index_is_looked_at_again_when_the_watch_reports_a_change() {
    let lib = library(&[("书", files(&["第1章 起.md", "第2章 承.md"]))]);
    let fs = &lib.fs;
    let chapters = || {
        let c = walk(fs, &["书", "novel_chapters.txt"]).unwrap();
        read_all(fs, c.ino)
    };
    let books = || {
        let b = walk(fs, &["novel_books.txt"]).unwrap();
        read_all(fs, b.ino)
    };
    let (before, books_before) = (chapters(), books());
    std::fs::write(
        lib.novels().join("书/第1章 起.md"),
        "改过的第一章，长了一些，再长一点",
    )
    .unwrap();
    assert_eq!(chapters(), before, "not reported yet: as last looked at");
    assert_eq!(books(), books_before, "not reported yet: as last looked at");
    assert!(fs.watch().is_some(), "the library is watched");
    one_book::reported(fs);
    let after = chapters();
    assert_ne!(after, before);
    assert!(after.contains("第01章 起 — 16 字 / 1 行"), "{after}");
    assert!(
        books().contains("- 书: 2 章, 27 字"),
        "reported: looked at again"
    );
}

#[test]
fn novel_books_over_an_indexed_library_decodes_nothing_and_caches_no_outline() {
    let lib = library(&[
        ("甲书", files(&["第1章 起.md", "第2章 承.md"])),
        ("乙书", files(&["第1章 转.md", "第1章 又一稿.md"])),
    ]);
    let index_dir = lib.dir.path().join("index");
    // Recorded outside the racy window of the files' last change.
    std::thread::sleep(std::time::Duration::from_millis(50));
    let library = || novelfs_storage::open_local(lib.dir.path()).unwrap();
    crate::persist::refresh(&library(), &index_dir, &mut |_| {}).unwrap();
    let config = || FsConfig {
        state_file: Some(lib.state_file()),
        index_dir: Some(index_dir.clone()),
        ..FsConfig::default()
    };
    let fresh = NovelFs::new(library(), config());
    let books = walk(&fresh, &["novel_books.txt"]).unwrap();
    let indexed = read_all(&fresh, books.ino);
    assert_eq!(fresh.decodes(), 0, "every chapter's figures were stored");
    for (book, file) in [("甲书", "第1章 起.md"), ("乙书", "第1章 转.md")] {
        let chapter =
            crate::node::chapter_ref(&std::sync::Arc::from(OsStr::new(book)), OsStr::new(file));
        assert!(
            !fresh.outlines.is_cached(&fresh.source, &chapter),
            "{book}/{file}: counted from its figures, no outline kept"
        );
    }
    let unindexed = NovelFs::new(
        library(),
        FsConfig {
            index_dir: None,
            ..config()
        },
    );
    let books = walk(&unindexed, &["novel_books.txt"]).unwrap();
    assert_eq!(indexed, read_all(&unindexed, books.ino));
    assert!(unindexed.decodes() > 0);
}
