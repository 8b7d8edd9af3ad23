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

#[test]
fn a_user_who_is_not_root_mounts_reads_and_unmounts() {
    let Some(setup) = user_mounts() else {
        return;
    };
    let ws = &setup.ws;
    let (owner, third) = (setup.machine.owner, setup.machine.third);
    let mnt = ws.mountpoint("mnt", owner);
    let m = ws.mount(owner, &mnt, &[]);
    let (fstype, source, options) = mountinfo(&mnt);
    assert_eq!(fstype, "fuse.novelfs");
    assert_eq!(source, ws.lib.to_str().unwrap());
    assert!(
        options.contains(&format!("user_id={}", owner.uid)),
        "{options}"
    );
    assert!(!options.contains("allow_other"), "{options}");

    let page = page_in(&mnt);
    assert_eq!(reads(owner, &mnt, &page).unwrap(), expected_page(ws));
    // Without allow_other the kernel lets in the mounting user only: not a
    // third user, and not root either.
    assert_refused(third, &mnt, &page, "on a private user mount");
    assert_refused(ROOT, &mnt, &page, "on a private user mount");

    let out = ws.novelfs(owner).arg("unmount").arg(&mnt).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!crate::common::is_mounted(&mnt));
    let again = ws.novelfs(owner).arg("unmount").arg(&mnt).output().unwrap();
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(
        !again.status.success() && said.contains("is not a mount point"),
        "{said}"
    );
    drop(m);
}

#[test]
fn errors_for_a_user_who_is_not_root_say_what_is_missing() {
    if !prerequisites() {
        return;
    }
    let machine = Machine::take();
    let owner = machine.owner;
    let ws = workspace();
    let mnt = ws.mountpoint("mnt", owner);
    let mount = |args: &[&str]| {
        let out = ws
            .novelfs(owner)
            .arg("mount")
            .arg(&ws.lib)
            .arg(&mnt)
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "mounted with {args:?}");
        assert!(!crate::common::is_mounted(&mnt));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    {
        let _system = SystemSetting::new(&machine, 0o600, false);
        let said = mount(&[]);
        assert!(
            said.contains("no read/write access to /dev/fuse")
                && said.contains("mode 0600")
                && said.contains("0666"),
            "{said}"
        );
    }
    {
        let _system = SystemSetting::new(&machine, 0o666, false);
        for opt in ["allow_other", "allow_root"] {
            let said = mount(&["-o", opt]);
            assert!(said.contains("user_allow_other"), "{opt}: {said}");
        }
    }
    let plain = ws.mountpoint("plain", owner);
    let out = ws
        .novelfs(owner)
        .arg("unmount")
        .arg(&plain)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("is not a mount point"), "{said}");
}

/// allow_root: exactly the owner and root read; a third user is refused
/// before and after root and the owner have read (and cached) the pages.
#[test]
fn allow_root_lets_in_exactly_the_owner_and_root() {
    if !prerequisites() {
        return;
    }
    let machine = Machine::take();
    let (test_user, third) = (machine.owner, machine.third);
    let _system = SystemSetting::new(&machine, 0o666, true);
    let ws = workspace();
    let want = expected_page(&ws);
    for (name, owner) in [("by-root", ROOT), ("by-user", test_user)] {
        let mnt = ws.mountpoint(name, owner);
        let _m = ws.mount(owner, &mnt, &["-o", "allow_root"]);
        let (fstype, _, options) = mountinfo(&mnt);
        assert_eq!(fstype, "fuse.novelfs");
        assert!(options.contains("default_permissions"), "{options}");
        let page = page_in(&mnt);
        assert_refused(third, &mnt, &page, &format!("({name}) before anyone read"));
        for reader in [ROOT, owner] {
            assert_eq!(reads(reader, &mnt, &page).unwrap(), want, "{name}");
            let walk = run(reader, "ls", &[&mnt.join("西游记").join("1")]);
            assert!(walk.status.success());
        }
        let meta = std::fs::metadata(&page).unwrap();
        assert_eq!(
            (meta.mode() & 0o7777, meta.uid()),
            (0o400, owner.uid),
            "{name}"
        );
        let dir = std::fs::metadata(&mnt).unwrap();
        assert_eq!((dir.mode() & 0o7777, dir.uid()), (0o500, owner.uid));
        assert_refused(
            third,
            &mnt,
            &page,
            &format!("({name}) after root and the owner read"),
        );
    }
}

/// auto_unmount adds no access (no allow_other, so no user_allow_other is
/// needed either), and a killed daemon's mount goes away.
#[test]
fn auto_unmount_alone_keeps_the_mount_private_and_cleans_up_after_a_kill() {
    if !prerequisites() {
        return;
    }
    let machine = Machine::take();
    let (test_user, third) = (machine.owner, machine.third);
    let _system = SystemSetting::new(&machine, 0o666, false);
    let ws = workspace();
    let want = expected_page(&ws);
    for (name, owner) in [("by-root", ROOT), ("by-user", test_user)] {
        let mnt = ws.mountpoint(name, owner);
        let mut m = ws.mount_foreground(owner, &mnt, &["-o", "auto_unmount"]);
        let (_, _, options) = mountinfo(&mnt);
        assert!(!options.contains("allow_other"), "{name}: {options}");
        let page = page_in(&mnt);
        assert_eq!(reads(owner, &mnt, &page).unwrap(), want);
        assert_refused(third, &mnt, &page, &format!("({name}) with auto_unmount"));
        if owner != ROOT {
            assert_refused(ROOT, &mnt, &page, &format!("({name}) with auto_unmount"));
        }
        let mut daemon = m.child.take().unwrap();
        daemon.kill().unwrap();
        daemon.wait().unwrap();
        assert!(
            wait_unmounted(&mnt),
            "{name}: the mount outlived its killed daemon"
        );
    }
}

/// allow_other: every user reads, and the modes say so (0444/0555).
#[test]
fn allow_other_lets_every_user_read() {
    if !prerequisites() {
        return;
    }
    let machine = Machine::take();
    let (test_user, third) = (machine.owner, machine.third);
    let _system = SystemSetting::new(&machine, 0o666, true);
    let ws = workspace();
    let want = expected_page(&ws);
    for (name, owner) in [("by-root", ROOT), ("by-user", test_user)] {
        let mnt = ws.mountpoint(name, owner);
        let _m = ws.mount(owner, &mnt, &["-o", "allow_other"]);
        let page = page_in(&mnt);
        for reader in [third, owner, ROOT] {
            assert_eq!(reads(reader, &mnt, &page).unwrap(), want, "{name}");
        }
        let meta = std::fs::metadata(&page).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o444);
        assert_eq!(std::fs::metadata(&mnt).unwrap().mode() & 0o7777, 0o555);
    }
}

/// Root mounts show as sshfs's do: `fuse.novelfs`, the library as source;
/// fsname= and subtype= replace them.
#[test]
fn root_mounts_name_their_type_and_library() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        crate::common::skip("mounting as root needs root");
        return;
    }
    let ws = workspace();
    let mnt = ws.mountpoint("plain", ROOT);
    let _m = ws.mount(ROOT, &mnt, &[]);
    let (fstype, source, options) = mountinfo(&mnt);
    assert_eq!(
        (fstype.as_str(), source.as_str()),
        ("fuse.novelfs", ws.lib.to_str().unwrap())
    );
    assert!(!options.contains("allow_other"), "{options}");
    let named = ws.mountpoint("named", ROOT);
    let _n = ws.mount(ROOT, &named, &["-o", "fsname=books,subtype=novels2"]);
    let (fstype, source, _) = mountinfo(&named);
    assert_eq!(
        (fstype.as_str(), source.as_str()),
        ("fuse.novels2", "books")
    );
    // With a path root the source is that root, as the pages write it
    // (a sandbox given only the mount sees no host path); fsname= wins.
    for (args, want) in [
        (&["--path-root", "/library"][..], "/library"),
        (&["-o", "path_root=/library/"], "/library"),
        (&["--path-root", "/library", "-o", "fsname=books"], "books"),
    ] {
        let rooted = ws.mountpoint("rooted", ROOT);
        let m = ws.mount(ROOT, &rooted, args);
        let (fstype, source, _) = mountinfo(&rooted);
        assert_eq!(
            (fstype.as_str(), source.as_str()),
            ("fuse.novelfs", want),
            "{args:?}"
        );
        let page = std::fs::read_to_string(page_in(&rooted)).unwrap();
        assert!(page.starts_with("<path>/library/"), "{args:?}: {page}");
        drop(m);
        std::fs::remove_dir(&rooted).unwrap();
    }
    let listed = Command::new("findmnt")
        .args(["-n", "-o", "TARGET", "-t", "fuse.novelfs"])
        .output();
    if let Ok(out) = listed {
        let targets = String::from_utf8_lossy(&out.stdout);
        assert!(
            targets.lines().any(|l| Path::new(l.trim()) == mnt),
            "findmnt -t fuse.novelfs: {targets}"
        );
    }
}

/// A user who is not root mounts a bucket with a named profile of their
/// own shared files (`~/.aws/credentials` and `~/.aws/config` in their
/// home, nothing in the environment), reads it, and unmounts it: every
/// request is signed with that profile's key, the mount is private to them
/// like any user mount, and the key's secret shows in neither mountinfo
/// nor the daemon's arguments. A profile the files lack is one line naming
/// it, exit 1, nothing mounted, no request made.
#[test]
fn a_user_who_is_not_root_mounts_a_bucket_with_a_profile_of_their_own() {
    let Some(setup) = user_mounts() else {
        return;
    };
    let ws = &setup.ws;
    let (owner, third) = (setup.machine.owner, setup.machine.third);
    let Some(bucket) = crate::common::bucket::Bucket::with(&ws.lib) else {
        return;
    };
    const KEY_ID: &str = "AKIDREADERNOVELFS";
    const SECRET: &str = "reader-secret-of-the-profile";
    let home = ws.dir.path().join("home-of-owner");
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(
        home.join(".aws/credentials"),
        format!("[reader]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n"),
    )
    .unwrap();
    std::fs::write(
        home.join(".aws/config"),
        "[profile reader]\nregion = us-east-1\n",
    )
    .unwrap();
    for p in [
        home.clone(),
        home.join(".aws"),
        home.join(".aws/credentials"),
        home.join(".aws/config"),
    ] {
        std::os::unix::fs::chown(&p, Some(owner.uid), Some(owner.gid)).unwrap();
    }
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let endpoint = bucket.server.endpoint();
    let mount = |mnt: &Path, profile: &str| {
        let mut cmd = ws.novelfs(owner);
        for name in [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_PROFILE",
            "AWS_REGION",
            "AWS_DEFAULT_REGION",
            "AWS_SHARED_CREDENTIALS_FILE",
            "AWS_CONFIG_FILE",
            "XDG_CACHE_HOME",
        ] {
            cmd.env_remove(name);
        }
        cmd.env("HOME", &home)
            .arg("mount")
            .arg(bucket.url())
            .arg(mnt)
            .args(["--endpoint-url", &endpoint, "--profile", profile])
            .args([
                "--path-root",
                "/library",
                "--state-file",
                "/nonexistent/s.json",
            ])
            .output()
            .unwrap()
    };

    let missing = ws.mountpoint("missing", owner);
    bucket.server.reset_counts();
    let out = mount(&missing, "absent");
    // Detached at the end should it have mounted after all.
    let _missing = Mounted {
        path: missing.clone(),
        child: None,
    };
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("absent"), "{out:?}");
    assert_eq!(said.trim_end().lines().count(), 1, "one line: {said}");
    assert!(!crate::common::is_mounted(&missing));
    assert!(bucket.server.log().is_empty(), "no request without keys");

    let mnt = ws.mountpoint("mnt", owner);
    let out = mount(&mnt, "reader");
    assert!(out.status.success(), "{out:?}");
    let _m = Mounted {
        path: mnt.clone(),
        child: None,
    };
    let (fstype, _, options) = mountinfo(&mnt);
    assert_eq!(fstype, "fuse.novelfs");
    assert!(
        options.contains(&format!("user_id={}", owner.uid)),
        "{options}"
    );
    let page = page_in(&mnt);
    let want = ws
        .novelfs(ROOT)
        .args(["read", "--root"])
        .arg(&ws.lib)
        .args([
            "--path-root",
            "/library",
            "--state-file",
            "/nonexistent/s.json",
            "唐诗选",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(reads(owner, &mnt, &page).unwrap(), want.stdout);
    assert_refused(third, &mnt, &page, "on a private bucket mount");
    assert_refused(ROOT, &mnt, &page, "on a private bucket mount");
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!info.contains(SECRET), "{info}");
    let daemon = Command::new("pgrep")
        .args(["-u", &owner.uid.to_string(), "-f", "novelfs mount"])
        .output()
        .unwrap();
    for pid in String::from_utf8_lossy(&daemon.stdout).split_whitespace() {
        let args = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&args).contains(SECRET));
    }
    let log = bucket.server.log();
    assert!(!log.is_empty());
    for r in &log {
        assert_eq!(r.key_id, KEY_ID, "signed with the profile's key: {r:?}");
    }

    let out = ws.novelfs(owner).arg("unmount").arg(&mnt).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(wait_unmounted(&mnt));
}
