//! `novelfs mount` as a process: the checks that give a clear reason
//! instead of a cryptic failure, daemonizing with a readiness report to the
//! waiting CLI, and the allocator settings the daemon runs with.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::FsConfig;
use super::access::Access;
use super::attach::Watchdog;
use super::mountpoint::{MountpointState, absolute, mountpoint_state, stale_message, unmount};
use super::options::parse_options;
use super::session::{SessionPlan, serve};
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
    /// Written in pages instead of the library's canonical root.
    pub path_root: Option<String>,
    pub cache_size: Option<u64>,
    pub max_chapter_bytes: Option<u64>,
    pub threads: usize,
    pub force: bool,
    /// Do not watch the library: changes show after the TTL only.
    pub no_watch: bool,
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
        return Err(super::attach::missing_dev_fuse());
    }
    Ok(())
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
    if let Some(root) = req.path_root.as_ref().or(options.path_root.as_ref()) {
        library = match library.with_path_root(root) {
            Ok(l) => l,
            Err(msg) => {
                eprintln!("novelfs: {msg}");
                return 1;
            }
        };
    }
    // The kernel compares resolved paths (mountinfo, fusermount3); the
    // preflight has just stat'ed this one, so resolving it cannot hang.
    let mountpoint = std::fs::canonicalize(&req.mountpoint).unwrap_or(req.mountpoint.clone());
    let access = Access::from_options(options.allow_other, options.allow_root);
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
    // Forked while this process still has one thread.
    let mut watchdog = None;
    if options.auto_unmount {
        match Watchdog::start(&mountpoint) {
            Ok(w) => watchdog = Some(w),
            Err(e) => {
                let msg = format!("auto_unmount: cannot start its watchdog process: {e}");
                report_failure(ready_pipe, &msg);
                return 1;
            }
        }
    }
    let plan = SessionPlan {
        library,
        config,
        options,
        access,
        mountpoint,
        threads: req.threads,
        watchdog,
    };
    serve(plan, |outcome| match outcome {
        Ok(()) => {
            if let Some(fd) = ready_pipe {
                let _ = std::fs::File::from(fd).write_all(b"ok");
                detach_stdio();
            }
        }
        Err(msg) => report_failure(ready_pipe, &msg),
    })
}

/// Tells the waiting CLI (or, in the foreground, stderr) why the mount failed.
fn report_failure(ready_pipe: Option<OwnedFd>, msg: &str) {
    match ready_pipe {
        Some(fd) => {
            let _ = std::fs::File::from(fd).write_all(msg.as_bytes());
        }
        None => eprintln!("novelfs: {msg}"),
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
