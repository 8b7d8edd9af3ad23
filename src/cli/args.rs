//! The clap definitions: the one source of `--help`, the man page and the
//! shell completions.

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};

const LONG_ABOUT: &str = "\
novelfs serves a library of Chinese novel chapters as a read-only FUSE \
filesystem. ROOT holds novels/ (ROOT is a directory, or s3://BUCKET[/PREFIX], \
gs://BUCKET[/PREFIX] or az://CONTAINER[/PREFIX] for a library in a bucket); each directory in novels/ is a book and each \
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

const INDEX_DIR_HELP: &str = "\
Where the persistent index of chapters lives [default: $XDG_CACHE_HOME/novelfs, \
else ~/.cache/novelfs, else for root /var/cache/novelfs]

One file per library (named by a hash of its canonical path), made by \
`novelfs index` or by a mount as it reads chapters. It holds what each \
chapter's text is (its pages' places and sizes, its characters and lines), \
never the text; an entry is used only while the chapter file's device, inode, \
size, mtime and ctime are those recorded (in a bucket: the object's ETag and \
size). A file that cannot be written is \
used read-only; a corrupt one is set aside (renamed .corrupt-…) and made anew; \
one from a newer novelfs is not used. Same as -o index_dir=DIR.";

/// Topics after the options, in `--help` and in the man page.
pub(crate) const NOTES: &[(&str, &[(&str, &str)])] = &[
    (
        "ENVIRONMENT",
        &[
            (
                "NOVELFS_ROOT",
                "The library root of read, chapters and books when --root is not given (else the current directory).",
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
                "XDG_STATE_HOME",
                "A daemonized mount without --log-file and without syslog (/dev/log) logs to $XDG_STATE_HOME/novelfs/novelfs.log, \
                 else to $HOME/.local/state/novelfs/novelfs.log, else (root without either, as under mount(8) or systemd) \
                 to /var/log/novelfs/novelfs.log; the mounted line in the log names the file.",
            ),
            (
                "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_REGION",
                "A library in a bucket: its credentials, profile and region (with ~/.aws/credentials and ~/.aws/config, \
                 or AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE); --no-sign-request looks for none. \
                 AWS_EC2_METADATA_DISABLED=true: the instance metadata service is not asked, so a machine \
                 with no credentials says so at once.",
            ),
            (
                "GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_SERVICE_ACCOUNT",
                "A library in Google Cloud Storage (gs://): a service account's key file; else gcloud's \
                 application default credentials, else the metadata server.",
            ),
            (
                "AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_KEY",
                "A library in Azure Blob Storage (az://): the account (or --account), its key or a SAS; else a \
                 service principal (AZURE_CLIENT_ID…), workload identity, AZURE_USE_AZURE_CLI=true, managed identity.",
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
                "An error: read, chapters and books print one 错误：… line on stderr; mount and unmount print novelfs: and the reason.",
            ),
            (
                "2",
                "A usage error: an unknown subcommand or option, a missing or malformed argument, \
                 a ROOT that reads as a mistyped s3://, gs:// or az:// (s3:/b, S3://b), a bucket option with a \
                 directory ROOT or one cloud's option with another's bucket, az:// with no account.",
            ),
        ],
    ),
    (
        "FSTAB AND SYSTEMD",
        &[
            (
                "/etc/fstab",
                "/srv/library /mnt/novels fuse.novelfs ro,allow_other,ttl=1,log_file=/var/log/novelfs.log 0 0 \
                 (needs the mount.fuse.novelfs helper that scripts/install.sh puts in /sbin, or mount.fuse3 from fuse3 with novelfs on PATH).",
            ),
            (
                "mount.novelfs, mount.fuse.novelfs",
                "Links to novelfs; mount(8) runs them as `mount.fuse.novelfs ROOT MOUNTPOINT -o OPTIONS`, for the type \
                 fuse.novelfs (mount -t fuse.novelfs, or fstab) and novelfs (fstab only: mount(8) reads -t novelfs as \
                 \"not velfs\"). \
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
    (
        "SEE ALSO",
        &[
            (
                "docs/contract.md",
                "Every rule in one place: which files are chapters, lookup, decoding, pages and their text, \
                 the index files, the tree, attributes, freshness, the access options, errors and exit status.",
            ),
            (
                "docs/mounting.md",
                "Mounting for other users, fstab and systemd, stale mounts, a library on a network filesystem or in a bucket.",
            ),
            (
                "docs/agents.md",
                "Giving the library to an agent: bubblewrap, Docker, an MCP server.",
            ),
            (
                "PREFIX/share/doc/novelfs/",
                "Where scripts/install.sh (and the Debian package, /usr/share/doc/novelfs/) puts these documents.",
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

/// How to reach a library in a bucket (ROOT `s3://BUCKET[/PREFIX]`,
/// `gs://BUCKET[/PREFIX]` or `az://CONTAINER[/PREFIX]`), as mountpoint-s3
/// names these options. Credentials come from the cloud's own chain
/// (docs/clouds.md): for S3, AWS_ACCESS_KEY_ID and friends, the shared
/// credentials and config files (with --profile), container and instance
/// metadata.
#[derive(Args, Debug, Clone, Default)]
pub struct BucketArgs {
    /// The store's endpoint (http(s)://HOST[:PORT]): MinIO, Ceph, R2 and
    /// other servers speaking S3, an emulator, a sovereign cloud; the
    /// cloud's own by default.
    #[arg(long, value_name = "URL", value_parser = crate::mount::options::value::endpoint)]
    pub endpoint_url: Option<String>,
    /// Azure: the storage account (else AZURE_STORAGE_ACCOUNT_NAME).
    #[arg(long, value_name = "NAME", value_parser = |v: &str| crate::mount::options::value::non_empty(v, crate::mount::options::value::NAME))]
    pub account: Option<String>,
    /// The bucket's region (else the profile's, AWS_REGION, or us-east-1).
    #[arg(long, value_name = "REGION", value_parser = crate::mount::options::value::region)]
    pub region: Option<String>,
    /// A named profile of the shared AWS credentials and config files.
    #[arg(long, value_name = "NAME", value_parser = |v: &str| crate::mount::options::value::non_empty(v, crate::mount::options::value::NAME))]
    pub profile: Option<String>,
    /// Address the bucket as ENDPOINT/BUCKET rather than BUCKET.ENDPOINT.
    #[arg(long)]
    pub force_path_style: bool,
    /// Send requests unsigned, for a public bucket (or container): no
    /// credentials are looked for (the AWS CLI's name; -o no_sign_request).
    #[arg(long)]
    pub no_sign_request: bool,
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
    #[arg(long, env = "NOVELFS_PATH_ROOT", value_name = "DIR", value_parser = crate::mount::options::value::path_root)]
    pub path_root: Option<String>,
}

#[derive(Args, Debug)]
pub struct ReadCmd {
    #[command(flatten)]
    pub library: LibraryArgs,
    #[arg(long, value_name = "FILE", value_parser = crate::mount::options::value::file, help = first_paragraph(STATE_FILE_HELP), long_help = STATE_FILE_HELP)]
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
    #[arg(long, default_value = "256MiB", value_name = "SIZE", value_parser = crate::mount::options::value::max_chapter_bytes, allow_hyphen_values = true)]
    pub max_chapter_bytes: u64,
}

#[derive(Args, Debug)]
pub struct MountCmd {
    /// The library root: the directory holding novels/, or
    /// s3://BUCKET[/PREFIX], gs://BUCKET[/PREFIX] or
    /// az://CONTAINER[/PREFIX] where the keys under PREFIX hold novels/.
    pub root: PathBuf,
    #[command(flatten)]
    pub bucket: BucketArgs,
    /// An existing directory to mount on.
    pub mountpoint: PathBuf,
    /// Stay attached and log to stderr (RUST_LOG=debug for more).
    #[arg(short, long)]
    pub foreground: bool,
    /// Mount options, comma-separated, as other FUSE filesystems take them:
    /// ro, allow_other, allow_root, auto_unmount (adds no access),
    /// default_permissions, fsname=NAME, subtype=NAME, ttl=SECONDS,
    /// source_timeout=SECONDS, stale_if_error=SECONDS, path_root=DIR, nowatch, log_file=FILE,
    /// io_uring=auto|on|off, index_dir=DIR, noindex, cache_size=SIZE,
    /// max_chapter_bytes=SIZE, threads=N, state_file=FILE,
    /// failover=auto|on|off (failover alone is on, nofailover off),
    /// formats=txt|json|txt+json; for a library in a bucket endpoint_url=URL,
    /// region=REGION, profile=NAME, force_path_style, no_sign_request. A
    /// flag wins over the same setting here.
    /// Generic mount(8) options (noatime, nodev, _netdev, x-*, …) are
    /// accepted and ignored; rw is refused.
    #[arg(short = 'o', value_name = "OPTIONS")]
    pub options: Vec<String>,
    /// Seconds the kernel may cache names and attributes that are not
    /// watched (0 = always ask, and watch nothing; at most 86400). Watched
    /// ones are cached until a change is pushed to the kernel. Same as
    /// -o ttl=SECONDS.
    #[arg(long, value_name = "SECONDS", allow_hyphen_values = true)]
    pub ttl: Option<String>,
    /// Seconds one access to the library (one system call on its files,
    /// or one GET or LIST of a bucket) may take before the request waiting
    /// on it gets EIO (a hung network server); a request whose accesses
    /// keep returning is never cut. Default 5. Same as
    /// -o source_timeout=SECONDS.
    #[arg(long, value_name = "SECONDS", allow_hyphen_values = true)]
    pub source_timeout: Option<String>,
    /// Seconds past their freshness that what this mount read before (a
    /// bucket's names, sizes, versions, chapter bodies and the pages made
    /// of them) is still served while the bucket does not answer
    /// (timeouts, refused connections, server errors); what was never read
    /// gets EIO at once but for one probe at a time. 0 serves nothing
    /// stale. Default 3600. Same as -o stale_if_error=SECONDS.
    #[arg(long, value_name = "SECONDS", allow_hyphen_values = true)]
    pub stale_if_error: Option<String>,
    #[arg(long, value_name = "FILE", value_parser = crate::mount::options::value::file, help = first_paragraph(STATE_FILE_HELP), long_help = STATE_FILE_HELP)]
    pub state_file: Option<PathBuf>,
    /// The root pages write in <path> and JSON "path" instead of ROOT's
    /// canonical path (e.g. /library where a sandbox binds the mount);
    /// sizes follow. Same as -o path_root=DIR.
    #[arg(long, value_name = "DIR", value_parser = crate::mount::options::value::path_root)]
    pub path_root: Option<String>,
    /// Memory for what the daemon keeps: decoded chapters, rendered pages,
    /// listings, book indexes and the inode table (e.g. 16M, 256MiB)
    /// [default: 256MiB]. Same as -o cache_size=SIZE.
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub cache_size: Option<String>,
    /// Chapters larger than this are shown as an ERROR instead of being
    /// read (at most 2GiB) [default: 256MiB]. Same as
    /// -o max_chapter_bytes=SIZE.
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub max_chapter_bytes: Option<String>,
    /// Worker threads reading requests (more mostly add context switches on
    /// a small machine). One always stays free: requests that would wait
    /// behind slow ones (a big chapter loading) go to spare threads.
    /// 1 to 256 [default: 2]. Same as -o threads=N.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub threads: Option<String>,
    /// How a bucket's names, sizes and versions stay fresh: `published`
    /// follows the snapshot `novelfs index --publish` wrote beside the
    /// library (no LIST; one conditional GET per --ttl asks whether a newer
    /// one was published), `listing` lists each directory again once per
    /// --ttl. Default: published where a snapshot exists. Same as
    /// -o freshness=published|listing.
    #[arg(long, value_name = "RULE", value_parser = |v: &str| crate::mount::options::value::freshness(v).map(|_| v.to_string()))]
    pub freshness: Option<String>,
    /// Clear a stale mount (left by a killed daemon) at MOUNTPOINT first.
    #[arg(long)]
    pub force: bool,
    /// Do not watch the library for changes (inotify): the kernel then
    /// re-asks every name after --ttl. Watching lets it keep names, pages
    /// and listings until something changes (-o nowatch is the same).
    #[arg(long)]
    pub no_watch: bool,
    /// Where a mount logs (appended): what it mounted and how, what it
    /// cannot serve, its unmount. Without it, -f logs to stderr and a
    /// daemonized mount to syslog (journalctl -t novelfs), or, without
    /// syslog, to $XDG_STATE_HOME/novelfs/novelfs.log (else
    /// ~/.local/state/novelfs/novelfs.log, else for root
    /// /var/log/novelfs/novelfs.log). The mounted line in the log
    /// ends with where it goes (log: …). Same as -o log_file=FILE.
    #[arg(long, value_name = "FILE", value_parser = crate::mount::options::value::file)]
    pub log_file: Option<PathBuf>,
    /// How the kernel's requests reach the daemon: auto (FUSE over io_uring
    /// when the kernel offers it, the /dev/fuse loop otherwise), on (io_uring
    /// or no mount), off (the /dev/fuse loop). Same as -o io_uring=MODE.
    #[arg(long, value_name = "auto|on|off")]
    pub io_uring: Option<String>,
    /// Whether the mount outlives its server: auto (the default) leaves a
    /// holder, a small process that keeps the connection and starts a new
    /// server when the server dies (a crash, kill -9, an OOM kill), so that
    /// readers see a pause, not an error; unless FUSE over io_uring serves
    /// the mount, whose rings a new server cannot take over. on: a holder,
    /// over /dev/fuse (not with --io-uring on). off: no holder; the
    /// daemon's death ends the mount. The holder is the daemon the log, ps
    /// and systemd see; the server is its child, novelfs-server. Same as
    /// -o failover=MODE.
    #[arg(long, value_name = "auto|on|off")]
    pub failover: Option<String>,
    #[arg(long, value_name = "DIR", value_parser = crate::mount::options::value::dir, help = first_paragraph(INDEX_DIR_HELP), long_help = INDEX_DIR_HELP)]
    pub index_dir: Option<PathBuf>,
    /// Use no persistent index: every chapter is read the first time it is
    /// listed or sized (-o noindex is the same).
    #[arg(long)]
    pub no_index: bool,
    /// The page formats chapter directories list: txt, json or txt,json
    /// [default: txt,json]. With one, `grep -r` over the mount finds each
    /// hit once; the other still opens by its exact name
    /// (offset-1.json). Same as -o formats=txt|json|txt+json.
    #[arg(long, value_name = "txt|json|txt,json", value_parser = |v: &str| novelfs_fs::Formats::parse(v).map(|_| v.to_string()))]
    pub formats: Option<String>,
}

#[derive(Args, Debug)]
pub struct IndexCmd {
    /// The library root: the directory holding novels/, or
    /// s3://, gs:// or az://BUCKET[/PREFIX].
    pub root: PathBuf,
    #[command(flatten)]
    pub bucket: BucketArgs,
    #[arg(long, value_name = "DIR", value_parser = crate::mount::options::value::dir, help = first_paragraph(INDEX_DIR_HELP), long_help = INDEX_DIR_HELP)]
    pub index_dir: Option<PathBuf>,
    /// The root the mount writes in pages (its --path-root).
    #[arg(long, value_name = "DIR", value_parser = crate::mount::options::value::path_root)]
    pub path_root: Option<String>,
    /// The mount's --max-chapter-bytes.
    #[arg(long, default_value = "256MiB", value_name = "SIZE", value_parser = crate::mount::options::value::max_chapter_bytes, allow_hyphen_values = true)]
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
    #[arg(long, value_name = "FILE", hide = true)]
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
