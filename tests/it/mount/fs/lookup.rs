//! LOOKUP through a real mount: nothing outside the library is reachable,
//! and book names resolve as the tool sanitizes them.

use std::path::Path;

use crate::common::errno;

use super::{BOOK, small_library, strict};

#[test]
fn nothing_outside_the_library_is_reachable() {
    require_fuse!();
    let (_g, root) = small_library(&[("第1章 起.md", "a")]);
    let novels = root.join("novels");
    std::os::unix::fs::symlink("/etc", novels.join("etc")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", novels.join(BOOK).join("第2章 passwd.md")).unwrap();
    std::os::unix::fs::symlink("/etc", novels.join(BOOK).join("第3章 etc.md")).unwrap();
    let m = strict(&root);
    let mut top: Vec<_> = std::fs::read_dir(m.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    top.sort();
    assert_eq!(top, ["novel_books.json", "novel_books.txt", BOOK]);
    for p in [
        "etc",
        "etc/passwd",
        "书/2",
        "书/第2章 passwd.md",
        "书/第2章 passwd.md/offset-1.txt",
        "书/3/offset-1.txt",
        "..",
        "书/../../etc/passwd",
    ] {
        let r = std::fs::read(m.path().join(p));
        assert!(
            r.as_ref()
                .map_or(true, |b| !String::from_utf8_lossy(b).contains("root:")),
            "{p} leaked"
        );
    }
    assert_eq!(
        errno(&std::fs::metadata(m.path().join("etc")).unwrap_err()),
        libc::ENOENT
    );
    let mut listing: Vec<_> = std::fs::read_dir(m.path().join(BOOK))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    listing.sort();
    assert_eq!(
        listing,
        ["novel_chapters.json", "novel_chapters.txt", "第1章 起.md"]
    );
}

#[test]
fn book_names_resolve_through_sanitize_segment() {
    require_fuse!();
    let (_g, root) = small_library(&[("第1章 起.md", "a")]);
    let m = strict(&root);
    let alias = m.path().join("书.");
    assert_eq!(std::fs::read_link(&alias).unwrap(), Path::new(BOOK));
    let page = std::fs::read_to_string(alias.join("1/offset-1.txt")).unwrap();
    assert!(page.contains(&format!("/novels/{BOOK}/第1章 起.md</path>")));
    assert_eq!(
        errno(&std::fs::metadata(m.path().join("不存在")).unwrap_err()),
        libc::ENOENT
    );
}
