//! The holder itself through real mounts: it stays small and holds
//! nothing of the library, and a plain mount has one while `nofailover`
//! has none.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::{Mount, follow_log, fuse_available};
use crate::failover::killed::{library, read_uncached, server_of};

/// The value of a `kB` line of `/proc/PID/status`.
fn status_kb(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {status}"))
}

/// The holder stays within 4 MiB resident (the target), in a debug
/// build too, before and after a failover, and holds nothing of the
/// library: the mount command is started in the library with a library
/// file open (as a careless caller could), and the holder keeps neither.
/// `NOVELFS_TEST_FAILOVER_OFF=lean` (no re-exec) keeps the file and the
/// directory; `=drop_code` (the code pages run once stay mapped) goes over
/// 4 MiB.
#[test]
fn the_holder_stays_small_and_holds_nothing_of_the_library() {
    if !fuse_available() {
        return;
    }
    let (_tmp, root) = library(3);
    let chapter = root.join("novels/书/第1章.txt");
    assert!(chapter.is_file(), "{}", chapter.display());
    let leaked = std::ffi::CString::new(chapter.to_str().unwrap()).unwrap();
    let dir = root.clone();
    let mut mount = Mount::with_command(&root, &["-o", "failover"], "warn", |cmd| {
        use std::os::unix::process::CommandExt;
        cmd.current_dir(&dir);
        // SAFETY: open (async-signal-safe) between fork and exec; the
        // descriptor, without O_CLOEXEC, reaches the mount command.
        unsafe {
            cmd.pre_exec(move || {
                libc::open(leaked.as_ptr(), libc::O_RDONLY);
                Ok(())
            });
        }
    });
    let log = follow_log(&mut mount);
    let holder = mount.pid();
    let page = mount.path().join("书/第1章.txt/offset-1.txt");
    read_uncached(&page).expect("the first server serves");
    let first = server_of(holder).expect("a server");
    // SAFETY: a signal to a process of this test's mount.
    unsafe { libc::kill(first as i32, libc::SIGKILL) };
    read_uncached(&page).expect("the next server serves");
    let deadline = Instant::now() + Duration::from_secs(10);
    while server_of(holder).is_none_or(|s| s == first) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    // The holder sleeps again once the next server serves.
    std::thread::sleep(Duration::from_millis(500));
    let rss = status_kb(holder, "VmRSS:");
    let held: Vec<PathBuf> = std::fs::read_dir(format!("/proc/{holder}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .collect();
    let cwd = std::fs::read_link(format!("/proc/{holder}/cwd")).unwrap();
    println!(
        "holder: VmRSS {rss} kB (RssAnon {} kB, RssFile {} kB), cwd {}, descriptors {held:?}",
        status_kb(holder, "RssAnon:"),
        status_kb(holder, "RssFile:"),
        cwd.display()
    );
    let root = std::fs::canonicalize(&root).unwrap();
    let of_library: Vec<&PathBuf> = held.iter().filter(|p| p.starts_with(&root)).collect();
    assert!(of_library.is_empty(), "the holder holds {of_library:?}");
    assert!(
        !cwd.starts_with(&root),
        "the holder works in {}",
        cwd.display()
    );
    assert!(
        rss <= 4096,
        "the holder is {rss} kB resident; {:?}",
        log.lock().unwrap()
    );
    assert!(mount.alive(), "the holder serves on");
}

/// Failover is on by default on `/dev/fuse` (the tests' mounts ask for
/// it): a plain mount leaves a holder whose server can be killed under a
/// reader, and `-o nofailover` leaves the daemon alone.
#[test]
fn a_plain_mount_has_a_holder_and_nofailover_has_none() {
    if !fuse_available() {
        return;
    }
    let (_tmp, root) = library(2);
    let plain = Mount::new(&root, &[]);
    let page = plain.path().join("书/第1章.txt/offset-1.txt");
    // Read first: the holder lists the mount before its server starts.
    let first = read_uncached(&page).unwrap();
    let holder = plain.pid();
    let server = server_of(holder).expect("a plain mount's daemon is a holder with a server");
    // SAFETY: a signal to a process of this test's mount.
    unsafe { libc::kill(server as i32, libc::SIGKILL) };
    assert_eq!(
        read_uncached(&page).unwrap(),
        first,
        "the next server serves"
    );
    let alone = Mount::new(&root, &["-o", "nofailover"]);
    assert!(read_uncached(&alone.path().join("书/第1章.txt/offset-1.txt")).is_ok());
    assert_eq!(server_of(alone.pid()), None, "no holder, no server child");
    assert_eq!(alone.server_pid(), alone.pid());
}
