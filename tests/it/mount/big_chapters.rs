//! Big chapters through a real mount: served from a line index over their
//! file with the bytes a whole decode gives, in every encoding, without
//! holding the text; and while big chapters load, other pages still answer.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::{Mount, fuse_available, rss_kib, within};
use novelfs::library::{Chapter, Library, PageFormat};

const BOOK: &str = "书";

/// Prose with every kind of line paging treats apart: CRLF and a lone CR,
/// empty lines, quotes and control characters, lines over the 3000-unit
/// cut (one far longer than what a page decodes of it), an emoji split by
/// the cut.
fn awkward_text(bytes: usize, crlf: bool) -> String {
    let nl = if crlf { "\r\n" } else { "\n" };
    let mut text = String::with_capacity(bytes + 100_000);
    let mut i = 0usize;
    while text.len() < bytes {
        match i % 97 {
            0 => text.push_str(&format!("{}😀😀尾", "a".repeat(2999))),
            1 => text.push_str(&"字".repeat(3001)),
            2 => text.push_str(&"长".repeat(20_000)),
            3 => text.push_str(&format!("“你回来了？”她问。\"{i}\"\\\t\u{1}\r 孤零零的CR")),
            4 | 5 => {}
            _ => text.push_str(&format!(
                "第{i}行，月光落在旧街的石板上，他推开木门，听见远处有人唱歌。"
            )),
        }
        text.push_str(nl);
        i += 1;
    }
    text.push_str("末行");
    text
}

fn utf16(s: &str, le: bool, bom: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * 2);
    if bom {
        out.extend_from_slice(if le { b"\xFF\xFE" } else { b"\xFE\xFF" });
    }
    for u in s.encode_utf16() {
        out.extend(if le { u.to_le_bytes() } else { u.to_be_bytes() });
    }
    out
}

/// A chapter in each encoding §1.4 detects, each over `bytes` bytes.
fn chapters_in_every_encoding(bytes: usize) -> Vec<ChapterFile> {
    let text = awkward_text(bytes, false);
    let crlf = awkward_text(bytes, true);
    let half = awkward_text(bytes / 2, false);
    vec![
        ("第1章 utf8.md".into(), text.clone().into_bytes()),
        ("第2章 crlf.md".into(), crlf.into_bytes()),
        (
            "第3章 bom.md".into(),
            [b"\xEF\xBB\xBF".as_slice(), text.as_bytes()].concat(),
        ),
        (
            "第4章 gbk.txt".into(),
            encoding_rs::GB18030.encode(&text).0.into_owned(),
        ),
        ("第5章 le-bom.txt".into(), utf16(&half, true, true)),
        ("第6章 be-bom.txt".into(), utf16(&half, false, true)),
        ("第7章 le.txt".into(), utf16(&half, true, false)),
        ("第8章 be.txt".into(), utf16(&half, false, false)),
    ]
}

/// A chapter file: its name and bytes.
type ChapterFile = (String, Vec<u8>);

fn library_with(dir: &Path, books: &[(&str, &[ChapterFile])]) -> PathBuf {
    let root = std::fs::canonicalize(dir).unwrap().join("lib");
    for (book, files) in books {
        let book = root.join("novels").join(book);
        std::fs::create_dir_all(&book).unwrap();
        for (name, body) in *files {
            std::fs::write(book.join(name), body).unwrap();
        }
    }
    root
}

fn chapter_of(lib: &Library, file: &str) -> Chapter {
    let index = lib.scan_book(BOOK).unwrap();
    index
        .chapters
        .into_iter()
        .find(|c| c.file == file)
        .expect("the chapter is indexed")
}

/// Every page the mount lists for a chapter (the reading chain), a few
/// off it and one with a limit, each compared with the page of the whole
/// decoded text; `st_size` too.
#[test]
fn big_chapters_read_through_the_mount_as_decoded_whole() {
    if !fuse_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let files = chapters_in_every_encoding(2_500_000);
    let root = library_with(tmp.path(), &[(BOOK, &files)]);
    // Texts get 12 MiB of a 16 MiB cache: chapters above 1.5 MiB stream.
    let m = Mount::new(
        &root,
        &[
            "--ttl",
            "0",
            "--state-file",
            "/nonexistent/s.json",
            "--cache-size",
            "16M",
        ],
    );
    // Library::read decodes whole: chapters this size are never streamed.
    let lib = novelfs::storage::open_local(&root).unwrap();
    assert!(!lib.streams(files[0].1.len() as u64));
    for (file, _) in &files {
        let chapter = chapter_of(&lib, file);
        let text = lib.load_chapter(OsStr::new(BOOK), &chapter).unwrap();
        let dir = m.path().join(BOOK).join(file);
        let mut names: Vec<OsString> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let chain = text.chain();
        assert_eq!(names.len(), chain.len() * 2, "{file}: the chain is listed");
        let total = text.total_lines();
        names.push(format!("offset-{}.txt", total).into());
        names.push(format!("offset-{}.json", total / 2 + 1).into());
        names.push("offset-2-limit-7.json".into());
        names.push("offset-3-limit-1.txt".into());
        for name in names {
            let (offset, limit, format) = parse_page_name(&name);
            let want = lib
                .page_output(OsStr::new(BOOK), OsStr::new(file), &text, offset, limit)
                .unwrap()
                .rendered(format);
            let path = dir.join(&name);
            let got = std::fs::read(&path).unwrap();
            assert!(
                got == want.as_bytes(),
                "{file}/{}: the page differs from the whole decode's",
                name.to_string_lossy()
            );
            assert_eq!(
                std::fs::metadata(&path).unwrap().len(),
                got.len() as u64,
                "{file}/{}: st_size",
                name.to_string_lossy()
            );
        }
    }
}

fn parse_page_name(name: &OsStr) -> (u64, u32, PageFormat) {
    let s = std::str::from_utf8(name.as_bytes()).unwrap();
    let (stem, format) = match s.strip_suffix(".txt") {
        Some(stem) => (stem, PageFormat::Text),
        None => (s.strip_suffix(".json").unwrap(), PageFormat::Json),
    };
    let rest = stem.strip_prefix("offset-").unwrap();
    match rest.split_once("-limit-") {
        Some((o, l)) => (o.parse().unwrap(), l.parse().unwrap(), format),
        None => (rest.parse().unwrap(), 400, format),
    }
}

/// A chapter three times the cache is read at its first and last page
/// without the daemon ever holding it: its peak memory stays below the
/// chapter's size.
#[test]
fn a_chapter_bigger_than_the_cache_is_never_held_whole() {
    if !fuse_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let text = awkward_text(48 << 20, false);
    let files = vec![("第1章 大.md".to_string(), text.into_bytes())];
    let root = library_with(tmp.path(), &[(BOOK, &files)]);
    let m = Mount::new(
        &root,
        &[
            "--ttl",
            "0",
            "--state-file",
            "/nonexistent/s.json",
            "--cache-size",
            "16M",
        ],
    );
    let lib = novelfs::storage::open_local(&root).unwrap();
    let chapter = chapter_of(&lib, &files[0].0);
    let dir = m.path().join(BOOK).join(&files[0].0);
    let first = std::fs::read(dir.join("offset-1.txt")).unwrap();
    let first_want = {
        let mut small = novelfs::storage::open_local(&root).unwrap();
        small.stream_above = 0;
        let streamed = small.load_chapter(OsStr::new(BOOK), &chapter).unwrap();
        let total = streamed.total_lines();
        let page = |offset| {
            small
                .page_output(
                    OsStr::new(BOOK),
                    chapter.os_name.as_os_str(),
                    &streamed,
                    offset,
                    400,
                )
                .unwrap()
                .text()
        };
        let last = std::fs::read(dir.join(format!("offset-{total}.txt"))).unwrap();
        assert!(last == page(total).as_bytes(), "the last page");
        page(1)
    };
    assert!(first == first_want.as_bytes(), "the first page");
    let (_, hwm_kib) = rss_kib(m.server_pid()).unwrap();
    assert!(
        hwm_kib < 40 << 10,
        "the daemon peaked at {hwm_kib} KiB for a 48 MiB chapter"
    );
}

/// While two big chapters' loads are held in progress (by the daemon's
/// NOVELFS_TEST_HOLD_LOADS seam), a small page of another book answers,
/// with the default two worker threads; once released, the big pages are
/// right too.
#[test]
fn a_small_page_answers_while_two_big_loads_are_held() {
    if !fuse_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let hold = tmp.path().join("hold");
    std::fs::create_dir(&hold).unwrap();
    // Over the 4 MiB of a big load, under the streaming threshold: the
    // loads that decode whole are the longest.
    let big: Vec<ChapterFile> = (1..=2)
        .map(|i| {
            (
                format!("第{i}章.md"),
                awkward_text(5 << 20, false).into_bytes(),
            )
        })
        .collect();
    let small = vec![(
        "第1章 短.md".to_string(),
        "短短的一行\n第二行".as_bytes().to_vec(),
    )];
    let root = library_with(tmp.path(), &[(BOOK, &big), ("小书", &small)]);
    let m = Mount::with_env(
        &root,
        &["--ttl", "0", "--state-file", "/nonexistent/s.json"],
        "warn",
        &[("NOVELFS_TEST_HOLD_LOADS", hold.as_os_str())],
    );
    /// Releases held loads however the test ends, so the daemon can exit.
    struct Release(PathBuf);
    impl Drop for Release {
        fn drop(&mut self) {
            let _ = std::fs::write(self.0.join("release"), b"");
        }
    }
    let release = Release(hold.clone());
    let mut readers: Vec<_> = big
        .iter()
        .map(|(file, _)| {
            let page = m.path().join(BOOK).join(file).join("offset-1.txt");
            std::thread::spawn(move || std::fs::read(page))
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::fs::read_dir(&hold).unwrap().count() < 2 {
        // A read answered before its load was held was answered without
        // it: an error (EIO once it waited a whole source timeout).
        if let Some(i) = readers.iter().position(|r| r.is_finished()) {
            let ended = readers.remove(i).join().unwrap().map(|page| page.len());
            panic!(
                "the read of {} ended before its load started: {ended:?}",
                big[i].0
            );
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the two big loads did not start"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let small_page = m
        .path()
        .join("小书")
        .join("第1章 短.md")
        .join("offset-1.txt");
    let got = within(20, "a small page while two big loads are held", move || {
        std::fs::read_to_string(small_page)
    })
    .unwrap();
    assert!(got.contains("1: 短短的一行\n2: 第二行\n"), "{got}");
    // Both loads are still held: the small page did not wait for them.
    assert!(!hold.join("release").exists());
    assert!(readers.iter().all(|r| !r.is_finished()));
    drop(release);
    let lib = novelfs::storage::open_local(&root).unwrap();
    for ((file, _), reader) in big.iter().zip(readers) {
        let got = reader.join().unwrap().unwrap();
        let want = lib
            .read(
                &novelfs::library::ReadArgs {
                    book: BOOK,
                    chapter: file,
                    ..Default::default()
                },
                Some(Path::new("/nonexistent/s.json")),
            )
            .unwrap()
            .text();
        assert!(got == want.as_bytes(), "{file}: first page after release");
    }
}
