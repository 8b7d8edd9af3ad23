//! The `novelfs` command line: `mount`, `unmount`, `read`, `chapters`.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use novelfs::library::{self, Library, Lookup, NovelError, ReadArgs};

#[derive(Parser, Debug)]
#[command(name = "novelfs", version, about = "Chinese novel chapters as a read-only filesystem of novel_read pages")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
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
struct ChaptersCmd {
    #[command(flatten)]
    library: LibraryArgs,
    book: String,
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Read(cmd) => read(cmd),
        Command::Chapters(cmd) => chapters(cmd),
    };
    match result {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth a panic.
            let _ = stdout.write_all(out.as_bytes()).and_then(|_| stdout.flush());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprint!("{}", e.error_line());
            ExitCode::FAILURE
        }
    }
}

fn open_library(args: &LibraryArgs) -> Result<Library, NovelError> {
    Library::open(&args.root).map_err(|e| NovelError::Io {
        path: args.root.to_string_lossy().into_owned(),
        reason: e.to_string(),
    })
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
            let bytes = std::fs::symlink_metadata(lib.book_dir(&book_os).join(&c.os_name)).map_or(0, |m| m.len());
            let (chars, lines, error) = match lib.load_chapter(OsStr::new(&book), c) {
                Ok(t) => (Some(library::js::utf16_len(t.text())), Some(t.total_lines()), None),
                Err(e) => (None, None, Some(e.to_string())),
            };
            ChapterRow { number: c.number, title: c.title.clone(), file: c.file.clone(), bytes, chars, lines, error }
        })
        .collect();
    let groups: Vec<DuplicateGroup> = index
        .duplicate_groups()
        .into_iter()
        .map(|(number, idx)| DuplicateGroup { number, files: idx.iter().map(|&i| index.chapters[i].file.clone()).collect() })
        .collect();
    if cmd.json {
        let value = serde_json::json!({ "book": book, "chapters": rows, "duplicates": groups });
        return Ok(serde_json::to_string_pretty(&value).expect("plain data") + "\n");
    }
    let mut out = format!("《{book}》共 {} 章\n", rows.len());
    for r in &rows {
        let number = r.number.map_or("?".to_string(), library::js::format_number);
        let title = if r.title.is_empty() { "（无标题）" } else { &r.title };
        match (&r.error, r.chars, r.lines) {
            (None, Some(chars), Some(lines)) => {
                out += &format!("{number}\t{title}\t{chars} 字\t{lines} 行\t{}\n", r.file)
            }
            _ => out += &format!("{number}\t{title}\t错误：{}\t{}\n", r.error.as_deref().unwrap_or(""), r.file),
        }
    }
    if !groups.is_empty() {
        out += "\n同章号文件（按章号读取会报错，请用文件名指定或改名）：\n";
        for g in &groups {
            out += &format!("第 {} 章：{}\n", library::js::format_number(g.number), g.files.join("、"));
        }
    }
    Ok(out)
}

fn js_blank(s: &str) -> bool {
    library::js::trim(s).is_empty()
}

#[allow(dead_code)]
fn unused(_: Lookup) {}
