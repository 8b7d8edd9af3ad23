//! How a change in the library shows through a real mount, in each of the
//! three ways a mount stays fresh: edits, chapters added and removed, no
//! stale page from the cache, undecodable and vanished sources, the state
//! file's switch, a replaced `novels/` directory.

use std::io::Read;
use std::time::Duration;

use crate::common::{errno, eventually};

use super::{
    BOOK, MODES, first_line_shows, lines, mount_in, read_errno, read_string, small_library,
    sorted_names,
};

#[test]
fn an_edit_shows_at_the_next_open_and_an_open_handle_keeps_its_page() {
    require_fuse!();
    for (mode, ttl) in MODES {
        let (_g, root) = small_library(&[("第1章 起.md", &lines(3, "旧"))]);
        let src = root.join("novels").join(BOOK).join("第1章 起.md");
        let m = mount_in(&root, ttl, "/nonexistent/state.json");
        let page = m.path().join("书/1/offset-1.txt");
        let before = std::fs::read_to_string(&page).unwrap();
        assert!(before.contains("1: 旧第1行"));
        let mut old_handle = std::fs::File::open(&page).unwrap();
        let mut first = vec![0u8; 10];
        old_handle.read_exact(&mut first).unwrap();

        std::fs::write(&src, lines(500, "新")).unwrap();
        let after = eventually(&format!("{mode}: the edit shows"), || {
            read_string(&page).filter(|s| s.contains("1: 新第1行"))
        });
        assert!(after.contains("用 offset=401 继续阅读"), "{mode}: {after}");
        assert_eq!(
            std::fs::metadata(&page).unwrap().len(),
            after.len() as u64,
            "{mode}"
        );
        let listing = sorted_names(&m.path().join("书/第1章 起.md")).unwrap();
        assert_eq!(
            listing,
            [
                "offset-1.json",
                "offset-1.txt",
                "offset-401.json",
                "offset-401.txt"
            ],
            "{mode}: the chain grew to two pages"
        );

        let mut rest = Vec::new();
        old_handle.read_to_end(&mut rest).unwrap();
        first.extend(rest);
        assert_eq!(
            String::from_utf8(first).unwrap(),
            before,
            "{mode}: the old handle keeps the bytes it opened"
        );
    }
}

#[test]
fn chapters_appear_and_disappear() {
    require_fuse!();
    for (mode, ttl) in MODES {
        let (_g, root) = small_library(&[("第1章 起.md", "a")]);
        let book = root.join("novels").join(BOOK);
        let m = mount_in(&root, ttl, "/nonexistent/state.json");
        let listed = m.path().join(BOOK);
        assert_eq!(sorted_names(&listed).unwrap(), ["第1章 起.md"]);
        std::fs::write(book.join("第2章 承.md"), "b").unwrap();
        eventually(&format!("{mode}: a new chapter is listed"), || {
            sorted_names(&listed).filter(|v| v == &["第1章 起.md", "第2章 承.md"])
        });
        assert!(
            std::fs::read_to_string(m.path().join("书/2/offset-1.txt"))
                .unwrap()
                .contains("1: b")
        );
        std::fs::remove_file(book.join("第1章 起.md")).unwrap();
        eventually(&format!("{mode}: a deleted chapter goes"), || {
            sorted_names(&listed).filter(|v| v == &["第2章 承.md"])
        });
        eventually(&format!("{mode}: its alias goes"), || {
            read_errno(&m.path().join("书/1/offset-1.txt")).filter(|&e| e == libc::ENOENT)
        });
    }
}

#[test]
fn cache_never_serves_a_stale_page() {
    require_fuse!();
    for (mode, ttl) in MODES {
        let (_g, root) = small_library(&[("第1章 起.md", "甲乙丙"), ("第2章 承.md", "b")]);
        let book = root.join("novels").join(BOOK);
        let src = book.join("第1章 起.md");
        let m = mount_in(&root, ttl, "/nonexistent/state.json");
        let page = m.path().join("书/1/offset-1.txt");
        let shows =
            |text: &str, what: &str| first_line_shows(&page, text, &format!("{mode}: {what}"));
        shows("甲乙丙", "first read");

        // Same size, old mtime restored: ctime still changes.
        let mtime = std::fs::metadata(&src).unwrap().modified().unwrap();
        std::fs::write(&src, "丁戊己").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&src)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        shows("丁戊己", "same-size rewrite with old mtime");
        // ... and the listing follows too, though the mtime it shows did not change.
        std::fs::write(&src, lines(401, "长")).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&src)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        eventually(
            &format!("{mode}: the chain of a rewrite with old mtime"),
            || sorted_names(&m.path().join("书/第1章 起.md")).filter(|v| v.len() == 4),
        );

        // Rename over: a new inode.
        std::fs::write(book.join("tmp"), "庚辛").unwrap();
        std::fs::rename(book.join("tmp"), &src).unwrap();
        shows("庚辛", "rename over");

        // Delete and re-create.
        std::fs::remove_file(&src).unwrap();
        eventually(&format!("{mode}: deleted"), || read_errno(&page));
        std::fs::write(&src, "壬癸").unwrap();
        shows("壬癸", "delete and re-create");

        // A new file sharing the number turns the alias into an ambiguous directory.
        let alias = m.path().join("书/1");
        assert!(
            std::fs::symlink_metadata(&alias)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        std::fs::write(book.join("第01章 另稿.md"), "x").unwrap();
        eventually(&format!("{mode}: now ambiguous"), || {
            std::fs::symlink_metadata(&alias)
                .ok()
                .filter(|m| m.is_dir())
        });
        let err = std::fs::read_to_string(alias.join("ERROR")).unwrap();
        assert!(err.starts_with("错误：第 1 章有 2 个文件"), "{mode}: {err}");
        assert_eq!(
            errno(&std::fs::read(alias.join("offset-1.txt")).unwrap_err()),
            libc::ENOENT
        );
        // A third file: the same ERROR name, a new text.
        std::fs::write(book.join("1-第三稿.md"), "y").unwrap();
        eventually(&format!("{mode}: the ambiguity lists three files"), || {
            read_string(&alias.join("ERROR")).filter(|s| s.starts_with("错误：第 1 章有 3 个文件"))
        });

        // The book directory renamed.
        std::fs::rename(&book, root.join("novels/新书")).unwrap();
        eventually(&format!("{mode}: the old book name goes"), || {
            read_errno(&page).filter(|&e| e == libc::ENOENT)
        });
        let moved = std::fs::read_to_string(m.path().join("新书/2/offset-1.txt")).unwrap();
        assert!(
            moved.contains("/novels/新书/第2章 承.md</path>"),
            "{mode}: {moved}"
        );
    }
}

#[test]
fn undecodable_and_vanished_sources_never_break_the_mount() {
    require_fuse!();
    for (mode, ttl) in MODES {
        let (_g, root) = small_library(&[("第1章 坏.txt", ""), ("第2章 好.md", "好")]);
        std::fs::write(
            root.join("novels/书/第1章 坏.txt"),
            [0x81u8, 0x20, 0xfe, 0x7f].repeat(50),
        )
        .unwrap();
        let m = mount_in(&root, ttl, "/nonexistent/state.json");
        assert_eq!(
            errno(&std::fs::read(m.path().join("书/1/offset-1.txt")).unwrap_err()),
            libc::EIO
        );
        assert_eq!(sorted_names(&m.path().join("书/1")).unwrap(), ["ERROR"]);
        assert!(
            std::fs::read_to_string(m.path().join("书/1/ERROR"))
                .unwrap()
                .contains("cannot detect text encoding")
        );
        // Fix the file: the ERROR goes, the pages come.
        std::fs::write(root.join("novels/书/第1章 坏.txt"), "修好了").unwrap();
        eventually(&format!("{mode}: ERROR goes"), || {
            read_errno(&m.path().join("书/1/ERROR")).filter(|&e| e == libc::ENOENT)
        });
        assert!(
            std::fs::read_to_string(m.path().join("书/1/offset-1.txt"))
                .unwrap()
                .contains("1: 修好了")
        );
        // The whole book vanishes, then ROOT/novels itself.
        std::fs::remove_dir_all(root.join("novels/书")).unwrap();
        eventually(&format!("{mode}: the book goes"), || {
            std::fs::read_dir(m.path().join(BOOK))
                .err()
                .filter(|e| errno(e) == libc::ENOENT)
        });
        std::fs::remove_dir_all(root.join("novels")).unwrap();
        // A vanished novels/ is no hang and no bare error: the root lists
        // only an ERROR saying why.
        eventually(&format!("{mode}: novels/ goes"), || {
            sorted_names(m.path()).filter(|n| n == &["ERROR"])
        });
        assert!(
            std::fs::read_to_string(m.path().join("ERROR"))
                .unwrap()
                .contains("No such file or directory"),
            "{mode}"
        );
        std::fs::create_dir_all(root.join("novels/书")).unwrap();
        std::fs::write(root.join("novels/书/第3章.md"), "回来了").unwrap();
        eventually(&format!("{mode}: novels/ comes back"), || {
            read_string(&m.path().join("书/3/offset-1.txt")).filter(|s| s.contains("回来了"))
        });
    }
}

#[test]
fn switched_off_state_follows_the_state_file() {
    require_fuse!();
    for (mode, ttl) in MODES {
        let (g, root) = small_library(&[("第1章 起.md", "a")]);
        let state = g.path().join("state.json");
        let m = mount_in(&root, ttl, state.to_str().unwrap());
        let page = m.path().join("书/1/offset-1.txt");
        assert!(std::fs::read_to_string(&page).is_ok());
        std::fs::write(&state, r#"{"tools":{"novel_read":false}}"#).unwrap();
        // A watched mount looks at the switch every second at most.
        eventually(&format!("{mode}: switched off"), || {
            read_errno(&page).filter(|&e| e == libc::EACCES)
        });
        eventually(&format!("{mode}: the root lists only ERROR"), || {
            sorted_names(m.path()).filter(|v| v == &["ERROR"])
        });
        assert!(
            std::fs::read_to_string(m.path().join("ERROR"))
                .unwrap()
                .contains("当前已在「写作助手功能」UI 中关闭")
        );
        std::fs::write(&state, r#"{"tools":{"novel_read":true}}"#).unwrap();
        eventually(&format!("{mode}: switched on"), || read_string(&page));
        eventually(&format!("{mode}: the root lists the book"), || {
            sorted_names(m.path()).filter(|v| v == &[BOOK])
        });
    }
}

#[test]
fn a_replaced_novels_directory_is_watched_anew() {
    require_fuse!();
    for (mode, ttl) in MODES {
        let (_g, root) = small_library(&[("第1章 起.md", "旧")]);
        let m = mount_in(&root, ttl, "/nonexistent/state.json");
        let page = m.path().join("书/1/offset-1.txt");
        let shows =
            |text: &str, what: &str| first_line_shows(&page, text, &format!("{mode}: {what}"));
        shows("旧", "first read");
        let fresh = root.join("novels.new").join(BOOK);
        std::fs::create_dir_all(&fresh).unwrap();
        std::fs::write(fresh.join("第1章 起.md"), "新").unwrap();
        std::fs::rename(root.join("novels"), root.join("novels.old")).unwrap();
        std::fs::rename(root.join("novels.new"), root.join("novels")).unwrap();
        shows("新", "the new tree");
        // Let the watching thread find the new novels/ (it looks once a
        // second), so that what is read next is held on the watch's word.
        std::thread::sleep(Duration::from_millis(1500));
        shows("新", "the new tree, watched");
        // An edit inside the new tree must be seen, not only the swap itself.
        std::fs::write(root.join("novels").join(BOOK).join("第1章 起.md"), "改").unwrap();
        shows("改", "an edit in the new tree");
        // ... and an edit in the tree moved aside must change nothing.
        std::fs::write(root.join("novels.old").join(BOOK).join("第1章 起.md"), "x").unwrap();
        std::thread::sleep(Duration::from_millis(200));
        shows("改", "the old tree's edit ignored");
    }
}
