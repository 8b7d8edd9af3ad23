//! What each subcommand does once its arguments are parsed.

use std::process::ExitCode;

use super::flags::args::{BooksCmd, ChaptersCmd, IndexCmd, LibraryArgs, ReadCmd, UnmountCmd};
use super::flags::mount_args::MountCmd;
use super::mount_config::mount_config;
use super::out::Written;
use crate::mount::library_at::{BucketReading, LibraryAt};
use crate::mount::{daemon, logging, mountpoint};
use novelfs_fs::{events, persist};
use novelfs_library::backing::SourceKind;
use novelfs_library::{self as library, Library, NovelError, ReadArgs};
use novelfs_storage::StoreOptions;

fn open_library(args: &LibraryArgs) -> Result<Library, NovelError> {
    let io = |reason: String| NovelError::Io {
        path: args.root.to_string_lossy().into_owned(),
        reason,
        kind: SourceKind::Other,
    };
    let at = LibraryAt::parse(&args.root).map_err(io)?;
    let bucket = args.bucket.over(one_shot());
    let library = match &at {
        LibraryAt::Dir(root) => {
            // Written as `mount` writes its root: absolute, without `.` or `//`.
            Library::check_root(&mountpoint::absolute(root))?;
            novelfs_storage::open_local(root).map_err(|e| io(e.to_string()))?
        }
        LibraryAt::Bucket(_) => {
            let reading = BucketReading {
                ttl: ONE_SHOT_TTL,
                ahead_bytes: ONE_SHOT_AHEAD_BYTES,
                follow: false,
                stale_if_error: std::time::Duration::ZERO,
                drift: std::time::Duration::ZERO,
            };
            at.open(&bucket, reading, None).map_err(io)?
        }
    };
    match &args.path_root {
        None => Ok(library),
        Some(root) => library
            .with_path_root(root)
            .map_err(|reason| NovelError::Io {
                path: root.clone(),
                reason,
                kind: SourceKind::Other,
            }),
    }
}

/// `index --publish --every SECONDS`: the fleet's one publisher. Each
/// round lists the library; when it changed since the snapshot, the index
/// is refreshed and both are published anew, else the snapshot is only
/// confirmed. A round that fails is said and the next one tries again.
fn keep_publishing(cmd: &IndexCmd, dir: &std::path::Path, every: u64) -> ExitCode {
    let Ok(at) = LibraryAt::parse(&cmd.root) else {
        return ExitCode::FAILURE;
    };
    let bucket = cmd.bucket.over(one_shot());
    for n in 1.. {
        std::thread::sleep(std::time::Duration::from_secs(every));
        let round = || -> Result<String, String> {
            // The index is refreshed and written only when the listing
            // changed since the snapshot published.
            let index = || {
                let args = LibraryArgs {
                    root: cmd.root.clone(),
                    bucket: cmd.bucket.clone(),
                    path_root: cmd.path_root.clone(),
                };
                let mut library = open_library(&args).map_err(|e| e.to_string())?;
                library.max_chapter_bytes = cmd.max_chapter_bytes;
                persist::refresh(&library, dir, &mut |_| {})?;
                persist::export(dir, &library)
            };
            let (changed, files) = at.publish(&bucket, Some(every), false, index)?;
            Ok(match changed {
                true => format!("changed: the index and a snapshot of {files} files published"),
                false => "unchanged: the snapshot is confirmed".into(),
            })
        };
        let outcome = while_saying_a_stall(n, round);
        let said = match &outcome {
            Ok(said) => {
                log::info!("round {n}: {said}");
                "done"
            }
            Err(e) => {
                log::warn!("round {n} failed: {e}");
                "failed"
            }
        };
        log::debug!("{} n={n} outcome={said}", events::PUBLISH_ROUND);
    }
    ExitCode::SUCCESS
}

/// How long a round waits on the bucket before the log says so: a round
/// answered takes well under a second, and one that stalls is bounded by
/// `ONE_SHOT_TIMEOUT` per request, silent that long otherwise.
const STALL_SAID_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

/// `round` run as round `n`, the log saying once, after `STALL_SAID_AFTER`,
/// that it still waits.
fn while_saying_a_stall<T>(n: u64, round: impl FnOnce() -> T) -> T {
    let (done, waiting) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || {
            if waiting.recv_timeout(STALL_SAID_AFTER)
                == Err(std::sync::mpsc::RecvTimeoutError::Timeout)
            {
                log::warn!(
                    "round {n} waiting on the bucket for {} s (each request is given up after {} s)",
                    STALL_SAID_AFTER.as_secs(),
                    ONE_SHOT_TIMEOUT.as_secs()
                );
                log::debug!("{} n={n}", events::ROUND_WAITING);
            }
        });
        let result = round();
        drop(done);
        result
    })
}

/// One command's bound on one access to a bucket.
const ONE_SHOT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A one-shot command's settings of a bucket before its flags: no `-o`,
/// and its bound on one access.
fn one_shot() -> StoreOptions {
    StoreOptions {
        timeout: ONE_SHOT_TIMEOUT,
        ..StoreOptions::default()
    }
}
/// A one-shot command lists each directory once.
const ONE_SHOT_TTL: std::time::Duration = std::time::Duration::from_secs(3600);
/// Chapters fetched ahead by a one-shot command that reads many.
const ONE_SHOT_AHEAD_BYTES: u64 = 64 << 20;

pub(crate) fn read(cmd: ReadCmd) -> Result<String, NovelError> {
    let mut lib = open_library(&cmd.library)?;
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
pub(crate) fn tool_chapters(cmd: ChaptersCmd) -> Result<String, NovelError> {
    let lib = open_library(&cmd.library)?;
    let listing = lib.novel_chapters(&cmd.book, cmd.state_file.as_deref())?;
    if cmd.json {
        listing.json()
    } else {
        Ok(listing.text())
    }
}

/// `books`: what the original novel_books returns.
pub(crate) fn books(cmd: BooksCmd) -> Result<String, NovelError> {
    let lib = open_library(&cmd.library)?;
    let books = lib.novel_books(cmd.state_file.as_deref())?;
    Ok(if cmd.json { books.json() } else { books.text() })
}

pub(crate) fn chapters(cmd: ChaptersCmd) -> Result<String, NovelError> {
    let lib = open_library(&cmd.library)?;
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

/// `index`: builds or refreshes the library's persistent index, with a
/// progress bar on a terminal and a line per book otherwise, then a
/// summary on stdout.
pub(crate) fn index(cmd: IndexCmd) -> ExitCode {
    use std::io::IsTerminal;
    // The publisher (`--every`) runs for days: its log is the mount's,
    // each line with its time; a one-shot run speaks plainly.
    let publisher = cmd.every.is_some();
    if publisher {
        logging::init(logging::Sink::Stderr);
    }
    let say = |line: &str| match publisher {
        true => log::info!("{line}"),
        false => super::out::say(line),
    };
    let fail = |line: &str| match publisher {
        true => log::error!("{line}"),
        false => super::out::say(&format!("novelfs: {line}")),
    };
    let library = LibraryArgs {
        root: cmd.root.clone(),
        bucket: cmd.bucket.clone(),
        path_root: cmd.path_root.clone(),
    };
    let mut library = match open_library(&library) {
        Ok(library) => library,
        Err(e) if publisher => {
            log::error!("{}", e.error_line().trim_end());
            return ExitCode::FAILURE;
        }
        Err(e) => {
            super::out::say(&e.error_line());
            return ExitCode::FAILURE;
        }
    };
    library.max_chapter_bytes = cmd.max_chapter_bytes;
    let dir = match cmd
        .index_dir
        .clone()
        .map_or_else(super::mount_config::default_index_dir, Ok)
    {
        Ok(dir) => dir,
        Err(_) => {
            fail("no index folder: set XDG_CACHE_HOME or HOME, or give --index-dir");
            return ExitCode::FAILURE;
        }
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} chapters, {elapsed} (eta {eta})",
            )
            .expect("a valid template"),
        );
        bar
    });
    let mut progress = |step: persist::Step| match (&bar, step) {
        (Some(bar), persist::Step::Start { chapters }) => bar.set_length(chapters),
        (Some(bar), persist::Step::Chapter) => bar.inc(1),
        (None, persist::Step::Start { chapters }) => say(&format!("{chapters} chapters")),
        (None, persist::Step::Book { name, done }) => say(&format!("{done} done: {name}")),
        _ => {}
    };
    let result = persist::refresh(&library, &dir, &mut progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let result = result.and_then(|summary| {
        if cmd.publish {
            let at = LibraryAt::parse(&cmd.root)?;
            let bucket = cmd.bucket.over(one_shot());
            let index = || persist::export(&dir, &library);
            let (_, files) = at.publish(&bucket, cmd.every, true, index)?;
            say(&format!(
                "published at {}/.novelfs/: the index and a snapshot of {files} files",
                cmd.root.display()
            ));
        }
        Ok(summary)
    });
    match result {
        Ok(s) => {
            let mut line = format!(
                "{}: {} chapters indexed, {} reused, {} removed",
                s.file.display(),
                s.indexed,
                s.reused,
                s.removed
            );
            if s.unreadable > 0 {
                line += &format!(", {} unreadable", s.unreadable);
            }
            if s.too_recent > 0 {
                line += &format!(", {} changed too recently to record", s.too_recent);
            }
            let written =
                super::out::emit(&format!("{line} in {:.2} s\n", s.elapsed.as_secs_f64()));
            match (cmd.every, written) {
                // The publisher's work is the bucket's, not this line:
                // a reader gone from stdout does not stop it.
                (Some(every), Written::Whole | Written::Closed) => {
                    keep_publishing(&cmd, &dir, every)
                }
                (_, written) => written.code(),
            }
        }
        Err(msg) => {
            fail(&msg);
            ExitCode::FAILURE
        }
    }
}
