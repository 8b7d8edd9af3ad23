//! A test's mount of the real binary: mounting, its daemon and server,
//! its log, unmounting on drop; whether a path is mounted.

use super::*;

/// A mount that asks the daemon about every name (`--ttl 0`) with no
/// switch file, plus `extra` arguments.
pub fn strict_mount(root: &Path, extra: &[&str]) -> Mount {
    let mut args = vec!["--ttl", "0", "--state-file", "/nonexistent/state.json"];
    args.extend_from_slice(extra);
    Mount::new(root, &args)
}

/// A real mount of `novelfs mount -f` in a child process, unmounted on drop
/// even when the test fails.
pub struct Mount {
    pub dir: tempfile::TempDir,
    pub child: Option<std::process::Child>,
}

impl Mount {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Mounts `root` with extra CLI arguments; panics with the daemon's
    /// stderr if it does not become ready.
    pub fn new(root: &Path, extra: &[&str]) -> Mount {
        Mount::with_log(root, extra, "warn")
    }

    /// Like `new`, with `RUST_LOG=log_filter` for the daemon. Its stderr is
    /// piped: a test that asks for much logging must drain it.
    pub fn with_log(root: &Path, extra: &[&str], log_filter: &str) -> Mount {
        Mount::with_env(root, extra, log_filter, &[])
    }

    /// Like `with_log`, with more variables in the daemon's environment.
    pub fn with_env(
        root: &Path,
        extra: &[&str],
        log_filter: &str,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Mount {
        Mount::with_command(root, extra, log_filter, |cmd| {
            cmd.envs(env.iter().copied());
        })
    }

    /// Like `with_log`, with the daemon's command changed by `tweak` first.
    pub fn with_command(
        root: &Path,
        extra: &[&str],
        log_filter: &str,
        tweak: impl FnOnce(&mut std::process::Command),
    ) -> Mount {
        let dir = tempfile::Builder::new()
            .prefix("novelfs-mnt")
            .tempdir()
            .unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_novelfs"));
        cmd.arg("mount")
            .arg(root)
            .arg(dir.path())
            .arg("-f")
            .args(extra)
            // No persistent index unless a test asks for one: a mount
            // must not leave files in the home of whoever runs the tests.
            .args(if extra.iter().any(|a| a.contains("index")) {
                &[][..]
            } else {
                &["--no-index"][..]
            })
            // The classic /dev/fuse loop unless a test asks for io_uring
            // (the kernel switch may be on for one of those meanwhile).
            .args(if extra.contains(&"--io-uring") {
                &[][..]
            } else {
                &["--io-uring", "off"][..]
            })
            .env("RUST_LOG", log_filter)
            .stderr(std::process::Stdio::piped());
        tweak(&mut cmd);
        let child = cmd.spawn().expect("spawn novelfs mount");
        let mut m = Mount {
            dir,
            child: Some(child),
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !is_mounted(m.path()) {
            if let Some(status) = m.child.as_mut().unwrap().try_wait().unwrap() {
                let mut err = String::new();
                use std::io::Read;
                m.child
                    .as_mut()
                    .unwrap()
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .ok();
                m.child = None;
                panic!("novelfs mount exited early ({status}): {err}");
            }
            assert!(
                std::time::Instant::now() < deadline,
                "mount not ready in 20 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        m
    }

    /// Sends SIGTERM and waits for the daemon; returns its exit status.
    pub fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                return Some(s);
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                return child.wait().ok();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        self.terminate();
        if is_mounted(self.path()) {
            let c = std::ffi::CString::new(self.path().as_os_str().as_encoded_bytes()).unwrap();
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
    }
}

/// Whether `path` is listed in /proc/self/mountinfo.
pub fn is_mounted(path: &Path) -> bool {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = path.to_str().unwrap().replace(' ', "\\040");
    info.lines()
        .any(|l| l.split(' ').nth(4) == Some(want.as_str()))
}

/// `(VmRSS, VmHWM)` of a process in KiB, from /proc/<pid>/status.
pub fn rss_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

impl Mount {
    /// The daemon's pid (the `-f` child serves the mount itself).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("daemon running").id()
    }

    /// The process that serves the requests: the holder's child named
    /// `novelfs-server` when the mount has a holder (failover, on by
    /// default), else the daemon itself. What a test measures the memory
    /// or CPU time of.
    pub fn server_pid(&self) -> u32 {
        server_of(self.pid()).unwrap_or(self.pid())
    }

    /// SIGKILLs the daemon as a user or systemd would, and waits until it
    /// and its server are gone: the mount then has no process left (with a
    /// holder, the server gets SIGKILL as the holder ends and is gone a
    /// moment after it; a kernel connection ends with its last process).
    pub fn kill_daemon(&mut self) {
        let left = descendants(self.pid());
        let mut child = self.child.take().expect("daemon running");
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        child.wait().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        for pid in left {
            // Gone, or a zombie not yet reaped by its new parent whose
            // threads have all ended (a zombie leader's process lives on
            // while any other thread of it does, its descriptors too).
            let running = || {
                let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map(|s| s.rsplit(") ").next().is_some_and(|r| r.starts_with('Z')));
                let threads = std::fs::read_dir(format!("/proc/{pid}/task"))
                    .map(|t| t.count())
                    .unwrap_or(0);
                zombie.is_ok_and(|z| !z || threads > 1)
            };
            while running() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{pid}, started by the daemon, outlives it"
                );
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }

    /// The daemon has not exited and the mount still answers a listing.
    pub fn alive(&mut self) -> bool {
        let running = self
            .child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none());
        running && std::fs::read_dir(self.path()).is_ok()
    }
}

/// The server's pid: the holder's live child named `novelfs-server`.
pub fn server_of(holder: u32) -> Option<u32> {
    let children =
        std::fs::read_to_string(format!("/proc/{holder}/task/{holder}/children")).ok()?;
    children
        .split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
        .find(|p| {
            let alive = std::fs::read_to_string(format!("/proc/{p}/stat"))
                .is_ok_and(|s| s.rsplit(") ").next().is_some_and(|r| !r.starts_with('Z')));
            alive
                && std::fs::read_to_string(format!("/proc/{p}/comm"))
                    .is_ok_and(|c| c.trim() == "novelfs-server")
        })
}

/// Every process below `pid` (children of any of its threads, theirs, …):
/// whatever may hold the mount's connection beside it, whatever its name
/// is yet (a server exec'd a moment ago is still called `exe`).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut look = vec![pid];
    while let Some(p) = look.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for c in children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                found.push(c);
                look.push(c);
            }
        }
    }
    found
}
