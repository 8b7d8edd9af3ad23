//! Failover on a kernel without `FUSE_NOTIFY_RESEND` (before Linux 6.9,
//! INIT without `FUSE_HAS_RESEND`), acted on this kernel by the test switch
//! `NOVELFS_TEST_FAILOVER_OFF=has_resend`: a request the killed server had
//! read and not answered gets EIO, from the next server or from a holder
//! that gives up, never a hang; later reads succeed.
//!
//! `NOVELFS_TEST_FAILOVER_OFF=fail_left` in the tests' environment reaches
//! the mount and leaves those requests unanswered: the reader hangs, and
//! the tests fail (bounded, the connection then aborted).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::{Mount, book_library, errno, follow_log, fuse_available};
use crate::failover::killed::{abort_connection, holder_status, read_uncached, server_of};

/// Releases held loads however a test ends, so the servers can exit.
struct Release(PathBuf);

impl Drop for Release {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("release"), b"");
    }
}

/// A book of a big chapter (its load held by the servers'
/// `NOVELFS_TEST_HOLD_LOADS`) and a small one, mounted with a holder whose
/// servers act as if INIT lacked `FUSE_HAS_RESEND`; `env` goes to the mount
/// too. (guard, mount, the hold directory)
fn held_mount(env: &[(&str, &std::ffi::OsStr)]) -> (tempfile::TempDir, Mount, PathBuf) {
    // Over 4 MiB: a big load.
    let big = "第1章 大\n".to_string() + &"一行很长的文字。\n".repeat(220_000);
    let small = "第2章 小\n短短的一行\n";
    let (tmp, root) = book_library(&[
        ("第1章.txt", big.as_bytes()),
        ("第2章.txt", small.as_bytes()),
    ]);
    let hold = tmp.path().join("hold");
    std::fs::create_dir(&hold).unwrap();
    let mut off = "has_resend".to_string();
    if let Ok(more) = std::env::var("NOVELFS_TEST_FAILOVER_OFF") {
        off = format!("{off},{more}");
    }
    // No work ahead of the reader: the load held is the reader's own (a
    // load begun ahead, say by the outliner, would be held with the
    // reader's request still unread, and that request held again by the
    // next server).
    let mut all = vec![
        ("NOVELFS_TEST_HOLD_LOADS", hold.as_os_str()),
        ("NOVELFS_TEST_FAILOVER_OFF", std::ffi::OsStr::new(&off)),
        (
            "NOVELFS_AHEAD_OFF",
            std::ffi::OsStr::new("disk,outlines,kernel"),
        ),
    ];
    all.extend_from_slice(env);
    let mount = Mount::with_env(&root, &["-o", "failover"], "info", &all);
    (tmp, mount, hold)
}

/// Reads the big page, kills the server while its load is held, and waits
/// up to 10 s for the read: its error and how long after the kill.
fn read_held_across_a_kill(mount: &mut Mount, hold: &Path) -> (std::io::Error, Duration) {
    let log = follow_log(mount);
    let mnt = mount.path().to_path_buf();
    let release = Release(hold.to_path_buf());
    let reader = {
        let big_page = mnt.join("书/第1章.txt/offset-1.txt");
        std::thread::spawn(move || read_uncached(&big_page))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_dir(hold).unwrap().count() == 0 {
        assert!(Instant::now() < deadline, "the big load did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!reader.is_finished(), "the reader waits on the held load");
    let server = server_of(mount.pid()).expect("a server");
    // SAFETY: a signal to a process of this test's mount.
    unsafe { libc::kill(server as i32, libc::SIGKILL) };
    let killed = Instant::now();
    while !reader.is_finished() {
        if killed.elapsed() > Duration::from_secs(10) {
            drop(release);
            abort_connection(&mnt);
            panic!(
                "the read the killed server held hung; the log:\n{}",
                log.lock().unwrap().join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = killed.elapsed();
    let e = reader
        .join()
        .unwrap()
        .expect_err("the held read fails rather than hangs");
    // Loads go on (later ones are not held).
    drop(release);
    (e, took)
}

#[test]
fn without_resend_a_request_the_killed_server_held_gets_eio_and_later_reads_succeed() {
    if !fuse_available() {
        return;
    }
    let (_tmp, mut mount, hold) = held_mount(&[]);
    let mnt = mount.path().to_path_buf();
    let small_page = mnt.join("书/第2章.txt/offset-1.txt");
    let small_bytes = read_uncached(&small_page).expect("the first server serves");
    let (e, took) = read_held_across_a_kill(&mut mount, &hold);
    assert_eq!(errno(&e), libc::EIO, "{e}");
    println!("the held read got EIO {took:?} after the kill, from the next server");
    assert_eq!(read_uncached(&small_page).unwrap(), small_bytes);
    let got = read_uncached(&mnt.join("书/第1章.txt/offset-1.txt"))
        .expect("the big page after the failover");
    assert!(
        String::from_utf8_lossy(&got).contains("一行很长的文字。"),
        "{} bytes",
        got.len()
    );
    let status = holder_status(&mnt);
    assert_eq!(status["servers died"], "1", "{status:?}");
    assert_eq!(status["gave up"], "no", "{status:?}");
    assert!(mount.alive(), "the holder serves on");
}

#[test]
fn without_resend_a_holder_that_gives_up_answers_the_held_request_eio() {
    if !fuse_available() {
        return;
    }
    // Every server after the first crashes as it starts.
    let crash = std::ffi::OsStr::new("restart");
    let (_tmp, mut mount, hold) = held_mount(&[("NOVELFS_TEST_SERVER_CRASH", crash)]);
    let mnt = mount.path().to_path_buf();
    read_uncached(&mnt.join("书/第2章.txt/offset-1.txt")).expect("the first server serves");
    let (e, took) = read_held_across_a_kill(&mut mount, &hold);
    assert_eq!(errno(&e), libc::EIO, "{e}");
    println!("the held read got EIO {took:?} after the kill, from the holder giving up");
    let status = holder_status(&mnt);
    assert_ne!(status["gave up"], "no", "{status:?}");
    assert!(mount.alive(), "the holder answers on");
}
