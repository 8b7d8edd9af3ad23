//! Every write through a real mount is refused with EROFS.

use std::os::unix::fs::PermissionsExt;

use crate::common::errno;

use super::{BOOK, small_library, strict};

#[test]
fn every_write_is_refused_with_erofs() {
    require_fuse!();
    let (_g, root) = small_library(&[("第1章 起.md", "a")]);
    let m = strict(&root);
    let page = m.path().join("书/1/offset-1.txt");
    let dir = m.path().join(BOOK);
    let ro = |r: std::io::Result<()>, what: &str| {
        let e = r.expect_err(what);
        assert_eq!(errno(&e), libc::EROFS, "{what}: {e}");
    };
    ro(
        std::fs::OpenOptions::new()
            .write(true)
            .open(&page)
            .map(drop),
        "open for write",
    );
    ro(
        std::fs::OpenOptions::new()
            .append(true)
            .open(&page)
            .map(drop),
        "open for append",
    );
    ro(std::fs::File::create(dir.join("new.md")).map(drop), "creat");
    // ("d" would be a chapter alias: it is a substring of "第1章 起.md".)
    ro(std::fs::create_dir(dir.join("新目录")), "mkdir");
    ro(std::fs::remove_file(&page), "unlink");
    ro(std::fs::remove_dir(dir.join("第1章 起.md")), "rmdir");
    ro(std::fs::rename(&page, dir.join("x")), "rename");
    ro(std::os::unix::fs::symlink("a", dir.join("l")), "symlink");
    ro(
        std::fs::set_permissions(&page, std::fs::Permissions::from_mode(0o644)),
        "chmod",
    );
    let c = std::ffi::CString::new(page.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: valid C strings and buffer.
    unsafe {
        assert_eq!(libc::truncate(c.as_ptr(), 0), -1);
        assert_eq!(*libc::__errno_location(), libc::EROFS, "truncate");
        let name = c"user.x";
        assert_eq!(
            libc::setxattr(c.as_ptr(), name.as_ptr(), b"v".as_ptr().cast(), 1, 0),
            -1
        );
        assert_eq!(*libc::__errno_location(), libc::EROFS, "setxattr");
    }
    assert!(
        std::fs::read_to_string(&page).unwrap().contains("1: a"),
        "still readable"
    );
}
