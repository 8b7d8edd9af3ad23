//! The machine-wide state some tests change: `/dev/fuse`'s mode,
//! `/etc/fuse.conf`, the FUSE over io_uring switch and the test users.
//! Every change is made under one lock, an flock on `LOCK_FILE`, so that
//! two test threads, two test binaries and two checkouts' test runs (and
//! `scripts/bench.sh`) never see each other's changes; each change is set
//! back by a guard's `Drop`, also when the test fails.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;

/// The lock's file: in /run/lock (a tmpfs every process shares, made
/// for such locks), else /tmp.
pub fn lock_file() -> &'static str {
    if Path::new("/run/lock").is_dir() {
        "/run/lock/novelfs-tests.lock"
    } else {
        "/tmp/novelfs-tests.lock"
    }
}

/// The lock, held until dropped. flock locks belong to an open file, so a
/// second holder in this same process waits as one in another process
/// does; a holder must not ask for it again while it holds it.
pub struct MachineLock {
    _file: std::fs::File,
}

impl MachineLock {
    pub fn take() -> MachineLock {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(lock_file())
            .expect("open the tests' lock file");
        // SAFETY: flock on a file this function holds open; the lock goes
        // when the file is closed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        assert_eq!(rc, 0, "flock {}", lock_file());
        MachineLock { _file: file }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct User {
    pub uid: u32,
    pub gid: u32,
}

fn id(name: &str, flag: &str) -> Option<u32> {
    Command::new("id")
        .arg(flag)
        .arg(name)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
}

/// System users a test needs, made while the machine lock is held (the
/// caller's); those this guard made are removed when it drops, and those
/// that already existed are left as they were.
pub struct TestUsers {
    made: Vec<String>,
}

impl TestUsers {
    /// Makes each user of `names` that is missing; `_lock` shows the
    /// caller holds the machine lock.
    pub fn ensure(_lock: &MachineLock, names: &[&str]) -> (TestUsers, Vec<User>) {
        let mut guard = TestUsers { made: Vec::new() };
        let mut users = Vec::new();
        for name in names {
            if id(name, "-u").is_none() {
                let out = Command::new("useradd")
                    .args(["--system", "--user-group", "--no-create-home"])
                    .args(["--shell", "/usr/sbin/nologin", name])
                    .output()
                    .expect("useradd runs");
                // Made by this guard only when useradd made it: a user made
                // meanwhile by something that does not take the lock (a
                // suite of another version) is that one's to remove.
                if out.status.success() {
                    guard.made.push(name.to_string());
                }
                assert!(
                    id(name, "-u").is_some(),
                    "useradd {name}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            users.push(User {
                uid: id(name, "-u").unwrap(),
                gid: id(name, "-g").unwrap(),
            });
        }
        (guard, users)
    }
}

impl Drop for TestUsers {
    fn drop(&mut self) {
        for name in &self.made {
            // A daemon the user ran may still be ending after its unmount
            // (userdel refuses a user with processes); after 10 s, -f.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            loop {
                let removed = Command::new("userdel")
                    .arg(name)
                    .output()
                    .is_ok_and(|o| o.status.success());
                if removed || id(name, "-u").is_none() {
                    break;
                }
                if std::time::Instant::now() > deadline {
                    let _ = Command::new("userdel").args(["-f", name]).output();
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    }
}
