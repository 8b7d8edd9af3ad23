//! A holder that gave up (its servers crash as they start) through a real
//! mount: the root lists only `ERROR`, which says why, every other request
//! is EIO, nothing hangs, and the mount unmounts; a server that cannot
//! start makes the holder give up with EIO rather than loop.
//!
//! `NOVELFS_TEST_FAILOVER_OFF=error_file` in the tests' environment
//! reaches the mount and makes the holder answer EIO to everything, its
//! root too, to see this test fail without the `ERROR`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{Mount, errno, follow_log, fuse_available, is_mounted, within};
use crate::failover::killed::{
    abort_connection, holder_status, library, mount_whose_restarts_crash, read_uncached, server_of,
};

/// Kills the server of a mount whose next servers crash as they start, and
/// waits for a read to come back with the holder's EIO.
fn given_up(mount: &Mount) {
    let page = mount.path().join("书/第1章.txt/offset-1.txt");
    assert!(
        !read_uncached(&page)
            .expect("the first server serves")
            .is_empty()
    );
    let server = server_of(mount.pid()).expect("a server");
    // SAFETY: a signal to a process of this test's mount.
    unsafe { libc::kill(server as i32, libc::SIGKILL) };
    let mnt = mount.path().to_path_buf();
    let reader = std::thread::spawn(move || read_uncached(&page));
    let deadline = Instant::now() + Duration::from_secs(15);
    while !reader.is_finished() {
        if Instant::now() > deadline {
            abort_connection(&mnt);
            panic!("the read hung: the holder did not give up");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let e = reader
        .join()
        .unwrap()
        .expect_err("no server: the read fails");
    assert_eq!(errno(&e), libc::EIO, "{e}");
}

fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    let path = path.to_path_buf();
    within(10, "a read of the given-up mount", move || {
        std::fs::read(path)
    })
}

#[test]
fn a_holder_that_gave_up_shows_why_in_the_root_error_file() {
    if !fuse_available() {
        return;
    }
    let (_tmp, root) = library(2);
    let mut mount = mount_whose_restarts_crash(&root);
    let log = follow_log(&mut mount);
    let mnt = mount.path().to_path_buf();
    // The kernel keeps the root's listing and `ERROR` as missing, as
    // the server answered them: both must go when the holder gives up.
    let before: Vec<String> = std::fs::read_dir(&mnt)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(before.len() > 1, "{before:?}");
    let missing = std::fs::metadata(mnt.join("ERROR")).unwrap_err();
    assert_eq!(errno(&missing), libc::ENOENT);
    given_up(&mount);

    let error = read(&mnt.join("ERROR")).expect("ERROR can be read");
    let error = String::from_utf8(error).expect("UTF-8");
    println!("ERROR: {error}");
    let reason = error
        .strip_prefix("错误：")
        .and_then(|r| r.strip_suffix('\n'))
        .expect("错误：{reason}\\n");
    assert!(!reason.is_empty() && !reason.contains('\n'), "{error:?}");
    // The same reason is in `novelfs status` and in the log.
    let why = reason.split(": ").nth(1).expect("a reason after the head");
    let status = holder_status(&mnt);
    assert!(
        reason.contains(&status["gave up"]),
        "{status:?} vs {reason:?}"
    );
    assert!(
        log.lock().unwrap().iter().any(|l| l.contains(why)),
        "{why:?} not in the log: {:?}",
        log.lock().unwrap()
    );
    let meta = within(10, "stat ERROR", {
        let p = mnt.join("ERROR");
        move || std::fs::metadata(p)
    })
    .expect("ERROR has attributes");
    assert!(meta.is_file());
    assert_eq!(meta.len(), error.len() as u64);

    // `ls MNT`: only ERROR (the listing the kernel kept is dropped).
    let ls = Command::new("ls").arg(&mnt).output().expect("ls runs");
    assert!(
        ls.status.success(),
        "{}",
        String::from_utf8_lossy(&ls.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&ls.stdout), "ERROR\n");
    let names: Vec<String> = within(10, "a listing", {
        let m = mnt.clone();
        move || {
            std::fs::read_dir(m)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        }
    });
    assert_eq!(names, ["ERROR"]);

    // Anything else is EIO: a name never looked up, a page of a chapter
    // never opened, a name in the root other than ERROR.
    for other in [
        "书/第2章.txt/offset-1.txt",
        "书/第2章.txt",
        "其他",
        "ERROR/x",
    ] {
        let e = read(&mnt.join(other)).expect_err(other);
        let want = if other == "ERROR/x" {
            libc::ENOTDIR
        } else {
            libc::EIO
        };
        assert_eq!(errno(&e), want, "{other}: {e}");
    }
    assert_eq!(server_of(mount.pid()), None, "no server runs");

    // `novelfs unmount` unmounts it, and the holder ends.
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("unmount")
        .arg(&mnt)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "unmount: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!is_mounted(&mnt));
    let holder = mount.child.as_mut().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while holder.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the holder outlives its mount");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_server_that_cannot_start_makes_the_holder_give_up_with_eio() {
    if !fuse_available() {
        return;
    }
    let (_tmp, root) = library(2);
    let mut mount = mount_whose_restarts_crash(&root);
    let _log = follow_log(&mut mount);
    let page = mount.path().join("书/第1章.txt/offset-1.txt");
    let first = read_uncached(&page).expect("the first server serves");
    assert!(!first.is_empty());
    let holder = mount.pid();
    let server = server_of(holder).expect("a server");
    // SAFETY: a signal to a process of this test's mount.
    unsafe { libc::kill(server as i32, libc::SIGKILL) };
    let mnt = mount.path().to_path_buf();
    let reader = std::thread::spawn(move || {
        let t = Instant::now();
        (read_uncached(&page), t.elapsed())
    });
    let deadline = Instant::now() + Duration::from_secs(15);
    while !reader.is_finished() {
        if Instant::now() > deadline {
            abort_connection(&mnt);
            panic!("the read hung: the holder did not give up");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (r, took) = reader.join().unwrap();
    let e = r.expect_err("no server can start: the read fails");
    assert_eq!(errno(&e), libc::EIO, "{e}");
    println!("gave up after {took:?}");
    // It stays given up: no server starts again, the holder answers.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(server_of(holder), None, "no server runs");
    let e = std::fs::read(mount.path().join("书/第2章.txt/offset-1.txt")).unwrap_err();
    assert_eq!(errno(&e), libc::EIO);
    // It says so: three servers in a row died before serving, and why it
    // gave up.
    let status = holder_status(mount.path());
    println!("status: {status:?}");
    assert_eq!(status["died before serving"], "3", "{status:?}");
    assert_eq!(status["servers died"], "1", "{status:?}");
    assert_eq!(status["server"], "none", "{status:?}");
    assert!(
        status["gave up"].contains("died before serving"),
        "{status:?}"
    );
    // It cannot be upgraded now, and says why.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("upgrade")
        .arg(mount.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("gave up"), "{err}");
    // SIGTERM still unmounts, and the holder ends.
    let status = mount.terminate().expect("the holder was running");
    assert!(!crate::common::is_mounted(mount.path()));
    println!("holder ended: {status}");
}
