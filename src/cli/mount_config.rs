//! `novelfs mount`'s arguments resolved into the mount's configuration:
//! flags, `-o` options and defaults meet here, once.

use std::path::PathBuf;
use std::time::Duration;

use super::flags::mount_args::MountCmd;
use super::flags::mount_options::{MountOptions, parse_options};
use super::flags::value::{self, bad_value, conflict};
use super::root_check::LibraryRoot;
use crate::mount::access::Access;
use crate::mount::config::{
    DEFAULT_CACHE_BYTES, DEFAULT_DRIFT, DEFAULT_SOURCE_TIMEOUT, DEFAULT_STALE_IF_ERROR,
    DEFAULT_THREADS, DEFAULT_TTL, KernelMount, MountConfig,
};
use crate::mount::failover::Failover;
use crate::mount::library_at::LibraryAt;
use crate::mount::mountpoint::absolute;
use crate::mount::transport::IoUring;
use novelfs_fs::FsConfig;

/// The type of the mount the library's `novels/` lies on (`None` when it
/// cannot be told).
fn source_fs_type(root: &std::path::Path) -> Option<String> {
    let novels = std::fs::canonicalize(root.join("novels")).ok()?;
    crate::mount::mountinfo::fs_type_containing(&novels)
}

/// A flag's value by its rule, or the one line naming the flag.
fn flag<T>(
    name: &str,
    given: Option<&str>,
    rule: impl Fn(&str) -> Result<T, &'static str>,
) -> Result<Option<T>, String> {
    given
        .map(|v| rule(v).map_err(|takes| bad_value(name, takes, v)))
        .transpose()
}

/// The mount's configuration from `novelfs mount`'s arguments: every
/// value checked by its one rule (`flags::value`), whichever form it
/// came in; a flag wins over the same setting in `-o`, defaults fill the
/// rest. Any error is a usage error (exit 2), one line naming the option.
pub(crate) fn mount_config(args: &MountCmd) -> Result<MountConfig, String> {
    let options = parse_options(&args.options)?;
    let ttl = flag("--ttl", args.ttl.as_deref(), value::ttl)?
        .or(options.ttl)
        .unwrap_or(DEFAULT_TTL);
    let source_timeout = flag(
        "--source-timeout",
        args.source_timeout.as_deref(),
        value::source_timeout,
    )?
    .or(options.source_timeout)
    .unwrap_or(DEFAULT_SOURCE_TIMEOUT);
    let stale_if_error = flag(
        "--stale-if-error",
        args.stale_if_error.as_deref(),
        value::stale_if_error,
    )?
    .or(options.stale_if_error)
    .unwrap_or(DEFAULT_STALE_IF_ERROR);
    let drift = flag("--drift", args.drift.as_deref(), value::drift)?
        .or(options.drift)
        .unwrap_or(DEFAULT_DRIFT);
    let cache_bytes = flag(
        "--cache-size",
        args.cache_size.as_deref(),
        value::cache_size,
    )?
    .or(options.cache_size)
    .unwrap_or(DEFAULT_CACHE_BYTES);
    let max_chapter_bytes = flag(
        "--max-chapter-bytes",
        args.max_chapter_bytes.as_deref(),
        value::max_chapter_bytes,
    )?
    .or(options.max_chapter_bytes)
    .unwrap_or(novelfs_library::DEFAULT_MAX_CHAPTER_BYTES);
    let threads = flag("--threads", args.threads.as_deref(), value::threads)?
        .or(options.threads)
        .unwrap_or(DEFAULT_THREADS);
    let state_file = args
        .state_file
        .clone()
        .or(options.state_file.clone().map(PathBuf::from));
    let io_uring = flag("--io-uring", args.io_uring.as_deref(), value::io_uring)?
        .or(options.io_uring)
        .unwrap_or_default();
    let failover_flag = flag("--failover", args.failover.as_deref(), value::failover)?;
    let failover = failover_flag.or(options.failover).unwrap_or_default();
    if failover == Failover::On && io_uring == IoUring::On {
        // The holder serves through /dev/fuse only (see `failover`).
        let a = if failover_flag.is_some() {
            "--failover on"
        } else {
            "-o failover"
        };
        let b = if args.io_uring.is_some() {
            "--io-uring on"
        } else {
            "-o io_uring=on"
        };
        return Err(conflict(a, b));
    }
    let (failover, failover_off_because) =
        failover.resolve(io_uring, crate::mount::transport::io_uring_offered());
    let bounded = novelfs_storage::StoreOptions {
        timeout: Duration::from_secs_f64(source_timeout),
        ..options.bucket.clone()
    };
    let LibraryRoot {
        at, store: bucket, ..
    } = super::root_check::check_root(&args.root, &args.bucket, &bounded)?;
    let root = match &at {
        LibraryAt::Dir(dir) => absolute(dir),
        LibraryAt::Bucket(_) => args.root.clone(),
    };
    // A bucket's bodies fetched ahead count in the one budget: an eighth
    // of it; its directories' listings half that again (`BucketBacking`);
    // the tree's caches the rest.
    let (ahead_bytes, bucket_bytes) = if at.is_bucket() {
        let ahead = cache_bytes as u64 / 8;
        (ahead, ahead + ahead / 2)
    } else {
        (0, 0)
    };
    let access = Access::from_options(options.allow_other, options.allow_root);
    let path_root = args.path_root.clone().or(options.path_root.clone());
    let kernel = KernelMount {
        // The source column says what the pages say: a sandbox that sees
        // the library at the path root sees no host path in mountinfo.
        fsname: options.fsname.clone().or_else(|| path_root.clone()),
        subtype: options.subtype.clone().unwrap_or_else(|| "novelfs".into()),
        allow_other: access.kernel_allow_other(),
        default_permissions: options.default_permissions || access.needs_default_permissions(),
    };
    let (index_dir, no_index_because) = match index_dir(args, &options)? {
        Index::In(dir) => (Some(dir), None),
        Index::Off => (None, None),
        Index::Nowhere(why) => (None, Some(why)),
    };
    Ok(MountConfig {
        mountpoint: absolute(&args.mountpoint),
        foreground: args.foreground,
        force: args.force,
        threads,
        max_chapter_bytes,
        path_root,
        tree: FsConfig {
            ttl: Duration::from_secs_f64(ttl),
            state_file: state_file.as_deref().map(absolute),
            cache_bytes: cache_bytes - bucket_bytes as usize,
            watch: !(args.no_watch || options.no_watch),
            source_fs_type: match at {
                LibraryAt::Dir(_) => source_fs_type(&root),
                LibraryAt::Bucket(_) => None,
            },
            index_dir,
        },
        access,
        auto_unmount: options.auto_unmount,
        kernel,
        log_file: args
            .log_file
            .clone()
            .or(options.log_file.map(PathBuf::from))
            .map(|p| absolute(&p)),
        io_uring,
        source_timeout: Duration::from_secs_f64(source_timeout),
        stale_if_error: Duration::from_secs_f64(stale_if_error),
        drift: Duration::from_secs_f64(drift),
        no_index_because,
        failover,
        failover_off_because,
        library: match at {
            LibraryAt::Dir(_) => LibraryAt::Dir(root.clone()),
            bucket @ LibraryAt::Bucket(_) => bucket,
        },
        root,
        bucket,
        ahead_bytes,
        formats: flag(
            "--formats",
            args.formats.as_deref(),
            novelfs_fs::Formats::parse,
        )?
        .or(options.formats)
        .unwrap_or_default(),
        follow_published: match args.freshness.as_deref() {
            Some(v) => value::freshness(v).map_err(|e| format!("--freshness: {e}"))?,
            None => options.freshness.unwrap_or(true),
        },
    })
}

/// The persistent index of a mount.
enum Index {
    In(PathBuf),
    /// `--no-index` or `-o noindex`.
    Off,
    /// No folder given and none to default to: why.
    Nowhere(String),
}

/// Where the persistent index lives without `--index-dir`:
/// `$XDG_CACHE_HOME/novelfs`, else `~/.cache/novelfs`; for root without
/// either (a mount made by mount(8), fstab or systemd), the system's cache
/// folder for daemons, `/var/cache/novelfs`.
pub(crate) fn default_index_dir() -> Result<PathBuf, String> {
    novelfs_fs::persist::default_dir()
        .or_else(|| {
            // SAFETY: geteuid has no preconditions.
            (unsafe { libc::geteuid() } == 0).then(|| PathBuf::from(SYSTEM_INDEX_DIR))
        })
        .ok_or_else(|| {
            "no persistent index: no $XDG_CACHE_HOME or $HOME to keep it in (--index-dir DIR \
             or -o index_dir=DIR keeps one); every chapter is read the first time it is listed \
             or sized"
                .to_string()
        })
}

/// Root's index folder when it has no home.
pub(crate) const SYSTEM_INDEX_DIR: &str = "/var/cache/novelfs";

/// Where the persistent index lives: `--index-dir`, else `-o index_dir`,
/// else the default folder; none with `--no-index` or `-o noindex`, which
/// no index folder may come with, in either form.
fn index_dir(args: &MountCmd, options: &MountOptions) -> Result<Index, String> {
    let off = match (args.no_index, options.no_index) {
        (true, _) => Some("--no-index"),
        (false, true) => Some("-o noindex"),
        _ => None,
    };
    let given = match (&args.index_dir, &options.index_dir) {
        (Some(dir), _) => Some(("--index-dir", dir.clone())),
        (None, Some(dir)) => Some(("-o index_dir=", PathBuf::from(dir))),
        _ => None,
    };
    match (off, given) {
        (Some(off), Some((dir, _))) => Err(conflict(off, dir)),
        (Some(_), None) => Ok(Index::Off),
        (None, Some((_, dir))) => Ok(Index::In(absolute(&dir))),
        (None, None) => Ok(default_index_dir().map_or_else(Index::Nowhere, Index::In)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::flags::bucket::BucketArgs;

    fn args(options: &str) -> MountCmd {
        MountCmd {
            root: "/srv/lib".into(),
            bucket: BucketArgs::default(),
            mountpoint: "/mnt/".into(),
            foreground: false,
            options: vec![options.to_string()],
            ttl: None,
            source_timeout: None,
            stale_if_error: None,
            drift: None,
            state_file: None,
            path_root: None,
            cache_size: None,
            max_chapter_bytes: None,
            threads: None,
            freshness: None,
            force: false,
            no_watch: false,
            log_file: None,
            io_uring: None,
            failover: None,
            index_dir: None,
            no_index: false,
            formats: None,
        }
    }

    #[test]
    fn access_options_become_kernel_options() {
        let c = mount_config(&args("allow_root")).unwrap();
        assert!(c.kernel.allow_other && c.kernel.default_permissions);
        assert_eq!(
            (c.kernel.fsname.as_deref(), &*c.kernel.subtype),
            (None, "novelfs")
        );
        // auto_unmount adds nothing the kernel would let others in with.
        let c = mount_config(&args("auto_unmount,fsname=books")).unwrap();
        assert!(c.auto_unmount);
        assert!(!c.kernel.allow_other && !c.kernel.default_permissions);
        assert_eq!(c.kernel.fsname.as_deref(), Some("books"));
    }

    #[test]
    fn flags_win_over_options_and_defaults_fill_the_rest() {
        let c = mount_config(&args("ttl=5,path_root=/library")).unwrap();
        assert_eq!(c.tree.ttl, Duration::from_secs(5));
        assert_eq!(c.path_root.as_deref(), Some("/library"));
        assert_eq!(c.kernel.fsname.as_deref(), Some("/library"));
        assert!(c.tree.watch);
        assert_eq!(c.mountpoint, PathBuf::from("/mnt"));
        let mut a = args("ttl=5,nowatch");
        a.ttl = Some("0.5".into());
        a.path_root = Some("/other".into());
        let c = mount_config(&a).unwrap();
        assert_eq!(c.tree.ttl, Duration::from_millis(500));
        assert_eq!(c.path_root.as_deref(), Some("/other"));
        assert!(!c.tree.watch);
        let c = mount_config(&args("")).unwrap();
        assert_eq!(c.tree.ttl, Duration::from_secs(1));
        assert_eq!(c.tree.cache_bytes, 256 << 20);
        assert!(mount_config(&args("rw")).is_err());
    }

    #[test]
    fn sizes_threads_and_the_state_file_come_from_the_flag_the_option_or_the_default() {
        let c = mount_config(&args(
            "cache_size=16M,max_chapter_bytes=1G,threads=4,state_file=/etc/novelfs/state.json",
        ))
        .unwrap();
        assert_eq!(
            (c.tree.cache_bytes, c.max_chapter_bytes, c.threads),
            (16 << 20, 1 << 30, 4)
        );
        assert_eq!(
            c.tree.state_file.as_deref(),
            Some(std::path::Path::new("/etc/novelfs/state.json"))
        );
        let mut a = args("cache_size=16M,threads=4");
        a.cache_size = Some("32M".into());
        a.threads = Some("3".into());
        let c = mount_config(&a).unwrap();
        assert_eq!(
            (c.tree.cache_bytes, c.threads),
            (32 << 20, 3),
            "the flags win"
        );
        let c = mount_config(&args("")).unwrap();
        assert_eq!(
            (c.tree.cache_bytes, c.max_chapter_bytes, c.threads),
            (256 << 20, 256 << 20, 2)
        );
        assert!(c.tree.state_file.is_none());
    }

    #[test]
    fn the_source_timeout_comes_from_the_flag_the_option_or_5_s() {
        let c = mount_config(&args("source_timeout=2.5")).unwrap();
        assert_eq!(c.source_timeout, Duration::from_millis(2500));
        let mut a = args("source_timeout=2");
        a.source_timeout = Some("7".into());
        assert_eq!(
            mount_config(&a).unwrap().source_timeout,
            Duration::from_secs(7),
            "the flag wins"
        );
        assert_eq!(
            mount_config(&args("")).unwrap().source_timeout,
            Duration::from_secs(5)
        );
        assert!(mount_config(&args("source_timeout=0")).is_err());
    }
}
