//! Who can read a mount, with real users: an unprivileged user mounts
//! through fusermount3, a third user tries to read, root reads first to fill
//! the kernel's caches. Every refusal here comes from the kernel, since
//! cached names and pages never reach the daemon.
//!
//! Needs root (to create the users `novelfs-test` and `novelfs-other` and
//! to switch to them) and fusermount3 (package fuse3); skips with a message
//! otherwise. Each test holds the machine lock (`common::machine`) from
//! start to end: it makes the users it lacks and removes them at its end,
//! and changes /dev/fuse's mode and /etc/fuse.conf, set back on drop.
//!
//! A module per way of mounting: `mounting` (a user's mount, its errors,
//! how root mounts name themselves), `options` (allow_root, auto_unmount,
//! allow_other), `bucket_profile` (a user's bucket mount with a profile);
//! this file holds the machine, the users and the workspace they share.

mod bucket_profile;
mod mounting;
mod options;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::machine::{MachineLock, TestUsers, User};

const OWNER: &str = "novelfs-test";
const THIRD: &str = "novelfs-other";

const ROOT: User = User { uid: 0, gid: 0 };

fn prerequisites() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        crate::common::skip("the access tests need root (to create and become test users)");
        return false;
    }
    if novelfs::mount::fusermount::fusermount().is_none() {
        crate::common::skip("fusermount3 is missing (install the package fuse3; .ci/run does)");
        return false;
    }
    true
}

/// What a test of this file holds from start to end: the machine lock
/// (these tests change /dev/fuse and /etc/fuse.conf, and need the test
/// users as they are), and the test users, removed when it ends if it
/// made them. Fields drop in order: the users go before the lock.
struct Machine {
    owner: User,
    third: User,
    _users: TestUsers,
    lock: MachineLock,
}

impl Machine {
    fn take() -> Machine {
        let lock = MachineLock::take();
        let (users, ids) = TestUsers::ensure(&lock, &[OWNER, THIRD]);
        Machine {
            owner: ids[0],
            third: ids[1],
            _users: users,
            lock,
        }
    }
}

/// /dev/fuse and /etc/fuse.conf as a test needs them; restored on drop.
struct SystemSetting {
    dev_fuse_mode: u32,
    fuse_conf: Option<Vec<u8>>,
}

const FUSE_CONF: &str = "/etc/fuse.conf";

impl SystemSetting {
    /// `dev_fuse_mode` 0o666 is what distributions ship (fusermount3 opens
    /// the device as the calling user); `user_allow_other` decides whether
    /// a user may mount with allow_other/allow_root. `machine` shows the
    /// caller holds the machine lock.
    fn new(machine: &Machine, dev_fuse_mode: u32, user_allow_other: bool) -> SystemSetting {
        let _held = &machine.lock;
        let old_mode = std::fs::metadata("/dev/fuse").unwrap().mode() & 0o7777;
        let old_conf = std::fs::read(FUSE_CONF).ok();
        let setting = SystemSetting {
            dev_fuse_mode: old_mode,
            fuse_conf: old_conf.clone(),
        };
        std::fs::set_permissions("/dev/fuse", std::fs::Permissions::from_mode(dev_fuse_mode))
            .unwrap();
        let kept: String = String::from_utf8_lossy(&old_conf.unwrap_or_default())
            .lines()
            .filter(|l| l.trim() != "user_allow_other")
            .map(|l| format!("{l}\n"))
            .collect();
        let conf = if user_allow_other {
            kept + "user_allow_other\n"
        } else {
            kept
        };
        std::fs::write(FUSE_CONF, conf).unwrap();
        setting
    }
}

impl Drop for SystemSetting {
    fn drop(&mut self) {
        let _ = std::fs::set_permissions(
            "/dev/fuse",
            std::fs::Permissions::from_mode(self.dev_fuse_mode),
        );
        match &self.fuse_conf {
            Some(bytes) => {
                let _ = std::fs::write(FUSE_CONF, bytes);
            }
            None => {
                let _ = std::fs::remove_file(FUSE_CONF);
            }
        }
    }
}

/// A directory every test user can reach: the sample library, a copy of
/// the binary, and mountpoints owned by whoever mounts.
struct Workspace {
    dir: tempfile::TempDir,
    lib: PathBuf,
    bin: PathBuf,
}

/// What a test of a private user mount holds: /dev/fuse open to users
/// and no `user_allow_other`, the sample library's workspace, and the
/// machine (its lock let go last, the fields dropping in order).
struct UserMounts {
    _system: SystemSetting,
    ws: Workspace,
    machine: Machine,
}

fn user_mounts() -> Option<UserMounts> {
    if !prerequisites() {
        return None;
    }
    let machine = Machine::take();
    Some(UserMounts {
        _system: SystemSetting::new(&machine, 0o666, false),
        ws: workspace(),
        machine,
    })
}

fn workspace() -> Workspace {
    let dir = tempfile::Builder::new()
        .prefix("novelfs-access")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let lib = dir.path().join("lib");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/library");
    assert!(
        Command::new("cp")
            .arg("-r")
            .arg(&sample)
            .arg(&lib)
            .status()
            .unwrap()
            .success()
    );
    assert!(
        Command::new("chmod")
            .args(["-R", "a+rX"])
            .arg(&lib)
            .status()
            .unwrap()
            .success()
    );
    // Copied by cp, not here: a file this process holds open for writing
    // can leak into a child another test thread forks at that moment, and
    // exec then fails with ETXTBSY.
    let bin = dir.path().join("novelfs");
    assert!(
        Command::new("cp")
            .arg(env!("CARGO_BIN_EXE_novelfs"))
            .arg(&bin)
            .status()
            .unwrap()
            .success()
    );
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let lib = std::fs::canonicalize(lib).unwrap();
    Workspace { dir, lib, bin }
}

impl Workspace {
    fn mountpoint(&self, name: &str, owner: User) -> PathBuf {
        let mnt = self.dir.path().join(name);
        std::fs::create_dir(&mnt).unwrap();
        std::os::unix::fs::chown(&mnt, Some(owner.uid), Some(owner.gid)).unwrap();
        std::fs::canonicalize(mnt).unwrap()
    }

    fn novelfs(&self, user: User) -> Command {
        as_user(user, &self.bin)
    }

    /// `novelfs mount LIB MNT ARGS` as `owner`, returning once mounted.
    fn mount(&self, owner: User, mnt: &Path, args: &[&str]) -> Mounted {
        let out = self
            .novelfs(owner)
            .arg("mount")
            .arg(&self.lib)
            .arg(mnt)
            .args(["--state-file", "/nonexistent/state.json"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mount {args:?} as uid {} failed: {}",
            owner.uid,
            String::from_utf8_lossy(&out.stderr)
        );
        Mounted {
            path: mnt.to_path_buf(),
            child: None,
        }
    }

    /// `novelfs mount -f …` as `owner`, keeping the daemon as a child so that
    /// the test can kill it.
    fn mount_foreground(&self, owner: User, mnt: &Path, args: &[&str]) -> Mounted {
        let child = self
            .novelfs(owner)
            .arg("mount")
            .arg(&self.lib)
            .arg(mnt)
            .arg("-f")
            .args(["--state-file", "/nonexistent/state.json"])
            .args(args)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut m = Mounted {
            path: mnt.to_path_buf(),
            child: Some(child),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !crate::common::is_mounted(mnt) {
            let exited = m.child.as_mut().unwrap().try_wait().unwrap();
            assert!(exited.is_none(), "mount -f {args:?} exited: {exited:?}");
            assert!(Instant::now() < deadline, "mount not ready in 20 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        m
    }
}

/// A mount made by a test; detached by root on drop whatever happened.
struct Mounted {
    path: PathBuf,
    child: Option<std::process::Child>,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if crate::common::is_mounted(&self.path) {
            let c = std::ffi::CString::new(self.path.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: c is a valid path.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn as_user(user: User, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir("/").stdin(Stdio::null());
    if user != ROOT {
        // std drops the supplementary groups too when it switches uid.
        cmd.uid(user.uid).gid(user.gid);
    }
    cmd
}

fn run(user: User, program: &str, args: &[&Path]) -> Output {
    as_user(user, program).args(args).output().unwrap()
}

/// Whether `user` can list `dir` and read `file`; `Err` carries what the
/// tools said.
fn reads(user: User, dir: &Path, file: &Path) -> Result<Vec<u8>, String> {
    let ls = run(user, "ls", &[dir]);
    let cat = run(user, "cat", &[file]);
    if ls.status.success() && cat.status.success() {
        Ok(cat.stdout)
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&ls.stderr),
            String::from_utf8_lossy(&cat.stderr)
        ))
    }
}

/// Asserts that `user` is refused listing and reading, by the kernel's
/// "Permission denied", through every path a cache could answer.
fn assert_refused(user: User, mnt: &Path, page: &Path, when: &str) {
    for args in [
        vec![mnt],
        vec![page.parent().unwrap().parent().unwrap()],
        vec![page.parent().unwrap()],
    ] {
        let out = run(user, "ls", &args);
        assert!(
            !out.status.success()
                && String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
            "uid {} listed {args:?} {when}: {}",
            user.uid,
            String::from_utf8_lossy(&out.stdout)
        );
    }
    for tool in ["cat", "stat"] {
        let out = run(user, tool, &[page]);
        assert!(
            !out.status.success()
                && String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
            "uid {} could {tool} {page:?} {when}: {}",
            user.uid,
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// The mountinfo line of `mnt`: (type, source, super options).
fn mountinfo(mnt: &Path) -> (String, String, String) {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let line = info
        .lines()
        .rfind(|l| l.split(' ').nth(4) == mnt.to_str())
        .unwrap_or_else(|| panic!("{mnt:?} not in mountinfo"));
    let (_, after) = line.split_once(" - ").unwrap();
    let mut f = after.split(' ');
    let fstype = f.next().unwrap().to_string();
    let source = f.next().unwrap().to_string();
    let options = f.next().unwrap().to_string();
    (fstype, source, options)
}

fn page_in(mnt: &Path) -> PathBuf {
    mnt.join("唐诗选").join("1").join("offset-1.txt")
}

/// What `novelfs read` prints for the same page (the mount must match it).
fn expected_page(ws: &Workspace) -> Vec<u8> {
    let out = ws
        .novelfs(ROOT)
        .args(["read", "--root"])
        .arg(&ws.lib)
        .args(["--state-file", "/nonexistent/state.json", "唐诗选", "1"])
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout
}

fn wait_unmounted(mnt: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while crate::common::is_mounted(mnt) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}
