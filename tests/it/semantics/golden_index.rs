//! Every reference case of the original `novel_books` and `novel_chapters`
//! (`tests/golden/index.jsonl`), through the `novelfs books` and `novelfs
//! chapters --tool` commands, through `NovelFs` in-process and through a
//! real mount (the index files `novel_books.*` and `BOOK/novel_chapters.*`).

use std::path::PathBuf;
use std::process::Command;

use crate::common::{Mount, pretty_json};
use novelfs::fs::{FsConfig, Kind, NovelFs, ROOT_INO};
use serde_json::Value;
use std::ffi::OsStr;

/// One line of `index.jsonl` (format in tests/golden/README.md).
#[derive(Debug)]
struct IndexCase {
    tool: String,
    book: Option<String>,
    text: Option<String>,
    json: Option<Value>,
    error: Option<String>,
}

/// Builds the reference library of the indexes; returns (guard, canonical root).
fn index_library() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("lib");
    let status = Command::new("python3")
        .arg(crate::common::golden_dir().join("make_index_library.py"))
        .arg(&root)
        .status()
        .expect("python3 runs");
    assert!(status.success(), "make_index_library.py failed");
    let root = std::fs::canonicalize(&root).unwrap();
    (dir, root)
}

/// The cases with `@ROOT@` replaced by `root`.
fn index_cases(root: &str) -> Vec<IndexCase> {
    let raw = std::fs::read_to_string(crate::common::golden_dir().join("index.jsonl")).unwrap();
    raw.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: Value = serde_json::from_str(&line.replace("@ROOT@", root)).unwrap();
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            IndexCase {
                tool: s("tool").unwrap(),
                book: s("book"),
                text: s("text"),
                json: v.get("json").cloned(),
                error: s("error"),
            }
        })
        .collect()
}

/// How a way answers a case: the text or JSON bytes, or a refusal (the
/// CLI's error text, or a tree's errno).
#[derive(Debug, PartialEq)]
enum Answer {
    Bytes(Vec<u8>),
    Text(String),
    Errno(i32),
}

trait IndexWay {
    /// `novel_books` (`book` None) or `novel_chapters` of `book`.
    fn answer(&self, book: Option<&str>, json: bool) -> Answer;
    /// What a failing call gives for the JSON form (a `.json` file holds
    /// the error line as `{"error": …}`, the `.txt` the line itself).
    fn json_refusal(&self, error: &str) -> Answer;
    /// What a failing call gives for the text form.
    fn text_refusal(&self, error: &str) -> Answer;
}

/// Runs every case through `way`; returns how many answers matched and
/// panics with every difference.
fn check_index_cases(way_name: &str, cases: &[IndexCase], way: &dyn IndexWay) -> usize {
    let mut failures = Vec::new();
    let mut passed = 0;
    for case in cases {
        let book = match case.tool.as_str() {
            "novel_books" => None,
            "novel_chapters" => Some(case.book.as_deref().unwrap()),
            other => panic!("unknown tool {other}"),
        };
        let (want_text, want_json) = match &case.error {
            Some(e) => (way.text_refusal(e), way.json_refusal(e)),
            None => (
                Answer::Bytes(format!("{}\n", case.text.as_ref().unwrap()).into_bytes()),
                Answer::Bytes(pretty_json(case.json.as_ref().unwrap()).into_bytes()),
            ),
        };
        for (json, want) in [(false, want_text), (true, want_json)] {
            let got = way.answer(book, json);
            if got == want {
                passed += 1;
            } else {
                let show = |a: &Answer| match a {
                    Answer::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                    other => format!("{other:?}"),
                };
                failures.push(format!(
                    "{} {book:?} json={json}:\n--- want\n{}\n--- got\n{}",
                    case.tool,
                    show(&want),
                    show(&got)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{way_name}: {} of {} answers differ:\n{}",
        failures.len(),
        2 * cases.len(),
        failures.join("\n\n")
    );
    passed
}

struct Cli {
    root: PathBuf,
    state_file: PathBuf,
    path_root: Option<&'static str>,
}

impl IndexWay for Cli {
    fn answer(&self, book: Option<&str>, json: bool) -> Answer {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_novelfs"));
        match book {
            None => cmd.arg("books"),
            Some(_) => cmd.arg("chapters").arg("--tool"),
        };
        cmd.arg("--root")
            .arg(&self.root)
            .arg("--state-file")
            .arg(&self.state_file);
        if let Some(p) = self.path_root {
            cmd.arg("--path-root").arg(p);
        }
        if let Some(b) = book {
            cmd.arg(b);
        }
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().expect("novelfs runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) if stderr.is_empty() => Answer::Bytes(out.stdout),
            Some(1) if out.stdout.is_empty() && stderr.ends_with('\n') => {
                Answer::Text(stderr.strip_suffix('\n').unwrap().to_string())
            }
            status => Answer::Text(format!("<status {status:?}, stderr {stderr:?}>")),
        }
    }
    fn json_refusal(&self, error: &str) -> Answer {
        Answer::Text(error.to_string())
    }
    fn text_refusal(&self, error: &str) -> Answer {
        Answer::Text(error.to_string())
    }
}

const PATH_ROOT: &str = "/library";

#[test]
fn every_index_case_through_the_cli() {
    let (guard, root) = index_library();
    let cases = index_cases(root.to_str().unwrap());
    assert_eq!(cases.len(), 7, "the reference set has 7 index cases");
    let way = Cli {
        root,
        state_file: guard.path().join("state.json"),
        path_root: None,
    };
    assert_eq!(check_index_cases("through the CLI", &cases, &way), 14);
}

#[test]
fn every_index_case_through_the_cli_with_a_path_root() {
    let (guard, root) = index_library();
    let cases = index_cases(PATH_ROOT);
    let way = Cli {
        root,
        state_file: guard.path().join("state.json"),
        path_root: Some(PATH_ROOT),
    };
    assert_eq!(check_index_cases("through the CLI", &cases, &way), 14);
}

/// Each tool has its own switch: `novel_books` off leaves `novel_read` and
/// `novel_chapters` on, and says so in the original's words.
#[test]
fn the_switch_applies_per_tool_name_in_the_cli() {
    let (guard, root) = index_library();
    let state_file = guard.path().join("state.json");
    let way = Cli {
        root,
        state_file: state_file.clone(),
        path_root: None,
    };
    std::fs::write(&state_file, r#"{"tools":{"novel_books":false}}"#).unwrap();
    assert_eq!(
        way.answer(None, false),
        Answer::Text(
            "错误：工具 novel_books（作品列表）当前已在「写作助手功能」UI 中关闭。可用 novel_sentence_config 或侧边栏面板重新开启。".into()
        )
    );
    assert!(matches!(way.answer(Some("空书"), false), Answer::Bytes(_)));
    std::fs::write(&state_file, r#"{"tools":{"novel_chapters":false}}"#).unwrap();
    assert_eq!(
        way.answer(Some("空书"), true),
        Answer::Text(
            "错误：工具 novel_chapters（章节清单）当前已在「写作助手功能」UI 中关闭。可用 novel_sentence_config 或侧边栏面板重新开启。".into()
        )
    );
    assert!(matches!(way.answer(None, true), Answer::Bytes(_)));
}

/// The index files of a tree: `novel_books.*` at the root, `novel_chapters.*`
/// in the book's directory.
fn index_path(book: Option<&str>, json: bool) -> Vec<String> {
    let ext = if json { "json" } else { "txt" };
    match book {
        None => vec![format!("novel_books.{ext}")],
        Some(b) => vec![b.to_string(), format!("novel_chapters.{ext}")],
    }
}

/// `NovelFs` driven as the kernel drives it, without FUSE.
struct InProcess {
    fs: NovelFs,
}

impl InProcess {
    fn new(root: &std::path::Path, state_file: PathBuf, path_root: Option<&str>) -> InProcess {
        let config = FsConfig {
            ttl: std::time::Duration::ZERO,
            watch: false,
            state_file: Some(state_file),
            ..FsConfig::default()
        };
        let mut library = novelfs::storage::open_local(root).unwrap();
        if let Some(p) = path_root {
            library = library.with_path_root(p).unwrap();
        }
        InProcess {
            fs: NovelFs::new(library, config),
        }
    }

    fn read(&self, path: &[String]) -> Result<Vec<u8>, i32> {
        let mut ino = ROOT_INO;
        for part in path {
            ino = self
                .fs
                .lookup(ino, OsStr::new(part))
                .map_err(|e| e.errno())?
                .ino;
        }
        let attr = self.fs.getattr(ino).map_err(|e| e.errno())?;
        assert_eq!(attr.kind, Kind::File);
        let mut bytes = Vec::new();
        loop {
            let piece = self
                .fs
                .read(ino, bytes.len() as u64, 4096)
                .map_err(|e| e.errno())?;
            if piece.is_empty() {
                break;
            }
            bytes.extend(piece);
        }
        assert_eq!(bytes.len() as u64, attr.size, "st_size of {path:?}");
        Ok(bytes)
    }
}

impl IndexWay for InProcess {
    fn answer(&self, book: Option<&str>, json: bool) -> Answer {
        match self.read(&index_path(book, json)) {
            Ok(bytes) => Answer::Bytes(bytes),
            Err(e) => Answer::Errno(e),
        }
    }
    fn json_refusal(&self, error: &str) -> Answer {
        Answer::Bytes(error_json(error).into_bytes())
    }
    fn text_refusal(&self, error: &str) -> Answer {
        Answer::Bytes(format!("{error}\n").into_bytes())
    }
}

/// The `.json` of a failed call: the error line as JSON, written as the
/// pages' JSON is.
fn error_json(error: &str) -> String {
    format!(
        "{{\n  \"error\": {}\n}}\n",
        serde_json::to_string(error).unwrap()
    )
}

#[test]
fn every_index_case_in_process_without_fuse() {
    let (guard, root) = index_library();
    let cases = index_cases(root.to_str().unwrap());
    let way = InProcess::new(&root, guard.path().join("state.json"), None);
    assert_eq!(check_index_cases("in-process", &cases, &way), 14);
    let way = InProcess::new(&root, guard.path().join("state.json"), Some(PATH_ROOT));
    let cases = index_cases(PATH_ROOT);
    assert_eq!(check_index_cases("in-process, path root", &cases, &way), 14);
}

/// A real mount, read with plain std::fs calls.
struct Mounted {
    mount: Mount,
}

impl IndexWay for Mounted {
    fn answer(&self, book: Option<&str>, json: bool) -> Answer {
        let path = index_path(book, json)
            .iter()
            .fold(self.mount.path().to_path_buf(), |p, c| p.join(c));
        match std::fs::read(&path) {
            Ok(bytes) => {
                let size = std::fs::metadata(&path).unwrap().len();
                assert_eq!(bytes.len() as u64, size, "st_size of {}", path.display());
                Answer::Bytes(bytes)
            }
            Err(e) => Answer::Errno(crate::common::errno(&e)),
        }
    }
    fn json_refusal(&self, error: &str) -> Answer {
        Answer::Bytes(error_json(error).into_bytes())
    }
    fn text_refusal(&self, error: &str) -> Answer {
        Answer::Bytes(format!("{error}\n").into_bytes())
    }
}

#[test]
fn every_index_case_through_a_mount() {
    require_fuse!();
    let (guard, root) = index_library();
    let state = guard.path().join("state.json");
    let state = state.to_str().unwrap();
    let way = Mounted {
        mount: Mount::new(&root, &["--state-file", state]),
    };
    let names = crate::common::sorted_names(way.mount.path()).unwrap();
    assert!(
        names.contains(&"novel_books.txt".to_string())
            && names.contains(&"novel_books.json".to_string()),
        "the root lists the library's index: {names:?}"
    );
    let book = crate::common::sorted_names(&way.mount.path().join("三国演义")).unwrap();
    assert!(
        book.contains(&"novel_chapters.txt".to_string()),
        "a book lists its index: {book:?}"
    );
    let cases = index_cases(root.to_str().unwrap());
    assert_eq!(check_index_cases("through a mount", &cases, &way), 14);
    for extra in [
        vec!["--path-root", PATH_ROOT],
        vec!["-o", "ro,path_root=/library/"],
    ] {
        let mut args = vec!["--state-file", state];
        args.extend(extra);
        let way = Mounted {
            mount: Mount::new(&root, &args),
        };
        let cases = index_cases(PATH_ROOT);
        assert_eq!(
            check_index_cases("through a mount, path root", &cases, &way),
            14
        );
    }
}
