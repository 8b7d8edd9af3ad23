//! `novelfs upgrade` through real mounts: the holder hands the connection
//! to a new server at a request boundary, back and forth between two
//! builds, while 16 readers check every byte (no failed read, a short
//! pause); a new binary that cannot start
//! leaves the old server serving; a mount without a holder is refused.
//!
//! `NOVELFS_TEST_FAILOVER_OFF=stand_by|ready_first|drain` reaches the
//! mount (see `src/mount/failover/handoff.rs`) and turns one mechanism off, to see
//! these tests fail without it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::{Mount, Rng, errno, errno_name, follow_log, fuse_available, skip};
use crate::failover::killed::{holder_count, library, read_uncached, readers_while, server_of};

/// A reader of names no one looked up before (`-limit-` pages get inode
/// numbers of their own), each read again a little later uncached: a node
/// one server made must be known to the next. Returns (reads, failures).
fn fresh_names(
    mnt: PathBuf,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<(u64, BTreeMap<String, u64>)> {
    std::thread::spawn(move || {
        let mut rng = Rng::new(5);
        let mut reads = 0;
        let mut failed = BTreeMap::<String, u64>::new();
        let mut earlier: Vec<(PathBuf, Vec<u8>)> = Vec::new();
        let fail = |failed: &mut BTreeMap<String, u64>, what: &str, e: &std::io::Error| {
            *failed
                .entry(format!("{what} {}", errno_name(errno(e))))
                .or_default() += 1;
        };
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            let chapter = 1 + rng.below(6);
            let path = mnt.join(format!(
                "书/第{chapter}章.txt/offset-{}-limit-{}.txt",
                1 + rng.below(1400),
                1 + n % 400
            ));
            match read_uncached(&path) {
                Ok(bytes) => {
                    reads += 1;
                    earlier.push((path, bytes));
                }
                Err(e) => fail(&mut failed, "fresh", &e),
            }
            if earlier.len() > 8 {
                let (path, want) = earlier.remove(0);
                match read_uncached(&path) {
                    Ok(got) if got == want => reads += 1,
                    Ok(_) => *failed.entry("changed".into()).or_default() += 1,
                    Err(e) => fail(&mut failed, "again", &e),
                }
            }
        }
        (reads, failed)
    })
}

fn upgrade(mnt: &Path, binary: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_novelfs"));
    cmd.arg("upgrade").arg(mnt);
    if let Some(b) = binary {
        cmd.arg("--binary").arg(b);
    }
    cmd.output().expect("novelfs upgrade runs")
}

/// The server serving now, waiting for one for up to 10 s.
fn serving(holder: u32) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(p) = server_of(holder) {
            return p;
        }
        assert!(Instant::now() < deadline, "no server serves");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The newest modification time of the files under `dir`.
fn newest_under(dir: &Path) -> std::time::SystemTime {
    let mut newest = std::time::UNIX_EPOCH;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return newest;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let at = if meta.is_dir() {
            newest_under(&path)
        } else {
            meta.modified().unwrap_or(newest)
        };
        newest = newest.max(at);
    }
    newest
}

/// Another build of these sources: the release binary beside the tests'
/// debug one (`.ci/run` builds it for the package), when it was built
/// after every source file last changed. Its code differs from this
/// build's in everything but what the two exchange.
pub(crate) fn release_build() -> Option<PathBuf> {
    let debug = Path::new(env!("CARGO_BIN_EXE_novelfs"));
    let release = debug.parent()?.parent()?.join("release/novelfs");
    let built = std::fs::metadata(&release).ok()?.modified().ok()?;
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = ["src", "crates", "vendor", "Cargo.toml", "Cargo.lock"]
        .iter()
        .map(|p| {
            let p = manifest.join(p);
            match std::fs::metadata(&p) {
                Ok(m) if m.is_file() => m.modified().unwrap_or(std::time::UNIX_EPOCH),
                _ => newest_under(&p),
            }
        })
        .max()?;
    (built > sources).then_some(release)
}

#[test]
fn readers_see_no_error_while_the_server_is_upgraded_in_place() {
    if !fuse_available() {
        return;
    }
    // Upgrades go back and forth between two builds of these sources
    // (debug and release), as an install of a new build would.
    let builds = match release_build() {
        Some(release) => vec![release, PathBuf::from(env!("CARGO_BIN_EXE_novelfs"))],
        None => {
            skip("no release build newer than the sources (cargo build --release)");
            vec![PathBuf::from(env!("CARGO_BIN_EXE_novelfs"))]
        }
    };
    let exe = |pid: u32| std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    let (_tmp, root) = library(6);
    let mut mount = Mount::with_log(&root, &["-o", "failover"], "info");
    let log = follow_log(&mut mount);
    let mnt = mount.path().to_path_buf();
    let upgrades = 6;
    let stop = Arc::new(AtomicBool::new(false));
    let fresh = fresh_names(mnt.clone(), stop.clone());
    let (o, done) = readers_while(&mut mount, &log, 16, |holder| {
        let mut rng = Rng::new(3);
        let mut done = 0;
        for n in 0..upgrades {
            std::thread::sleep(Duration::from_millis(rng.range(300, 800)));
            let before = serving(holder);
            let build = &builds[n % builds.len()];
            let t = Instant::now();
            let out = upgrade(&mnt, Some(build));
            let said = String::from_utf8_lossy(&out.stdout).into_owned();
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(out.status.success(), "upgrade failed: {err}");
            // The holder hands over once the old server's sentinel thread
            // has ended; the rest of that process ends a moment later.
            let deadline = Instant::now() + Duration::from_secs(10);
            while server_of(holder) == Some(before) {
                assert!(
                    Instant::now() < deadline,
                    "the old server {before} lives on after: {said}"
                );
                std::thread::sleep(Duration::from_millis(2));
            }
            let now = serving(holder);
            assert_ne!(now, before, "a new server serves: {said}");
            assert_eq!(&exe(now), build, "the build upgraded to serves");
            println!("upgrade in {:?}: {}", t.elapsed(), said.trim());
            done += 1;
        }
        done
    });
    stop.store(true, Ordering::Relaxed);
    let (fresh_reads, fresh_failed) = fresh.join().unwrap();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "upgrade: {done} upgrades, {} reads, failed {:?}, wrong {}, longest pause {:?}; \
         fresh names: {fresh_reads} reads, failed {fresh_failed:?} (load {})",
        o.reads,
        o.failed,
        o.wrong,
        o.longest,
        load.split(' ').next().unwrap_or("?")
    );
    assert!(
        fresh_failed.is_empty(),
        "fresh names failed: {fresh_failed:?}"
    );
    assert!(fresh_reads > 50, "{fresh_reads} reads of fresh names");
    assert_eq!(done, upgrades);
    assert!(o.reads > 100, "{} reads", o.reads);
    assert!(o.failed.is_empty(), "failed reads: {:?}", o.failed);
    assert_eq!(o.wrong, 0, "reads with wrong bytes");
    // The target is 200 ms; a machine at load 20 gets a margin.
    assert!(
        o.longest < Duration::from_secs(2),
        "a pause of {:?}",
        o.longest
    );
    assert!(mount.alive(), "the holder serves on");
    // No server died: each stepped down.
    assert_eq!(holder_count(&mnt, "servers died"), 0);
    assert_eq!(holder_count(&mnt, "upgrades"), upgrades as u64);
}

#[test]
fn an_upgrade_to_a_binary_that_cannot_start_leaves_the_old_server_serving() {
    if !fuse_available() {
        return;
    }
    let (tmp, root) = library(6);
    let broken = tmp.path().join("novelfs-broken");
    std::fs::write(&broken, "#!/bin/sh\necho 'a broken build' >&2\nexit 3\n").unwrap();
    std::fs::set_permissions(&broken, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut mount = Mount::with_log(&root, &["-o", "failover"], "info");
    let log = follow_log(&mut mount);
    let mnt = mount.path().to_path_buf();
    let (o, refused) = readers_while(&mut mount, &log, 16, |holder| {
        let mut refused = 0;
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(300));
            let before = serving(holder);
            let out = upgrade(&mnt, Some(&broken));
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            println!("refused: {}", err.trim());
            assert_eq!(out.status.code(), Some(1), "{err}");
            assert!(err.starts_with("novelfs: "), "a line saying why: {err}");
            assert_eq!(server_of(holder), Some(before), "the old server serves on");
            refused += 1;
        }
        refused
    });
    println!(
        "broken upgrade: {refused} refused, {} reads, failed {:?}, wrong {}, longest pause {:?}",
        o.reads, o.failed, o.wrong, o.longest
    );
    assert!(o.failed.is_empty(), "failed reads: {:?}", o.failed);
    assert_eq!(o.wrong, 0);
    // A missing binary is refused by the CLI itself.
    let out = upgrade(&mnt, Some(&tmp.path().join("missing")));
    assert_eq!(out.status.code(), Some(1));
    assert!(mount.alive());
}

#[test]
fn a_mount_without_a_holder_cannot_be_upgraded() {
    if !fuse_available() {
        return;
    }
    let (_tmp, root) = library(1);
    let mut mount = Mount::new(&root, &["-o", "nofailover"]);
    let out = upgrade(mount.path(), None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("novelfs: ") && err.lines().count() == 1,
        "{err}"
    );
    // Nor asked its status.
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("status")
        .arg(mount.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("novelfs: ") && err.contains("no holder"),
        "{err}"
    );
    assert!(mount.alive(), "the mount serves on");
    // Not a mount at all.
    let out = upgrade(Path::new("/"), None);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn an_upgraded_mount_serves_and_restarts_from_the_new_binary() {
    if !fuse_available() {
        return;
    }
    let (tmp, root) = library(2);
    // Another build, as an install leaves it: a binary at another path.
    let other = tmp.path().join("novelfs-next");
    std::fs::copy(env!("CARGO_BIN_EXE_novelfs"), &other).unwrap();
    let mut mount = Mount::with_log(&root, &["-o", "failover"], "info");
    let _log = follow_log(&mut mount);
    let mnt = mount.path().to_path_buf();
    let page = mnt.join("书/第1章.txt/offset-1.txt");
    let before = read_uncached(&page).unwrap();
    let out = upgrade(&mnt, Some(&other));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exe = |pid: u32| std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    let holder = mount.pid();
    let server = serving(holder);
    assert_eq!(exe(server), other, "the new binary serves");
    assert_eq!(read_uncached(&page).unwrap(), before);
    // A crash now: the next server starts from the new binary too.
    // SAFETY: a signal to a process of this test's mount.
    unsafe { libc::kill(server as i32, libc::SIGKILL) };
    assert_eq!(read_uncached(&page).unwrap(), before);
    let next = serving(holder);
    assert_ne!(next, server);
    assert_eq!(exe(next), other, "restarted from the new binary");
    assert_ne!(exe(holder), other, "the holder stays");
}

/// While the holder starts servers in place of a crashed one (here they
/// crash as they start, for ever: `NOVELFS_TEST_FAILOVER_OFF=give_up`),
/// `novelfs upgrade` is refused at once with why, `novelfs status`
/// answers and SIGTERM unmounts: none waits for a server that may never
/// serve.
#[test]
fn while_the_holder_restarts_a_crashed_server_upgrade_is_refused_and_sigterm_unmounts() {
    if !fuse_available() {
        return;
    }
    let (_tmp, root) = library(1);
    let mut off = "give_up".to_string();
    if let Ok(more) = std::env::var("NOVELFS_TEST_FAILOVER_OFF") {
        off = format!("{off},{more}");
    }
    let mut mount = Mount::with_env(
        &root,
        &["-o", "failover"],
        "warn",
        &[
            ("NOVELFS_TEST_SERVER_CRASH", std::ffi::OsStr::new("restart")),
            ("NOVELFS_TEST_FAILOVER_OFF", std::ffi::OsStr::new(&off)),
        ],
    );
    let mnt = mount.path().to_path_buf();
    read_uncached(&mnt.join("书/第1章.txt/offset-1.txt")).expect("the first server serves");
    let holder = mount.pid();
    let server = serving(holder);
    // SAFETY: a signal to a process of this test's mount.
    unsafe { libc::kill(server as i32, libc::SIGKILL) };
    let deadline = Instant::now() + Duration::from_secs(20);
    while holder_count(&mnt, "died before serving") < 2 {
        assert!(Instant::now() < deadline, "the holder does not restart");
        std::thread::sleep(Duration::from_millis(20));
    }
    let t = Instant::now();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("upgrade")
        .arg(&mnt)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(status) = cmd.try_wait().unwrap() {
            break status;
        }
        if t.elapsed() > Duration::from_secs(10) {
            let _ = cmd.kill();
            // SAFETY: a signal to this test's holder (its servers go with it).
            unsafe { libc::kill(holder as i32, libc::SIGKILL) };
            panic!(
                "novelfs upgrade waited {:?} for a restarting holder",
                t.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut cmd.stderr.take().unwrap(), &mut err).unwrap();
    println!("refused in {:?}: {}", t.elapsed(), err.trim());
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("starting a server"), "{err}");
    // Still restarting, and saying so.
    assert!(holder_count(&mnt, "died before serving") >= 2);
    assert_eq!(holder_count(&mnt, "servers died"), 1);
    // SIGTERM unmounts while it restarts too, and the holder ends.
    let t = Instant::now();
    // SAFETY: a signal to this test's holder.
    unsafe { libc::kill(holder as i32, libc::SIGTERM) };
    while crate::common::is_mounted(&mnt) || server_of(holder).is_some() {
        if t.elapsed() > Duration::from_secs(10) {
            // SAFETY: a signal to this test's holder (its servers go with it).
            unsafe { libc::kill(holder as i32, libc::SIGKILL) };
            panic!("the holder did not unmount on SIGTERM while it restarted servers");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let ended = mount.terminate().expect("the holder ran");
    println!(
        "unmounted {:?} after SIGTERM; the holder ended: {ended}",
        t.elapsed()
    );
    assert!(t.elapsed() < Duration::from_secs(9), "{:?}", t.elapsed());
}

/// While an upgrade's new server gets ready (here it takes long: a wrapper
/// that sleeps 5 s first, as a bucket's library can take a while),
/// `novelfs status` answers at once and a second upgrade is refused at
/// once; the first goes through.
#[test]
fn while_an_upgrade_gets_ready_status_answers_and_another_is_refused() {
    if !fuse_available() {
        return;
    }
    let (tmp, root) = library(1);
    let slow = tmp.path().join("novelfs-slow");
    std::fs::write(
        &slow,
        format!(
            "#!/bin/sh\nsleep 5\nexec {} \"$@\"\n",
            env!("CARGO_BIN_EXE_novelfs")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut mount = Mount::with_log(&root, &["-o", "failover"], "warn");
    let mnt = mount.path().to_path_buf();
    read_uncached(&mnt.join("书/第1章.txt/offset-1.txt")).expect("the server serves");
    let first = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("upgrade")
        .arg(&mnt)
        .arg("--binary")
        .arg(&slow)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Each status answers at once, the first upgrade under way or not.
    let begun = Instant::now();
    let (status, asked) = loop {
        let t = Instant::now();
        let status = crate::failover::killed::holder_status(&mnt);
        let asked = t.elapsed();
        assert!(asked < Duration::from_millis(2500), "status took {asked:?}");
        if status["server"].ends_with("(starting)") {
            break (status, asked);
        }
        assert!(
            begun.elapsed() < Duration::from_secs(3),
            "the upgrade did not begin: {status:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let t = Instant::now();
    let second = upgrade(&mnt, None);
    let refused = t.elapsed();
    let err = String::from_utf8_lossy(&second.stderr).into_owned();
    println!("status in {asked:?}: {status:?}; a second upgrade refused in {refused:?}: {err}");
    assert_eq!(second.status.code(), Some(1), "{err}");
    assert!(err.contains("starting a server"), "{err}");
    assert!(
        refused < Duration::from_millis(2500),
        "refused in {refused:?}"
    );
    let out = first.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(holder_count(&mnt, "upgrades"), 1);
    assert!(read_uncached(&mnt.join("书/第1章.txt/offset-1.txt")).is_ok());
    assert!(mount.alive());
}

/// The device of the mount at `mnt` (`MAJOR:MINOR`), from mountinfo.
fn device_of(mnt: &Path) -> String {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    info.lines()
        .find(|l| l.split(' ').nth(4) == Some(mnt.to_str().unwrap()))
        .and_then(|l| l.split(' ').nth(2))
        .expect("the mount is listed")
        .to_string()
}

/// A mount's device number is given again as soon as the mount before it
/// went, and that mount's holder lets its socket's name go a moment later:
/// a new holder waits for the name (here held for a second by the test)
/// rather than go without a socket, so `novelfs status` and `upgrade`
/// reach it.
#[test]
fn a_holder_waits_for_its_socket_name_a_holder_before_still_holds() {
    use std::os::linux::net::SocketAddrExt;
    if !fuse_available() {
        return;
    }
    let (_tmp, root) = library(1);
    // Device numbers are given lowest first: the next mount likely gets
    // the one a mount just let go (other tests' mounts may take it first).
    for _ in 0..5 {
        let before = Mount::new(&root, &["-o", "nofailover"]);
        let device = device_of(before.path());
        drop(before);
        let name = format!("novelfs-holder/{device}");
        let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let taken = std::os::unix::net::UnixListener::bind_addr(&address).unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(1));
            drop(taken);
        });
        let mount = Mount::with_log(&root, &["-o", "failover"], "warn");
        release.join().unwrap();
        if device_of(mount.path()) != device {
            println!("another mount took {device} first; again");
            continue;
        }
        // Served: the holder made its socket before it started the server.
        read_uncached(&mount.path().join("书/第1章.txt/offset-1.txt")).expect("served");
        let status = crate::failover::killed::holder_status(mount.path());
        assert_eq!(status["holder"], mount.pid().to_string(), "{status:?}");
        return;
    }
    panic!("no mount got the device number the one before let go");
}
