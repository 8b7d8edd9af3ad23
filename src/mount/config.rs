//! The mount's settings, resolved once from the parsed command: flags,
//! `-o` options and defaults meet here, and each part of the mount gets
//! what it needs from the result (the tree its `FsConfig`, the kernel
//! mount its `KernelMount`, the daemon the rest).

use std::path::PathBuf;
use std::time::Duration;

use super::access::Access;
use super::mountpoint::absolute;
use super::options::{parse_options, parse_size, parse_source_timeout, parse_ttl};
use super::transport::IoUring;
use crate::cli::MountCmd;
use crate::fs::FsConfig;

/// How the kernel mount looks: its source and type in mountinfo, and the
/// kernel-side access checks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KernelMount {
    /// The source column when not the library root (`fsname=`).
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
    pub(crate) access: Access,
    pub(crate) auto_unmount: bool,
    pub(crate) kernel: KernelMount,
    /// Where the daemon logs (absolute); `None`: stderr in the
    /// foreground, else syslog.
    pub(crate) log_file: Option<PathBuf>,
    pub(crate) io_uring: IoUring,
    /// How long a request may wait for the library's filesystem.
    pub(crate) source_timeout: Duration,
}

/// The default TTL of what is not watched, in seconds.
const DEFAULT_TTL: f64 = 1.0;

/// How long a request waits for the library's filesystem by default, in
/// seconds: longer than any local read, short enough that a hung server
/// is an error to an agent, not a hang.
const DEFAULT_SOURCE_TIMEOUT: f64 = 5.0;

impl MountConfig {
    /// A flag wins over the same setting in `-o`.
    pub(crate) fn resolve(args: &MountCmd) -> Result<MountConfig, String> {
        let options = parse_options(&args.options)?;
        let ttl = match &args.ttl {
            Some(t) => parse_ttl(t)?,
            None => options.ttl.unwrap_or(DEFAULT_TTL),
        };
        let source_timeout = match &args.source_timeout {
            Some(t) => parse_source_timeout(t)?,
            None => options.source_timeout.unwrap_or(DEFAULT_SOURCE_TIMEOUT),
        };
        let root = absolute(&args.root);
        let access = Access::from_options(options.allow_other, options.allow_root);
        let kernel = KernelMount {
            fsname: options.fsname.clone(),
            subtype: options.subtype.clone().unwrap_or_else(|| "novelfs".into()),
            allow_other: access.kernel_allow_other(),
            default_permissions: options.default_permissions || access.needs_default_permissions(),
        };
        Ok(MountConfig {
            mountpoint: absolute(&args.mountpoint),
            foreground: args.foreground,
            force: args.force,
            threads: args.threads.max(1),
            max_chapter_bytes: parse_size(&args.max_chapter_bytes)?,
            path_root: args.path_root.clone().or(options.path_root),
            tree: FsConfig {
                ttl: Duration::from_secs_f64(ttl),
                state_file: args.state_file.as_deref().map(absolute),
                cache_bytes: usize::try_from(parse_size(&args.cache_size)?)
                    .map_err(|_| format!("cache size too large: {}", args.cache_size))?,
                watch: !(args.no_watch || options.no_watch),
            },
            access,
            auto_unmount: options.auto_unmount,
            kernel,
            log_file: args
                .log_file
                .clone()
                .or(options.log_file.map(PathBuf::from))
                .map(|p| absolute(&p)),
            io_uring: match &args.io_uring {
                Some(v) => IoUring::parse(v)?,
                None => options.io_uring.unwrap_or_default(),
            },
            source_timeout: Duration::from_secs_f64(source_timeout),
            root,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(options: &str) -> MountCmd {
        MountCmd {
            root: "/srv/lib".into(),
            mountpoint: "/mnt/".into(),
            foreground: false,
            options: vec![options.to_string()],
            ttl: None,
            source_timeout: None,
            state_file: None,
            path_root: None,
            cache_size: "256MiB".into(),
            max_chapter_bytes: "256MiB".into(),
            threads: 2,
            force: false,
            no_watch: false,
            log_file: None,
            io_uring: None,
        }
    }

    #[test]
    fn access_options_become_kernel_options() {
        let c = MountConfig::resolve(&args("allow_root")).unwrap();
        assert!(c.kernel.allow_other && c.kernel.default_permissions);
        assert_eq!(
            (c.kernel.fsname.as_deref(), &*c.kernel.subtype),
            (None, "novelfs")
        );
        // auto_unmount adds nothing the kernel would let others in with.
        let c = MountConfig::resolve(&args("auto_unmount,fsname=books")).unwrap();
        assert!(c.auto_unmount);
        assert!(!c.kernel.allow_other && !c.kernel.default_permissions);
        assert_eq!(c.kernel.fsname.as_deref(), Some("books"));
    }

    #[test]
    fn flags_win_over_options_and_defaults_fill_the_rest() {
        let c = MountConfig::resolve(&args("source_timeout=2.5")).unwrap();
        assert_eq!(c.source_timeout, Duration::from_millis(2500));
        let mut a = args("source_timeout=2");
        a.source_timeout = Some("7".into());
        assert_eq!(
            MountConfig::resolve(&a).unwrap().source_timeout,
            Duration::from_secs(7),
            "the flag wins"
        );
        assert_eq!(
            MountConfig::resolve(&args("")).unwrap().source_timeout,
            Duration::from_secs(5)
        );
        assert!(MountConfig::resolve(&args("source_timeout=0")).is_err());
        let c = MountConfig::resolve(&args("ttl=5,path_root=/library")).unwrap();
        assert_eq!(c.tree.ttl, Duration::from_secs(5));
        assert_eq!(c.path_root.as_deref(), Some("/library"));
        assert!(c.tree.watch);
        assert_eq!(c.mountpoint, PathBuf::from("/mnt"));
        let mut a = args("ttl=5,nowatch");
        a.ttl = Some("0.5".into());
        a.path_root = Some("/other".into());
        let c = MountConfig::resolve(&a).unwrap();
        assert_eq!(c.tree.ttl, Duration::from_millis(500));
        assert_eq!(c.path_root.as_deref(), Some("/other"));
        assert!(!c.tree.watch);
        let c = MountConfig::resolve(&args("")).unwrap();
        assert_eq!(c.tree.ttl, Duration::from_secs(1));
        assert_eq!(c.tree.cache_bytes, 256 << 20);
        assert!(MountConfig::resolve(&args("rw")).is_err());
    }
}
