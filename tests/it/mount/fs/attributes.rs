//! GETATTR and ACCESS through a real mount: the source's mtime on chapter
//! directories and pages, and the modes `access(2)` reports.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use super::{BOOK, small_library, strict};

#[test]
fn source_mtime_shows_on_chapter_dirs_and_pages() {
    require_fuse!();
    let (_g, root) = small_library(&[("第1章 起.md", "一\n二")]);
    let src = root.join("novels").join(BOOK).join("第1章 起.md");
    let when = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    std::fs::File::options()
        .write(true)
        .open(&src)
        .unwrap()
        .set_modified(when)
        .unwrap();
    let m = strict(&root);
    for p in [
        "书/第1章 起.md",
        "书/第1章 起.md/offset-1.txt",
        "书/1/offset-1.json",
    ] {
        let meta = std::fs::metadata(m.path().join(p)).unwrap();
        assert_eq!(meta.mtime(), 1_600_000_000, "{p}");
    }
}

#[test]
fn access_reports_the_modes_it_shows() {
    require_fuse!();
    let (_g, root) = small_library(&[("第1章 起.md", "a")]);
    let m = strict(&root);
    let access = |p: &Path, mode: i32| {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        if unsafe { libc::access(c.as_ptr(), mode) } == 0 {
            0
        } else {
            std::io::Error::last_os_error().raw_os_error().unwrap()
        }
    };
    let chapter = m.path().join(BOOK).join("第1章 起.md");
    let page = chapter.join("offset-1.txt");
    assert_eq!(std::fs::metadata(&page).unwrap().mode() & 0o777, 0o444);
    assert_eq!(access(&page, libc::R_OK), 0);
    assert_eq!(
        access(&page, libc::X_OK),
        libc::EACCES,
        "0444 page is not executable"
    );
    assert_eq!(access(&page, libc::W_OK), libc::EROFS);
    assert_eq!(access(&chapter, libc::R_OK | libc::X_OK), 0);
}
