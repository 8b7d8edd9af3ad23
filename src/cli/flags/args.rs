//! The clap definitions: the one source of `--help`, the man page and the
//! shell completions.

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};

use super::bucket::BucketArgs;
use super::help::{INDEX_DIR_HELP, LONG_ABOUT, STATE_FILE_HELP, first_paragraph, notes_text};
use super::mount_args::MountCmd;

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

// One value a process, parsed once: its size costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Mount ROOT (a directory holding novels/, or s3://, gs:// or az://BUCKET[/PREFIX])
    /// read-only at MOUNTPOINT.
    ///
    /// Returns once the mount is ready (or says why it cannot be made);
    /// a daemon serves it until `novelfs unmount`, SIGINT or SIGTERM.
    Mount(Box<MountCmd>),
    /// Unmount a novelfs mount (also clears a stale one left by a killed daemon).
    #[command(alias = "umount")]
    Unmount(UnmountCmd),
    /// Print one page exactly as the filesystem's offset-N file holds it.
    Read(ReadCmd),
    /// List a book's chapters: numbers, titles, characters and lines (--json
    /// adds bytes), then the files that share a number.
    Chapters(ChaptersCmd),
    /// Print the library's books as novel_books returns them (the mount's
    /// novel_books.txt, or novel_books.json with --json).
    Books(BooksCmd),
    /// Build or refresh the persistent index of ROOT's chapters, so that
    /// a fresh mount lists chapters, sizes pages and makes the index files
    /// without reading them.
    ///
    /// Reads only the chapters whose entries are missing or no longer hold,
    /// forgets the chapters that are gone, and prints what it did. Give it
    /// the mount's --path-root and --max-chapter-bytes: entries made under
    /// other ones are not used.
    Index(IndexCmd),
    /// Hand a -o failover mount to a new server (this binary, or --binary)
    /// without unmounting it: readers see a pause, not an error.
    ///
    /// The mount's holder starts the new server beside the serving one;
    /// once it is ready, the old server takes no more requests, answers
    /// those it holds and exits, and the new one serves the same
    /// connection (same INIT parameters, same inodes; open files stay
    /// valid). If the new server cannot start, the old one serves on.
    /// Exits 0 once the new server serves, 1 with the reason otherwise
    /// (also for a mount without a holder, and at once while the holder is
    /// starting a server after a crash). Later servers, after a crash,
    /// start from the new binary; the holder itself stays.
    Upgrade(UpgradeCmd),
    /// Show what the holder of a -o failover mount has seen: its pid, its
    /// server's, how many servers it started and how many died (serving,
    /// or before serving), the upgrades, and whether it gave up and why.
    ///
    /// One `name: value` a line (`holder`, `server` (`PID (starting)` while
    /// one starts, `none` when none serves), `servers started`, `servers died`, `died before serving`,
    /// `upgrades`, `gave up` (`no`, or the reason), `inode journal bytes`
    /// (the memory the journal of the inodes the kernel holds takes)),
    /// then what the library's storage has cost since the mount, across
    /// its servers: `storage`, and for a bucket the requests sent by kind
    /// (retries included), `not modified`, `retries`, `errors`, `bytes
    /// fetched`, the bodies' `cache hits` and `cache misses`, `stale
    /// serves` and the `snapshot` in use. Exits 1 with the reason for a
    /// mount without a holder.
    Status(StatusCmd),
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
    /// The library root: the directory holding novels/, or
    /// s3://BUCKET[/PREFIX], gs://BUCKET[/PREFIX] or
    /// az://CONTAINER[/PREFIX] where the keys under PREFIX hold novels/.
    #[arg(long, env = "NOVELFS_ROOT", default_value = ".", value_name = "ROOT")]
    pub root: PathBuf,
    #[command(flatten)]
    pub bucket: BucketArgs,
    /// The root to write in <path> and JSON "path" instead of ROOT's
    /// canonical path (e.g. /library, where a sandbox sees the library).
    #[arg(long, env = "NOVELFS_PATH_ROOT", value_name = "DIR", value_parser = super::value::path_root)]
    pub path_root: Option<String>,
}

#[derive(Args, Debug)]
pub struct ReadCmd {
    #[command(flatten)]
    pub library: LibraryArgs,
    #[arg(long, value_name = "FILE", value_parser = super::value::file, help = first_paragraph(STATE_FILE_HELP), long_help = STATE_FILE_HELP)]
    pub state_file: Option<PathBuf>,
    /// Book name (a directory under novels/).
    pub book: String,
    /// Chapter: number, file name (extension optional) or a piece of the title.
    pub chapter: String,
    /// First line to show (1-based).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub offset: Option<String>,
    /// Lines to show, at most 400.
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    pub limit: Option<String>,
    /// Print the JSON form instead of the text page.
    #[arg(long)]
    pub json: bool,
    /// Chapters larger than this are an error instead of being read (as
    /// the mount's flag; at most 2GiB).
    #[arg(long, default_value = "256MiB", value_name = "SIZE", value_parser = super::value::max_chapter_bytes, allow_hyphen_values = true)]
    pub max_chapter_bytes: u64,
}

#[derive(Args, Debug)]
pub struct IndexCmd {
    /// The library root: the directory holding novels/, or
    /// s3://, gs:// or az://BUCKET[/PREFIX].
    pub root: PathBuf,
    #[command(flatten)]
    pub bucket: BucketArgs,
    #[arg(long, value_name = "DIR", value_parser = super::value::dir, help = first_paragraph(INDEX_DIR_HELP), long_help = INDEX_DIR_HELP)]
    pub index_dir: Option<PathBuf>,
    /// The root the mount writes in pages (its --path-root).
    #[arg(long, value_name = "DIR", value_parser = super::value::path_root)]
    pub path_root: Option<String>,
    /// The mount's --max-chapter-bytes.
    #[arg(long, default_value = "256MiB", value_name = "SIZE", value_parser = super::value::max_chapter_bytes, allow_hyphen_values = true)]
    pub max_chapter_bytes: u64,
    /// Also write the index and the library's snapshot into the bucket
    /// (ROOT s3://, gs:// or az://…, under .novelfs/ below its prefix): a fresh machine's
    /// mount starts from the index, and every mount serves names, sizes
    /// and versions from the snapshot with no LIST, checking once per TTL
    /// whether a newer one was published.
    #[arg(long)]
    pub publish: bool,
    /// With --publish: keep publishing, every SECONDS: list the library,
    /// write a new snapshot (and index) only when something changed, and
    /// confirm the snapshot otherwise. A mount stops following a snapshot
    /// not confirmed for twice this.
    #[arg(long, value_name = "SECONDS", requires = "publish", value_parser = clap::value_parser!(u64).range(1..))]
    pub every: Option<u64>,
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
pub struct UpgradeCmd {
    /// The mountpoint of a novelfs mount made with -o failover.
    pub mountpoint: PathBuf,
    /// The new server's binary (default: this novelfs).
    #[arg(long, value_name = "PATH")]
    pub binary: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct StatusCmd {
    /// The mountpoint of a novelfs mount made with -o failover.
    pub mountpoint: PathBuf,
    /// Print one JSON object: every `name: value` line as a key (spaces
    /// as `_`), numbers as numbers.
    #[arg(long, conflicts_with = "prometheus")]
    pub json: bool,
    /// Print the storage's counters in Prometheus' text exposition format
    /// (`novelfs_requests_total{kind="list",mountpoint="/mnt"} 3`), for
    /// node_exporter's textfile collector.
    #[arg(long)]
    pub prometheus: bool,
}

#[derive(Args, Debug)]
pub struct ChaptersCmd {
    #[command(flatten)]
    pub library: LibraryArgs,
    /// The switch file, for --tool (tools.novel_chapters set to false
    /// switches it off); the table ignores it.
    #[arg(long, value_name = "FILE")]
    pub state_file: Option<PathBuf>,
    /// Book name (a directory under novels/).
    pub book: String,
    /// Print JSON: {book, chapters: [{number, title, file, bytes, chars,
    /// lines, error}], duplicates: [{number, files}]}.
    #[arg(long)]
    pub json: bool,
    /// Print exactly what the original novel_chapters returns (the mount's
    /// BOOK/novel_chapters.txt; with --json, novel_chapters.json) instead
    /// of the table.
    #[arg(long)]
    pub tool: bool,
}

#[derive(Args, Debug)]
pub struct BooksCmd {
    #[command(flatten)]
    pub library: LibraryArgs,
    /// The switch file (tools.novel_books set to false switches it off).
    #[arg(long, value_name = "FILE")]
    pub state_file: Option<PathBuf>,
    /// Print the JSON form (novel_books.json) instead of the text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CompletionsCmd {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// The whole command tree, with the notes that end `--help`.
pub(crate) fn command() -> clap::Command {
    Cli::command().after_long_help(notes_text())
}

pub(crate) fn subcommand_names() -> Vec<String> {
    let cmd = Cli::command();
    let mut names = vec!["help".to_string()];
    for sub in cmd.get_subcommands() {
        names.push(sub.get_name().to_string());
        names.extend(sub.get_all_aliases().map(str::to_string));
    }
    names
}

pub(crate) fn visible_subcommands() -> String {
    Cli::command()
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
