//! A bucket that stops answering is not a library wiped out
//! (`--stale-if-error`): what the mount read before is still served, what
//! it never read fails within the source timeout (not one timeout per
//! access), the log says when the bucket stopped answering and when it
//! answers again, service comes back by itself, and the daemon still ends
//! at once on SIGTERM or `novelfs unmount` while a call into the bucket
//! hangs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::bucket::native::library;
use crate::common::bucket::Bucket;
use crate::common::{errno, eventually_within, follow_log, is_mounted};

/// Sets the proxy's stall back to none when dropped, so that a failing
/// test never leaves the requests held.
struct Released<'a>(&'a Bucket);

impl Drop for Released<'_> {
    fn drop(&mut self) {
        self.0.server.set("stall=0");
    }
}

/// A mount of `bucket` whose bucket then stalls every request (with a 60 s
/// bound), and a reader inside an unread page's GET.
struct Stuck<'a> {
    m: crate::common::Mount,
    mnt: PathBuf,
    reader: std::process::Child,
    _released: Released<'a>,
}

fn a_reader_stuck_in(bucket: &Bucket) -> Stuck<'_> {
    let m = bucket.mount(&["--ttl", "60", "--source-timeout", "60"]);
    let mnt = m.path().to_path_buf();
    std::fs::read(page(&mnt, 0, 1)).unwrap();
    let released = Released(bucket);
    bucket.server.set("stall=-1");
    let mut reader = std::process::Command::new("cat")
        .arg(page(&mnt, 0, 30))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        reader.try_wait().unwrap().is_none(),
        "the reader waits on the bucket"
    );
    Stuck {
        m,
        mnt,
        reader,
        _released: released,
    }
}

/// Whether the process `pid` has ended (gone, or a zombie).
fn gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists() || zombie(pid)
}

fn page(mnt: &Path, book: usize, chapter: usize) -> PathBuf {
    mnt.join(format!("书{book:02}"))
        .join(format!("第{chapter:04}章.md"))
        .join("offset-1.txt")
}

/// What an outage of 10 s costs the readers of pages read before it: the
/// reads that failed, and how many were made.
fn reread_through_outage(stale_if_error: &str, published: bool) -> (usize, usize) {
    let (dir, root) = library(2, 30);
    let Some(bucket) = Bucket::with(&root) else {
        return (0, 1);
    };
    if published {
        crate::bucket::native::publish(&bucket, &dir.path().join("built-here"));
    }
    let timeout = Duration::from_secs(2);
    let mut m = bucket.mount(&[
        "--ttl",
        "1",
        "--source-timeout",
        "2",
        "--stale-if-error",
        stale_if_error,
    ]);
    let log = follow_log(&mut m);
    let mnt = m.path().to_path_buf();
    let read: Vec<(PathBuf, String)> = (1..=4)
        .map(|c| {
            let p = page(&mnt, 0, c);
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    // Past the TTL: every name and page read is checked against the bucket.
    std::thread::sleep(Duration::from_millis(1500));

    let released = Released(&bucket);
    bucket.server.set("stall=-1");
    let read = Arc::new(read);
    let stop = Arc::new(AtomicBool::new(false));
    let (failed, made) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let readers: Vec<_> = (0..8)
        .map(|i| {
            let (read, stop) = (read.clone(), stop.clone());
            let (failed, made) = (failed.clone(), made.clone());
            std::thread::spawn(move || {
                let mut n = i;
                while !stop.load(Ordering::Relaxed) {
                    let (p, text) = &read[n % read.len()];
                    match std::fs::read_to_string(p) {
                        Ok(t) => assert_eq!(&t, text, "{}", p.display()),
                        Err(e) => {
                            eprintln!("{}: {e}", p.display());
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    made.fetch_add(1, Ordering::Relaxed);
                    n += 1;
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        })
        .collect();

    // Meanwhile a page never read, of a book never listed: EIO within the
    // timeout, however many accesses it needs; then one of a book listed.
    std::thread::sleep(Duration::from_millis(500));
    for unread in [page(&mnt, 1, 30), page(&mnt, 0, 29)] {
        let start = Instant::now();
        let e = std::fs::read(&unread).expect_err("the bucket answers nothing");
        let took = start.elapsed();
        eprintln!("an unread page during the outage: {e} after {took:.2?}");
        assert_eq!(errno(&e), libc::EIO, "{e}");
        assert!(
            took <= timeout + Duration::from_secs(2),
            "an unread page failed after {took:?}"
        );
    }
    std::thread::sleep(Duration::from_secs(10));
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    let failed = failed.load(Ordering::Relaxed);
    let made = made.load(Ordering::Relaxed);
    eprintln!("during 10 s of outage: {failed} of {made} reads of pages read before failed");

    if failed == 0 {
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_novelfs"))
            .args(["status", "--json"])
            .arg(&mnt)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
        let stale = v["stale_serves"]
            .as_u64()
            .or_else(|| v["counters"]["stale_serves"].as_u64());
        eprintln!("stale serves counted: {stale:?}");
        assert!(stale.is_some_and(|n| n > 0), "{v}");
    }

    drop(released);
    let back = Instant::now();
    eventually_within(
        "service is back without a remount",
        Duration::from_secs(10),
        || std::fs::read(page(&mnt, 1, 30)).ok(),
    );
    eprintln!(
        "a page never read reads {:.2?} after the bucket is back",
        back.elapsed()
    );
    // What the log said of it, for whoever reads the test's output.
    std::thread::sleep(Duration::from_millis(500));
    for line in log.lock().unwrap().iter() {
        eprintln!("daemon: {line}");
    }
    (failed, made)
}

/// 8 readers re-read 4 pages for 10 s while every request to the bucket
/// stalls (--ttl 1, so each read asks whether the pages are still
/// current): none fails.
#[test]
fn pages_read_before_an_outage_are_served_through_it() {
    require_fuse!();
    let (failed, made) = reread_through_outage("300", false);
    assert!(made > 0);
    assert_eq!(failed, 0, "{failed} of {made} reads failed");
}

/// The same for a mount that follows a published snapshot: its head's
/// check fails, the snapshot as last read is served, and the chapters read
/// before are opened from their held bodies, not from a GET.
#[test]
fn a_mount_following_a_snapshot_serves_what_it_read_through_an_outage() {
    require_fuse!();
    let (failed, made) = reread_through_outage("300", true);
    assert!(made > 0);
    assert_eq!(failed, 0, "{failed} of {made} reads failed");
}

/// With stale serving switched off (`--stale-if-error 0`), the same
/// readers fail: what the other test shows is its doing.
#[test]
fn with_no_stale_window_the_readers_fail_in_an_outage() {
    require_fuse!();
    let (failed, made) = reread_through_outage("0", false);
    assert!(failed > 0, "none of {made} reads failed");
}

/// A mount whose bucket hangs (a GET with a 60 s bound, a reader inside
/// it): the daemon ends within a second of SIGTERM, the mount goes, the
/// reader gets an error.
#[test]
fn sigterm_ends_the_daemon_while_a_call_into_the_bucket_hangs() {
    require_fuse!();
    let (_dir, root) = library(1, 30);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let Stuck {
        mut m,
        mnt,
        mut reader,
        _released,
    } = a_reader_stuck_in(&bucket);
    let (holder, server) = (m.pid(), m.server_pid());
    let start = Instant::now();
    // SAFETY: a signal to the daemon this test started.
    unsafe { libc::kill(holder as i32, libc::SIGTERM) };
    while !(gone(holder) && gone(server) && !is_mounted(&mnt)) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the daemon still runs 10 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = start.elapsed();
    eprintln!("SIGTERM to the holder: daemon and mount gone in {took:.2?}");
    assert!(took <= Duration::from_secs(3), "took {took:?}");
    let _ = m.terminate();
    let status = reader.wait().unwrap();
    assert!(!status.success(), "the reader gets an error");
}

/// The same with `novelfs unmount MNT`. The reader inside the stalled GET
/// keeps the mount busy (and cannot be killed: the server has its
/// request), so the connection is aborted first, as fusectl lets an
/// administrator do: the reader gets an error, the server's thread stays
/// inside its GET (a 60 s bound), and then the unmount must end the
/// daemon within a second all the same.
#[test]
fn unmount_ends_the_daemon_while_a_call_into_the_bucket_hangs() {
    require_fuse!();
    let connections = std::path::Path::new("/sys/fs/fuse/connections");
    let fusectl_mounted = || {
        std::fs::read_to_string("/proc/self/mounts")
            .is_ok_and(|m| m.lines().any(|l| l.split(' ').nth(2) == Some("fusectl")))
    };
    if !fusectl_mounted() {
        // A fresh machine may have fusectl unmounted: it is mounted as an
        // administrator would, and left so (nothing else depends on it).
        let _ = std::process::Command::new("mount")
            .args(["-t", "fusectl", "none"])
            .arg(connections)
            .status();
    }
    if !fusectl_mounted() {
        crate::common::skip("fusectl is not mounted at /sys/fs/fuse/connections");
        return;
    }
    let (_dir, root) = library(1, 30);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let Stuck {
        mut m,
        mnt,
        mut reader,
        _released,
    } = a_reader_stuck_in(&bucket);
    crate::failover::killed::abort_connection(&mnt);
    assert!(
        !reader.wait().unwrap().success(),
        "the reader gets an error"
    );
    let (holder, server) = (m.pid(), m.server_pid());
    let start = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("unmount")
        .arg(&mnt)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    while !(gone(holder) && gone(server)) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the daemon still runs 10 s after novelfs unmount"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = start.elapsed();
    eprintln!("novelfs unmount: daemon gone in {took:.2?}");
    assert!(took <= Duration::from_secs(3), "took {took:?}");
    assert!(!is_mounted(&mnt));
    let _ = m.terminate();
}

/// Whether `pid` has ended and waits only to be reaped.
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

/// A bucket that stalls every request (before its outage is known): a
/// page read before, past its TTL, is served from what the mount holds
/// while its listing is made again (stale-while-revalidate within the
/// stale window), in a fraction of a second, not after the whole source
/// timeout (5 s); with no stale window it waits, and fails.
#[test]
fn a_stalled_bucket_serves_a_page_read_before_at_once() {
    for (stale_if_error, served) in [("3600", true), ("0", false)] {
        let (_dir, root) = library(1, 4);
        let Some(bucket) = Bucket::with(&root) else {
            return;
        };
        let m = bucket.mount(&[
            "--ttl",
            "1",
            "--source-timeout",
            "5",
            "--stale-if-error",
            stale_if_error,
        ]);
        let mnt = m.path().to_path_buf();
        let read: Vec<(PathBuf, String)> = (1..=3)
            .map(|c| {
                let p = page(&mnt, 0, c);
                let text = std::fs::read_to_string(&p).unwrap();
                (p, text)
            })
            .collect();
        // Past the TTL and its grace: the names must be looked at again.
        std::thread::sleep(Duration::from_millis(1600));
        let _released = Released(&bucket);
        bucket.server.set("stall=-1");
        let (p, text) = &read[0];
        let start = Instant::now();
        let got = std::fs::read_to_string(p);
        let took = start.elapsed();
        eprintln!(
            "stale-if-error {stale_if_error}: a page read before: {:?} after {took:.2?}",
            got.as_ref().map(|t| t.len())
        );
        if served {
            assert_eq!(got.as_ref().ok(), Some(text), "{}", p.display());
            assert!(took < Duration::from_millis(1500), "served after {took:?}");
        } else {
            assert!(got.is_err(), "no stale window: nothing stale served");
            assert!(took >= Duration::from_secs(4), "failed after {took:?}");
        }
    }
}
