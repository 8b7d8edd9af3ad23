//! A library that cannot be read, through a real mount: `novels/` gone or
//! unreadable leaves a root that lists one `ERROR` saying why and lists
//! the books again by itself once they are back; a book directory that
//! cannot be read holds an `ERROR` saying so, not nothing.
//!
//! Root reads what mode bits forbid, so the unreadable cases run the
//! daemon without that capability (`crate::common::without_dac_override`).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use crate::common::{Mount, book_library, sorted_names};

const BOOK: &str = "书";
const CHAPTER: &str = "第1章 起.md";

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Polls until `f` holds; panics after 10 s (a change must show within
/// the TTL, or at once where it is pushed).
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{what}: not within 10 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The root's names: `books` and the index files, sorted.
fn with_books_index(books: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = books.iter().map(|b| b.to_string()).collect();
    names.extend(["novel_books.json".into(), "novel_books.txt".into()]);
    names.sort();
    names
}

fn error_text(mnt: &Path) -> String {
    std::fs::read_to_string(mnt.join("ERROR")).unwrap_or_default()
}

/// `mv novels novels.gone`, then back, under `args`.
fn novels_gone_and_back(args: &[&str]) {
    let (_lib, root) = book_library(&[(CHAPTER, "一".as_bytes())]);
    let mut all = vec!["--state-file", "/nonexistent/state.json"];
    all.extend_from_slice(args);
    let m = Mount::new(&root, &all);
    let mnt = m.path();
    assert_eq!(sorted_names(mnt).unwrap(), with_books_index(&[BOOK]));
    let novels = root.join("novels");
    std::fs::rename(&novels, root.join("novels.gone")).unwrap();
    eventually("the root lists ERROR", || {
        sorted_names(mnt).is_ok_and(|n| n == ["ERROR"])
    });
    let text = error_text(mnt);
    assert_eq!(
        text,
        format!(
            "错误：无法读取 \"{}\"：No such file or directory (os error 2)\n",
            novels.display()
        ),
        "{args:?}"
    );
    assert_eq!(
        std::fs::metadata(mnt.join("ERROR")).unwrap().len(),
        text.len() as u64
    );
    eventually("the book is gone", || {
        std::fs::metadata(mnt.join(BOOK)).is_err()
    });
    // A library that cannot be listed is an error, not an empty library:
    // a page that was there is EIO (not "no such file"), and the indexes
    // hold the root's error.
    let page = mnt.join(BOOK).join(CHAPTER).join("offset-1.txt");
    let e = std::fs::read(&page).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{args:?}: {e}");
    let books = std::fs::read_to_string(mnt.join("novel_books.txt")).unwrap();
    assert_eq!(books, text, "{args:?}");
    let json = std::fs::read_to_string(mnt.join("novel_books.json")).unwrap();
    let error: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(error["error"].as_str(), Some(text.trim_end()), "{args:?}");
    std::fs::rename(root.join("novels.gone"), &novels).unwrap();
    eventually("the books are back without a remount", || {
        sorted_names(mnt).is_ok_and(|n| n == with_books_index(&[BOOK]))
    });
    let page = mnt.join(BOOK).join(CHAPTER).join("offset-1.txt");
    assert!(std::fs::read_to_string(page).unwrap().contains("1: 一\n"));
    eventually("the root's ERROR is gone", || {
        std::fs::metadata(mnt.join("ERROR")).is_err()
    });
}

#[test]
fn novels_gone_shows_an_error_and_recovers_when_watched() {
    require_fuse!();
    novels_gone_and_back(&[]);
}

#[test]
fn novels_gone_shows_an_error_and_recovers_unwatched() {
    require_fuse!();
    novels_gone_and_back(&["--no-watch"]);
    novels_gone_and_back(&["--ttl", "0"]);
}

#[test]
fn unreadable_directories_say_permission_denied() {
    require_fuse!();
    unreadable_directories(&["--ttl", "0"]);
    unreadable_directories(&["--no-watch"]);
    // Watched: a change of mode is pushed to the kernel like any change.
    unreadable_directories(&[]);
}

fn unreadable_directories(args: &[&str]) {
    let (_lib, root) = book_library(&[(CHAPTER, "一".as_bytes())]);
    std::fs::create_dir(root.join("novels/另一本")).unwrap();
    let book = root.join("novels").join(BOOK);
    let mut all = vec!["--state-file", "/nonexistent/state.json"];
    all.extend_from_slice(args);
    let m = Mount::with_command(&root, &all, "warn", |cmd| {
        crate::common::without_dac_override(cmd);
    });
    let mnt = m.path();
    assert!(
        sorted_names(&mnt.join(BOOK))
            .unwrap()
            .contains(&CHAPTER.to_string())
    );
    chmod(&book, 0o000);
    eventually("the book lists only ERROR, not nothing", || {
        sorted_names(&mnt.join(BOOK)).is_ok_and(|n| n == ["ERROR"])
    });
    assert_eq!(
        std::fs::read_to_string(mnt.join(BOOK).join("ERROR")).unwrap(),
        format!(
            "错误：无法读取 \"{}\"：Permission denied (os error 13)\n",
            book.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(mnt.join(BOOK).join("novel_chapters.txt")).unwrap(),
        std::fs::read_to_string(mnt.join(BOOK).join("ERROR")).unwrap(),
        "the book's index holds its error"
    );
    assert_eq!(
        sorted_names(&mnt.join("另一本")).unwrap(),
        ["novel_chapters.json", "novel_chapters.txt"],
        "an empty book lists only its index files"
    );
    chmod(&book, 0o755);
    eventually("the book's chapters are back", || {
        sorted_names(&mnt.join(BOOK))
            .is_ok_and(|n| n == ["novel_chapters.json", "novel_chapters.txt", CHAPTER])
    });
    let novels = root.join("novels");
    chmod(&novels, 0o000);
    eventually("the root lists ERROR", || {
        sorted_names(mnt).is_ok_and(|n| n == ["ERROR"])
    });
    assert_eq!(
        error_text(mnt),
        format!(
            "错误：无法读取 \"{}\"：Permission denied (os error 13)\n",
            novels.display()
        )
    );
    chmod(&novels, 0o755);
    eventually("the books are back", || {
        sorted_names(mnt).is_ok_and(|n| n == with_books_index(&[BOOK, "另一本"]))
    });
}
