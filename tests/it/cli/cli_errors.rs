//! The `novelfs` binary on bad input: the exact SPEC §1.7 error texts, exit
//! status 1 and an empty stdout; no input makes it panic; `chapters` keeps
//! going past an undecodable chapter; the library root defaults.
//!
//! Every expected text below is written from the spec, never captured from a run.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::RngAlgorithm;

const BIN: &str = env!("CARGO_BIN_EXE_novelfs");
const NO_STATE: &str = "/nonexistent/novelfs-tests/state.json";
const BOOK: &str = "星河";

// ---------------------------------------------------------------------------
// SPEC §1.7, verbatim.

const EMPTY_BOOK: &str = "参数 \"book\" 不能为空字符串";
const EMPTY_CHAPTER: &str = "参数 \"chapter\" 不能为空字符串";
const BOOK_SANITIZED_EMPTY: &str = "参数 book 不能为空（清洗后无有效字符）";
const BAD_OFFSET: &str = "参数 \"offset\" 必须是 1 到 9007199254740991 之间的整数";
const BAD_LIMIT: &str = "参数 \"limit\" 必须是 1 到 400 之间的整数";
const DISABLED: &str = "工具 novel_read（阅读章节）当前已在「写作助手功能」UI 中关闭。可用 novel_sentence_config 或侧边栏面板重新开启。";

fn no_book(root: &Path, book: &str) -> String {
    format!(
        "书库中未找到作品目录：{}/novels/{book}（检查书名是否精确匹配——可用 novel_books 查看全部作品名；或确认 novels/ 下已创建该书目录）",
        root.display()
    )
}

fn not_found(book: &str, needle: &str) -> String {
    format!("在作品 \"{book}\" 中找不到章节 \"{needle}\"（可用 novel_chapters 查看章节列表）")
}

fn ambiguous(n: u64, files: &[&str]) -> String {
    format!(
        "第 {n} 章有 {} 个文件，无法确定要哪一份：{}。请把 chapter 参数写成其中一个文件名（可省略扩展名）来指定；或用 novel_continuity_check 查看同章号清单后改名。",
        files.len(),
        files.join("、")
    )
}

fn encoding(path: &str, utf16_suspected: bool) -> String {
    let hint = if utf16_suspected {
        "；该文件的高位字节分布像 UTF-16，可能是缺 BOM 的 UTF-16LE/BE——请另存为 UTF-8（UTF-16 请带 BOM）"
    } else {
        "，也不像带 BOM 或缺 BOM 的 UTF-16"
    };
    format!(
        "cannot detect text encoding of \"{path}\": 不是有效的 UTF-8/GBK{hint}，请将文件另存为 UTF-8 编码"
    )
}

fn offset_out_of_range(offset: &str, file: &str, total_lines: u64) -> String {
    format!("offset {offset} 超出范围（\"{file}\" 共 {total_lines} 行）")
}

// ---------------------------------------------------------------------------
// The test library.

/// Undecodable under every rule of §1.4: no BOM, no NUL, odd length (rule 4
/// needs an even one), and 0xFF, which is neither UTF-8 nor a GBK byte.
const GARBAGE: &[u8] = b"\xFF\x80abc";

/// Ten UTF-16LE units, 中 (0x4E2D) ×7 and 0x33FF ×3: every high byte is
/// "coherent", 70% of the units plausible (≥ 0.6, < 0.9), the BE reading is
/// 30% plausible; no NUL; 0xFF makes it invalid UTF-8 and invalid GBK. So:
/// an error, and UTF-16 is suspected.
fn utf16_suspect() -> Vec<u8> {
    [
        0x4E2Du16, 0x4E2D, 0x33FF, 0x4E2D, 0x4E2D, 0x33FF, 0x4E2D, 0x4E2D, 0x33FF, 0x4E2D,
    ]
    .iter()
    .flat_map(|u| u.to_le_bytes())
    .collect()
}

const CH1: &str = "第01章 初遇.md";
const CH1_TEXT: &str = "第一行\n第二行\n第三行";
/// Chapter 3 three times, in the §1.1 order: by collation, digits before Han,
/// and `a` before `B` (byte order would put `B` first).
const THREES: [&str; 3] = ["03-c.md", "第3章 a.md", "第3章 B.md"];

struct Lib {
    dir: tempfile::TempDir,
    /// Canonical, as pages print it.
    root: PathBuf,
}

impl Lib {
    fn book_dir(&self) -> PathBuf {
        self.root.join("novels").join(BOOK)
    }
    fn path_of(&self, file: &str) -> String {
        format!("{}/novels/{BOOK}/{file}", self.root.display())
    }
    fn write(&self, file: &str, bytes: &[u8]) {
        std::fs::write(self.book_dir().join(file), bytes).unwrap();
    }
    fn state(&self, name: &str, json: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, json).unwrap();
        p
    }
}

fn library() -> Lib {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("lib");
    std::fs::create_dir_all(root.join("novels").join(BOOK).join("旧稿")).unwrap();
    std::fs::create_dir_all(root.join("novels").join("空书")).unwrap();
    let root = std::fs::canonicalize(&root).unwrap();
    let lib = Lib { dir, root };
    lib.write(CH1, CH1_TEXT.as_bytes());
    for (i, f) in THREES.iter().enumerate() {
        lib.write(f, format!("三之{i}").as_bytes());
    }
    lib.write("第11章 长街.md", "长街".as_bytes());
    lib.write("空章.md", b"");
    lib.write("乱码.md", GARBAGE);
    lib.write("疑似.txt", &utf16_suspect());
    lib.write("笔记.json", b"{}");
    lib
}

/// `novelfs` with no ambient configuration: no `NOVELFS_ROOT`, and the
/// default state file pointing nowhere.
fn novelfs() -> Command {
    novelfs_at(Path::new(BIN))
}

/// The same, running the binary at `bin`.
fn novelfs_at(bin: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_remove("NOVELFS_ROOT")
        .env("DSH_NOVEL_WRITER_STATE", NO_STATE)
        .env("HOME", "/nonexistent");
    cmd
}

/// `novelfs SUBCOMMAND --root LIB --state-file NO_STATE ARGS…`
fn on_library<S: AsRef<OsStr>>(subcommand: &str, lib: &Lib, args: &[S]) -> Output {
    novelfs()
        .arg(subcommand)
        .arg("--root")
        .arg(&lib.root)
        .arg("--state-file")
        .arg(NO_STATE)
        .args(args)
        .output()
        .unwrap()
}

fn read<S: AsRef<OsStr>>(lib: &Lib, args: &[S]) -> Output {
    on_library("read", lib, args)
}

fn chapters<S: AsRef<OsStr>>(lib: &Lib, args: &[S]) -> Output {
    on_library("chapters", lib, args)
}

#[track_caller]
fn assert_error(out: &Output, message: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr, format!("错误：{message}\n"), "stderr");
    assert_eq!(
        out.status.code(),
        Some(1),
        "exit status (stderr {stderr:?})"
    );
    assert!(
        out.stdout.is_empty(),
        "stdout should be empty: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[track_caller]
fn assert_page(out: &Output, want: &str) {
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        want,
        "stderr {:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success());
    assert!(out.stderr.is_empty());
}

/// The first page of `CH1`, written from §1.6: 3 lines, 3+1+3+1+3 = 11 units.
fn ch1_page(root: &Path) -> String {
    format!(
        "<path>{}/novels/{BOOK}/{CH1}</path>\n<type>novel-chapter</type>\n<content>\n1: 第一行\n2: 第二行\n3: 第三行\n\n(本章共 3 行 / 11 字)\n</content>\n",
        root.display()
    )
}

// ---------------------------------------------------------------------------
// Errors of `read`.

#[test]
fn the_library_reads_before_anything_fails() {
    // Guards the error tests below: the same library and flags do read.
    let lib = library();
    assert_page(&read(&lib, &[BOOK, "1"]), &ch1_page(&lib.root));
}

#[test]
fn undecodable_chapter_names_its_absolute_path() {
    let lib = library();
    assert_error(
        &read(&lib, &[BOOK, "乱码"]),
        &encoding(&lib.path_of("乱码.md"), false),
    );
    assert_error(
        &read(&lib, &[BOOK, "疑似.txt"]),
        &encoding(&lib.path_of("疑似.txt"), true),
    );
    // The offset is checked after decoding.
    assert_error(
        &read(&lib, &[BOOK, "乱码", "--offset", "99"]),
        &encoding(&lib.path_of("乱码.md"), false),
    );
    // Through a non-canonical root, the path is still the canonical one.
    let out = novelfs()
        .args(["read", "--state-file", NO_STATE, "--root"])
        .arg(lib.root.join("novels").join(".."))
        .args([BOOK, "乱码"])
        .output()
        .unwrap();
    assert_error(&out, &encoding(&lib.path_of("乱码.md"), false));
}

fn undecodable_bytes() -> impl Strategy<Value = Vec<u8>> {
    (vec(1u8..=255, 0..200), any::<proptest::sample::Index>()).prop_map(|(mut b, at)| {
        b.insert(at.index(b.len() + 1), 0xFF);
        if b.starts_with(b"\xEF\xBB\xBF")
            || b.starts_with(b"\xFF\xFE")
            || b.starts_with(b"\xFE\xFF")
        {
            b.insert(0, b'a');
        }
        if b.len() % 2 == 0 {
            b.push(b'a');
        }
        b
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, rng_algorithm: RngAlgorithm::XorShift, ..ProptestConfig::default() })]

    /// Random bytes that no rule of §1.4 accepts (see `GARBAGE`).
    #[test]
    fn random_undecodable_bytes(bytes in undecodable_bytes()) {
        let lib = library();
        lib.write("随机.md", &bytes);
        assert_error(&read(&lib, &[BOOK, "随机"]), &encoding(&lib.path_of("随机.md"), false));
    }
}

#[test]
fn unreadable_chapter() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let lib = library();
    let file = lib.book_dir().join(CH1);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    // SAFETY: geteuid has no preconditions.
    let out = if unsafe { libc::geteuid() } == 0 {
        // Mode 000 does not stop root, who reads the page ...
        assert_page(&read(&lib, &[BOOK, "1"]), &ch1_page(&lib.root));
        // ... so the error path runs as an unprivileged user, with a copy of
        // the binary and a library that user may walk (tempdirs are 0700).
        let bin = lib.dir.path().join("novelfs");
        // Copied by a child process: a write handle of ours could leak into
        // a test forking meanwhile and make the exec fail with ETXTBSY.
        let copied = Command::new("cp").arg(BIN).arg(&bin).status().unwrap();
        assert!(copied.success());
        for dir in [lib.dir.path(), &lib.root] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        novelfs_at(&bin)
            .args(["read", "--root"])
            .arg(&lib.root)
            .args(["--state-file", NO_STATE, BOOK, "1"])
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap()
    } else {
        read(&lib, &[BOOK, "1"])
    };
    // No §1.7 text for this case: one error line naming the file and why.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr:?}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.starts_with("错误：") && stderr.ends_with('\n') && stderr.lines().count() == 1,
        "{stderr:?}"
    );
    assert!(stderr.contains(CH1), "{stderr:?}");
    assert!(stderr.contains("Permission denied"), "{stderr:?}");
}

#[test]
fn missing_book() {
    let lib = library();
    assert_error(&read(&lib, &["无此书", "1"]), &no_book(&lib.root, "无此书"));
    // The message names the sanitized book.
    assert_error(
        &read(&lib, &[" 无:此*书?. ", "1"]),
        &no_book(&lib.root, "无此书"),
    );
    // A file is not a book, and neither is `novels` itself.
    std::fs::write(lib.root.join("novels").join("文件"), "x").unwrap();
    assert_error(&read(&lib, &["文件", "1"]), &no_book(&lib.root, "文件"));
    // Reserved device names get a `_` prefix.
    assert_error(&read(&lib, &["con", "1"]), &no_book(&lib.root, "_con"));
    // And a name that sanitizes to an existing book reads it.
    assert_page(&read(&lib, &[" 星:河. ", "1"]), &ch1_page(&lib.root));
}

#[test]
fn empty_and_blank_arguments() {
    let lib = library();
    for book in ["", "  ", "\u{3000}\t", "\u{feff}"] {
        assert_error(&read(&lib, &[book, "1"]), EMPTY_BOOK);
    }
    for chapter in ["", "  ", "\u{3000}", "\n"] {
        assert_error(&read(&lib, &[BOOK, chapter]), EMPTY_CHAPTER);
    }
    for book in ["...", "/", " ./. ", "?*:|", "\\\"<>"] {
        assert_error(&read(&lib, &[book, "1"]), BOOK_SANITIZED_EMPTY);
    }
}

#[test]
fn bad_offset_and_limit() {
    let lib = library();
    for offset in [
        "0",
        "abc",
        "-1",
        "1.5",
        "",
        "9007199254740992",
        "99999999999999999999999",
    ] {
        assert_error(&read(&lib, &[BOOK, "1", "--offset", offset]), BAD_OFFSET);
    }
    for limit in ["401", "0", "abc", "-5", "1000", "0.5", ""] {
        assert_error(&read(&lib, &[BOOK, "1", "--limit", limit]), BAD_LIMIT);
    }
    // The bounds themselves are valid.
    assert_page(
        &read(&lib, &[BOOK, "1", "--limit", "400"]),
        &ch1_page(&lib.root),
    );
    assert_page(
        &read(&lib, &[BOOK, "1", "--offset", "1", "--limit", "400"]),
        &ch1_page(&lib.root),
    );
}

#[test]
fn offset_beyond_the_end() {
    let lib = library();
    assert_error(
        &read(&lib, &[BOOK, "1", "--offset", "4"]),
        &offset_out_of_range("4", CH1, 3),
    );
    let max = "9007199254740991";
    assert_error(
        &read(&lib, &[BOOK, "1", "--offset", max]),
        &offset_out_of_range(max, CH1, 3),
    );
    // The last line is in range.
    let out = read(&lib, &[BOOK, "1", "--offset", "3"]);
    let want = format!(
        "<path>{}</path>\n<type>novel-chapter</type>\n<content>\n3: 第三行\n\n(本章共 3 行 / 3 字)\n</content>\n",
        lib.path_of(CH1)
    );
    assert_page(&out, &want);
    // An empty chapter has 0 lines but offset 1 is allowed; 2 is not.
    assert_error(
        &read(&lib, &[BOOK, "空章", "--offset", "2"]),
        &offset_out_of_range("2", "空章.md", 0),
    );
    let want = format!(
        "<path>{}</path>\n<type>novel-chapter</type>\n<content>\n1: \n\n(本章共 0 行 / 0 字)\n</content>\n",
        lib.path_of("空章.md")
    );
    assert_page(&read(&lib, &[BOOK, "空章"]), &want);
}

#[test]
fn switched_off() {
    let lib = library();
    let off = lib.state("off.json", r#"{"tools":{"novel_read":false}}"#);
    let with_state = |state: &Path, args: &[&str]| {
        novelfs()
            .arg("read")
            .arg("--root")
            .arg(&lib.root)
            .arg("--state-file")
            .arg(state)
            .args(args)
            .output()
            .unwrap()
    };
    assert_error(&with_state(&off, &[BOOK, "1"]), DISABLED);
    // Checked before the tool runs: a missing book does not matter.
    assert_error(&with_state(&off, &["无此书", "1"]), DISABLED);
    // The default state file is $DSH_NOVEL_WRITER_STATE.
    let out = novelfs()
        .env("DSH_NOVEL_WRITER_STATE", &off)
        .arg("read")
        .arg("--root")
        .arg(&lib.root)
        .args([BOOK, "1"])
        .output()
        .unwrap();
    assert_error(&out, DISABLED);
    // Only `tools.novel_read === false` switches off; a missing, unreadable
    // (a directory) or malformed state file means enabled.
    let on = [
        lib.state("on.json", r#"{"tools":{"novel_read":true}}"#),
        lib.state("zero.json", r#"{"tools":{"novel_read":0}}"#),
        lib.state("other.json", r#"{"tools":{"novel_write":false}}"#),
        lib.state("bad.json", "{not json"),
        lib.dir.path().to_path_buf(),
        PathBuf::from(NO_STATE),
    ];
    for state in &on {
        assert_page(&with_state(state, &[BOOK, "1"]), &ch1_page(&lib.root));
    }
}

#[test]
fn ambiguous_chapter_number() {
    let lib = library();
    let want = ambiguous(3, &THREES);
    for arg in ["3", "03", "０３", "第3章", " 3 ", "第三章"] {
        assert_error(&read(&lib, &[BOOK, arg]), &want);
    }
    // A file name (extension optional) picks one of them.
    let out = read(&lib, &[BOOK, "第3章 B"]);
    let want = format!(
        "<path>{}</path>\n<type>novel-chapter</type>\n<content>\n1: 三之2\n\n(本章共 1 行 / 3 字)\n</content>\n",
        lib.path_of("第3章 B.md")
    );
    assert_page(&out, &want);
}

#[test]
fn chapter_not_found() {
    let lib = library();
    // The needle is the trimmed argument.
    assert_error(&read(&lib, &[BOOK, " 不存在 "]), &not_found(BOOK, "不存在"));
    // All digits: never a substring match (`1` is not `第11章`).
    assert_error(&read(&lib, &[BOOK, "2"]), &not_found(BOOK, "2"));
    assert_error(&read(&lib, &[BOOK, "笔记"]), &not_found(BOOK, "笔记"));
    assert_error(&read(&lib, &[BOOK, "旧稿"]), &not_found(BOOK, "旧稿"));
    assert_error(&read(&lib, &["空书", "1"]), &not_found("空书", "1"));
}

// ---------------------------------------------------------------------------
// `chapters`.

/// Every string array anywhere in a JSON value.
fn string_arrays(v: &serde_json::Value, out: &mut Vec<Vec<String>>) {
    match v {
        serde_json::Value::Array(a) => {
            if !a.is_empty() && a.iter().all(|x| x.is_string()) {
                out.push(a.iter().map(|x| x.as_str().unwrap().to_string()).collect());
            }
            a.iter().for_each(|x| string_arrays(x, out));
        }
        serde_json::Value::Object(o) => o.values().for_each(|x| string_arrays(x, out)),
        _ => {}
    }
}

fn all_strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| all_strings(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| all_strings(x, out)),
        _ => {}
    }
}

#[test]
fn chapters_lists_duplicates_and_undecodable_files() {
    let lib = library();
    let out = chapters(&lib, &[BOOK]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr {:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
    let files = [
        CH1,
        THREES[0],
        THREES[1],
        THREES[2],
        "第11章 长街.md",
        "空章.md",
        "乱码.md",
        "疑似.txt",
    ];
    for f in files {
        assert!(stdout.contains(f), "{f} is not listed:\n{stdout}");
    }
    assert!(
        !stdout.contains("笔记.json") && !stdout.contains("旧稿"),
        "{stdout}"
    );
    // Chapters in §1.1 order: 1, 3 ×3, 11, then the unnumbered.
    let first = |f: &str| stdout.find(f).unwrap();
    for pair in [CH1, THREES[0], THREES[1], THREES[2], "第11章 长街.md"].windows(2) {
        assert!(
            first(pair[0]) < first(pair[1]),
            "{} should come before {}:\n{stdout}",
            pair[0],
            pair[1]
        );
    }
    // The group of chapter 3, in order, on one line.
    let group_line = stdout
        .lines()
        .find(|l| THREES.iter().all(|f| l.contains(f)));
    let group_line =
        group_line.unwrap_or_else(|| panic!("no line lists the chapter-3 group:\n{stdout}"));
    let pos: Vec<usize> = THREES.iter().map(|f| group_line.find(f).unwrap()).collect();
    assert!(
        pos.windows(2).all(|w| w[0] < w[1]),
        "group out of order: {group_line}"
    );
    // The undecodable chapters show their error instead of failing the listing.
    assert!(
        stdout.contains(&encoding(&lib.path_of("乱码.md"), false)),
        "{stdout}"
    );
    assert!(
        stdout.contains(&encoding(&lib.path_of("疑似.txt"), true)),
        "{stdout}"
    );

    let out = chapters(&lib, &[BOOK, "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("chapters --json parses");
    let mut arrays = Vec::new();
    string_arrays(&v, &mut arrays);
    assert!(
        arrays.iter().any(|a| a == &THREES),
        "no array holds the chapter-3 group: {v}"
    );
    let mut strings = Vec::new();
    all_strings(&v, &mut strings);
    for f in files {
        assert!(strings.iter().any(|s| s == f), "{f} missing from {v}");
    }
    assert!(
        strings
            .iter()
            .any(|s| s.contains(&encoding(&lib.path_of("乱码.md"), false))),
        "{v}"
    );
}

#[test]
fn chapters_errors() {
    let lib = library();
    assert_error(&chapters(&lib, &["无此书"]), &no_book(&lib.root, "无此书"));
    assert_error(&chapters(&lib, &["  "]), EMPTY_BOOK);
    assert_error(&chapters(&lib, &["..."]), BOOK_SANITIZED_EMPTY);
}

// ---------------------------------------------------------------------------
// The library root.

#[test]
fn root_from_novelfs_root_env() {
    let lib = library();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = novelfs()
        .env("NOVELFS_ROOT", &lib.root)
        .current_dir(elsewhere.path())
        .args(["read", "--state-file", NO_STATE, BOOK, "1"])
        .output()
        .unwrap();
    assert_page(&out, &ch1_page(&lib.root));
    // --root wins over the environment.
    let out = novelfs()
        .env("NOVELFS_ROOT", elsewhere.path())
        .args(["read", "--state-file", NO_STATE, "--root"])
        .arg(&lib.root)
        .args([BOOK, "1"])
        .output()
        .unwrap();
    assert_page(&out, &ch1_page(&lib.root));
}

#[test]
fn root_defaults_to_the_current_directory() {
    let lib = library();
    let out = novelfs()
        .current_dir(&lib.root)
        .args(["read", "--state-file", NO_STATE, BOOK, "1"])
        .output()
        .unwrap();
    assert_page(&out, &ch1_page(&lib.root));
    // From a sub-directory, the current directory is not a library.
    let sub = lib.root.join("novels");
    let out = novelfs()
        .current_dir(&sub)
        .args(["read", "--state-file", NO_STATE, BOOK, "1"])
        .output()
        .unwrap();
    assert_error(&out, &not_a_library(&sub));
    // A symlinked root prints the canonical path.
    let link = lib.dir.path().join("link");
    std::os::unix::fs::symlink(&lib.root, &link).unwrap();
    let out = novelfs()
        .current_dir(&link)
        .args(["read", "--state-file", NO_STATE, BOOK, "1"])
        .output()
        .unwrap();
    assert_page(&out, &ch1_page(&lib.root));
    // JSON through the default root parses and names the canonical path.
    let out = novelfs()
        .current_dir(&link)
        .args(["read", "--state-file", NO_STATE, "--json", BOOK, "1"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("read --json parses");
    assert_eq!(v["path"], lib.path_of(CH1));
    assert_eq!(v["book"], BOOK);
}

/// What every command that takes a root says of one without `novels/`.
fn not_a_library(root: &Path) -> String {
    let root = root.display();
    format!(
        "{root} is not a novelfs library: it has no novels/ directory (expected {root}/novels/<book>/<chapter>.md)"
    )
}

#[test]
fn every_command_refuses_a_root_without_novels_alike() {
    let empty = tempfile::tempdir().unwrap();
    let want = not_a_library(empty.path());
    for args in [
        &["read", BOOK, "1"][..],
        &["read", "--json", BOOK, "1"],
        &["chapters", BOOK],
        &["chapters", "--json", BOOK],
        &["chapters", "--tool", BOOK],
        &["chapters", "--tool", "--json", BOOK],
        &["books"],
        &["books", "--json"],
    ] {
        let out = novelfs()
            .args(&args[..1])
            .arg("--root")
            .arg(empty.path())
            .args(&args[1..])
            .output()
            .unwrap();
        assert_error(&out, &want);
        // The same through the environment and the current directory.
        let out = novelfs()
            .current_dir(empty.path())
            .args(args)
            .output()
            .unwrap();
        assert_error(&out, &want);
    }
    // `mount` refuses it in the same words, and says nothing else.
    let mnt = tempfile::tempdir().unwrap();
    let out = novelfs()
        .arg("mount")
        .arg(empty.path())
        .arg(mnt.path())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("novelfs: {want}\n")
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn chapter_numbers_in_json_are_integers() {
    let lib = library();
    let out = chapters(&lib, &[BOOK, "--json"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"number\": 1,"), "{text}");
    assert!(!text.contains(".0,") && !text.contains(".0\n"), "{text}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["chapters"][0]["number"].as_u64(), Some(1), "{v}");
    assert_eq!(v["duplicates"][0]["number"].as_u64(), Some(3), "{v}");
}

// ---------------------------------------------------------------------------
// No input panics.

fn arg() -> impl Strategy<Value = OsString> {
    prop_oneof![
        3 => select(vec![
            BOOK, "1", "3", "03", "０３", "第三章", "乱码", "疑似", "空章", "第3章 B", "", "  ", "...", "con", "空书",
            "无此书", "-", "--", "-x", "--json", "--offset", "--limit", "0", "401", "9007199254740991",
            "99999999999999999999", "-1", "../..", "星河/..", "\u{feff}", "-h", "--help", "-V",
        ])
        .prop_map(OsString::from),
        2 => any::<String>().prop_map(OsString::from),
        1 => vec(any::<u8>().prop_filter("no NUL in argv", |b| *b != 0), 0..12).prop_map(OsString::from_vec),
    ]
}

fn one_of(common: &'static [&'static str]) -> impl Strategy<Value = OsString> {
    prop_oneof![3 => select(common).prop_map(OsString::from), 1 => arg()]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, rng_algorithm: RngAlgorithm::XorShift, ..ProptestConfig::default() })]

    /// Whatever the arguments: no panic; a page on stdout and exit 0, or one
    /// `错误：` line on stderr and exit 1, or a usage error (exit 2). Most
    /// draws are well-formed enough to get past the argument checks.
    #[test]
    fn no_arguments_make_it_panic(
        sub in select(vec!["read", "chapters"]),
        book in one_of(&[BOOK, BOOK, "空书", " 星河. ", "con"]),
        chapter in one_of(&["1", "3", "第3章 B", "乱码", "疑似", "空章", "11", "长街", "不存在"]),
        extra in prop_oneof![5 => Just(vec![]), 1 => vec(arg(), 1..3)],
        offset in proptest::option::of(one_of(&["1", "2", "3", "4"])),
        limit in proptest::option::of(one_of(&["1", "2", "400", "401"])),
        json in any::<bool>(),
    ) {
        let lib = library();
        let mut cmd = novelfs();
        cmd.arg(sub).arg("--root").arg(&lib.root).arg("--state-file").arg(NO_STATE).arg(book);
        if sub == "read" {
            cmd.arg(chapter);
        }
        cmd.args(&extra);
        // `chapters` has no --offset/--limit: only `extra` may hand it a wrong flag.
        if let (Some(o), "read") = (offset, sub) {
            cmd.arg("--offset").arg(o);
        }
        if let (Some(l), "read") = (limit, sub) {
            cmd.arg("--limit").arg(l);
        }
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        prop_assert!(!stderr.contains("panicked"), "panic: {}", stderr);
        match out.status.code() {
            Some(0) => {
                prop_assert!(out.stderr.is_empty(), "{}", stderr);
                prop_assert!(stdout.ends_with('\n'));
                let help = stdout.contains("Usage") || stdout.starts_with("novelfs ");
                // `extra` may hold a --json of its own.
                let json = json || extra.iter().any(|a| a == "--json");
                if sub == "read" && !help {
                    prop_assert!(
                        if json { stdout.starts_with("{\n") } else { stdout.starts_with("<path>") && stdout.ends_with("\n</content>\n") },
                        "{}", stdout
                    );
                }
            }
            Some(1) => {
                prop_assert!(out.stdout.is_empty(), "{}", stdout);
                prop_assert!(stderr.starts_with("错误：") && stderr.ends_with('\n'), "{}", stderr);
            }
            Some(2) => prop_assert!(out.stdout.is_empty() && !out.stderr.is_empty()),
            other => prop_assert!(false, "exit status {:?}, stderr {}", other, stderr),
        }
    }
}

/// `read --max-chapter-bytes` takes the mount's sizes: a chapter above the
/// limit is the size error (naming the flag it can be raised with), the
/// same chapter under a raised limit reads, and a bad size is a usage error.
#[test]
fn read_takes_max_chapter_bytes() {
    let lib = library();
    let big = "大".repeat(30_000); // 90,000 bytes, one line (shown cut at 3000)
    lib.write("第40章 大.md", big.as_bytes());
    let path = lib.path_of("第40章 大.md");
    assert_error(
        &read(&lib, &[BOOK, "40", "--max-chapter-bytes", "64K"]),
        &format!(
            "无法读取 \"{path}\"：文件大小 90000 字节超过上限 65536 字节（--max-chapter-bytes）"
        ),
    );
    for limit in ["1M", "90000", "2GiB"] {
        let out = read(&lib, &[BOOK, "40", "--max-chapter-bytes", limit]);
        assert!(out.status.success(), "{limit}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("(本章共 1 行 / 3009 字)"));
    }
    // The default lets it in too, and limits the chapters it reads to 256 MiB.
    assert!(read(&lib, &[BOOK, "40"]).status.success());
    for bad in ["12X", "", "1.5M", "99999999999999999999G"] {
        let out = read(&lib, &[BOOK, "40", "--max-chapter-bytes", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--max-chapter-bytes"),
            "{bad:?}: the usage error names the flag"
        );
    }
}

/// A book directory that cannot be read says so: not §1.7's "not found",
/// which would send its reader looking for a typo.
#[test]
fn unreadable_book() {
    use std::os::unix::fs::PermissionsExt;
    let lib = library();
    std::fs::set_permissions(lib.book_dir(), std::fs::Permissions::from_mode(0o000)).unwrap();
    let run = |subcommand: &str, args: &[&str]| {
        let mut cmd = novelfs();
        cmd.arg(subcommand)
            .arg("--root")
            .arg(&lib.root)
            .args(["--state-file", NO_STATE])
            .args(args);
        // Root reads what mode 000 forbids: the command runs without that.
        crate::common::without_dac_override(&mut cmd)
            .output()
            .unwrap()
    };
    let why = format!(
        "无法读取 \"{}\"：Permission denied (os error 13)",
        lib.book_dir().display()
    );
    assert_error(&run("read", &[BOOK, "1"]), &why);
    assert_error(&run("chapters", &[BOOK]), &why);
    // novels/ itself unreadable: every book is.
    std::fs::set_permissions(lib.book_dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let novels = lib.root.join("novels");
    std::fs::set_permissions(&novels, std::fs::Permissions::from_mode(0o000)).unwrap();
    assert_error(&run("read", &[BOOK, "1"]), &why);
    std::fs::set_permissions(&novels, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_page(&run("read", &[BOOK, "1"]), &ch1_page(&lib.root));
}
