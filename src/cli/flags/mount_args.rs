//! `novelfs mount`'s arguments: the library, the mountpoint, and every
//! option of a mount (each also an `-o` form, see `mount_options`).

use std::path::PathBuf;

use clap::Args;

use super::bucket::BucketArgs;
use super::help::{INDEX_DIR_HELP, STATE_FILE_HELP, first_paragraph};

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
    /// A bucket whose published snapshot is followed: every SECONDS one
    /// directory being read is listed (one LIST) and compared with the
    /// snapshot, so that a change made in the bucket and never published
    /// shows within that bound; a directory found changed is listed until
    /// a newer snapshot covers it. 0 never lists. Default 600. Same as
    /// -o drift=SECONDS.
    #[arg(long, value_name = "SECONDS", allow_hyphen_values = true)]
    pub drift: Option<String>,
    #[arg(long, value_name = "FILE", value_parser = super::value::file, help = first_paragraph(STATE_FILE_HELP), long_help = STATE_FILE_HELP)]
    pub state_file: Option<PathBuf>,
    /// The root pages write in <path> and JSON "path" instead of ROOT's
    /// canonical path (e.g. /library where a sandbox binds the mount);
    /// sizes follow. Same as -o path_root=DIR.
    #[arg(long, value_name = "DIR", value_parser = super::value::path_root)]
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
    #[arg(long, value_name = "RULE", value_parser = |v: &str| super::value::freshness(v).map(|_| v.to_string()))]
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
    #[arg(long, value_name = "FILE", value_parser = super::value::file)]
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
    #[arg(long, value_name = "DIR", value_parser = super::value::dir, help = first_paragraph(INDEX_DIR_HELP), long_help = INDEX_DIR_HELP)]
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
