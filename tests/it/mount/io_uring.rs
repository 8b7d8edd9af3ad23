//! FUSE over io_uring: which transport a mount gets (its ring threads),
//! `io_uring=on` refused with how to enable it, the fallback to /dev/fuse
//! when rings cannot be made, notifications and FORGET beside the rings,
//! and unmount, SIGTERM and SIGKILL with requests in flight.
//! (The reference cases through an io_uring mount are in tests/it/semantics/golden.rs.)

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::eventually;
use crate::common::readers::{sigkill_mid_read, start_readers};
use crate::common::uring::{self, Switch};
use crate::common::{Mount, errno, is_mounted, sorted_names};

const HINT: &str = "echo Y > /sys/module/fuse/parameters/enable_uring";

macro_rules! require_uring {
    () => {
        if !crate::common::fuse_available() || !uring::available() {
            return;
        }
    };
}

fn lines(n: usize, tag: &str) -> String {
    crate::common::prose_lines(n, tag)
}

/// The daemon's log, read on a thread as it comes (a full pipe would
/// stall the daemon).
struct Log(Arc<Mutex<String>>);

impl Log {
    fn follow(m: &mut Mount) -> Log {
        let err = m.child.as_mut().unwrap().stderr.take().unwrap();
        Log::of(err)
    }

    fn of(err: impl std::io::Read + Send + 'static) -> Log {
        let text = Arc::new(Mutex::new(String::new()));
        let t = text.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut t = t.lock().unwrap();
                t.push_str(&line);
                t.push('\n');
            }
        });
        Log(text)
    }

    fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }

    /// Waits for a line containing `what`.
    fn wait_for(&self, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let t = self.text();
            if let Some(l) = t.lines().find(|l| l.contains(what)) {
                return l.to_string();
            }
            assert!(Instant::now() < deadline, "no {what:?} in the log:\n{t}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A mount made by `cmd` (a `novelfs mount -f` command), waited for.
fn spawn_mount(mut cmd: Command, dir: tempfile::TempDir) -> (Mount, Log) {
    let child = cmd.stderr(Stdio::piped()).spawn().expect("spawn novelfs");
    let mut m = Mount {
        dir,
        child: Some(child),
    };
    let log = Log::follow(&mut m);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !is_mounted(m.path()) {
        if let Some(status) = m.child.as_mut().unwrap().try_wait().unwrap() {
            m.child = None;
            std::thread::sleep(Duration::from_millis(100));
            panic!("novelfs mount exited early ({status}): {}", log.text());
        }
        assert!(Instant::now() < deadline, "mount not ready in 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    (m, log)
}

/// The daemon's io_uring threads (fuser names them `fuser-uring-QUEUE.N`):
/// there are some while FUSE over io_uring serves the mount, none while the
/// `/dev/fuse` loop serves it alone (rings that were not used are gone once
/// the handshake is over).
fn ring_threads(m: &Mount) -> usize {
    let pid = m.server_pid();
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("fuser-uring-"))
        .count()
}

fn mount_command(root: &Path, mnt: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_novelfs"));
    cmd.arg("mount")
        .arg(root)
        .arg(mnt)
        .arg("-f")
        .args(["--state-file", "/nonexistent/state.json"])
        .args(extra)
        .env("RUST_LOG", "info");
    cmd
}

fn mount_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("novelfs-mnt")
        .tempdir()
        .unwrap()
}

/// Makes `io_uring_setup` fail with EPERM in the child, as a container's
/// seccomp profile does (Docker's default profile denies io_uring).
fn deny_io_uring_setup(cmd: &mut Command) {
    // SAFETY: only async-signal-safe prctl calls between fork and exec, on
    // a filter array that outlives them.
    unsafe {
        cmd.pre_exec(|| {
            const LD_W_ABS: u16 = 0x20;
            const JEQ_K: u16 = 0x15;
            const RET_K: u16 = 0x06;
            let filter = [
                // seccomp_data.nr
                libc::sock_filter {
                    code: LD_W_ABS,
                    jt: 0,
                    jf: 0,
                    k: 0,
                },
                libc::sock_filter {
                    code: JEQ_K,
                    jt: 0,
                    jf: 1,
                    k: libc::SYS_io_uring_setup as u32,
                },
                libc::sock_filter {
                    code: RET_K,
                    jt: 0,
                    jf: 0,
                    k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
                },
                libc::sock_filter {
                    code: RET_K,
                    jt: 0,
                    jf: 0,
                    k: libc::SECCOMP_RET_ALLOW,
                },
            ];
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut _,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn small_library() -> (tempfile::TempDir, PathBuf) {
    crate::common::book_library(&[
        ("第1章 起.md", lines(600, "甲").as_bytes()),
        ("第2章 承.md", lines(3, "乙").as_bytes()),
    ])
}

/// What a reader sees of the small library.
fn snapshot(mnt: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for ch in sorted_names(&mnt.join("书")).unwrap() {
        let dir = mnt.join("书").join(&ch);
        if !dir.is_dir() {
            // The book's index files.
            out.push((ch, std::fs::read(&dir).unwrap()));
            continue;
        }
        for page in sorted_names(&dir).unwrap() {
            out.push((
                format!("{ch}/{page}"),
                std::fs::read(dir.join(&page)).unwrap(),
            ));
        }
    }
    out
}

#[test]
fn on_is_refused_with_how_to_enable_it_when_the_kernel_switch_is_off() {
    require_uring!();
    let (_g, root) = small_library();
    let _off = Switch::set(false);
    for extra in [vec!["--io-uring", "on"], vec!["-o", "ro,io_uring=on"]] {
        let dir = mount_dir();
        let out = crate::common::within(20, "a refused mount", {
            let mut cmd = mount_command(&root, dir.path(), &extra);
            move || cmd.output().unwrap()
        });
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(err.contains("io_uring=on") && err.contains(HINT), "{err}");
        assert!(!is_mounted(dir.path()), "{extra:?}: mounted anyway");
    }
    let dir = mount_dir();
    let out = mount_command(&root, dir.path(), &["--io-uring", "fast"])
        .output()
        .unwrap();
    // A malformed value is a usage error (contract §3.8).
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("auto, on or off"));
}

#[test]
fn auto_uses_io_uring_when_offered_and_dev_fuse_otherwise_with_the_same_pages() {
    require_uring!();
    let (_g, root) = small_library();
    let mut seen = Vec::new();
    // The first case serves through the rings: it shows that ring threads
    // are seen where they are, before the others find none.
    for (switch, extra, uses_rings) in [
        (true, vec![], true),
        (false, vec![], false),
        (true, vec!["--io-uring", "off"], false),
        (true, vec!["-o", "io_uring=off"], false),
    ] {
        let s = Switch::set(switch);
        let dir = mount_dir();
        let (m, log) = spawn_mount(mount_command(&root, dir.path(), &extra), dir);
        // Answered once the handshake is over.
        std::fs::metadata(m.path()).unwrap();
        drop(s);
        if uses_rings {
            eventually("the ring threads serve", || {
                (ring_threads(&m) > 0).then_some(())
            });
        } else {
            assert_eq!(ring_threads(&m), 0, "switch {switch}, {extra:?}");
        }
        seen.push(snapshot(m.path()));
        // The autogroup note comes with io_uring only, right after the
        // mounted line, when the scheduler has autogroups on.
        let autogroups = std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
            .is_ok_and(|v| v.trim() == "1");
        if autogroups && uses_rings {
            log.wait_for("autogroups are on");
        } else {
            let text = log.text();
            assert!(
                !text.contains("autogroups are on"),
                "switch {switch}, {extra:?}: {text}"
            );
        }
    }
    assert!(seen[0].len() >= 4, "pages listed: {:?}", seen[0].len());
    assert!(seen.iter().all(|s| s == &seen[0]), "same pages both ways");
}

#[test]
fn rings_that_cannot_be_made_fall_back_under_auto_and_refuse_under_on() {
    require_uring!();
    let (_g, root) = small_library();
    let dir = mount_dir();
    let s = Switch::set(true);
    let mut cmd = mount_command(&root, dir.path(), &[]);
    deny_io_uring_setup(&mut cmd);
    let (m, log) = spawn_mount(cmd, dir);
    std::fs::metadata(m.path()).unwrap();
    drop(s);
    assert_eq!(ring_threads(&m), 0, "rings that could not be made serve");
    let why = log.wait_for("FUSE over io_uring not used");
    assert!(why.contains("Operation not permitted"), "{why}");
    let pages = snapshot(m.path());
    assert!(
        pages
            .iter()
            .any(|(n, b)| n.ends_with("offset-1.txt") && !b.is_empty())
    );
    drop(m);

    let dir = mount_dir();
    let s = Switch::set(true);
    let mut cmd = mount_command(&root, dir.path(), &["--io-uring", "on"]);
    deny_io_uring_setup(&mut cmd);
    let out = crate::common::within(20, "a refused mount", move || cmd.output().unwrap());
    drop(s);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot set up an io_uring") && err.contains("Operation not permitted"),
        "{err}"
    );
    assert!(!is_mounted(dir.path()), "mount left behind");
}

/// Requests go through the rings while FORGETs come through /dev/fuse and
/// the invalidations the daemon pushes on a change go out through it.
#[test]
fn changes_and_forgets_beside_the_rings() {
    require_uring!();
    let (_g, root) = small_library();
    let book = root.join("novels/书");
    let mut m = uring::mount_with_log(&root, &[], "info,fuser=debug");
    let log = Log::follow(&mut m);
    let page = m.path().join("书/2/offset-1.txt");
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .contains("1: 乙第1行")
    );
    let listed = m.path().join("书");
    assert_eq!(chapters(&listed).unwrap(), ["第1章 起.md", "第2章 承.md"]);

    std::fs::write(book.join("第2章 承.md"), lines(3, "丙")).unwrap();
    eventually("the edit shows", || {
        std::fs::read_to_string(&page)
            .ok()
            .filter(|s| s.contains("1: 丙第1行"))
    });
    std::fs::write(book.join("第3章 转.md"), "新").unwrap();
    eventually("a new chapter is listed", || {
        chapters(&listed).ok().filter(|v| v.len() == 3)
    });
    // Looked up, then removed: the pushed invalidation drops the kernel's
    // entries, and their inodes are forgotten.
    for ch in ["3", "第3章 转.md"] {
        std::fs::read(m.path().join("书").join(ch).join("offset-1.txt")).unwrap();
    }
    std::fs::remove_file(book.join("第3章 转.md")).unwrap();
    eventually("the removed chapter goes", || {
        chapters(&listed).ok().filter(|v| v.len() == 2)
    });
    eventually("its alias goes", || {
        std::fs::metadata(m.path().join("书/3/offset-1.txt"))
            .err()
            .filter(|e| errno(e) == libc::ENOENT)
    });
    let forgets = eventually("FORGETs arrive", || {
        let t = log.text();
        let f: Vec<String> = t
            .lines()
            .filter(|l| l.contains("FORGET"))
            .map(String::from)
            .collect();
        (!f.is_empty()).then_some(f)
    });
    let text = log.text();
    let served: Vec<&str> = text.lines().filter(|l| l.contains(" thread=")).collect();
    let on_ring = |l: &&&str| l.contains("thread=fuser-uring-");
    assert!(
        forgets.iter().all(|l| !l.contains("thread=fuser-uring-")),
        "FORGET came through a ring: {forgets:?}"
    );
    let lookups: Vec<&&str> = served.iter().filter(|l| l.contains("LOOKUP")).collect();
    assert!(
        !lookups.is_empty() && lookups.iter().all(on_ring),
        "{lookups:?}"
    );
    let reads: Vec<&&str> = served.iter().filter(|l| l.contains("READ ")).collect();
    assert!(reads.iter().all(on_ring), "{reads:?}");
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .contains("1: 丙第1行")
    );
}

/// The chapter directories a book lists (beside its index files).
fn chapters(book: &Path) -> std::io::Result<Vec<String>> {
    Ok(sorted_names(book)?
        .into_iter()
        .filter(|n| n.ends_with(".md"))
        .collect())
}

/// 40,000 lines: 100 pages in the chain.
fn long_library() -> (tempfile::TempDir, PathBuf) {
    crate::common::book_library(&[("第1章 长.md", lines(40_000, "").as_bytes())])
}

/// Waits for the daemon to end by itself; its exit status.
fn exits_within(m: &mut Mount, secs: u64) -> std::process::ExitStatus {
    let mut child = m.child.take().expect("daemon running");
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the daemon did not end within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_with_reads_in_flight_unmounts_and_ends_every_thread() {
    require_uring!();
    let (_g, root) = long_library();
    let mut m = uring::mount(&root, &["--ttl", "0"]);
    let mnt = m.path().to_path_buf();
    let dir = mnt.join("书/1");
    assert_eq!(sorted_names(&dir).unwrap().len(), 200);
    let readers = start_readers(dir.clone(), 100, 6);
    let held = std::fs::File::open(dir.join("offset-1.txt")).unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let before = readers.done.load(Ordering::Relaxed);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(m.pid() as i32, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(300));
    drop(held);
    let (done, errors) = readers.finish(20);
    let status = exits_within(&mut m, 20);
    println!("sigterm: {before} reads before, {done} in all; errors after it {errors:?}");
    assert!(before > 0, "readers made progress");
    assert!(status.success(), "exit status {status}");
    assert!(!is_mounted(&mnt), "mount left behind");
    assert!(
        errors.keys().all(|k| k == "ENOENT" || k == "ENOTCONN"),
        "{errors:?}"
    );
}

#[test]
fn a_lazy_unmount_with_reads_in_flight_ends_the_daemon() {
    require_uring!();
    let (_g, root) = long_library();
    let mut m = uring::mount(&root, &["--ttl", "0"]);
    let mnt = m.path().to_path_buf();
    let dir = mnt.join("书/1");
    assert_eq!(sorted_names(&dir).unwrap().len(), 200);
    let readers = start_readers(dir, 100, 6);
    std::thread::sleep(Duration::from_secs(1));
    let c = std::ffi::CString::new(mnt.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a path we mounted.
    assert_eq!(unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) }, 0);
    let (done, errors) = readers.finish(20);
    let status = exits_within(&mut m, 20);
    println!("umount -l: {done} reads; errors after it {errors:?}");
    assert!(done > 0);
    assert!(status.success(), "exit status {status}");
    assert!(!is_mounted(&mnt));
    assert!(errors.keys().all(|k| k == "ENOENT"), "{errors:?}");
}

#[test]
fn sigkill_with_reads_in_flight_fails_them_fast() {
    require_uring!();
    let (_g, root) = long_library();
    let mut m = uring::mount(&root, &["--ttl", "0"]);
    let mnt = m.path().to_path_buf();
    assert_eq!(sorted_names(&mnt.join("书/1")).unwrap().len(), 200);
    let child = m.child.take().unwrap();
    let errors = sigkill_mid_read(child, mnt.join("书/1"), 100, Duration::from_secs(1));
    // A read the kernel had handed to a ring fails as the kernel ends it:
    // ECONNABORTED (ring torn down) or ECANCELED (its command cancelled
    // with the dying daemon), contract §3.1.
    assert!(
        errors
            .keys()
            .all(|k| ["ENOTCONN", "ECONNABORTED", "ECANCELED"].contains(&k.as_str())),
        "{errors:?}"
    );
    assert!(errors.get("ENOTCONN").copied().unwrap_or(0) > 0);
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("unmount")
        .arg(&mnt)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!is_mounted(&mnt));
}

/// The daemon forks before it mounts: its rings and their threads are made
/// in the process that serves, and `novelfs unmount` ends it.
#[test]
fn a_daemonized_mount_serves_through_io_uring() {
    require_uring!();
    let (_g, root) = small_library();
    let dir = mount_dir();
    let s = Switch::set(true);
    let out = crate::common::within(20, "a daemonized mount", {
        let (root, mnt) = (root.clone(), dir.path().to_path_buf());
        move || {
            Command::new(env!("CARGO_BIN_EXE_novelfs"))
                .arg("mount")
                .arg(&root)
                .arg(&mnt)
                .args(["--io-uring", "on", "--state-file", "/nonexistent/s.json"])
                .output()
                .unwrap()
        }
    });
    drop(s);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = dir.path().join("书/1/offset-1.txt");
    let text = crate::common::within(10, "a read", move || std::fs::read_to_string(page));
    assert!(text.unwrap().contains("1: 甲第1行"));
    let daemon = Command::new("pgrep")
        .args(["-f", &format!("novelfs mount .* {}", dir.path().display())])
        .output()
        .unwrap();
    let pid: i32 = String::from_utf8_lossy(&daemon.stdout)
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .expect("the daemon runs");
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("unmount")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    // SAFETY: signal 0 only checks that the process exists.
    while unsafe { libc::kill(pid, 0) } == 0 {
        assert!(Instant::now() < deadline, "the daemon did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!is_mounted(dir.path()));
}

fn pin_to_cpu0() {
    // SAFETY: a zeroed cpu_set_t with CPU 0 set, for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set),
            0
        );
    }
}

/// A slow request (a long chapter decoded for the first time) holds only
/// its own thread: what another reader asks meanwhile on the same CPU goes
/// to the queue's other thread (`--threads 2`, the default).
#[test]
fn a_slow_request_does_not_hold_up_the_next_one_on_its_cpu() {
    require_uring!();
    let (_g, root) = crate::common::book_library(&[
        ("第1章 长.md", lines(300_000, "").as_bytes()),
        ("第2章 短.md", lines(3, "").as_bytes()),
    ]);
    let m = uring::mount(&root, &["--ttl", "0"]);
    let short = m.path().join("书/2/offset-1.txt");
    std::fs::read(&short).unwrap();
    let long = m.path().join("书/1/offset-1.txt");
    let slow = std::thread::spawn(move || {
        pin_to_cpu0();
        let t = Instant::now();
        std::fs::read(long).unwrap();
        t.elapsed()
    });
    pin_to_cpu0();
    std::thread::sleep(Duration::from_millis(20));
    let t = Instant::now();
    let quick = crate::common::within(60, "the short page", move || std::fs::read(short));
    let quick_took = t.elapsed();
    let slow_took = slow.join().unwrap();
    println!("long chapter {slow_took:?}; the short page meanwhile {quick_took:?}");
    assert!(quick.unwrap().len() > 100);
    assert!(
        slow_took > Duration::from_millis(200) && quick_took * 4 < slow_took,
        "long chapter {slow_took:?}, the short page meanwhile {quick_took:?}"
    );
}
