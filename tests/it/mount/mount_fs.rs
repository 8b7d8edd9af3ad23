//! Filesystem behaviour through a real mount: sizes, partial reads, mmap,
//! freshness, read-only, containment, signals, the fstab form, mount errors.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::eventually;
use crate::common::{Mount, errno, is_mounted};

const BOOK: &str = "书";

/// A small library: ROOT/novels/书/… ; returns (guard, root).
fn small_library(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let files: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (*n, b.as_bytes())).collect();
    crate::common::book_library(&files)
}

fn strict(root: &Path) -> Mount {
    crate::common::strict_mount(root, &[])
}

/// The three ways a mount stays fresh: asking every time (`--ttl 0`); the
/// watch, here with a TTL so long that only its notifications can make a
/// change show; and no watch, where the TTL (0.5 s) bounds staleness.
const MODES: [(&str, &str); 3] = [("strict", "0"), ("watched", "3600"), ("unwatched", "0.5")];

fn mount_in(root: &Path, ttl: &str, state: &str) -> Mount {
    let mut args = vec!["--ttl", ttl, "--state-file", state];
    if ttl == "0.5" {
        args.push("--no-watch");
    }
    Mount::new(root, &args)
}

/// Waits until the page at `page` shows `text` as its line 1.
fn first_line_shows(page: &Path, text: &str, what: &str) {
    eventually(what, || {
        read_string(page).filter(|s| s.contains(&format!("1: {text}\n")))
    });
}

fn read_string(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

fn read_errno(p: &Path) -> Option<i32> {
    std::fs::read(p).err().map(|e| errno(&e))
}

/// The names a directory lists, sorted, without the index files (every
/// root and book lists them; `tests/it/mount/indexes.rs` checks them).
fn sorted_names(p: &Path) -> Option<Vec<String>> {
    let names = crate::common::sorted_names(p).ok()?;
    Some(
        names
            .into_iter()
            .filter(|n| !n.starts_with("novel_books.") && !n.starts_with("novel_chapters."))
            .collect(),
    )
}

fn lines(n: usize, tag: &str) -> String {
    crate::common::prose_lines(n, tag)
}

fn walk_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            walk_files(&e.path(), out);
        } else if t.is_file() {
            out.push(e.path());
        }
    }
}

#[test]
fn every_listed_file_has_its_exact_size_and_partial_reads_agree() {
    require_fuse!();
    let (_g, root) = crate::common::reference_library();
    let m = strict(&root);
    let mut files = Vec::new();
    walk_files(m.path(), &mut files);
    assert!(files.len() > 60, "walked {} files", files.len());
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let meta = std::fs::metadata(f).unwrap();
        assert_eq!(meta.len(), bytes.len() as u64, "{}", f.display());
        assert_eq!(
            meta.blocks(),
            (bytes.len() as u64).div_ceil(512),
            "{}",
            f.display()
        );
        assert_eq!(meta.permissions().mode() & 0o777, 0o444);
        // seek + small reads
        let mut h = std::fs::File::open(f).unwrap();
        let mid = bytes.len() / 3;
        h.seek(SeekFrom::Start(mid as u64)).unwrap();
        let mut buf = vec![0; 777];
        let n = h.read(&mut buf).unwrap();
        assert_eq!(&buf[..n], &bytes[mid..(mid + 777).min(bytes.len())]);
        h.seek(SeekFrom::Start(bytes.len() as u64 + 10)).unwrap();
        assert_eq!(
            h.read(&mut buf).unwrap(),
            0,
            "reading past the end gives EOF"
        );
    }
    let dir_mode = std::fs::metadata(m.path().join("星河旧梦"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o555);
    println!("walked {} files through the mount", files.len());
}

#[test]
fn mmap_returns_the_same_bytes() {
    require_fuse!();
    let (_g, root) = crate::common::reference_library();
    let m = strict(&root);
    let p = m.path().join("星河旧梦/31/offset-1.txt");
    let want = std::fs::read(&p).unwrap();
    let f = std::fs::File::open(&p).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: mapping a read-only file privately; unmapped below.
    let got = unsafe {
        let ptr = libc::mmap(
            std::ptr::null_mut(),
            want.len(),
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(
            ptr,
            libc::MAP_FAILED,
            "mmap: {}",
            std::io::Error::last_os_error()
        );
        let v = std::slice::from_raw_parts(ptr as *const u8, want.len()).to_vec();
        libc::munmap(ptr, want.len());
        v
    };
    assert_eq!(got, want);
}

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
fn ordinary_tools_work_on_the_mount() {
    require_fuse!();
    let (_g, root) = crate::common::reference_library();
    let m = strict(&root);
    let run = |cmd: &mut Command| {
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let ls = run(Command::new("ls")
        .arg("-l")
        .arg(m.path().join("星河旧梦/31/")));
    assert!(ls.contains("offset-401.txt"), "{ls}");
    let grep = run(Command::new("grep")
        .arg("-rl")
        .arg("超长行")
        .arg(m.path().join("星河旧梦")));
    assert!(grep.contains("第30章 超长行.md/offset-1.txt"), "{grep}");
    let tail = run(Command::new("tail")
        .arg("-n2")
        .arg(m.path().join("星河旧梦/31/offset-401.txt")));
    assert!(
        tail.starts_with("(本章共 520 行 / ") && tail.ends_with(" 字)\n</content>\n"),
        "{tail:?}"
    );
    let copy = tempfile::tempdir().unwrap();
    run(Command::new("cp")
        .arg("-r")
        .arg(m.path().join("短篇集"))
        .arg(copy.path()));
    let copied = std::fs::read(copy.path().join("短篇集/01-短篇1.md/offset-1.txt")).unwrap();
    assert_eq!(
        copied,
        std::fs::read(m.path().join("短篇集/1/offset-1.txt")).unwrap()
    );
    let py = run(Command::new("python3")
        .arg("-c")
        .arg("import sys; print(len(open(sys.argv[1], encoding='utf-8').read()))")
        .arg(m.path().join("星河旧梦/1/offset-1.txt")));
    assert!(py.trim().parse::<usize>().unwrap() > 100);
}

#[test]
fn sigterm_unmounts_cleanly_even_with_reads_in_flight() {
    require_fuse!();
    let (_g, root) = crate::common::reference_library();
    let mut m = strict(&root);
    let path = m.path().to_path_buf();
    let open = std::fs::File::open(path.join("星河旧梦/31/offset-1.txt")).unwrap();
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let p = path.clone();
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let _ = std::fs::read(p.join("星河旧梦/31/offset-1.json"));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    drop(open);
    let status = m.terminate().expect("daemon was running");
    for r in readers {
        r.join().unwrap();
    }
    assert!(status.success(), "exit status {status}");
    assert!(!is_mounted(&path), "mount left behind");
}

/// `novelfs ROOT MOUNTPOINT -o …` is how mount.fuse3 runs a `fuse.novelfs` fstab line.
#[test]
fn fstab_invocation_form_daemonizes_and_unmounts() {
    require_fuse!();
    let (_g, root) = small_library(&[("第1章 起.md", "a")]);
    let mnt = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg(&root)
        .arg(mnt.path())
        .args(["-o", "ro,allow_other,ttl=0,noatime,nodev,nosuid,_netdev"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(is_mounted(mnt.path()), "ready when the command returns");
    let page = std::fs::read_to_string(mnt.path().join("书/1/offset-1.txt"));
    let un = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("unmount")
        .arg(mnt.path())
        .output()
        .unwrap();
    assert!(page.unwrap().contains("1: a"));
    assert!(
        un.status.success(),
        "{}",
        String::from_utf8_lossy(&un.stderr)
    );
    for _ in 0..100 {
        if !is_mounted(mnt.path()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!is_mounted(mnt.path()));
}

/// A mountpoint another filesystem is mounted on: the refusal names that
/// filesystem and the command that unmounts it, which `novelfs unmount`
/// (novelfs mounts only) is not; --force does not clear it.
#[test]
fn a_mountpoint_holding_another_filesystem_is_refused_naming_it() {
    require_fuse!();
    let (g, root) = small_library(&[("第1章 起.md", "a")]);
    let mnt = g.path().join("tmpfs");
    std::fs::create_dir(&mnt).unwrap();
    let made = Command::new("mount")
        .args(["-t", "tmpfs", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(made.success(), "mount -t tmpfs");
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .args(["mount", "--force"])
        .arg(&root)
        .arg(&mnt)
        .output()
        .unwrap();
    let c = std::ffi::CString::new(mnt.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a path this test mounted.
    unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("(tmpfs, not novelfs") && err.contains(&format!("`umount {}`", mnt.display())),
        "{err}"
    );
    assert!(!err.contains("novelfs unmount"), "{err}");
}

#[test]
fn mount_refuses_with_a_reason() {
    require_fuse!();
    let (g, root) = small_library(&[("第1章 起.md", "a")]);
    let novelfs = |args: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_novelfs"))
            .args(args)
            .output()
            .unwrap()
    };
    let check = |out: std::process::Output, needle: &str| {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(needle),
            "want {needle:?}, got {err:?}"
        );
    };
    let missing = g.path().join("missing");
    check(
        novelfs(&["mount".as_ref(), root.as_os_str(), missing.as_os_str()]),
        "does not exist",
    );
    let file = g.path().join("file");
    std::fs::write(&file, "").unwrap();
    check(
        novelfs(&["mount".as_ref(), root.as_os_str(), file.as_os_str()]),
        "not a directory",
    );
    let mnt = g.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    check(
        novelfs(&["mount".as_ref(), g.path().as_os_str(), mnt.as_os_str()]),
        "no novels/ directory",
    );
    check(
        novelfs(&[
            "mount".as_ref(),
            root.as_os_str(),
            mnt.as_os_str(),
            "-o".as_ref(),
            "rw".as_ref(),
        ]),
        "read-only",
    );
    let m = strict(&root);
    check(
        novelfs(&["mount".as_ref(), root.as_os_str(), m.path().as_os_str()]),
        "already a mount point",
    );
    // The same mount point written another way must not stack a second mount.
    let slash = format!("{}/", m.path().display());
    let dotted = format!("{}/.", m.path().display());
    let link = root.parent().unwrap().join("link-to-mount");
    std::os::unix::fs::symlink(m.path(), &link).unwrap();
    for other in [slash.as_ref(), dotted.as_ref(), link.as_os_str()] {
        check(
            novelfs(&["mount".as_ref(), root.as_os_str(), other]),
            "already a mount point",
        );
    }
    let mounted = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.split(' ').nth(4) == m.path().to_str())
        .count();
    assert_eq!(mounted, 1, "one mount at {}", m.path().display());
}

#[test]
fn a_killed_daemon_leaves_a_stale_mount_that_is_explained_and_cleared() {
    require_fuse!();
    let (_g, root) = small_library(&[("第1章 起.md", "a")]);
    let mut m = strict(&root);
    m.kill_daemon();
    let e = std::fs::metadata(m.path()).unwrap_err();
    assert_eq!(errno(&e), libc::ENOTCONN);
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("mount")
        .arg(&root)
        .arg(m.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("stale") && err.contains("novelfs unmount"),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .args(["mount", "--force", "--ttl", "0"])
        .arg(&root)
        .arg(m.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::read_to_string(m.path().join("书/1/offset-1.txt"))
            .unwrap()
            .contains("1: a")
    );
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("unmount")
        .arg(m.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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

/// Mounts `fstype` from `source` at `target` with mount(2), for the tests
/// that need a mount novelfs did not make.
fn mount2(source: &Path, target: &Path, fstype: &str, flags: libc::c_ulong) {
    let c = |p: &std::ffi::OsStr| std::ffi::CString::new(p.as_encoded_bytes()).unwrap();
    let (source, target, fstype) = (
        c(source.as_os_str()),
        c(target.as_os_str()),
        c(fstype.as_ref()),
    );
    // SAFETY: NUL-terminated strings that outlive the call; no data.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "mount: {}", std::io::Error::last_os_error());
}

/// Detaches whatever is mounted at the path on drop, even when a check fails.
struct Detach(PathBuf);

impl Drop for Detach {
    fn drop(&mut self) {
        while is_mounted(&self.0) {
            let c = std::ffi::CString::new(self.0.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a NUL-terminated path.
            if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
                break;
            }
        }
    }
}

fn novelfs_unmount(path: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("unmount")
        .arg(path)
        .output()
        .unwrap()
}

/// `novelfs unmount` takes down novelfs mounts only: a tmpfs, a bind mount
/// and a plain directory are refused with exit 1, naming what is there, and
/// stay as they were.
#[test]
fn unmount_refuses_what_novelfs_did_not_mount() {
    require_fuse!();
    let dir = tempfile::Builder::new()
        .prefix("novelfs-unmount")
        .tempdir()
        .unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let (tmpfs, bind, plain, bound) = (
        base.join("tmpfs"),
        base.join("bind"),
        base.join("plain"),
        base.join("bound"),
    );
    for d in [&tmpfs, &bind, &plain, &bound] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::write(bound.join("kept"), "x").unwrap();
    mount2(Path::new("novelfs-test"), &tmpfs, "tmpfs", 0);
    let _tmpfs = Detach(tmpfs.clone());
    mount2(&bound, &bind, "", libc::MS_BIND);
    let _bind = Detach(bind.clone());
    let bind_type = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .rfind(|l| l.split(' ').nth(4) == bind.to_str())
        .and_then(|l| l.split(" - ").nth(1)?.split(' ').next().map(String::from))
        .unwrap();
    // "an ext4", "an xfs", "a btrfs", "a tmpfs": by the name's sound.
    let article = if bind_type.starts_with(['a', 'e', 'i', 'o', 'u', 'x']) {
        "an"
    } else {
        "a"
    };

    for (path, said) in [
        (
            &tmpfs,
            format!(
                "novelfs: {} is a tmpfs mount, not novelfs; nothing was unmounted\n",
                tmpfs.display()
            ),
        ),
        (
            &bind,
            format!(
                "novelfs: {} is {article} {bind_type} mount, not novelfs; nothing was unmounted\n",
                bind.display()
            ),
        ),
        (
            &plain,
            format!(
                "novelfs: {} is not a mount point; nothing was unmounted\n",
                plain.display()
            ),
        ),
    ] {
        let out = novelfs_unmount(path);
        assert_eq!(out.status.code(), Some(1), "{}", path.display());
        assert_eq!(String::from_utf8_lossy(&out.stderr), said);
        assert!(out.stdout.is_empty());
    }
    assert!(is_mounted(&tmpfs), "the tmpfs is still mounted");
    assert!(is_mounted(&bind), "the bind mount is still mounted");
    assert!(
        bind.join("kept").exists(),
        "the bind mount still shows its files"
    );
}

/// A live novelfs mount and a stale one (its daemon killed with SIGKILL)
/// are both unmounted, also through a path with `.` and a trailing slash.
#[test]
fn unmount_clears_a_live_and_a_stale_novelfs_mount() {
    require_fuse!();
    let (_g, root) = small_library(&[("第1章 起.md", "a")]);
    let mut live = strict(&root);
    let mut stale = strict(&root);
    stale.kill_daemon();
    assert_eq!(
        errno(&std::fs::metadata(stale.path()).unwrap_err()),
        libc::ENOTCONN
    );

    let out = novelfs_unmount(&stale.path().join("./"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!is_mounted(stale.path()));

    let out = novelfs_unmount(live.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eventually("the live mount's daemon exits", || {
        live.child.as_mut().unwrap().try_wait().unwrap()
    });
    assert!(!is_mounted(live.path()));
}
