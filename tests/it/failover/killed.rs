//! `-o failover` through real mounts: a holder keeps the connection, and
//! a server SIGKILLed under readers is replaced without a reader seeing an
//! error or a wrong byte, only a pause (a bucket mount's too). The helpers
//! here (a library, uncached reads, the holder's status) serve every
//! failover test.
//!
//! `NOVELFS_TEST_FAILOVER_OFF=resend|journal|restart|give_up|dev_fuse|lean|drop_code`
//! in the tests' environment reaches the mount (see `src/mount/failover/handoff.rs`) and turns
//! one mechanism off, to see these tests fail without it.

use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{Mount, Rng, book_library, errno, errno_name, follow_log, fuse_available};

/// A book of `chapters` chapters, each of many pages.
pub(crate) fn library(chapters: usize) -> (tempfile::TempDir, PathBuf) {
    let texts: Vec<(String, Vec<u8>)> = (1..=chapters)
        .map(|c| {
            let mut t = format!("第{c}章 第{c}个标题\n");
            for i in 0..1500 {
                t += &format!(
                    "第{c}章第{i}行：{}。\n",
                    "文字".repeat(5 + (i * 7 + c) % 40)
                );
            }
            (format!("第{c}章.txt"), t.into_bytes())
        })
        .collect();
    let files: Vec<(&str, &[u8])> = texts
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    book_library(&files)
}

/// Reads a file whole, then drops its pages from the kernel's cache, so
/// that the next read of it reaches the server.
pub(crate) fn read_uncached(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    // SAFETY: advice on an open descriptor.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(bytes)
}

pub(crate) use crate::common::server_of;

/// Whether the server `pid` serves: it starts its sentinel thread
/// (`novelfs-sentinel`, see `handoff::Handoff::serving`) once it does.
fn serves(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|tasks| {
        tasks.flatten().any(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.starts_with("novelfs-sentine"))
        })
    })
}

/// Aborts the mount's connection (its readers get ENOTCONN): what a failed
/// test does so that no reader stays blocked for ever.
pub(crate) fn abort_connection(mnt: &Path) {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = mnt.to_str().unwrap();
    if let Some(dev) = info
        .lines()
        .find(|l| l.split(' ').nth(4) == Some(want))
        .and_then(|l| l.split(' ').nth(2))
        .and_then(|d| d.split(':').nth(1))
    {
        let _ = std::fs::write(format!("/sys/fs/fuse/connections/{dev}/abort"), "1");
    }
}

/// The kernel stacks of this test's threads and of the holder's children,
/// to see where a hang is.
pub(crate) fn stacks(holder: u32) -> String {
    let mut out = String::new();
    let mut pids = vec![std::process::id()];
    if let Ok(c) = std::fs::read_to_string(format!("/proc/{holder}/task/{holder}/children")) {
        pids.extend(c.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
    }
    for pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            let stack = std::fs::read_to_string(t.path().join("stack")).unwrap_or_default();
            let top: Vec<&str> = stack.lines().take(4).collect();
            out += &format!(
                "{pid}/{:?} {}: {}\n",
                t.file_name(),
                comm.trim(),
                top.join(" | ")
            );
        }
    }
    out
}

/// Every page of every chapter, with its bytes as the mount first served
/// them (before any kill).
pub(crate) fn pages(mnt: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let book = mnt.join("书");
    let mut out = Vec::new();
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(&book)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("章.txt"))
        .collect();
    chapters.sort();
    for c in chapters {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&c)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("offset-")
            })
            .collect();
        names.sort();
        for p in names {
            let bytes = read_uncached(&p).unwrap();
            out.push((p, bytes));
        }
    }
    out
}

pub(crate) struct Outcome {
    pub(crate) reads: u64,
    pub(crate) failed: BTreeMap<String, u64>,
    pub(crate) wrong: u64,
    pub(crate) longest: Duration,
}

impl Outcome {
    /// Asserts that no read failed or gave a wrong byte, and none paused
    /// 5 s or more.
    fn assert_unharmed(&self) {
        assert!(self.failed.is_empty(), "failed reads: {:?}", self.failed);
        assert_eq!(self.wrong, 0, "reads with wrong bytes");
        assert!(
            self.longest < Duration::from_secs(5),
            "a pause of {:?}",
            self.longest
        );
    }
}

/// `readers` threads reading random pages, checking every byte, while
/// `kills` SIGKILLs hit the server at random moments; each kill waits for
/// the next server first.
fn readers_under_kills(
    mount: &mut Mount,
    log: &Arc<Mutex<Vec<String>>>,
    readers: usize,
    kills: usize,
) -> (Outcome, usize) {
    readers_while(mount, log, readers, |holder| kill_servers(holder, kills))
}

/// `kills` SIGKILLs of the servers of `holder`, at random moments; each
/// waits for the next server first. How many it killed.
pub(crate) fn kill_servers(holder: u32, kills: usize) -> usize {
    let mut rng = Rng::new(7);
    let mut killed = 0;
    for _ in 0..kills {
        std::thread::sleep(Duration::from_millis(rng.range(150, 600)));
        let deadline = Instant::now() + Duration::from_secs(10);
        // A server that serves: one killed before serving counts as a
        // failed start, and three in a row make the holder give up (on a
        // busy machine a server can take longer to start than the pause).
        let pid = loop {
            if let Some(p) = server_of(holder).filter(|&p| serves(p)) {
                break Some(p);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let Some(pid) = pid else { break };
        // SAFETY: a signal to a process of this test's mount.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        killed += 1;
        // The next kill is for the next server.
        let deadline = Instant::now() + Duration::from_secs(10);
        while server_of(holder) == Some(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    killed
}

/// `readers` threads reading random pages (and now and then listing a
/// chapter) and checking every byte, while `act` does something to the
/// mount's holder (given its pid) and says how many times.
pub(crate) fn readers_while(
    mount: &mut Mount,
    log: &Arc<Mutex<Vec<String>>>,
    readers: usize,
    act: impl FnOnce(u32) -> usize,
) -> (Outcome, usize) {
    // One such run at a time: two at once on a small machine double the
    // pauses each measures.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mnt = mount.path().to_path_buf();
    let expected = Arc::new(pages(&mnt));
    assert!(expected.len() > 40, "{} pages", expected.len());
    let running = PageReaders::start(expected, readers);
    let holder = mount.pid();
    let killed = act(holder);
    std::thread::sleep(Duration::from_millis(500));
    match running.finish(Duration::from_secs(15)) {
        Some(outcome) => (outcome, killed),
        None => {
            let lines = log.lock().unwrap().join("\n");
            println!("{}", stacks(holder));
            abort_connection(&mnt);
            panic!(
                "a reader hung after {killed} acts (a request never answered); the log:\n{lines}"
            );
        }
    }
}

/// Threads reading random pages of `expected` (and now and then listing a
/// chapter), checking every byte, until told to finish.
pub(crate) struct PageReaders {
    stop: Arc<AtomicBool>,
    reads: Arc<AtomicU64>,
    wrong: Arc<AtomicU64>,
    failed: Arc<Mutex<BTreeMap<String, u64>>>,
    longest: Arc<Mutex<Duration>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl PageReaders {
    pub(crate) fn start(expected: Arc<Vec<(PathBuf, Vec<u8>)>>, readers: usize) -> PageReaders {
        let stop = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicU64::new(0));
        let wrong = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(Mutex::new(BTreeMap::<String, u64>::new()));
        let longest = Arc::new(Mutex::new(Duration::ZERO));
        let threads: Vec<_> = (0..readers)
            .map(|id| {
                let (expected, stop, reads, wrong, failed, longest) = (
                    expected.clone(),
                    stop.clone(),
                    reads.clone(),
                    wrong.clone(),
                    failed.clone(),
                    longest.clone(),
                );
                std::thread::spawn(move || {
                    let mut rng = Rng::new(id as u64 + 11);
                    while !stop.load(Ordering::Relaxed) {
                        let (path, want) = &expected[rng.below(expected.len() as u64) as usize];
                        let t = Instant::now();
                        let r = if rng.chance(50) {
                            std::fs::read_dir(path.parent().unwrap())
                                .and_then(|d| d.collect::<std::io::Result<Vec<_>>>())
                                .map(|_| None)
                        } else {
                            read_uncached(path).map(Some)
                        };
                        let took = t.elapsed();
                        {
                            let mut l = longest.lock().unwrap();
                            *l = (*l).max(took);
                        }
                        match r {
                            Ok(Some(got)) if &got != want => {
                                wrong.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(_) => {
                                reads.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => {
                                *failed
                                    .lock()
                                    .unwrap()
                                    .entry(errno_name(errno(&e)))
                                    .or_default() += 1;
                            }
                        }
                    }
                })
            })
            .collect();
        PageReaders {
            stop,
            reads,
            wrong,
            failed,
            longest,
            threads,
        }
    }

    /// Stops the readers and says how they did; `None` if one is still
    /// in a read after `within` (a request never answered).
    pub(crate) fn finish(self, within: Duration) -> Option<Outcome> {
        self.stop.store(true, Ordering::Relaxed);
        let deadline = Instant::now() + within;
        for t in self.threads {
            while !t.is_finished() {
                if Instant::now() > deadline {
                    return None;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            t.join().unwrap();
        }
        Some(Outcome {
            reads: self.reads.load(Ordering::Relaxed),
            failed: self.failed.lock().unwrap().clone(),
            wrong: self.wrong.load(Ordering::Relaxed),
            longest: *self.longest.lock().unwrap(),
        })
    }
}

#[test]
fn readers_see_no_error_and_no_wrong_byte_while_the_server_is_killed() {
    if !fuse_available() {
        return;
    }
    let (_tmp, root) = library(6);
    let mut mount = Mount::with_log(&root, &["-o", "failover"], "info");
    let log = follow_log(&mut mount);
    let (o, killed) = readers_under_kills(&mut mount, &log, 16, 20);
    println!(
        "failover: {killed} SIGKILLs, {} reads, failed {:?}, wrong {}, longest pause {:?}",
        o.reads, o.failed, o.wrong, o.longest
    );
    assert_eq!(killed, 20, "a server to kill each time");
    assert!(o.reads > 100, "{} reads", o.reads);
    o.assert_unharmed();
    assert!(mount.alive(), "the holder serves on");
    // The holder saw every kill, and started a server for each: as a
    // death, or, for a server killed as it said it serves (before the
    // holder read it), as a start that failed.
    let status = holder_status(mount.path());
    let count = |name: &str| status[name].parse::<u64>().unwrap();
    assert_eq!(
        count("servers died") + count("died before serving"),
        20,
        "{status:?}"
    );
    assert_eq!(count("servers started"), 21, "{status:?}");
}

/// The same through a mount of a bucket (moto on 127.0.0.1): each next
/// server opens the bucket again (its own client, with the credentials of
/// the environment the holder keeps, its listings and bodies fetched
/// anew), and readers see no error and no wrong byte, only a pause.
#[test]
fn a_bucket_mounts_readers_see_no_error_while_its_server_is_killed() {
    if !fuse_available() {
        return;
    }
    let (_tmp, root) = library(6);
    let Some(bucket) = crate::common::bucket::Bucket::with(&root) else {
        return;
    };
    let mut mount = bucket.mount(&["-o", "failover", "--ttl", "1"]);
    let log = follow_log(&mut mount);
    let (o, killed) = readers_under_kills(&mut mount, &log, 8, 10);
    println!(
        "failover of a bucket mount: {killed} SIGKILLs, {} reads, failed {:?}, wrong {}, longest pause {:?}; {:?}",
        o.reads,
        o.failed,
        o.wrong,
        o.longest,
        bucket.server.counts()
    );
    assert_eq!(killed, 10, "a server to kill each time");
    assert!(o.reads > 50, "{} reads", o.reads);
    o.assert_unharmed();
    assert!(mount.alive(), "the holder serves on");
    assert_eq!(holder_count(mount.path(), "servers started"), 11);
}

/// What `novelfs status MNT` says of the mount's holder, by name.
pub(crate) fn holder_status(mnt: &Path) -> BTreeMap<String, String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("status")
        .arg(mnt)
        .output()
        .expect("novelfs status runs");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "novelfs status: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    said.lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A count `novelfs status` gives (`servers died`, `upgrades` …).
pub(crate) fn holder_count(mnt: &Path, name: &str) -> u64 {
    let status = holder_status(mnt);
    status
        .get(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no count {name:?} in {status:?}"))
}

/// A mount with a holder whose servers after the first crash at start
/// (`NOVELFS_TEST_SERVER_CRASH=restart`), so that it gives up.
pub(crate) fn mount_whose_restarts_crash(root: &Path) -> Mount {
    let crash = std::ffi::OsStr::new("restart");
    Mount::with_env(
        root,
        &["-o", "failover"],
        "warn",
        &[("NOVELFS_TEST_SERVER_CRASH", crash)],
    )
}

/// The threads of `pid` that serve a FUSE over io_uring ring (fuser names
/// them `fuser-uring-QUEUE.N`).
fn ring_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|tasks| {
            tasks
                .flatten()
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.starts_with("fuser-uring-"))
                })
                .count()
        })
        .unwrap_or(0)
}

/// Where the kernel offers FUSE over io_uring, a failover mount under
/// `io_uring=auto` is served through /dev/fuse (a ring cannot be handed to
/// a next server on Linux 6.18: what a dead server held in its entries is
/// never resent), and survives the kills as without the offer.
/// `NOVELFS_TEST_FAILOVER_OFF=dev_fuse` lets the first server take the
/// ring: then no next server can take the connection over and reads fail.
#[cfg(feature = "io-uring")]
#[test]
fn with_io_uring_offered_failover_serves_through_dev_fuse_and_survives_kills() {
    if !fuse_available() || !crate::common::uring::available() {
        return;
    }
    let (_tmp, root) = library(6);
    let switch = crate::common::uring::Switch::set(true);
    let mut mount = Mount::with_log(&root, &["-o", "failover", "--io-uring", "auto"], "info");
    std::fs::metadata(mount.path()).expect("the mount answers");
    // The connection's transport is settled at INIT.
    drop(switch);
    let log = follow_log(&mut mount);
    let server = server_of(mount.pid()).expect("a server");
    assert_eq!(ring_threads(server), 0, "the server serves no ring");
    let (o, killed) = readers_under_kills(&mut mount, &log, 16, 20);
    println!(
        "failover, io_uring offered: {killed} SIGKILLs, {} reads, failed {:?}, wrong {}, longest pause {:?}",
        o.reads, o.failed, o.wrong, o.longest
    );
    assert_eq!(killed, 20, "a server to kill each time");
    assert!(o.failed.is_empty(), "failed reads: {:?}", o.failed);
    assert_eq!(o.wrong, 0, "reads with wrong bytes");
    assert!(mount.alive(), "the holder serves on");
}
