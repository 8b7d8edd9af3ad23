//! The tree as a whole without a mount: its shape, listings continued
//! over READDIRs, TTLs, OPENDIR's cache rule, the inode table's weight.

use super::test_fixture::*;
use super::*;
use crate::freshness::{self, WATCHED_TTL};
use crate::node::{ROOT_INO, chapter_ref};
use crate::source::stamp_of_path;
use std::time::Duration;

#[test]
fn tree_shape_without_a_mount() {
    let f = fixture(&[
        ("第1章 起.md", "一\n二"),
        ("第2章 承.md", "x"),
        ("第02章 另.md", "y"),
    ]);
    let book = walk(&f.fs, "书").unwrap();
    assert_eq!(book.kind, Kind::Directory);
    let names: Vec<_> =
        f.fs.list(book.ino)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
    assert_eq!(
        names,
        [
            "第1章 起.md",
            "第02章 另.md",
            "第2章 承.md",
            "novel_chapters.txt",
            "novel_chapters.json"
        ]
    );
    let alias = f.fs.lookup(book.ino, OsStr::new("1")).unwrap();
    assert_eq!(alias.kind, Kind::Symlink);
    assert_eq!(f.fs.readlink(alias.ino).unwrap(), "第1章 起.md");
    let page = walk(&f.fs, "书/1/offset-1.txt").unwrap();
    let bytes = read_all(&f.fs, page.ino);
    assert_eq!(bytes.len() as u64, page.size);
    assert!(String::from_utf8(bytes).unwrap().contains("1: 一\n2: 二\n"));
    let ambiguous = f.fs.lookup(book.ino, OsStr::new("2")).unwrap();
    assert_eq!(ambiguous.kind, Kind::Directory);
    let listed: Vec<_> =
        f.fs.list(ambiguous.ino)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
    assert_eq!(listed, ["ERROR"]);
    assert_eq!(
        f.fs.lookup(ambiguous.ino, OsStr::new("offset-1.txt"))
            .map_err(|e| e.errno()),
        Err(libc::ENOENT)
    );
    assert_eq!(
        walk(&f.fs, "书/1/offset-3.txt").map_err(|e| e.errno()),
        Err(libc::ENOENT)
    );
    assert_eq!(
        walk(&f.fs, "书/1/offset-01.txt").map_err(|e| e.errno()),
        Err(libc::ENOENT)
    );
    assert_eq!(
        walk(&f.fs, "书/99").map_err(|e| e.errno()),
        Err(libc::ENOENT)
    );
}

#[test]
fn readdir_pieces_continue_their_own_listing() {
    let f = fixture(&[("第1章 起.md", "a"), ("第2章 承.md", "b")]);
    let book = walk(&f.fs, "书").unwrap();
    let first = f.fs.listing(book.ino, 0).unwrap();
    assert_eq!(first.start, 0);
    // The kernel continues after entry 2 (the first chapter).
    let resume = first.offset_after(2);
    std::fs::write(f.book_dir.join("第0章 序.md"), "c").unwrap();
    let next = f.fs.listing(book.ino, resume).unwrap();
    assert_eq!(next.start, 3);
    assert!(
        Arc::ptr_eq(&next.entries, &first.entries),
        "the piece comes from the same listing"
    );
    let fresh = f.fs.listing(book.ino, 0).unwrap();
    assert_eq!(
        fresh.entries.len(),
        3 + 2,
        "a new listing sees the new chapter (and the two index files)"
    );
    assert_ne!(fresh.offset_after(2), resume);
    assert!(resume < 1 << 63);
}

#[test]
fn ttls_are_long_only_where_the_watch_reports_changes() {
    let f = fixture(&[("第1章 起.md", "a")]);
    assert!(f.fs.watching(), "a temp dir is local and watchable");
    assert_eq!(walk(&f.fs, "书").unwrap().ttl, WATCHED_TTL);
    assert_eq!(walk(&f.fs, "书/1/offset-1.txt").unwrap().ttl, WATCHED_TTL);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("novels/书")).unwrap();
    let config = FsConfig {
        watch: false,
        ..FsConfig::default()
    };
    let unwatched = NovelFs::new(novelfs_storage::open_local(dir.path()).unwrap(), config);
    assert!(!unwatched.watching());
    assert_eq!(walk(&unwatched, "书").unwrap().ttl, Duration::from_secs(1));
    let strict = NovelFs::new(
        novelfs_storage::open_local(dir.path()).unwrap(),
        FsConfig {
            ttl: Duration::ZERO,
            ..FsConfig::default()
        },
    );
    assert!(
        !strict.watching(),
        "ttl 0 asks every time: nothing to watch for"
    );
}

#[test]
fn decoded_texts_give_way_to_the_inode_table() {
    let body = "字\n".repeat(100_000);
    let files: Vec<(String, &str)> = (1..=4).map(|n| (format!("第{n}章.md"), &*body)).collect();
    let files: Vec<(&str, &str)> = files.iter().map(|(n, b)| (n.as_str(), *b)).collect();
    // 16 MiB: the texts' share is 12 MiB.
    let f = fixture_with_cache(&files[..3], 16 << 20);
    for n in 1..=3 {
        walk(&f.fs, &format!("书/{n}/offset-1.txt")).unwrap();
    }
    let texts = || f.fs.source.text_bytes();
    let three = texts();
    assert!(three > 3 * body.len(), "all three texts are kept");
    // The kernel is given 100,000 more chapters: the table outgrows
    // the texts' share, and the next load keeps only the minimum.
    let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
    for i in 0..100_000 {
        let chapter = chapter_ref(&book, OsStr::new(&format!("第{i}章 某.md")));
        f.fs.inodes.intern(Node::Chapter { chapter }, true, None);
    }
    assert!(f.fs.inode_table_bytes() > 12 << 20);
    std::fs::write(f.book_dir.join(files[3].0), &body).unwrap();
    walk(&f.fs, "书/4/offset-1.txt").unwrap();
    // Each text (with its line index) outweighs the 1 MiB minimum: the
    // new one is kept alone.
    assert_eq!(texts(), three / 3, "only the text just loaded is left");
}

#[test]
fn forgotten_inodes_are_freed() {
    let f = fixture(&[("第1章 起.md", "a")]);
    let before = f.fs.inode_count();
    let page = walk(&f.fs, "书/第1章 起.md/offset-1.json").unwrap();
    let grown = f.fs.inode_count();
    assert!(grown > before);
    f.fs.forget(page.ino, 1);
    assert_eq!(f.fs.inode_count(), grown - 1);
    assert_eq!(
        f.fs.getattr(page.ino).map_err(|e| e.errno()),
        Err(libc::ENOENT)
    );
}

#[test]
fn the_kernel_keeps_a_listing_only_under_a_stamp_settled_when_it_was_taken() {
    let f = fixture(&[("第1章 起.md", "甲")]);
    let novels = f.book_dir.parent().unwrap().to_path_buf();
    let changed = freshness::racy::changed(&stamp_of_path(&novels).unwrap());
    clock_at(&f, changed);
    let kept = |ino| f.fs.opendir(ino).unwrap() == DirCache::Keep;
    assert!(!kept(ROOT_INO), "the first opendir");
    assert!(
        !kept(ROOT_INO),
        "the same stamp, not settled when listed: listed again"
    );
    clock_at(&f, changed + LATER);
    assert!(
        !kept(ROOT_INO),
        "settled now, but not when the kernel listed last"
    );
    assert!(kept(ROOT_INO), "listed under a settled stamp");
    let book = walk(&f.fs, "书").unwrap();
    assert!(!kept(book.ino));
    assert!(kept(book.ino));
}

#[test]
fn under_ttl_0_the_kernel_caches_no_listing() {
    let dir = tempfile::tempdir().unwrap();
    let book_dir = dir.path().join("novels/书");
    std::fs::create_dir_all(&book_dir).unwrap();
    std::fs::write(book_dir.join("第1章 起.md"), "甲").unwrap();
    let strict = NovelFs::new(
        novelfs_storage::open_local(dir.path()).unwrap(),
        FsConfig {
            ttl: Duration::ZERO,
            state_file: Some(dir.path().join("no-state.json")),
            ..FsConfig::default()
        },
    );
    let all_settled = std::time::SystemTime::now() + Duration::from_secs(3600);
    *crate::lock(&strict.freshness.fake_now) = Some(all_settled);
    let chapter = walk(&strict, "书/1").unwrap();
    for ino in [ROOT_INO, walk(&strict, "书").unwrap().ino, chapter.ino] {
        for _ in 0..3 {
            assert_eq!(strict.opendir(ino), Ok(DirCache::Uncached));
        }
    }
}

/// In a watched book the look its listing takes (an `lstat` of each
/// chapter) serves what a walk of it asks next while the watch reports
/// nothing: each chapter directory's listing and the lookup of the book's
/// index look at no chapter again. An unwatched book looks again (its
/// looks hold for no time).
#[test]
fn a_walk_of_a_watched_book_looks_at_each_chapter_once() {
    use crate::source::Seams;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let names = ["第1章 起.md", "第2章 承.md", "第3章 转.md", "第4章 合.md"];
    let files: Vec<(&str, &str)> = names.iter().map(|n| (*n, "一\n二")).collect();
    let f = fixture(&files);
    assert!(f.fs.watching(), "a temp dir is local and watchable");
    let looks = Arc::new(AtomicUsize::new(0));
    let counted = looks.clone();
    with_seams(
        &f,
        Seams {
            before_stat: Some(Box::new(move |_| {
                counted.fetch_add(1, Ordering::SeqCst);
            })),
            ..Seams::default()
        },
    );
    let book = walk(&f.fs, "书").unwrap();
    let listed = f.fs.listing(book.ino, 0).unwrap();
    assert_eq!(listed.entries.len(), names.len() + 2);
    assert_eq!(
        looks.load(Ordering::SeqCst),
        names.len(),
        "the listing's look"
    );
    list_chapters(&f.fs, names.len());
    let index = walk(&f.fs, "书/novel_chapters.txt").unwrap();
    assert!(text_of(&f.fs, index.ino).contains("第04章 合"));
    assert_eq!(
        looks.load(Ordering::SeqCst),
        names.len(),
        "each chapter looked at once in the whole walk"
    );
}

/// A reader of a book's pages that walks to the book's end finds its
/// index made ahead, on the outline thread: its lookup walks nothing. A
/// walk that only lists (`find`) has no index made.
#[test]
fn a_reader_walking_to_a_books_end_finds_its_index_made() {
    use std::sync::atomic::Ordering;
    let names: Vec<String> = (1..=24).map(|n| format!("第{n}章.md")).collect();
    let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "一\n二")).collect();
    for reads in [false, true] {
        let f = fixture(&files);
        let book = walk(&f.fs, "书").unwrap();
        f.fs.listing(book.ino, 0).unwrap();
        if reads {
            let page = walk(&f.fs, "书/1/offset-1.txt").unwrap();
            f.fs.read(page.ino, 0, 4096).unwrap();
        }
        list_chapters(&f.fs, names.len());
        outlined_ahead(&f.fs);
        let made = f.fs.index_files.books_made.load(Ordering::SeqCst);
        assert_eq!(made, usize::from(reads), "made ahead of a reader only");
        let index = walk(&f.fs, "书/novel_chapters.txt").unwrap();
        assert!(text_of(&f.fs, index.ino).contains("第24章"));
        assert_eq!(
            f.fs.index_files.books_made.load(Ordering::SeqCst),
            1,
            "its lookup found it made ({reads})"
        );
    }
}

#[test]
fn only_names_a_chapter_directory_can_never_hold_are_missing_by_construction() {
    let f = fixture(&[("第1章 起.md", "一\n二")]);
    let book = walk(&f.fs, "书").unwrap();
    let chapter = walk(&f.fs, "书/第1章 起.md").unwrap();
    let decodes = f.fs.decodes();
    for probe in [
        ".gitignore",
        ".ignore",
        ".rgignore",
        ".git",
        "offset-01.txt",
    ] {
        let answer = f.fs.missing_by_construction(chapter.ino, OsStr::new(probe));
        assert!(
            matches!(answer, Some(Entry::Missing(ttl)) if ttl == WATCHED_TTL),
            "{probe}: {answer:?}"
        );
    }
    assert_eq!(f.fs.decodes(), decodes, "a probe decodes no chapter");
    // A page's name, ERROR, and any name in a book or the root need the tree.
    for name in ["offset-1.txt", "offset-9.json", "ERROR"] {
        assert!(
            f.fs.missing_by_construction(chapter.ino, OsStr::new(name))
                .is_none()
        );
    }
    for dir in [book.ino, ROOT_INO] {
        assert!(
            f.fs.missing_by_construction(dir, OsStr::new(".gitignore"))
                .is_none()
        );
    }
}
