//! A source that stops answering or dies under a mounted library, with real
//! parts: an sshfs mount of the library through a test-owned sshd (see
//! common/sshfs.rs), whose connection is killed (sshfs ends, its mount
//! goes). The mount says what went wrong and comes back by itself.

use std::path::Path;

use crate::common::sshfs::Sshfs;
use crate::common::{Mount, book_library, eventually_within, sorted_names};

const BOOK: &str = "书";
const CHAPTER: &str = "第1章 起.md";

fn text(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// A dead server is an error, not an empty library: the root's `ERROR`
/// says why, a page that exists is EIO (never ENOENT), the indexes hold
/// the root's error (never `（暂无作品…）`), and once sshfs mounts the
/// library again everything is back without a remount.
#[test]
fn a_dead_server_is_an_error_not_an_empty_library() {
    require_fuse!();
    let (_lib, root) = book_library(&[(CHAPTER, "一二三".as_bytes())]);
    let Some(mut sshfs) = Sshfs::mount(&root, &[]) else {
        return;
    };
    let m = Mount::new(&sshfs.path(), &["--state-file", "/nonexistent/state.json"]);
    let mnt = m.path().to_path_buf();
    let page = mnt.join(BOOK).join(CHAPTER).join("offset-1.txt");
    let first = std::fs::read_to_string(&page).unwrap();
    assert!(first.contains("1: 一二三"), "{first}");
    let books = text(&mnt.join("novel_books.txt"));
    let limit = std::time::Duration::from_secs(10);

    sshfs.kill_connection();
    let error = eventually_within("the root lists only ERROR", limit, || {
        sorted_names(&mnt)
            .ok()
            .filter(|n| n == &["ERROR"])
            .map(|_| text(&mnt.join("ERROR")))
    });
    assert!(error.starts_with("错误："), "{error}");
    // The page read before: its bytes (still held) or EIO, never ENOENT,
    // at once and after the kernel's TTL (1 s) sent its name back to the
    // daemon.
    for _ in 0..2 {
        match std::fs::read_to_string(&page) {
            Ok(held) => assert_eq!(held, first),
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}"),
        }
        std::thread::sleep(std::time::Duration::from_millis(1100));
    }
    let other = mnt.join(BOOK).join(CHAPTER).join("offset-2.txt");
    let e = std::fs::metadata(&other).unwrap_err();
    assert_ne!(
        e.raw_os_error(),
        Some(libc::ENOENT),
        "a page never read: {e}"
    );
    assert_eq!(text(&mnt.join("novel_books.txt")), error);
    let json: serde_json::Value =
        serde_json::from_str(&text(&mnt.join("novel_books.json"))).unwrap();
    assert_eq!(json["error"].as_str(), Some(error.trim_end()));

    sshfs.remount();
    eventually_within("the library is back without a remount", limit, || {
        let back = std::fs::read_to_string(&page).ok()? == first
            && text(&mnt.join("novel_books.txt")) == books;
        back.then_some(())
    });
}
