//! The `novelfs` command line: `mount`, `unmount`, `read`, `chapters`.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use novelfs::fs::mount;
use novelfs::library::{self, Library, NovelError, ReadArgs};

#[derive(Parser, Debug)]
#[command(
    name = "novelfs",
    version,
    about = "Chinese novel chapters as a read-only filesystem of novel_read pages"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Mount ROOT (the directory holding novels/) read-only at MOUNTPOINT.
    Mount(MountCmd),
    /// Unmount a novelfs mount (also clears a stale one left by a killed daemon).
    #[command(alias = "umount")]
    Unmount(UnmountCmd),
    /// Print one page exactly as the filesystem's offset-N file holds it.
    Read(ReadCmd),
    /// List a book's chapters with numbers, titles, sizes and shared numbers.
    Chapters(ChaptersCmd),
}

#[derive(Args, Debug)]
struct LibraryArgs {
    /// The library root (the directory holding novels/).
    #[arg(long, env = "NOVELFS_ROOT", default_value = ".")]
    root: PathBuf,
    /// The root to write in <path> and JSON "path" instead of ROOT's
    /// canonical path (e.g. /library, where a sandbox sees the library).
    #[arg(long, env = "NOVELFS_PATH_ROOT", value_name = "DIR", value_parser = library::normalize_path_root)]
    path_root: Option<String>,
    /// The assistant's state file (default: $DSH_NOVEL_WRITER_STATE, else ~/.dsh/dsh-novel-writer/state.json).
    #[arg(long)]
    state_file: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct ReadCmd {
    #[command(flatten)]
    library: LibraryArgs,
    /// Book name (a directory under novels/).
    book: String,
    /// Chapter: number, file name (extension optional) or a piece of the title.
    chapter: String,
    /// First line to show (1-based).
    #[arg(long, allow_hyphen_values = true)]
    offset: Option<String>,
    /// Lines to show, at most 400.
    #[arg(long, allow_hyphen_values = true)]
    limit: Option<String>,
    /// Print the JSON form instead of the text page.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct MountCmd {
    /// The library root (the directory holding novels/).
    root: PathBuf,
    mountpoint: PathBuf,
    /// Stay attached and log to stderr (RUST_LOG=debug for more).
    #[arg(short, long)]
    foreground: bool,
    /// Mount options: ro, allow_other, allow_root, auto_unmount, default_permissions, fsname=, ttl=, path_root=, nowatch.
    #[arg(short = 'o', value_name = "OPTIONS")]
    options: Vec<String>,
    /// Seconds the kernel may cache names and attributes that are not
    /// watched (0 = always ask, and watch nothing). Watched ones are
    /// cached until a change is pushed to the kernel.
    #[arg(long)]
    ttl: Option<String>,
    /// The assistant's state file (see `read --help`).
    #[arg(long)]
    state_file: Option<PathBuf>,
    /// The root pages write in <path> and JSON "path" instead of ROOT's
    /// canonical path (e.g. /library where a sandbox binds the mount);
    /// sizes follow. Same as -o path_root=DIR.
    #[arg(long, value_name = "DIR", value_parser = library::normalize_path_root)]
    path_root: Option<String>,
    /// Memory for decoded chapters and rendered pages (e.g. 16M, 256MiB).
    #[arg(long, default_value = "256MiB")]
    cache_size: String,
    /// Chapters larger than this are shown as an ERROR instead of being read.
    #[arg(long, default_value = "256MiB")]
    max_chapter_bytes: String,
    /// Worker threads serving requests (more threads mostly add context
    /// switches on a small machine; two keep one slow chapter from blocking).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Clear a stale mount (left by a killed daemon) at MOUNTPOINT first.
    #[arg(long)]
    force: bool,
    /// Do not watch the library for changes (inotify): the kernel then
    /// re-asks every name after --ttl. Watching lets it keep names, pages
    /// and listings until something changes (-o nowatch is the same).
    #[arg(long)]
    no_watch: bool,
}

#[derive(Args, Debug)]
struct UnmountCmd {
    mountpoint: PathBuf,
    /// Detach even if files are open (the kernel finishes when they close).
    #[arg(short = 'z', long)]
    lazy: bool,
}

#[derive(Args, Debug)]
struct ChaptersCmd {
    #[command(flatten)]
    library: LibraryArgs,
    book: String,
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse_from(mount::normalize_argv(std::env::args_os().collect()));
    let result = match cli.command {
        Command::Mount(cmd) => return mount_command(cmd),
        Command::Unmount(cmd) => {
            return match mount::unmount(&cmd.mountpoint, cmd.lazy) {
                Ok(()) => ExitCode::SUCCESS,
                Err(msg) => {
                    eprintln!("novelfs: {msg}");
                    ExitCode::FAILURE
                }
            };
        }
        Command::Read(cmd) => read(cmd),
        Command::Chapters(cmd) => chapters(cmd),
    };
    match result {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth a panic.
            let _ = stdout
                .write_all(out.as_bytes())
                .and_then(|_| stdout.flush());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprint!("{}", e.error_line());
            ExitCode::FAILURE
        }
    }
}

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

fn read(cmd: ReadCmd) -> Result<String, NovelError> {
    let lib = open_library(&cmd.library)?;
    let args = ReadArgs {
        book: &cmd.book,
        chapter: &cmd.chapter,
        offset: cmd.offset.as_deref(),
        limit: cmd.limit.as_deref(),
    };
    let out = lib.read(&args, cmd.library.state_file.as_deref())?;
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

fn chapters(cmd: ChaptersCmd) -> Result<String, NovelError> {
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

fn mount_command(cmd: MountCmd) -> ExitCode {
    // A daemon's stderr is the caller's terminal until the mount is ready:
    // keep it quiet there unless asked.
    let level = if cmd.foreground { "info" } else { "warn" };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level)).init();
    let parse = || -> Result<mount::MountRequest, String> {
        Ok(mount::MountRequest {
            root: mount::absolute(&cmd.root),
            mountpoint: cmd.mountpoint.clone(),
            foreground: cmd.foreground,
            options: cmd.options.clone(),
            ttl: cmd.ttl.as_deref().map(mount::parse_ttl).transpose()?,
            state_file: cmd.state_file.clone(),
            path_root: cmd.path_root.clone(),
            cache_size: Some(mount::parse_size(&cmd.cache_size)?),
            max_chapter_bytes: Some(mount::parse_size(&cmd.max_chapter_bytes)?),
            threads: cmd.threads,
            force: cmd.force,
            no_watch: cmd.no_watch,
        })
    };
    match parse() {
        Ok(req) => ExitCode::from(mount::run(req) as u8),
        Err(msg) => {
            eprintln!("novelfs: {msg}");
            ExitCode::FAILURE
        }
    }
}
