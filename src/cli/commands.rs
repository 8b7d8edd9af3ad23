//! What each subcommand does once its arguments are parsed.

use std::ffi::{OsStr, OsString};

use std::process::ExitCode;

use super::args::{ChaptersCmd, LibraryArgs, MountCmd, ReadCmd, UnmountCmd};
use crate::library::{self, Library, NovelError, ReadArgs};
use crate::mount::config::MountConfig;
use crate::mount::{daemon, mountpoint};

fn open_library(args: &LibraryArgs) -> Result<Library, NovelError> {
    let library = Library::open(&args.root).map_err(|e| NovelError::Io {
        path: args.root.to_string_lossy().into_owned(),
        reason: e.to_string(),
    })?;
    match &args.path_root {
        None => Ok(library),
        Some(root) => library
            .with_path_root(root)
            .map_err(|reason| NovelError::Io {
                path: root.clone(),
                reason,
            }),
    }
}

pub(crate) fn read(cmd: ReadCmd) -> Result<String, NovelError> {
    let lib = open_library(&cmd.library)?;
    let args = ReadArgs {
        book: &cmd.book,
        chapter: &cmd.chapter,
        offset: cmd.offset.as_deref(),
        limit: cmd.limit.as_deref(),
    };
    let out = lib.read(&args, cmd.state_file.as_deref())?;
    Ok(if cmd.json { out.json() } else { out.text() })
}

#[derive(serde::Serialize)]
struct ChapterRow {
    number: Option<f64>,
    title: String,
    file: String,
    bytes: u64,
    chars: Option<usize>,
    lines: Option<u64>,
    error: Option<String>,
}

#[derive(serde::Serialize)]
struct DuplicateGroup {
    number: f64,
    files: Vec<String>,
}

pub(crate) fn chapters(cmd: ChaptersCmd) -> Result<String, NovelError> {
    let lib = open_library(&cmd.library)?;
    if js_blank(&cmd.book) {
        return Err(NovelError::EmptyBook);
    }
    let book = library::sanitize_segment(&cmd.book)?;
    let index = lib.scan_book(&book)?;
    let book_os = OsString::from(&book);
    let rows: Vec<ChapterRow> = index
        .chapters
        .iter()
        .map(|c| {
            let bytes = std::fs::symlink_metadata(lib.book_dir(&book_os).join(&c.os_name))
                .map_or(0, |m| m.len());
            let (chars, lines, error) = match lib.load_chapter(OsStr::new(&book), c) {
                Ok(t) => (
                    Some(library::js::utf16_len(t.text())),
                    Some(t.total_lines()),
                    None,
                ),
                Err(e) => (None, None, Some(e.to_string())),
            };
            ChapterRow {
                number: c.number,
                title: c.title.clone(),
                file: c.file.clone(),
                bytes,
                chars,
                lines,
                error,
            }
        })
        .collect();
    let groups: Vec<DuplicateGroup> = index
        .duplicate_groups()
        .into_iter()
        .map(|(number, idx)| DuplicateGroup {
            number,
            files: idx
                .iter()
                .map(|&i| index.chapters[i].file.clone())
                .collect(),
        })
        .collect();
    if cmd.json {
        let value = serde_json::json!({ "book": book, "chapters": rows, "duplicates": groups });
        return Ok(serde_json::to_string_pretty(&value).expect("plain data") + "\n");
    }
    let mut out = format!("《{book}》共 {} 章\n", rows.len());
    for r in &rows {
        let number = r.number.map_or("?".to_string(), library::js::format_number);
        let title = if r.title.is_empty() {
            "（无标题）"
        } else {
            &r.title
        };
        match (&r.error, r.chars, r.lines) {
            (None, Some(chars), Some(lines)) => {
                out += &format!("{number}\t{title}\t{chars} 字\t{lines} 行\t{}\n", r.file)
            }
            _ => {
                out += &format!(
                    "{number}\t{title}\t错误：{}\t{}\n",
                    r.error.as_deref().unwrap_or(""),
                    r.file
                )
            }
        }
    }
    if !groups.is_empty() {
        out += "\n同章号文件（按章号读取会报错，请用文件名指定或改名）：\n";
        for g in &groups {
            out += &format!(
                "第 {} 章：{}\n",
                library::js::format_number(g.number),
                g.files.join("、")
            );
        }
    }
    Ok(out)
}

fn js_blank(s: &str) -> bool {
    library::js::trim(s).is_empty()
}

pub(crate) fn mount(cmd: MountCmd) -> ExitCode {
    // A daemon's stderr is the caller's terminal until the mount is ready:
    // keep it quiet there unless asked.
    let level = if cmd.foreground { "info" } else { "warn" };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level)).init();
    match MountConfig::resolve(&cmd) {
        // SAFETY: the CLI has started no thread.
        Ok(config) => ExitCode::from(unsafe { daemon::run(config) } as u8),
        Err(msg) => {
            eprintln!("novelfs: {msg}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn unmount(cmd: UnmountCmd) -> ExitCode {
    match mountpoint::unmount(&cmd.mountpoint, cmd.lazy) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("novelfs: {msg}");
            ExitCode::FAILURE
        }
    }
}
