//! Hostile inputs through a real mount: huge chapters, a huge book, odd
//! file names, malformed page names, random bytes in every decoding path.
//! Each test prints its figures (`-- --nocapture`).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::common::{
    Mount, Rng, check_json_page, check_text_page, errno, is_mounted, strict_mount, within,
};

const BOOK: &str = "书";

fn names(p: &Path) -> std::io::Result<Vec<std::ffi::OsString>> {
    std::fs::read_dir(p)?
        .map(|e| e.map(|e| e.file_name()))
        .collect()
}

fn hwm_mib(m: &Mount) -> u64 {
    crate::common::rss_kib(m.server_pid())
        .map(|(_, hwm)| hwm / 1024)
        .unwrap_or(0)
}

#[test]
fn a_chapter_of_a_million_short_lines() {
    require_fuse!();
    let text: String = (1..=1_000_000)
        .map(|i| format!("{i}"))
        .collect::<Vec<_>>()
        .join("\n");
    let (_g, root) = crate::common::book_library(&[("第1章 百万行.md", text.as_bytes())]);
    let mut m = strict_mount(&root, &[]);
    let dir = m.path().join("书/1");

    let t = Instant::now();
    let first = std::fs::read(dir.join("offset-1.txt")).unwrap();
    let first_read = t.elapsed();
    let info = check_text_page(&first, 1).unwrap();
    assert_eq!(
        (info.total_lines, info.lines.len(), info.truncated),
        (1_000_000, 400, true)
    );
    assert_eq!(info.lines[399], (400, "400".to_string()));

    let t = Instant::now();
    let listed = within(300, "ls of a 2500-page chain", {
        let dir = dir.clone();
        move || names(&dir).unwrap()
    });
    let listing = t.elapsed();
    assert_eq!(listed.len(), 5000, "2500 pages × 2");
    let last = 1 + 400 * 2499;
    assert!(
        listed
            .iter()
            .any(|n| n == OsStr::new(&format!("offset-{last}.json")))
    );
    let page = std::fs::read(dir.join(format!("offset-{last}.txt"))).unwrap();
    let info = check_text_page(&page, last).unwrap();
    assert_eq!((info.lines.len(), info.truncated), (400, false));
    assert_eq!(
        info.lines.last().unwrap(),
        &(1_000_000, "1000000".to_string())
    );
    let info = check_json_page(
        &std::fs::read(dir.join(format!("offset-{last}.json"))).unwrap(),
        last,
    )
    .unwrap();
    assert_eq!(info.total_lines, 1_000_000);
    assert_eq!(
        errno(&std::fs::read(dir.join("offset-1000001.txt")).unwrap_err()),
        libc::ENOENT
    );
    println!(
        "million lines: first page {first_read:?}, ls of 5000 names {listing:?}, daemon VmHWM {} MiB",
        hwm_mib(&m)
    );
    assert!(m.alive());
}

#[test]
fn a_single_50_mb_line_is_one_cut_page() {
    require_fuse!();
    let line = "长".repeat(50_000_000 / 3);
    let (_g, root) = crate::common::book_library(&[("第1章 一行.md", line.as_bytes())]);
    let mut m = strict_mount(&root, &[]);
    let dir = m.path().join("书/1");
    let t = Instant::now();
    let listed = names(&dir).unwrap();
    let elapsed = t.elapsed();
    assert_eq!(listed.len(), 2, "{listed:?}");
    let info = check_text_page(&std::fs::read(dir.join("offset-1.txt")).unwrap(), 1).unwrap();
    assert_eq!(
        (info.total_lines, info.truncated, info.lines.len()),
        (1, false, 1)
    );
    assert_eq!(
        info.lines[0].1,
        format!("{}…（行过长已裁剪）", "长".repeat(3000))
    );
    check_json_page(&std::fs::read(dir.join("offset-1.json")).unwrap(), 1).unwrap();
    println!(
        "50 MB line: ls {elapsed:?}, daemon VmHWM {} MiB",
        hwm_mib(&m)
    );
    assert!(m.alive());
}

#[test]
fn a_sparse_1_gib_chapter_is_an_error_and_costs_no_memory() {
    require_fuse!();
    let (_g, root) = crate::common::book_library(&[("第2章 小.md", b"small")]);
    let big = root.join("novels/书/第1章 巨.md");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let mut m = strict_mount(&root, &[]);
    let dir = m.path().join("书/1");
    let t = Instant::now();
    assert_eq!(names(&dir).unwrap(), ["ERROR"]);
    let error = std::fs::read_to_string(dir.join("ERROR")).unwrap();
    assert!(
        error.contains("文件大小 1073741824 字节超过上限 268435456 字节（--max-chapter-bytes）"),
        "{error}"
    );
    assert_eq!(
        errno(&std::fs::read(dir.join("offset-1.txt")).unwrap_err()),
        libc::EIO
    );
    assert!(
        std::fs::read_to_string(m.path().join("书/2/offset-1.txt"))
            .unwrap()
            .contains("1: small")
    );
    let hwm = hwm_mib(&m);
    println!(
        "sparse 1 GiB: ERROR in {:?}, daemon VmHWM {hwm} MiB",
        t.elapsed()
    );
    assert!(hwm < 64, "the daemon read the big file: VmHWM {hwm} MiB");
    assert!(m.alive());
}

#[test]
fn a_book_of_50000_files_lists_and_resolves() {
    require_fuse!();
    let (_g, root) = crate::common::book_library(&[]);
    let book = root.join("novels").join(BOOK);
    let t = Instant::now();
    for i in 1..=50_000u32 {
        // "00001.md": a leading number (§1.2 step 3); some hold a line.
        let body: &[u8] = if i % 1000 == 0 { b"x" } else { b"" };
        std::fs::write(book.join(format!("{i:05}.md")), body).unwrap();
    }
    let created = t.elapsed();
    let mut m = strict_mount(&root, &[]);
    let mnt = m.path().to_path_buf();
    let t = Instant::now();
    let listed = within(300, "ls of a 50,000-chapter book", {
        let p = mnt.join(BOOK);
        move || names(&p).unwrap()
    });
    let listing = t.elapsed();
    assert_eq!(listed.len(), 50_000 + 2, "and the book's two index files");
    let t = Instant::now();
    let again = names(&mnt.join(BOOK)).unwrap().len();
    let second = t.elapsed();
    assert_eq!(again, 50_000 + 2);
    let t = Instant::now();
    assert_eq!(
        std::fs::read_link(mnt.join("书/12345")).unwrap(),
        Path::new("12345.md")
    );
    let page = std::fs::read_to_string(mnt.join("书/42000/offset-1.txt")).unwrap();
    assert!(
        page.contains("/novels/书/42000.md</path>") && page.contains("\n1: x\n"),
        "{page}"
    );
    let lookup = t.elapsed();
    println!(
        "50,000 files: created in {created:?}, first ls {listing:?}, second ls {second:?}, lookup + read {lookup:?}, daemon VmHWM {} MiB",
        hwm_mib(&m)
    );
    assert!(m.alive());
}

#[test]
fn odd_file_names_are_listed_and_readable() {
    require_fuse!();
    let long = format!("第9章 {}x.md", "长".repeat(81)); // exactly 255 bytes
    assert_eq!(long.len(), 255);
    let odd: Vec<Vec<u8>> = vec![
        "第1章 换\n行.md".into(),
        "第2章 回\r车.md".into(),
        "第3章 反\\斜杠.md".into(),
        b"\xff\xfe\xc3\x28 4.md".to_vec(), // invalid UTF-8
        "第5章 \u{202e}反向.md".into(),
        " 第6章 前后空格 .md".into(),
        "第7章 ..md".into(),
        "-第8章.md".into(),
        long.into_bytes(),
    ];
    let (_g, root) = crate::common::book_library(&[]);
    let book = root.join("novels").join(BOOK);
    for (k, name) in odd.iter().enumerate() {
        assert!(name.len() <= 255, "{}", name.len());
        std::fs::write(
            book.join(OsStr::from_bytes(name)),
            format!("第{k}个怪名字的内容"),
        )
        .unwrap();
    }
    let mut m = strict_mount(&root, &[]);
    let bookdir = m.path().join(BOOK);
    let mut listed: Vec<Vec<u8>> = names(&bookdir)
        .unwrap()
        .into_iter()
        .map(|n| n.as_bytes().to_vec())
        .collect();
    listed.sort();
    let mut want = odd.clone();
    want.extend(crate::common::BOOK_INDEX_FILES.map(|n| n.as_bytes().to_vec()));
    want.sort();
    assert_eq!(listed, want, "every odd name is listed byte for byte");
    for (k, name) in odd.iter().enumerate() {
        let dir = bookdir.join(OsStr::from_bytes(name));
        let shown = String::from_utf8_lossy(name);
        let pages = names(&dir).unwrap_or_else(|e| panic!("{shown:?}: {e}"));
        assert_eq!(pages.len(), 2, "{shown:?}: {pages:?}");
        let info = check_text_page(&std::fs::read(dir.join("offset-1.txt")).unwrap(), 1).unwrap();
        assert_eq!(info.lines[0].1, format!("第{k}个怪名字的内容"), "{shown:?}");
        assert!(
            info.path.ends_with(&format!("/novels/书/{shown}")),
            "{shown:?}: {}",
            info.path
        );
        let json = check_json_page(&std::fs::read(dir.join("offset-1.json")).unwrap(), 1).unwrap();
        assert_eq!(json.path, info.path);
    }
    assert!(m.alive());
}

#[test]
fn malformed_names_are_enoent() {
    require_fuse!();
    let (_g, root) = crate::common::book_library(&[("第1章 起.md", b"a\nb")]);
    let mut m = strict_mount(&root, &[]);
    let chapter = m.path().join("书/第1章 起.md");
    assert!(chapter.join("offset-1.txt").exists());
    let n255 = format!("offset-1{}.txt", "0".repeat(255 - "offset-1.txt".len()));
    let n256 = format!("{n255}x");
    for name in [
        "offset-01.txt",
        "offset-99999999999999999999.txt",
        "offset--1.txt",
        "offset-1-limit-0.txt",
        "offset-3.txt",
        "offset-1.md",
        "...",
        "..md",
        n255.as_str(),
    ] {
        let e = std::fs::metadata(chapter.join(name)).unwrap_err();
        assert_eq!(errno(&e), libc::ENOENT, "{name}: {e}");
    }
    // FUSE passes names up to 1024 bytes to the daemon, which finds nothing.
    let e = errno(&std::fs::metadata(chapter.join(&n256)).unwrap_err());
    assert!(
        e == libc::ENOENT || e == libc::ENAMETOOLONG,
        "256-byte name: {e}"
    );
    for name in ["...", "..md", "../..", "第1章 起.md/..", n255.as_str()] {
        let r = std::fs::metadata(m.path().join("书").join(name));
        if name.ends_with("/..") {
            // `..` never reaches the daemon: the kernel resolves it to the parent.
            assert!(r.unwrap().is_dir(), "{name}");
        } else if name == "../.." {
            assert!(
                r.is_ok(),
                "{name} is the mount's parent, resolved by the kernel"
            );
        } else {
            assert_eq!(errno(&r.unwrap_err()), libc::ENOENT, "{name}");
        }
    }
    // `..` from inside the mount stays the mount's own tree.
    let up = std::fs::canonicalize(chapter.join("..")).unwrap();
    assert_eq!(up, m.path().join("书"));
    assert!(m.alive());
}

/// Bytes for every decoding path of §1.4.
fn hostile_bytes(rng: &mut Rng, kind: u64) -> Vec<u8> {
    let len = rng.range(0, 6000) as usize;
    let mut b = rng.bytes(len);
    match kind {
        0 => {}                                                 // random
        1 => b.splice(0..0, [0xEF, 0xBB, 0xBF]).for_each(drop), // UTF-8 BOM + garbage
        2 => b.splice(0..0, [0xFF, 0xFE]).for_each(drop),       // UTF-16LE BOM (odd lengths too)
        3 => b.splice(0..0, [0xFE, 0xFF]).for_each(drop),       // UTF-16BE BOM
        4 => b
            .iter_mut()
            .filter(|_| rng.chance(300))
            .for_each(|x| *x = 0), // many NULs
        5 => {
            // Even-length, BOM-less UTF-16-looking text (high bytes in CJK range).
            b = (0..len / 2)
                .flat_map(|_| [rng.next() as u8, 0x4E + rng.below(0x52) as u8])
                .collect();
        }
        6 => b.iter_mut().for_each(|x| *x = 0x81 + (*x % 0x7E)), // GBK-ish high bytes
        _ => {
            // Valid text with stray controls and bare \r.
            b = (0..len)
                .map(|_| b"ab\r\n\t\x00\x1b\xe4\xb8\xad"[rng.below(10) as usize])
                .collect();
        }
    }
    b
}

#[test]
fn random_bytes_in_every_decoding_path_give_a_page_or_an_error() {
    require_fuse!();
    let (_g, root) = crate::common::book_library(&[]);
    let book = root.join("novels").join(BOOK);
    let mut rng = Rng::new(2024);
    let count = 96u64;
    for i in 1..=count {
        std::fs::write(
            book.join(format!("第{i}章.txt")),
            hostile_bytes(&mut rng, i % 8),
        )
        .unwrap();
    }
    let mut m = strict_mount(&root, &[]);
    let mnt: PathBuf = m.path().to_path_buf();
    let (pages, errors) = within(240, "reading random chapters", move || {
        let (mut pages, mut errors) = (0, 0);
        for i in 1..=count {
            let dir = mnt.join(format!("书/第{i}章.txt"));
            let listed: Vec<String> = names(&dir)
                .unwrap_or_else(|e| panic!("listing {i}: {e}"))
                .into_iter()
                .map(|n| n.into_string().unwrap())
                .collect();
            if listed == ["ERROR"] {
                let text = std::fs::read_to_string(dir.join("ERROR")).unwrap();
                assert!(
                    text.starts_with("错误：cannot detect text encoding of \""),
                    "{i}: {text}"
                );
                assert_eq!(
                    errno(&std::fs::read(dir.join("offset-1.txt")).unwrap_err()),
                    libc::EIO
                );
                errors += 1;
                continue;
            }
            for name in &listed {
                let offset: u64 = name
                    .trim_start_matches("offset-")
                    .split('.')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                let bytes =
                    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{i}/{name}: {e}"));
                let r = if name.ends_with(".json") {
                    check_json_page(&bytes, offset)
                } else {
                    check_text_page(&bytes, offset)
                };
                r.unwrap_or_else(|e| panic!("{i}/{name}: {e}"));
                pages += 1;
            }
        }
        (pages, errors)
    });
    println!("random bytes: {count} chapters, {pages} pages checked, {errors} ERROR files");
    assert!(pages > 0 && errors > 0, "both outcomes exercised");
    assert!(m.alive());
    let status = m.terminate().unwrap();
    assert!(status.success());
    assert!(!is_mounted(&root));
}

// Containment. tests/it/mount/fs/lookup.rs already checks a book that
// is a symlink to /etc, a chapter symlinked to /etc/passwd and to /etc, and
// `..` paths; these add what it does not.

#[test]
fn symlinks_and_dot_dot_names_reach_nothing_outside() {
    require_fuse!();
    let (_g, root) = crate::common::book_library(&[("第1章 起.md", b"a")]);
    let novels = root.join("novels");
    let book = novels.join(BOOK);
    let link =
        |target: &str, name: &str| std::os::unix::fs::symlink(target, book.join(name)).unwrap();
    link("/etc", "etc"); // a directory link with no chapter extension
    link("/etc/", "第4章 etc.txt");
    link("../../../../../../../etc/passwd", "第5章 up.md"); // relative, climbing out
    link("/etc/passwd", "passwd.markdown");
    std::fs::write(book.join("..第6章..md"), "点点").unwrap(); // dots in a real chapter name
    std::os::unix::fs::symlink("/etc", novels.join("..etc")).unwrap(); // book-level, a name with dots
    std::os::unix::fs::symlink(&book, novels.join("书的链接")).unwrap(); // a link to a real book
    let mut m = strict_mount(&root, &[]);
    let mnt = m.path().to_path_buf();

    let mut top: Vec<_> = names(&mnt).unwrap();
    top.sort();
    assert_eq!(
        top,
        ["novel_books.json", "novel_books.txt", BOOK],
        "symlinked books are not listed"
    );
    let mut listed: Vec<_> = names(&mnt.join(BOOK)).unwrap();
    listed.sort();
    assert_eq!(
        listed,
        [
            "..第6章..md",
            "novel_chapters.json",
            "novel_chapters.txt",
            "第1章 起.md"
        ],
        "only regular files are chapters"
    );
    let page = std::fs::read_to_string(mnt.join("书/6/offset-1.txt")).unwrap();
    assert!(
        page.contains("/novels/书/..第6章..md</path>") && page.contains("1: 点点"),
        "{page}"
    );

    for p in [
        "书/etc",
        "书/etc/passwd",
        "书/4",
        "书/第4章 etc.txt/offset-1.txt",
        "书/5",
        "书/第5章 up.md/offset-1.txt",
        "书/passwd",
        "书/passwd.markdown/offset-1.txt",
        "..etc",
        "..etc/passwd",
        "etc.",
        "书的链接",
        "书的链接/1",
        "书/..第6章..md/../../..etc/passwd",
    ] {
        let r = std::fs::read(mnt.join(p));
        assert!(
            r.as_ref()
                .map_or(true, |b| !String::from_utf8_lossy(b).contains("root:")),
            "{p} leaked"
        );
        assert!(
            !matches!(std::fs::metadata(mnt.join(p)), Ok(md) if md.is_file()),
            "{p} is a file"
        );
    }
    assert_eq!(
        errno(&std::fs::metadata(mnt.join("书/5")).unwrap_err()),
        libc::ENOENT
    );
    assert_eq!(
        errno(&std::fs::metadata(mnt.join("书的链接")).unwrap_err()),
        libc::ENOENT
    );

    // A chapter swapped for a symlink after it was read: gone, not followed.
    std::fs::remove_file(book.join("第1章 起.md")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", book.join("第1章 起.md")).unwrap();
    let r = std::fs::read(mnt.join("书/第1章 起.md/offset-1.txt"));
    assert_eq!(errno(&r.unwrap_err()), libc::ENOENT);
    assert!(m.alive());
}

fn mount_line(mnt: &Path) -> String {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let want = mnt.to_str().unwrap().replace(' ', "\\040");
    info.lines()
        .find(|l| l.split(' ').nth(4) == Some(want.as_str()))
        .expect("mounted")
        .to_string()
}

/// `ls` of the mount as user nobody.
fn ls_as_nobody(mnt: &Path) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    std::process::Command::new("ls")
        .arg(mnt.join(BOOK))
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap()
}

#[test]
fn allow_other_is_off_unless_asked_for() {
    require_fuse!();
    let (_g, root) = crate::common::book_library(&[("第1章 起.md", b"a")]);
    {
        let m = strict_mount(&root, &[]);
        let line = mount_line(m.path());
        assert!(!line.contains("allow_other"), "{line}");
        assert!(line.contains(" ro,") || line.contains(" ro "), "{line}");
        let out = ls_as_nobody(m.path());
        assert!(
            !out.status.success(),
            "another user listed the mount without allow_other"
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
            "{out:?}"
        );
    }
    let m = strict_mount(&root, &["-o", "allow_other"]);
    let line = mount_line(m.path());
    assert!(line.contains("allow_other"), "{line}");
    let out = ls_as_nobody(m.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "novel_chapters.json\nnovel_chapters.txt\n第1章 起.md\n"
    );
}
