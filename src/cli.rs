//! The `novelfs` command line: the clap definitions (the one source of
//! `--help`, the man page and the shell completions), the two argv forms
//! clap cannot see (`novelfs ROOT MOUNTPOINT` from mount.fuse3 and the
//! `mount.novelfs` helper mount(8) runs), and the one-shot commands.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::fs::{daemon, mountpoint, options};
use crate::library::{self, Library, NovelError, ReadArgs};

const LONG_ABOUT: &str = "\
novelfs serves a library of Chinese novel chapters as a read-only FUSE \
filesystem. ROOT holds novels/; each directory in novels/ is a book and each \
.md, .markdown or .txt file in a book is a chapter (UTF-8, GBK or UTF-16). In \
the mount, /BOOK/CHAPTER/offset-N.txt is exactly the page the novel_read tool \
returns for that chapter from line N (offset-N.json is its JSON form), and \
`novelfs read` prints the same page without a mount.

`novelfs ROOT MOUNTPOINT [-o OPTIONS]`, with ROOT an existing directory, is \
`novelfs mount ROOT MOUNTPOINT`: the form mount.fuse3 runs for an /etc/fstab \
line of type fuse.novelfs. Any other word that is not a subcommand is an error.";

/// The assistant's switch, explained once for `read`, `chapters` and `mount`.
const STATE_FILE_HELP: &str = "\
The assistant's on/off state file [default: $DSH_NOVEL_WRITER_STATE, else \
~/.dsh/dsh-novel-writer/state.json]

When this file is JSON with tools.novel_read set to false, the novel_read tool \
is switched off: `read` fails with the 工具 novel_read …已在「写作助手功能」UI 中关闭 \
error, and a mount shows only an ERROR file (holding that error) at its root. \
A missing, unreadable or malformed file means on. A mount re-reads the file \
whenever it changes, so switching the tool off or on needs no remount.";

/// Topics after the options, in `--help` and in the man page.
const NOTES: &[(&str, &[(&str, &str)])] = &[
    (
        "ENVIRONMENT",
        &[
            (
                "NOVELFS_ROOT",
                "The library root of read and chapters when --root is not given (else the current directory).",
            ),
            (
                "DSH_NOVEL_WRITER_STATE",
                "The state file when --state-file is not given (see --state-file).",
            ),
            (
                "HOME",
                "Without both, the state file is $HOME/.dsh/dsh-novel-writer/state.json; without HOME either, the tool is on. \
                 A mount started by mount(8) or systemd often has no HOME: give --state-file or set DSH_NOVEL_WRITER_STATE there.",
            ),
            (
                "RUST_LOG",
                "Log level of a mount in the foreground (-f): info by default, debug to log every request.",
            ),
        ],
    ),
    (
        "EXIT STATUS",
        &[
            ("0", "Success (for mount: the mount is ready)."),
            (
                "1",
                "An error: read and chapters print one 错误：… line on stderr; mount and unmount print novelfs: and the reason.",
            ),
            (
                "2",
                "A usage error: an unknown subcommand or option, a missing or malformed argument.",
            ),
        ],
    ),
    (
        "FSTAB AND SYSTEMD",
        &[
            (
                "/etc/fstab",
                "/srv/library  /mnt/novels  fuse.novelfs  ro,allow_other,ttl=1  0  0 \
                 (needs the mount.fuse.novelfs helper that scripts/install.sh puts in /sbin, or mount.fuse3 from fuse3 with novelfs on PATH).",
            ),
            (
                "mount.novelfs, mount.fuse.novelfs",
                "Links to novelfs; mount(8) runs them as `mount.fuse.novelfs ROOT MOUNTPOINT -o OPTIONS`. \
                 They ignore the rw that mount(8) adds when no ro is given (the mount is read-only in any case), \
                 and mount nothing for mount -f (fake).",
            ),
            (
                "systemd",
                "mnt-novels.mount (the fstab line as a unit) and novelfs.service (novelfs mount -f as a service) are in the source's examples/systemd/, \
                 installed to PREFIX/share/doc/novelfs/examples/ by scripts/install.sh.",
            ),
        ],
    ),
];

#[derive(Parser, Debug)]
#[command(
    name = "novelfs",
    version,
    about = "Chinese novel chapters as a read-only filesystem of novel_read pages",
    long_about = LONG_ABOUT
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Mount ROOT (the directory holding novels/) read-only at MOUNTPOINT.
    ///
    /// Returns once the mount is ready (or says why it cannot be made);
    /// a daemon serves it until `novelfs unmount`, SIGINT or SIGTERM.
    Mount(MountCmd),
    /// Unmount a novelfs mount (also clears a stale one left by a killed daemon).
    #[command(alias = "umount")]
    Unmount(UnmountCmd),
    /// Print one page exactly as the filesystem's offset-N file holds it.
    Read(ReadCmd),
    /// List a book's chapters with numbers, titles, sizes and shared numbers.
    Chapters(ChaptersCmd),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    ///
    /// bash: `novelfs completions bash > /usr/local/share/bash-completion/completions/novelfs`;
    /// zsh: `… zsh > /usr/local/share/zsh/site-functions/_novelfs`;
    /// fish: `… fish > /usr/local/share/fish/vendor_completions.d/novelfs.fish`
    /// (scripts/install.sh does all three).
    Completions(CompletionsCmd),
    /// Print the novelfs(1) man page (roff), generated from this help.
    ///
    /// `novelfs man > novelfs.1 && man -l novelfs.1`
    Man,
}

#[derive(Args, Debug)]
pub struct LibraryArgs {
    /// The library root (the directory holding novels/).
    #[arg(long, env = "NOVELFS_ROOT", default_value = ".")]
    pub root: PathBuf,
    /// The root to write in <path> and JSON "path" instead of ROOT's
    /// canonical path (e.g. /library, where a sandbox sees the library).
    #[arg(long, env = "NOVELFS_PATH_ROOT", value_name = "DIR", value_parser = library::normalize_path_root)]
    pub path_root: Option<String>,
}

#[derive(Args, Debug)]
pub struct ReadCmd {
    #[command(flatten)]
    pub library: LibraryArgs,
    #[arg(long, value_name = "FILE", help = first_paragraph(STATE_FILE_HELP), long_help = STATE_FILE_HELP)]
    pub state_file: Option<PathBuf>,
    /// Book name (a directory under novels/).
    pub book: String,
    /// Chapter: number, file name (extension optional) or a piece of the title.
    pub chapter: String,
    /// First line to show (1-based).
    #[arg(long, allow_hyphen_values = true)]
    pub offset: Option<String>,
    /// Lines to show, at most 400.
    #[arg(long, allow_hyphen_values = true)]
    pub limit: Option<String>,
    /// Print the JSON form instead of the text page.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct MountCmd {
    /// The library root (the directory holding novels/).
    pub root: PathBuf,
    /// An existing directory to mount on.
    pub mountpoint: PathBuf,
    /// Stay attached and log to stderr (RUST_LOG=debug for more).
    #[arg(short, long)]
    pub foreground: bool,
    /// Mount options, comma-separated, as other FUSE filesystems take them:
    /// ro, allow_other, allow_root, auto_unmount (adds no access),
    /// default_permissions, fsname=NAME, subtype=NAME, ttl=SECONDS,
    /// path_root=DIR, nowatch.
    /// Generic mount(8) options (noatime, nodev, _netdev, x-*, …) are
    /// accepted and ignored; rw is refused.
    #[arg(short = 'o', value_name = "OPTIONS")]
    pub options: Vec<String>,
    /// Seconds the kernel may cache names and attributes that are not
    /// watched (0 = always ask, and watch nothing). Watched ones are
    /// cached until a change is pushed to the kernel.
    #[arg(long, value_name = "SECONDS")]
    pub ttl: Option<String>,
    #[arg(long, value_name = "FILE", help = first_paragraph(STATE_FILE_HELP), long_help = STATE_FILE_HELP)]
    pub state_file: Option<PathBuf>,
    /// The root pages write in <path> and JSON "path" instead of ROOT's
    /// canonical path (e.g. /library where a sandbox binds the mount);
    /// sizes follow. Same as -o path_root=DIR.
    #[arg(long, value_name = "DIR", value_parser = library::normalize_path_root)]
    pub path_root: Option<String>,
    /// Memory for what the daemon keeps: decoded chapters, rendered pages,
    /// listings, book indexes and the inode table (e.g. 16M, 256MiB).
    #[arg(long, default_value = "256MiB", value_name = "SIZE")]
    pub cache_size: String,
    /// Chapters larger than this are shown as an ERROR instead of being read.
    #[arg(long, default_value = "256MiB", value_name = "SIZE")]
    pub max_chapter_bytes: String,
    /// Worker threads serving requests (more threads mostly add context
    /// switches on a small machine; two keep one slow chapter from blocking).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Clear a stale mount (left by a killed daemon) at MOUNTPOINT first.
    #[arg(long)]
    pub force: bool,
    /// Do not watch the library for changes (inotify): the kernel then
    /// re-asks every name after --ttl. Watching lets it keep names, pages
    /// and listings until something changes (-o nowatch is the same).
    #[arg(long)]
    pub no_watch: bool,
}

#[derive(Args, Debug)]
pub struct UnmountCmd {
    /// The mountpoint of a novelfs mount.
    pub mountpoint: PathBuf,
    /// Detach even if files are open (the kernel finishes when they close).
    #[arg(short = 'z', long)]
    pub lazy: bool,
}

#[derive(Args, Debug)]
pub struct ChaptersCmd {
    #[command(flatten)]
    pub library: LibraryArgs,
    /// Accepted as `read` takes it, and unused: the switch turns off
    /// novel_read, not the listing.
    #[arg(long, value_name = "FILE", hide = true)]
    pub state_file: Option<PathBuf>,
    /// Book name (a directory under novels/).
    pub book: String,
    /// Print JSON: {book, chapters: [{number, title, file, bytes, chars,
    /// lines, error}], duplicates: [{number, files}]}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CompletionsCmd {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `-h` shows the first paragraph of a shared help text, as clap does for a
/// doc comment (a `const` string cannot be a doc comment).
const fn first_paragraph(text: &'static str) -> &'static str {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'\n' && bytes[i + 1] == b'\n' {
            let (head, _) = bytes.split_at(i);
            return match std::str::from_utf8(head) {
                Ok(s) => s,
                Err(_) => text,
            };
        }
        i += 1;
    }
    text
}

fn notes_text() -> String {
    let mut out = String::new();
    for (heading, items) in NOTES {
        out += &format!("\n{heading}:\n");
        for (term, text) in *items {
            out += &format!("  {term}\n          {text}\n");
        }
    }
    out.trim().to_string()
}

/// The whole command tree, with the notes that end `--help`.
pub fn command() -> clap::Command {
    Cli::command().after_long_help(notes_text())
}

fn subcommand_names() -> Vec<String> {
    let cmd = Cli::command();
    let mut names = vec!["help".to_string()];
    for sub in cmd.get_subcommands() {
        names.push(sub.get_name().to_string());
        names.extend(sub.get_all_aliases().map(str::to_string));
    }
    names
}

fn visible_subcommands() -> String {
    Cli::command()
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// How the command line was read before clap saw it.
#[derive(Debug, PartialEq)]
pub enum Invocation {
    /// Parse these arguments; `fstab_root` is set when a directory was taken
    /// as the ROOT of `novelfs ROOT MOUNTPOINT`.
    Args {
        args: Vec<OsString>,
        fstab_root: Option<OsString>,
    },
    /// mount(8) asked for a fake mount (`mount -f`): do nothing, succeed.
    FakeMount,
    /// A helper invocation that cannot be read.
    Usage(String),
}

/// Turns the two argv forms that are not subcommands into `mount`:
/// `novelfs ROOT MOUNTPOINT …` (what mount.fuse3 runs), only when ROOT is
/// an existing directory, and `mount.novelfs ROOT MOUNTPOINT [-o OPTS]
/// [-t TYPE] [-n] [-s] [-v] [-f]` (what mount(8) runs).
pub fn prepare_argv(mut args: Vec<OsString>) -> Invocation {
    let program = args
        .first()
        .map(|a| Path::new(a).file_name().unwrap_or(a).to_os_string())
        .unwrap_or_default();
    if program.to_string_lossy().starts_with("mount.") {
        return helper_argv(&program, &args[1..]);
    }
    let fstab_root = args
        .get(1)
        .filter(|word| {
            let w = word.to_string_lossy();
            !w.starts_with('-')
                && !subcommand_names().iter().any(|n| *n == w)
                && Path::new(word).is_dir()
        })
        .cloned();
    if fstab_root.is_some() {
        args.insert(1, OsString::from("mount"));
    }
    Invocation::Args { args, fstab_root }
}

fn helper_argv(program: &OsStr, rest: &[OsString]) -> Invocation {
    let usage = || {
        Invocation::Usage(format!(
            "usage: {} ROOT MOUNTPOINT [-o OPTIONS] (the helper mount(8) runs for a novelfs or fuse.novelfs mount; see novelfs --help)",
            program.to_string_lossy()
        ))
    };
    let [root, mountpoint, flags @ ..] = rest else {
        return usage();
    };
    let mut options: Vec<String> = Vec::new();
    let mut fake = false;
    let mut flags = flags.iter();
    while let Some(flag) = flags.next() {
        match flag.to_str() {
            Some("-o") => match flags.next() {
                Some(list) => options.extend(
                    list.to_string_lossy()
                        .split(',')
                        // mount(8) adds rw whenever ro is not given; the
                        // mount is read-only whatever it says.
                        .filter(|o| !o.is_empty() && *o != "rw")
                        .map(str::to_string),
                ),
                None => return usage(),
            },
            // The type is known: this helper serves only novelfs.
            Some("-t") => {
                if flags.next().is_none() {
                    return usage();
                }
            }
            // No mtab to skip, sloppy and verbose change nothing here.
            Some("-n" | "-s" | "-v") => {}
            Some("-f") => fake = true,
            _ => {
                return Invocation::Usage(format!(
                    "{}: unknown argument {:?}; mount(8) passes only -o, -t, -n, -s, -v and -f",
                    program.to_string_lossy(),
                    flag
                ));
            }
        }
    }
    if fake {
        return Invocation::FakeMount;
    }
    let mut args: Vec<OsString> = vec!["novelfs".into(), "mount".into(), root.clone()];
    args.push(mountpoint.clone());
    if !options.is_empty() {
        args.push("-o".into());
        args.push(options.join(",").into());
    }
    Invocation::Args {
        args,
        fstab_root: None,
    }
}

/// Adds what novelfs knows to clap's own error: why an unknown word is not
/// the fstab form, and what a lone directory is missing.
fn explain(mut err: clap::Error, args: &[OsString], fstab_root: Option<&OsStr>) -> clap::Error {
    let mut tips: Vec<String> = Vec::new();
    match (err.kind(), fstab_root) {
        (ErrorKind::MissingRequiredArgument, Some(root)) => {
            let root = root.to_string_lossy();
            tips.push(format!(
                "'{root}' is a directory, so `novelfs {root} …` mounts it: give the MOUNTPOINT too (`novelfs {root} MOUNTPOINT`)"
            ));
            tips.push(format!(
                "or use a subcommand: {} (`novelfs --help`)",
                visible_subcommands()
            ));
        }
        (ErrorKind::InvalidSubcommand, _) => {
            let word = args.get(1).map(|w| w.to_string_lossy()).unwrap_or_default();
            let path = Path::new(word.as_ref());
            if path.exists() {
                tips.push(format!(
                    "'{word}' is not a directory, so it is not the ROOT of `novelfs ROOT MOUNTPOINT`"
                ));
            } else if word.contains('/') {
                tips.push(format!(
                    "'{word}' does not exist; `novelfs ROOT MOUNTPOINT` mounts ROOT only when it is an existing directory"
                ));
            }
            tips.push(format!(
                "the subcommands are {} (`novelfs --help`)",
                visible_subcommands()
            ));
        }
        _ => {}
    }
    if !tips.is_empty() {
        let mut all = match err.get(ContextKind::Suggested) {
            Some(ContextValue::StyledStrs(v)) => v.clone(),
            _ => Vec::new(),
        };
        all.extend(tips.into_iter().map(Into::into));
        err.insert(ContextKind::Suggested, ContextValue::StyledStrs(all));
    }
    err
}

/// Parses the process arguments (exits on a usage error, `--help` or `--version`).
pub fn parse(args: Vec<OsString>) -> Result<Cli, ExitCode> {
    let (args, fstab_root) = match prepare_argv(args) {
        Invocation::Args { args, fstab_root } => (args, fstab_root),
        Invocation::FakeMount => return Err(ExitCode::SUCCESS),
        Invocation::Usage(msg) => {
            eprintln!("{msg}");
            return Err(ExitCode::from(2));
        }
    };
    let parsed = command()
        .try_get_matches_from(&args)
        .and_then(|m| Cli::from_arg_matches(&m));
    parsed.map_err(|err| explain(err, &args, fstab_root.as_deref()).exit())
}

pub fn main() -> ExitCode {
    let cli = match parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let result = match cli.command {
        Command::Mount(cmd) => return mount_command(cmd),
        Command::Unmount(cmd) => {
            return match mountpoint::unmount(&cmd.mountpoint, cmd.lazy) {
                Ok(()) => ExitCode::SUCCESS,
                Err(msg) => {
                    eprintln!("novelfs: {msg}");
                    ExitCode::FAILURE
                }
            };
        }
        Command::Read(cmd) => read(cmd),
        Command::Chapters(cmd) => chapters(cmd),
        Command::Completions(cmd) => {
            let mut out = Vec::new();
            clap_complete::generate(cmd.shell, &mut command(), "novelfs", &mut out);
            Ok(String::from_utf8_lossy(&out).into_owned())
        }
        Command::Man => Ok(man_page()),
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

// ---------------------------------------------------------------------------
// The man page.

/// A section rendered by clap_mangen, without roff's preamble and without
/// its own `.SH` line, so that it can sit under another heading.
fn section_body(render: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut buf = Vec::new();
    render(&mut buf).expect("rendering into memory");
    String::from_utf8_lossy(&buf)
        .lines()
        .filter(|l| !l.starts_with(".ie \\n(.g") && !l.starts_with(".el .ds Aq"))
        .skip_while(|l| l.starts_with(".SH"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Escapes text for roff: a leading dot or quote would be a request, and a
/// backslash an escape.
fn roff_text(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

/// novelfs(1): every subcommand with its options on one page (as sshfs(1)
/// has), then the notes.
pub fn man_page() -> String {
    let mut top = command();
    top.build();
    let man = clap_mangen::Man::new(top.clone());
    let mut page = String::new();
    let mut head = Vec::new();
    man.render_title(&mut head).expect("in memory");
    man.render_name_section(&mut head).expect("in memory");
    page += &String::from_utf8_lossy(&head);

    page += ".SH SYNOPSIS\n";
    let subs: Vec<clap::Command> = top
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .cloned()
        .collect();
    for sub in &subs {
        let sub_man =
            clap_mangen::Man::new(sub.clone().bin_name(format!("novelfs {}", sub.get_name())));
        page += &section_body(|w| sub_man.render_synopsis_section(w));
        page += ".br\n";
    }
    page += "\\fBnovelfs\\fR \\fIROOT\\fR \\fIMOUNTPOINT\\fR [\\fB\\-o\\fR \\fIOPTIONS\\fR] (ROOT an existing directory: the same as \\fBnovelfs mount\\fR)\n";

    let mut description = Vec::new();
    man.render_description_section(&mut description)
        .expect("in memory");
    page += &String::from_utf8_lossy(&description);

    page += ".SH COMMANDS\n";
    for sub in &subs {
        page += &format!(".SS \"novelfs {}\"\n", sub.get_name());
        let about = sub
            .get_long_about()
            .or_else(|| sub.get_about())
            .map(|s| s.to_string())
            .unwrap_or_default();
        for para in about.split("\n\n") {
            page += &format!(".PP\n{}\n", roff_text(&para.replace('\n', " ")));
        }
        let sub_man = clap_mangen::Man::new(sub.clone());
        if sub.get_arguments().any(|a| !a.is_hide_set()) {
            page += &section_body(|w| sub_man.render_options_section(w));
        }
    }

    for (heading, items) in NOTES {
        page += &format!(".SH \"{heading}\"\n");
        for (term, text) in *items {
            page += &format!(".TP\n\\fB{}\\fR\n{}\n", roff_text(term), roff_text(text));
        }
    }
    page += ".SH \"SEE ALSO\"\n\\fBmount\\fR(8), \\fBfstab\\fR(5), \\fBmount.fuse3\\fR(8), \\fBfusermount3\\fR(1), \\fBsystemd.mount\\fR(5)\n";
    let mut version = Vec::new();
    man.render_version_section(&mut version).expect("in memory");
    page += &String::from_utf8_lossy(&version);
    page
}

// ---------------------------------------------------------------------------
// The one-shot commands.

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
    let parse = || -> Result<daemon::MountRequest, String> {
        Ok(daemon::MountRequest {
            root: mountpoint::absolute(&cmd.root),
            mountpoint: cmd.mountpoint.clone(),
            foreground: cmd.foreground,
            options: cmd.options.clone(),
            ttl: cmd.ttl.as_deref().map(options::parse_ttl).transpose()?,
            state_file: cmd.state_file.clone(),
            path_root: cmd.path_root.clone(),
            cache_size: Some(options::parse_size(&cmd.cache_size)?),
            max_chapter_bytes: Some(options::parse_size(&cmd.max_chapter_bytes)?),
            threads: cmd.threads,
            force: cmd.force,
            no_watch: cmd.no_watch,
        })
    };
    match parse() {
        Ok(req) => ExitCode::from(daemon::run(req) as u8),
        Err(msg) => {
            eprintln!("novelfs: {msg}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    fn args_of(inv: Invocation) -> Vec<OsString> {
        match inv {
            Invocation::Args { args, .. } => args,
            other => panic!("not arguments: {other:?}"),
        }
    }

    #[test]
    fn definitions_are_consistent() {
        command().debug_assert();
    }

    #[test]
    fn every_argument_has_help() {
        let mut top = command();
        top.build();
        for sub in top.get_subcommands() {
            assert!(sub.get_about().is_some(), "{} has no about", sub.get_name());
            for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                assert!(
                    arg.get_help()
                        .is_some_and(|h| !h.to_string().trim().is_empty()),
                    "novelfs {} {} has no help text",
                    sub.get_name(),
                    arg.get_id()
                );
            }
        }
    }

    #[test]
    fn an_existing_directory_first_is_the_fstab_form() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap();
        assert_eq!(
            prepare_argv(v(&["novelfs", root, "/mnt", "-o", "ro"])),
            Invocation::Args {
                args: v(&["novelfs", "mount", root, "/mnt", "-o", "ro"]),
                fstab_root: Some(root.into()),
            }
        );
        let missing = dir.path().join("missing");
        let missing = missing.to_str().unwrap();
        for unchanged in [
            v(&["novelfs", "read", "b", "1"]),
            v(&["novelfs", "--help"]),
            v(&["novelfs", "umount", "/mnt"]),
            v(&["novelfs", "foo", "/mnt"]),
            v(&["novelfs", missing, "/mnt"]),
        ] {
            assert_eq!(args_of(prepare_argv(unchanged.clone())), unchanged);
        }
    }

    #[test]
    fn mount_helper_arguments() {
        let args = |a: &[&str]| args_of(prepare_argv(v(a)));
        assert_eq!(
            args(&["/sbin/mount.fuse.novelfs", "/srv/lib", "/mnt", "-o", "rw"]),
            v(&["novelfs", "mount", "/srv/lib", "/mnt"])
        );
        assert_eq!(
            args(&[
                "mount.novelfs",
                "/srv/lib",
                "/mnt",
                "-n",
                "-v",
                "-o",
                "ro,allow_other,rw,ttl=2",
                "-t",
                "fuse.novelfs"
            ]),
            v(&[
                "novelfs",
                "mount",
                "/srv/lib",
                "/mnt",
                "-o",
                "ro,allow_other,ttl=2"
            ])
        );
        assert_eq!(
            prepare_argv(v(&["mount.novelfs", "/srv/lib", "/mnt", "-f", "-o", "ro"])),
            Invocation::FakeMount
        );
        for bad in [
            &["mount.novelfs", "/srv/lib"][..],
            &["mount.novelfs", "/srv/lib", "/mnt", "-o"],
            &["mount.novelfs", "/srv/lib", "/mnt", "--bogus"],
        ] {
            assert!(
                matches!(prepare_argv(v(bad)), Invocation::Usage(_)),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn man_page_holds_every_subcommand_and_option() {
        let page = man_page();
        for needle in [
            "novelfs mount",
            "novelfs read",
            "novelfs chapters",
            "novelfs unmount",
            "\\-\\-state\\-file",
            "DSH_NOVEL_WRITER_STATE",
            "subtype=NAME",
            "\\-\\-cache\\-size",
        ] {
            assert!(page.contains(needle), "{needle} missing");
        }
        assert_eq!(page.matches(".TH ").count(), 1);
    }
}
