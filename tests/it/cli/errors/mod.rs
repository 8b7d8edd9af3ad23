//! The `novelfs` binary on bad input: the exact SPEC §1.7 error texts, exit
//! status 1 and an empty stdout; no input makes it panic; `chapters` keeps
//! going past an undecodable chapter; the library root defaults.
//!
//! Every expected text below is written from the spec, never captured from a run.
//! A module per command or concern: `read`, `chapters`, `root`, and
//! `arguments` (no input makes it panic); this file holds the spec's texts
//! and the library and commands they share.

mod arguments;
mod chapters;
mod read;
mod root;

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
