//! A mount's start and end: SIGTERM with reads in flight, the fstab form,
//! a mountpoint refused and why, a killed daemon's stale mount, and what
//! `novelfs unmount` takes down and what it refuses.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::eventually;
use crate::common::{errno, is_mounted};

use super::fs::{small_library, strict};

#[test]
fn sigterm_unmounts_cleanly_even_with_reads_in_flight() {
    require_fuse!();
    let (_g, root) = crate::common::reference_library();
    let mut m = strict(&root);
    let path = m.path().to_path_buf();
    let open = std::fs::File::open(path.join("星河旧梦/31/offset-1.txt")).unwrap();
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let p = path.clone();
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let _ = std::fs::read(p.join("星河旧梦/31/offset-1.json"));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    drop(open);
    let status = m.terminate().expect("daemon was running");
    for r in readers {
        r.join().unwrap();
    }
    assert!(status.success(), "exit status {status}");
    assert!(!is_mounted(&path), "mount left behind");
}

/// `novelfs ROOT MOUNTPOINT -o …` is how mount.fuse3 runs a `fuse.novelfs` fstab line.
#[test]
fn fstab_invocation_form_daemonizes_and_unmounts() {
    require_fuse!();
    let (_g, root) = small_library(&[("第1章 起.md", "a")]);
    let mnt = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg(&root)
        .arg(mnt.path())
        .args(["-o", "ro,allow_other,ttl=0,noatime,nodev,nosuid,_netdev"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(is_mounted(mnt.path()), "ready when the command returns");
    let page = std::fs::read_to_string(mnt.path().join("书/1/offset-1.txt"));
    let un = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("unmount")
        .arg(mnt.path())
        .output()
        .unwrap();
    assert!(page.unwrap().contains("1: a"));
    assert!(
        un.status.success(),
        "{}",
        String::from_utf8_lossy(&un.stderr)
    );
    for _ in 0..100 {
        if !is_mounted(mnt.path()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!is_mounted(mnt.path()));
}

/// A mountpoint another filesystem is mounted on: the refusal names that
/// filesystem and the command that unmounts it, which `novelfs unmount`
/// (novelfs mounts only) is not; --force does not clear it.
#[test]
fn a_mountpoint_holding_another_filesystem_is_refused_naming_it() {
    require_fuse!();
    let (g, root) = small_library(&[("第1章 起.md", "a")]);
    let mnt = g.path().join("tmpfs");
    std::fs::create_dir(&mnt).unwrap();
    let made = Command::new("mount")
        .args(["-t", "tmpfs", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(made.success(), "mount -t tmpfs");
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .args(["mount", "--force"])
        .arg(&root)
        .arg(&mnt)
        .output()
        .unwrap();
    let c = std::ffi::CString::new(mnt.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a path this test mounted.
    unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("(tmpfs, not novelfs") && err.contains(&format!("`umount {}`", mnt.display())),
        "{err}"
    );
    assert!(!err.contains("novelfs unmount"), "{err}");
}

#[test]
fn mount_refuses_with_a_reason() {
    require_fuse!();
    let (g, root) = small_library(&[("第1章 起.md", "a")]);
    let novelfs = |args: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_novelfs"))
            .args(args)
            .output()
            .unwrap()
    };
    let check = |out: std::process::Output, needle: &str| {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(needle),
            "want {needle:?}, got {err:?}"
        );
    };
    let missing = g.path().join("missing");
    check(
        novelfs(&["mount".as_ref(), root.as_os_str(), missing.as_os_str()]),
        "does not exist",
    );
    let file = g.path().join("file");
    std::fs::write(&file, "").unwrap();
    check(
        novelfs(&["mount".as_ref(), root.as_os_str(), file.as_os_str()]),
        "not a directory",
    );
    let mnt = g.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    check(
        novelfs(&["mount".as_ref(), g.path().as_os_str(), mnt.as_os_str()]),
        "no novels/ directory",
    );
    check(
        novelfs(&[
            "mount".as_ref(),
            root.as_os_str(),
            mnt.as_os_str(),
            "-o".as_ref(),
            "rw".as_ref(),
        ]),
        "read-only",
    );
    let m = strict(&root);
    check(
        novelfs(&["mount".as_ref(), root.as_os_str(), m.path().as_os_str()]),
        "already a mount point",
    );
    // The same mount point written another way must not stack a second mount.
    let slash = format!("{}/", m.path().display());
    let dotted = format!("{}/.", m.path().display());
    let link = root.parent().unwrap().join("link-to-mount");
    std::os::unix::fs::symlink(m.path(), &link).unwrap();
    for other in [slash.as_ref(), dotted.as_ref(), link.as_os_str()] {
        check(
            novelfs(&["mount".as_ref(), root.as_os_str(), other]),
            "already a mount point",
        );
    }
    let mounted = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.split(' ').nth(4) == m.path().to_str())
        .count();
    assert_eq!(mounted, 1, "one mount at {}", m.path().display());
}

#[test]
fn a_killed_daemon_leaves_a_stale_mount_that_is_explained_and_cleared() {
    require_fuse!();
    let (_g, root) = small_library(&[("第1章 起.md", "a")]);
    let mut m = strict(&root);
    m.kill_daemon();
    let e = std::fs::metadata(m.path()).unwrap_err();
    assert_eq!(errno(&e), libc::ENOTCONN);
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("mount")
        .arg(&root)
        .arg(m.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("stale") && err.contains("novelfs unmount"),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .args(["mount", "--force", "--ttl", "0"])
        .arg(&root)
        .arg(m.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::read_to_string(m.path().join("书/1/offset-1.txt"))
            .unwrap()
            .contains("1: a")
    );
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("unmount")
        .arg(m.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Mounts `fstype` from `source` at `target` with mount(2), for the tests
/// that need a mount novelfs did not make.
fn mount2(source: &Path, target: &Path, fstype: &str, flags: libc::c_ulong) {
    let c = |p: &std::ffi::OsStr| std::ffi::CString::new(p.as_encoded_bytes()).unwrap();
    let (source, target, fstype) = (
        c(source.as_os_str()),
        c(target.as_os_str()),
        c(fstype.as_ref()),
    );
    // SAFETY: NUL-terminated strings that outlive the call; no data.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "mount: {}", std::io::Error::last_os_error());
}

/// Detaches whatever is mounted at the path on drop, even when a check fails.
struct Detach(PathBuf);

impl Drop for Detach {
    fn drop(&mut self) {
        while is_mounted(&self.0) {
            let c = std::ffi::CString::new(self.0.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a NUL-terminated path.
            if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
                break;
            }
        }
    }
}

fn novelfs_unmount(path: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("unmount")
        .arg(path)
        .output()
        .unwrap()
}

/// `novelfs unmount` takes down novelfs mounts only: a tmpfs, a bind mount
/// and a plain directory are refused with exit 1, naming what is there, and
/// stay as they were.
#[test]
fn unmount_refuses_what_novelfs_did_not_mount() {
    require_fuse!();
    let dir = tempfile::Builder::new()
        .prefix("novelfs-unmount")
        .tempdir()
        .unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let (tmpfs, bind, plain, bound) = (
        base.join("tmpfs"),
        base.join("bind"),
        base.join("plain"),
        base.join("bound"),
    );
    for d in [&tmpfs, &bind, &plain, &bound] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::write(bound.join("kept"), "x").unwrap();
    mount2(Path::new("novelfs-test"), &tmpfs, "tmpfs", 0);
    let _tmpfs = Detach(tmpfs.clone());
    mount2(&bound, &bind, "", libc::MS_BIND);
    let _bind = Detach(bind.clone());
    let bind_type = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .rfind(|l| l.split(' ').nth(4) == bind.to_str())
        .and_then(|l| l.split(" - ").nth(1)?.split(' ').next().map(String::from))
        .unwrap();
    // "an ext4", "an xfs", "a btrfs", "a tmpfs": by the name's sound.
    let article = if bind_type.starts_with(['a', 'e', 'i', 'o', 'u', 'x']) {
        "an"
    } else {
        "a"
    };

    for (path, said) in [
        (
            &tmpfs,
            format!(
                "novelfs: {} is a tmpfs mount, not novelfs; nothing was unmounted\n",
                tmpfs.display()
            ),
        ),
        (
            &bind,
            format!(
                "novelfs: {} is {article} {bind_type} mount, not novelfs; nothing was unmounted\n",
                bind.display()
            ),
        ),
        (
            &plain,
            format!(
                "novelfs: {} is not a mount point; nothing was unmounted\n",
                plain.display()
            ),
        ),
    ] {
        let out = novelfs_unmount(path);
        assert_eq!(out.status.code(), Some(1), "{}", path.display());
        assert_eq!(String::from_utf8_lossy(&out.stderr), said);
        assert!(out.stdout.is_empty());
    }
    assert!(is_mounted(&tmpfs), "the tmpfs is still mounted");
    assert!(is_mounted(&bind), "the bind mount is still mounted");
    assert!(
        bind.join("kept").exists(),
        "the bind mount still shows its files"
    );
}

/// A live novelfs mount and a stale one (its daemon killed with SIGKILL)
/// are both unmounted, also through a path with `.` and a trailing slash.
#[test]
fn unmount_clears_a_live_and_a_stale_novelfs_mount() {
    require_fuse!();
    let (_g, root) = small_library(&[("第1章 起.md", "a")]);
    let mut live = strict(&root);
    let mut stale = strict(&root);
    stale.kill_daemon();
    assert_eq!(
        errno(&std::fs::metadata(stale.path()).unwrap_err()),
        libc::ENOTCONN
    );

    let out = novelfs_unmount(&stale.path().join("./"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!is_mounted(stale.path()));

    let out = novelfs_unmount(live.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eventually("the live mount's daemon exits", || {
        live.child.as_mut().unwrap().try_wait().unwrap()
    });
    assert!(!is_mounted(live.path()));
}
