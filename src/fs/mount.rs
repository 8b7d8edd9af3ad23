//! Mounting: option parsing, the checks that give a clear reason instead
//! of a cryptic failure, daemonizing, and clean unmount on signals.

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fuser::{Config, INodeNo, MountOption, SessionACL};

use super::Change;
use super::fuse::FuseAdapter;
use super::{FsConfig, Invalidation, NovelFs};
use crate::library::Library;

/// Everything `novelfs mount` needs.
#[derive(Debug, Clone)]
pub struct MountRequest {
    pub root: PathBuf,
    pub mountpoint: PathBuf,
    pub foreground: bool,
    pub options: Vec<String>,
    pub ttl: Option<f64>,
    pub state_file: Option<PathBuf>,
    pub cache_size: Option<u64>,
    pub max_chapter_bytes: Option<u64>,
    pub threads: usize,
    pub force: bool,
    /// Do not watch the library: changes show after the TTL only.
    pub no_watch: bool,
}

/// The parsed `-o` list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MountOptions {
    pub allow_other: bool,
    pub allow_root: bool,
    pub auto_unmount: bool,
    pub default_permissions: bool,
    pub fsname: Option<String>,
    pub subtype: Option<String>,
    pub ttl: Option<f64>,
    pub no_watch: bool,
}

/// Options mount(8) and mount.fuse3 may pass that mean nothing to a
/// read-only view (or are already implied by it).
const GENERIC_OPTIONS: &[&str] = &[
    "defaults",
    "auto",
    "noauto",
    "user",
    "nouser",
    "users",
    "owner",
    "group",
    "_netdev",
    "nofail",
    "exec",
    "noexec",
    "suid",
    "nosuid",
    "dev",
    "nodev",
    "atime",
    "noatime",
    "relatime",
    "norelatime",
    "strictatime",
    "diratime",
    "nodiratime",
    "sync",
    "async",
    "dirsync",
    "lazytime",
    "nolazytime",
    "silent",
    "loud",
];

pub fn parse_options(list: &[String]) -> Result<MountOptions, String> {
    let mut o = MountOptions::default();
    for opt in list
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let (key, value) = match opt.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (opt, None),
        };
        match (key, value) {
            ("ro", None) => {}
            ("rw", None) => {
                return Err("option rw: novelfs is read-only (use ro or nothing)".into());
            }
            ("allow_other", None) => o.allow_other = true,
            ("allow_root", None) => o.allow_root = true,
            ("auto_unmount", None) => o.auto_unmount = true,
            ("default_permissions", None) => o.default_permissions = true,
            ("fsname", Some(v)) => o.fsname = Some(v.to_string()),
            ("subtype", Some(v)) => o.subtype = Some(v.to_string()),
            ("ttl", Some(v)) => o.ttl = Some(parse_ttl(v)?),
            ("nowatch", None) => o.no_watch = true,
            (k, _) if k.starts_with("x-") || k == "comment" || GENERIC_OPTIONS.contains(&k) => {}
            _ => return Err(format!("unknown mount option: {opt}")),
        }
    }
    if o.allow_other && o.allow_root {
        return Err("allow_other and allow_root are mutually exclusive".into());
    }
    Ok(o)
}

pub fn parse_ttl(v: &str) -> Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && (0.0..=86_400.0).contains(&t) => Ok(t),
        _ => Err(format!(
            "ttl must be a number of seconds between 0 and 86400, not {v:?}"
        )),
    }
}

/// `16M`, `256MiB`, `1G`, `4096`.
pub fn parse_size(v: &str) -> Result<u64, String> {
    let s = v.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().map_err(|_| format!("not a size: {v:?}"))?;
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("not a size: {v:?} (use e.g. 16M, 256MiB, 1G)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size too large: {v:?}"))
}

/// How a mountpoint looks right now.
#[derive(Debug, PartialEq, Eq)]
pub enum MountpointState {
    Missing,
    NotADirectory,
    /// A FUSE daemon died and left the mount behind (ENOTCONN).
    Stale,
    AlreadyMounted,
    Ready,
}

/// `path` made absolute and written the way the kernel writes mount points in
/// mountinfo: no trailing slash, no `.` and no doubled `/`. Lexical only, so it
/// never stats a mount whose daemon may be hung.
pub fn absolute(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    joined.components().collect()
}

fn unescape_mountinfo(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// Whether `path` (absolute) is a mount point according to the kernel.
pub fn is_mount_point(path: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = path.as_os_str().as_bytes();
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|mp| unescape_mountinfo(mp) == want)
}

pub fn mountpoint_state(path: &Path) -> MountpointState {
    match std::fs::metadata(path) {
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => MountpointState::Stale,
        Err(_) => MountpointState::Missing,
        Ok(m) if !m.is_dir() => MountpointState::NotADirectory,
        // The stat above has already been answered, so resolving symlinks and
        // `..` cannot hang; mountinfo holds the resolved path.
        Ok(_)
            if is_mount_point(&std::fs::canonicalize(path).unwrap_or_else(|_| absolute(path))) =>
        {
            MountpointState::AlreadyMounted
        }
        Ok(_) => MountpointState::Ready,
    }
}

/// Unmounts `path`; `lazy` detaches even while files are open.
pub fn unmount(path: &Path, lazy: bool) -> Result<(), String> {
    let path = absolute(path);
    let c =
        CString::new(path.as_os_str().as_bytes()).map_err(|_| "path contains NUL".to_string())?;
    let flags = if lazy { libc::MNT_DETACH } else { 0 };
    // SAFETY: c is a valid NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), flags) } == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EPERM) => {
            for helper in ["fusermount3", "fusermount"] {
                let mut cmd = std::process::Command::new(helper);
                cmd.arg(if lazy { "-uz" } else { "-u" }).arg(&path);
                if let Ok(status) = cmd.status()
                    && status.success()
                {
                    return Ok(());
                }
            }
            Err(format!(
                "cannot unmount {}: permission denied (run as root, or install fuse3 for fusermount3)",
                path.display()
            ))
        }
        Some(libc::EBUSY) => Err(format!(
            "cannot unmount {}: it is busy (a file or directory in it is open); close it, or use `novelfs unmount --lazy`",
            path.display()
        )),
        Some(libc::EINVAL) => Err(format!("{} is not a mount point", path.display())),
        _ => Err(format!("cannot unmount {}: {err}", path.display())),
    }
}

fn stale_message(mnt: &Path) -> String {
    format!(
        "{0} is a stale mount left by a daemon that died (\"Transport endpoint is not connected\"); clear it with `novelfs unmount {0}` (or `umount -l {0}`), or mount again with --force",
        mnt.display()
    )
}

/// The checks that turn a failing mount into a sentence.
fn preflight(req: &MountRequest) -> Result<(), String> {
    let novels = req.root.join("novels");
    match std::fs::metadata(&novels) {
        Ok(m) if m.is_dir() => {}
        _ => {
            return Err(format!(
                "{} is not a novelfs library: it has no novels/ directory (expected {}/<book>/<chapter>.md)",
                req.root.display(),
                novels.display()
            ));
        }
    }
    match mountpoint_state(&req.mountpoint) {
        MountpointState::Ready => {}
        MountpointState::Missing => {
            return Err(format!(
                "mountpoint {} does not exist (create it with mkdir)",
                req.mountpoint.display()
            ));
        }
        MountpointState::NotADirectory => {
            return Err(format!(
                "mountpoint {} is not a directory",
                req.mountpoint.display()
            ));
        }
        MountpointState::AlreadyMounted => {
            return Err(format!(
                "{} is already a mount point; unmount it first (`novelfs unmount {}`)",
                req.mountpoint.display(),
                req.mountpoint.display()
            ));
        }
        MountpointState::Stale if req.force => {
            unmount(&req.mountpoint, true)?;
            if mountpoint_state(&req.mountpoint) != MountpointState::Ready {
                return Err(stale_message(&req.mountpoint));
            }
        }
        MountpointState::Stale => return Err(stale_message(&req.mountpoint)),
    }
    if !Path::new("/dev/fuse").exists() {
        return Err("/dev/fuse is missing: load the fuse kernel module (modprobe fuse) or, in a container, pass the device (--device /dev/fuse)".into());
    }
    Ok(())
}

fn fuser_config(o: &MountOptions, threads: usize) -> Config {
    let mut cfg = Config::default();
    let mut opts = vec![
        MountOption::RO,
        MountOption::NoAtime,
        MountOption::FSName(o.fsname.clone().unwrap_or_else(|| "novelfs".into())),
        MountOption::Subtype(o.subtype.clone().unwrap_or_else(|| "novelfs".into())),
    ];
    if o.default_permissions {
        opts.push(MountOption::DefaultPermissions);
    }
    cfg.acl = if o.allow_other {
        SessionACL::All
    } else if o.allow_root {
        SessionACL::RootAndOwner
    } else {
        SessionACL::Owner
    };
    if o.auto_unmount {
        if which("fusermount3").is_some() || which("fusermount").is_some() {
            if cfg.acl == SessionACL::Owner {
                cfg.acl = SessionACL::RootAndOwner;
            }
            opts.push(MountOption::AutoUnmount);
        } else {
            log::warn!(
                "auto_unmount needs fusermount3 (package fuse3); without it novelfs unmounts itself on SIGINT/SIGTERM only"
            );
        }
    }
    cfg.mount_options = opts;
    cfg.n_threads = Some(threads.max(1));
    cfg.clone_fd = threads > 1;
    cfg
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

fn block_termination_signals() -> libc::sigset_t {
    // SAFETY: plain libc signal-set manipulation on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Mounts and serves until unmounted. Returns the process exit code.
/// Without `foreground`, the calling process returns as soon as the mount
/// is ready (or failed), and a detached child serves it.
pub fn run(req: MountRequest) -> i32 {
    let mut req = req;
    req.mountpoint = absolute(&req.mountpoint);
    if let Err(msg) = preflight(&req) {
        eprintln!("novelfs: {msg}");
        return 1;
    }
    let options = match parse_options(&req.options) {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("novelfs: {msg}");
            return 1;
        }
    };
    let mut library = match Library::open(&req.root) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("novelfs: cannot open library {}: {e}", req.root.display());
            return 1;
        }
    };
    if let Some(max) = req.max_chapter_bytes {
        library.max_chapter_bytes = max;
    }
    let ttl = req.ttl.or(options.ttl).unwrap_or(1.0);
    let config = FsConfig {
        ttl: Duration::from_secs_f64(ttl),
        state_file: req.state_file.as_deref().map(absolute),
        cache_bytes: req.cache_size.unwrap_or(256 << 20) as usize,
        watch: !(req.no_watch || options.no_watch),
    };

    let mut ready_pipe: Option<OwnedFd> = None;
    if !req.foreground {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid 2-element array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            eprintln!("novelfs: pipe: {}", std::io::Error::last_os_error());
            return 1;
        }
        // SAFETY: both fds were just created and are owned here.
        let (read_end, write_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: no other threads exist yet (the CLI has not started any), so fork is sound.
        match unsafe { libc::fork() } {
            -1 => {
                eprintln!("novelfs: fork: {}", std::io::Error::last_os_error());
                return 1;
            }
            0 => {
                drop(read_end);
                // SAFETY: in the child, detaching from the terminal's session.
                unsafe { libc::setsid() };
                // Do not keep the caller's working directory busy (every
                // path the daemon uses is absolute by now).
                let _ = std::env::set_current_dir("/");
                ready_pipe = Some(write_end);
            }
            _ => {
                drop(write_end);
                let mut report = String::new();
                let _ = std::fs::File::from(read_end).read_to_string(&mut report);
                return match report.strip_prefix("ok") {
                    Some(_) => 0,
                    None => {
                        let msg = if report.is_empty() {
                            "the mount daemon exited before the mount was ready".into()
                        } else {
                            report
                        };
                        eprintln!("novelfs: {msg}");
                        1
                    }
                };
            }
        }
    }

    // Keep the daemon's footprint close to its cache budget: big buffers
    // (decoded chapters, rendered pages) go straight to mmap and back to
    // the system when freed, and few arenas hold on to freed memory.
    // SAFETY: mallopt only tunes glibc's allocator; called before any thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, super::cache::MMAP_THRESHOLD as i32);
    }
    let signals = block_termination_signals();
    let fs = Arc::new(NovelFs::new(library, config));
    let cfg = fuser_config(&options, req.threads);
    let session = fuser::Session::new(FuseAdapter::new(fs.clone()), &req.mountpoint, &cfg);
    let mut session = match session {
        Ok(s) => s,
        Err(e) => {
            let msg = match e.raw_os_error() {
                Some(libc::EPERM) | Some(libc::EACCES) => {
                    format!(
                        "cannot mount {}: permission denied ({e}); run as root or install fuse3 (fusermount3)",
                        req.mountpoint.display()
                    )
                }
                _ => format!("cannot mount {}: {e}", req.mountpoint.display()),
            };
            match ready_pipe {
                Some(fd) => {
                    let _ = std::fs::File::from(fd).write_all(msg.as_bytes());
                }
                None => eprintln!("novelfs: {msg}"),
            }
            return 1;
        }
    };
    log::info!(
        "mounted {} at {}",
        req.root.display(),
        req.mountpoint.display()
    );
    if let Some(fd) = ready_pipe {
        let _ = std::fs::File::from(fd).write_all(b"ok");
        detach_stdio();
    }

    if fs.watch().is_some() {
        let notifier = session.notifier();
        std::thread::spawn(move || push_changes(&fs, &notifier));
    } else {
        drop(fs);
    }
    let mut unmounter = session.unmount_callable();
    let mountpoint = req.mountpoint.clone();
    std::thread::spawn(move || {
        let mut sig = 0;
        // SAFETY: waiting on the set blocked above; sig is a valid out pointer.
        unsafe { libc::sigwait(&signals, &mut sig) };
        log::info!("signal {sig}: unmounting {}", mountpoint.display());
        if unmounter.unmount().is_err() {
            // Busy: detach now; the kernel finishes once open files close.
            let _ = unmount(&mountpoint, true);
        }
    });
    match session.run() {
        Ok(()) => 0,
        Err(e) => {
            log::error!("session ended with an error: {e}");
            1
        }
    }
}

/// Tells the kernel what to drop whenever the watch reports a change, and
/// looks at the switch file every TTL (at most every second).
fn push_changes(fs: &NovelFs, notifier: &fuser::Notifier) {
    let Some(watch) = fs.watch() else { return };
    let poll = fs
        .ttl()
        .clamp(Duration::from_millis(10), Duration::from_secs(1));
    fs.switch_flipped();
    loop {
        let mut changes = watch.wait(poll);
        if fs.switch_flipped() {
            changes.push(Change::All);
        }
        if !watch.covers_root() && watch.watch_novels() {
            changes.push(Change::All);
        }
        if changes.is_empty() {
            continue;
        }
        log::debug!("changes: {changes:?}");
        for inv in fs.invalidations(&changes) {
            let sent = match &inv {
                Invalidation::Entry { parent, name } => {
                    notifier.inval_entry(INodeNo(*parent), name)
                }
                Invalidation::Inode(ino) => notifier.inval_inode(INodeNo(*ino), 0, 0),
            };
            match sent {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EBADF | libc::ENODEV | libc::ENOTCONN)
                    ) =>
                {
                    return;
                }
                Err(e) => log::warn!("cannot invalidate {inv:?}: {e}"),
            }
        }
    }
}

fn detach_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        use std::os::fd::AsRawFd;
        for fd in 0..=2 {
            // SAFETY: duplicating a valid fd onto the standard descriptors.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(s: &str) -> Result<MountOptions, String> {
        parse_options(&[s.to_string()])
    }

    #[test]
    fn fstab_options() {
        let o = opts(
            "ro,allow_other,ttl=0.5,fsname=lib,noatime,nodev,nosuid,_netdev,x-systemd.automount",
        )
        .unwrap();
        assert!(!o.no_watch);
        assert!(opts("nowatch").unwrap().no_watch);
        assert!(o.allow_other);
        assert_eq!(o.ttl, Some(0.5));
        assert_eq!(o.fsname.as_deref(), Some("lib"));
        assert!(opts("rw").unwrap_err().contains("read-only"));
        assert!(opts("bogus").unwrap_err().contains("unknown"));
        assert!(opts("allow_other,allow_root").is_err());
        assert!(opts("ttl=-1").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("").is_err());
    }

    #[test]
    fn mount_points_are_written_as_mountinfo_writes_them() {
        assert_eq!(
            absolute(Path::new("/mnt/novels/")),
            Path::new("/mnt/novels")
        );
        assert_eq!(
            absolute(Path::new("/mnt//./novels/.")),
            Path::new("/mnt/novels")
        );
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(absolute(Path::new("mnt/")), cwd.join("mnt"));
    }

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape_mountinfo(r"/tmp/a\040b"), b"/tmp/a b");
    }
}
