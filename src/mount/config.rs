//! The mount's settings: each part of the mount gets what it needs from
//! them (the tree its `FsConfig`, the kernel mount its `KernelMount`, the
//! daemon the rest). The command line resolves its flags and `-o` options
//! into them (`cli::mount_config`).

use std::path::PathBuf;
use std::time::Duration;

use super::access::Access;
use super::transport::IoUring;
use novelfs_fs::FsConfig;

/// How the kernel mount looks: its source and type in mountinfo, and the
/// kernel-side access checks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KernelMount {
    /// The source column when not the library root: `fsname=`, else the
    /// path root.
    pub(crate) fsname: Option<String>,
    /// Shown as the type `fuse.{subtype}`.
    pub(crate) subtype: String,
    pub(crate) allow_other: bool,
    pub(crate) default_permissions: bool,
}

/// Everything `novelfs mount` does is decided by this.
#[derive(Debug, Clone)]
pub(crate) struct MountConfig {
    /// Absolute (lexically): the daemon leaves the working directory.
    pub(crate) root: PathBuf,
    /// Where `root` names, read once from the command line.
    pub(crate) library: super::library_at::LibraryAt,
    /// Absolute, written as mountinfo writes it.
    pub(crate) mountpoint: PathBuf,
    pub(crate) foreground: bool,
    /// Clear a stale mount at the mountpoint first.
    pub(crate) force: bool,
    pub(crate) threads: usize,
    pub(crate) max_chapter_bytes: u64,
    /// Written in pages instead of the library root.
    pub(crate) path_root: Option<String>,
    pub(crate) tree: FsConfig,
    /// The page formats chapter directories list.
    pub(crate) formats: novelfs_fs::Formats,
    pub(crate) access: Access,
    pub(crate) auto_unmount: bool,
    pub(crate) kernel: KernelMount,
    /// Where the daemon logs (absolute); `None`: stderr in the
    /// foreground, else syslog.
    pub(crate) log_file: Option<PathBuf>,
    pub(crate) io_uring: IoUring,
    /// How long a request may wait for the library's filesystem.
    pub(crate) source_timeout: Duration,
    /// How long past their freshness what was read before is served while
    /// a bucket does not answer.
    pub(crate) stale_if_error: Duration,
    /// How often a mount following a published snapshot compares one
    /// directory it reads with a LIST of it (zero: never).
    pub(crate) drift: Duration,
    /// How to reach the library when `root` is in a bucket (its
    /// `timeout` is `source_timeout`).
    pub(crate) bucket: novelfs_storage::StoreOptions,
    /// Bytes of chapters a bucket's backing may hold fetched ahead of
    /// readers: taken from `--cache-size`, the tree gets the rest.
    pub(crate) ahead_bytes: u64,
    /// Whether a bucket's published snapshot is followed where one exists
    /// (`--freshness published`), rather than its directories listed.
    pub(crate) follow_published: bool,
    /// Why there is no persistent index though none was refused (no
    /// folder to keep it in), said once the mount is made.
    pub(crate) no_index_because: Option<String>,
    /// A holder keeps the connection and restarts a server that dies (see
    /// `failover` and `holder`).
    pub(crate) failover: bool,
    /// Why `--failover auto` left it off (io_uring serves the mount), said
    /// once the mount is made.
    pub(crate) failover_off_because: Option<String>,
}

/// The memory for what the daemon keeps, by default.
pub(crate) const DEFAULT_CACHE_BYTES: usize = 256 << 20;

/// Worker threads by default: one reads requests, one stays free.
pub(crate) const DEFAULT_THREADS: usize = 2;

/// The default TTL of what is not watched, in seconds.
pub(crate) const DEFAULT_TTL: f64 = 1.0;

/// How long a request waits for the library's filesystem by default, in
/// seconds: longer than any local read, short enough that a hung server
/// is an error to an agent, not a hang.
pub(crate) const DEFAULT_SOURCE_TIMEOUT: f64 = 5.0;

/// `--stale-if-error`'s default, in seconds (see docs/contract.md §2.5).
pub(crate) const DEFAULT_STALE_IF_ERROR: f64 = 3600.0;

/// `--drift`, seconds.
pub(crate) const DEFAULT_DRIFT: f64 = 600.0;
