//! What each subcommand does once its arguments are parsed.

use std::process::ExitCode;

use super::flags::args::{BooksCmd, ChaptersCmd, ReadCmd, UnmountCmd};
use super::flags::mount_args::MountCmd;
use super::mount_config::mount_config;
use super::root_check::LibraryRoot;
use crate::mount::library_at::{BucketReading, LibraryAt};
use crate::mount::{daemon, logging, mountpoint};
use novelfs_library::backing::SourceKind;
use novelfs_library::{self as library, Library, NovelError, ReadArgs};
use novelfs_storage::StoreOptions;

/// The library `root` names, read as a one-shot command reads it; its
/// pages written under `path_root` when one is given.
pub(super) fn open_library(
    root: &LibraryRoot,
    path_root: Option<&str>,
) -> Result<Library, NovelError> {
    let io = |reason: String| NovelError::Io {
        path: root.given.to_string_lossy().into_owned(),
        reason,
        kind: SourceKind::Other,
        cause: None,
    };
    let library = match &root.at {
        LibraryAt::Dir(dir) => {
            // Written as `mount` writes its root: absolute, without `.` or `//`.
            Library::check_root(&mountpoint::absolute(dir))?;
            novelfs_storage::open_local(dir).map_err(|e| io(e.to_string()))?
        }
        LibraryAt::Bucket(_) => {
            let reading = BucketReading {
                ttl: ONE_SHOT_TTL,
                ahead_bytes: ONE_SHOT_AHEAD_BYTES,
                follow: false,
                stale_if_error: std::time::Duration::ZERO,
                drift: std::time::Duration::ZERO,
            };
            root.at.open(&root.store, reading, None).map_err(io)?
        }
    };
    match path_root {
        None => Ok(library),
        Some(path_root) => library
            .with_path_root(path_root)
            .map_err(|e| NovelError::Io {
                path: path_root.to_string(),
                reason: e.to_string(),
                kind: SourceKind::Other,
                cause: Some(e.into()),
            }),
    }
}

/// One command's bound on one access to a bucket.
pub(super) const ONE_SHOT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A one-shot command's settings of a bucket before its flags: no `-o`,
/// and its bound on one access.
pub(super) fn one_shot() -> StoreOptions {
    StoreOptions {
        timeout: ONE_SHOT_TIMEOUT,
        ..StoreOptions::default()
    }
}
/// A one-shot command lists each directory once.
const ONE_SHOT_TTL: std::time::Duration = std::time::Duration::from_secs(3600);
/// Chapters fetched ahead by a one-shot command that reads many.
const ONE_SHOT_AHEAD_BYTES: u64 = 64 << 20;

pub(crate) fn read(cmd: ReadCmd, root: &LibraryRoot) -> Result<String, NovelError> {
    let mut lib = open_library(root, cmd.library.path_root.as_deref())?;
    lib.max_chapter_bytes = cmd.max_chapter_bytes;
    let args = ReadArgs {
        book: &cmd.book,
        chapter: &cmd.chapter,
        offset: cmd.offset.as_deref(),
        limit: cmd.limit.as_deref(),
    };
    let out = lib.read(&args, cmd.state_file.as_deref())?;
    Ok(if cmd.json { out.json() } else { out.text() })
}

/// `chapters --tool`: what the original novel_chapters returns.
pub(crate) fn tool_chapters(cmd: ChaptersCmd, root: &LibraryRoot) -> Result<String, NovelError> {
    let lib = open_library(root, cmd.library.path_root.as_deref())?;
    let listing = lib.novel_chapters(&cmd.book, cmd.state_file.as_deref())?;
    if cmd.json {
        listing.json()
    } else {
        Ok(listing.text())
    }
}

/// `books`: what the original novel_books returns.
pub(crate) fn books(cmd: BooksCmd, root: &LibraryRoot) -> Result<String, NovelError> {
    let lib = open_library(root, cmd.library.path_root.as_deref())?;
    let books = lib.novel_books(cmd.state_file.as_deref())?;
    Ok(if cmd.json { books.json() } else { books.text() })
}

pub(crate) fn chapters(cmd: ChaptersCmd, root: &LibraryRoot) -> Result<String, NovelError> {
    let lib = open_library(root, cmd.library.path_root.as_deref())?;
    let library::ChapterTable { book, rows, shared } = library::chapter_table(&lib, &cmd.book)?;
    if cmd.json {
        let value = serde_json::json!({ "book": book, "chapters": rows, "duplicates": shared });
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
    if !shared.is_empty() {
        out += "\n同章号文件（按章号读取会报错，请用文件名指定或改名）：\n";
        for g in &shared {
            out += &format!(
                "第 {} 章：{}\n",
                library::js::format_number(g.number),
                g.files.join("、")
            );
        }
    }
    Ok(out)
}

pub(crate) fn mount(cmd: MountCmd) -> ExitCode {
    let config = match mount_config(&cmd) {
        Ok(config) => config,
        // A malformed, out-of-range or conflicting option: a usage error.
        Err(msg) => {
            eprintln!("novelfs: {msg}");
            return ExitCode::from(2);
        }
    };
    match logging::sink_for(config.log_file.as_deref(), config.foreground) {
        Ok(sink) => logging::init(sink),
        Err(msg) => {
            eprintln!("novelfs: {msg}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::from(daemon::run(config) as u8)
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
