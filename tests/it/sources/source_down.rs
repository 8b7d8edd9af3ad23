//! A source that stops answering or dies under a mounted library, with real
//! parts: an sshfs mount of the library through a test-owned sshd (see
//! common/sshfs.rs), whose connection is killed (sshfs ends, its mount
//! goes). The mount says what went wrong and comes back by itself.

use std::path::Path;

use crate::common::sshfs::Sshfs;
use crate::common::{Mount, book_library, eventually_within, sorted_names};

const BOOK: &str = "书";
const CHAPTER: &str = "第1章 起.md";

fn text(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// A dead server is an error, not an empty library: the root's `ERROR`
/// says why, a page that exists is EIO (never ENOENT), the indexes hold
/// the root's error (never `（暂无作品…）`), and once sshfs mounts the
/// library again everything is back without a remount.
#[test]
fn a_dead_server_is_an_error_not_an_empty_library() {
    require_fuse!();
    let (_lib, root) = book_library(&[(CHAPTER, "一二三".as_bytes())]);
    let Some(mut sshfs) = Sshfs::mount(&root, &[]) else {
        return;
    };
    let m = Mount::new(&sshfs.path(), &["--state-file", "/nonexistent/state.json"]);
    let mnt = m.path().to_path_buf();
    let page = mnt.join(BOOK).join(CHAPTER).join("offset-1.txt");
    let first = std::fs::read_to_string(&page).unwrap();
    assert!(first.contains("1: 一二三"), "{first}");
    let books = text(&mnt.join("novel_books.txt"));
    let limit = std::time::Duration::from_secs(10);

    sshfs.kill_connection();
    let error = eventually_within("the root lists only ERROR", limit, || {
        sorted_names(&mnt)
            .ok()
            .filter(|n| n == &["ERROR"])
            .map(|_| text(&mnt.join("ERROR")))
    });
    assert!(error.starts_with("错误："), "{error}");
    // The page read before: its bytes (still held) or EIO, never ENOENT,
    // at once and after the kernel's TTL (1 s) sent its name back to the
    // daemon.
    for _ in 0..2 {
        match std::fs::read_to_string(&page) {
            Ok(held) => assert_eq!(held, first),
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}"),
        }
        std::thread::sleep(std::time::Duration::from_millis(1100));
    }
    let other = mnt.join(BOOK).join(CHAPTER).join("offset-2.txt");
    let e = std::fs::metadata(&other).unwrap_err();
    assert_ne!(
        e.raw_os_error(),
        Some(libc::ENOENT),
        "a page never read: {e}"
    );
    assert_eq!(text(&mnt.join("novel_books.txt")), error);
    let json: serde_json::Value =
        serde_json::from_str(&text(&mnt.join("novel_books.json"))).unwrap();
    assert_eq!(json["error"].as_str(), Some(error.trim_end()));

    sshfs.remount();
    eventually_within("the library is back without a remount", limit, || {
        let back = std::fs::read_to_string(&page).ok()? == first
            && text(&mnt.join("novel_books.txt")) == books;
        back.then_some(())
    });
}

/// The daemon's thread count (`Threads:` of /proc/PID/status).
fn threads_of(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

/// Whether `lines` of the daemon's log hold one with `needle`.
fn logged(lines: &std::sync::Mutex<Vec<String>>, needle: &str) -> bool {
    lines.lock().unwrap().iter().any(|l| l.contains(needle))
}

/// A hung server never hangs the mount: with the sshfs connection stopped
/// (SIGSTOP), `stat MNT` answers within a second, a page within the source
/// timeout + 1 s (its bytes or EIO), 40 readers do not grow the daemon's
/// threads past its cap, the log says once that the source stopped
/// answering and once that it answers again, the mount recovers by itself
/// after SIGCONT, and `novelfs unmount` works during a hang.
#[test]
fn a_hung_server_never_hangs_the_mount() {
    use std::time::{Duration, Instant};
    require_fuse!();
    let chapters: Vec<(String, Vec<u8>)> = (1..=4)
        .map(|n| {
            (
                format!("第{n}章 起.md"),
                format!("第{n}章的字").into_bytes(),
            )
        })
        .collect();
    let files: Vec<(&str, &[u8])> = chapters
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let (_lib, root) = book_library(&files);
    // Without sshfs's own directory cache, its requests reach the server.
    let Some(mut sshfs) = Sshfs::mount(&root, &["dir_cache=no"]) else {
        return;
    };
    let timeout = Duration::from_secs(2);
    let mut m = Mount::with_log(
        &sshfs.path(),
        &[
            "--state-file",
            "/nonexistent/state.json",
            "--source-timeout",
            "2",
        ],
        "info",
    );
    let _resumed = sshfs.resumed_on_drop();
    let log = crate::common::follow_log(&mut m);
    let pid = m.server_pid();
    let mnt = m.path().to_path_buf();
    let page = |n: usize| {
        mnt.join(BOOK)
            .join(format!("第{n}章 起.md"))
            .join("offset-1.txt")
    };
    let first = std::fs::read_to_string(page(1)).unwrap();
    let threads_before = threads_of(pid);

    sshfs.hang();
    // Past the kernel's TTL (1 s) and sshfs's attribute cache (1 s).
    std::thread::sleep(Duration::from_millis(2200));
    let start = Instant::now();
    std::fs::metadata(&mnt).unwrap();
    assert!(
        start.elapsed() <= Duration::from_secs(1),
        "stat MNT took {:?}",
        start.elapsed()
    );
    let readers: Vec<_> = (0..40)
        .map(|i| {
            let path = page(1 + i % 4);
            // The open and the reads timed apart: the bound is per
            // request, and `std::fs::read` adds a GETATTR of its own (for
            // the size of its buffer), which may wait out a timeout too.
            std::thread::spawn(move || {
                use std::io::Read;
                let start = Instant::now();
                let mut bytes = Vec::new();
                let r = std::fs::File::open(&path).map(|f| (f, start.elapsed()));
                let (took, r) = match r {
                    Ok((mut f, opened)) => {
                        // Plain reads: `read_to_end` asks for the size
                        // first too.
                        let start = Instant::now();
                        let mut buf = [0u8; 4096];
                        let r = loop {
                            match f.read(&mut buf) {
                                Ok(0) => break Ok(bytes),
                                Ok(n) => bytes.extend_from_slice(&buf[..n]),
                                Err(e) => break Err(e),
                            }
                        };
                        (opened.max(start.elapsed()), r)
                    }
                    Err(e) => (start.elapsed(), Err(e)),
                };
                (took, r.map_err(|e| e.raw_os_error()))
            })
        })
        .collect();
    let mut most_threads = 0;
    let deadline = Instant::now() + timeout + Duration::from_secs(3);
    while Instant::now() < deadline && !readers.iter().all(|r| r.is_finished()) {
        most_threads = most_threads.max(threads_of(pid));
        std::thread::sleep(Duration::from_millis(20));
    }
    let start = Instant::now();
    std::fs::metadata(&mnt).unwrap();
    assert!(
        start.elapsed() <= Duration::from_secs(1),
        "stat MNT took {:?}",
        start.elapsed()
    );
    for r in readers {
        assert!(
            r.is_finished(),
            "a reader still waits after {:?}",
            timeout + Duration::from_secs(3)
        );
        let (took, result) = r.join().unwrap();
        assert!(
            took <= timeout + Duration::from_secs(1),
            "an open or a read of a page took {took:?}"
        );
        match result {
            Ok(bytes) => assert!(String::from_utf8(bytes).unwrap().contains("章的字")),
            Err(e) => assert_eq!(e, Some(libc::EIO)),
        }
    }
    // fuser's workers, 32 spare threads, the deadline thread, and the few
    // the daemon had before.
    assert!(
        most_threads <= threads_before + 36,
        "{most_threads} threads (before the hang: {threads_before})"
    );
    eventually_within("the log says the source stopped answering", timeout, || {
        logged(&log, "stopped answering").then_some(())
    });

    sshfs.resume();
    eventually_within(
        "the mount recovers by itself",
        Duration::from_secs(20),
        || (std::fs::read_to_string(page(1)).ok()? == first).then_some(()),
    );
    eventually_within(
        "the log says the source answers again",
        Duration::from_secs(10),
        || logged(&log, "answers again").then_some(()),
    );
    let stopped = log
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("stopped answering"))
        .count();
    assert_eq!(stopped, 1, "said once");

    sshfs.hang();
    std::thread::sleep(Duration::from_millis(2200));
    let e = std::fs::read(page(2));
    assert!(e.as_ref().is_ok() || e.as_ref().unwrap_err().raw_os_error() == Some(libc::EIO));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("unmount")
        .arg(&mnt)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "unmount during a hang: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!crate::common::is_mounted(&mnt));
    sshfs.resume();
}
