//! `novelfs mount` as a process: the checks that give a clear reason
//! instead of a cryptic failure, daemonizing with a readiness report to the
//! waiting CLI, and the allocator settings the daemon runs with.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;

use novelfs_kit::cause::Chain;

use super::config::MountConfig;
use super::failover::handoff::{self, Handoff};
use super::library_at::{BucketReading, LibraryAt};
use super::os::attach::missing_dev_fuse;
use super::os::mountpoint::{MountpointState, mountpoint_state, stale_message, unmount};
use super::os::process::{Forked, detach_stdio, fork_with_socket, report_failure};
use super::os::watchdog::Watchdog;
use super::serving::session::{Start, serve};
use super::verdict;
use novelfs_fs::MMAP_THRESHOLD;
use novelfs_library::Library;

/// The checks that turn a failing mount into a sentence.
fn preflight(config: &MountConfig) -> Result<(), String> {
    super::transport::preflight(config.io_uring)?;
    // A bucket is checked after the fork (its client's threads would not
    // survive one): by the waiting CLI, beside the daemon's start, or in
    // the foreground by the daemon (`open_library`).
    match &config.library {
        at @ LibraryAt::Dir(_) => at.check(&config.bucket)?,
        LibraryAt::Bucket(_) => {}
    }
    match mountpoint_state(&config.mountpoint) {
        MountpointState::Ready => {}
        MountpointState::Missing => {
            return Err(format!(
                "mountpoint {} does not exist (create it with mkdir)",
                config.mountpoint.display()
            ));
        }
        MountpointState::NotADirectory => {
            return Err(format!(
                "mountpoint {} is not a directory",
                config.mountpoint.display()
            ));
        }
        MountpointState::AlreadyMounted => {
            let at = config.mountpoint.display();
            // `novelfs unmount` unmounts novelfs mounts only: anything else
            // mounted there is named, with the tool that unmounts it.
            return Err(match super::os::mountinfo::mount_type(&config.mountpoint) {
                Some(t) if t == "fuse.novelfs" => format!(
                    "{at} is already a mount point (a novelfs mount); unmount it first (`novelfs unmount {at}`)"
                ),
                Some(t) => format!(
                    "{at} is already a mount point ({t}, not novelfs; --force clears only a stale novelfs mount); \
                     choose another mountpoint, or unmount it first (`umount {at}`)"
                ),
                None => format!("{at} is already a mount point; unmount it first"),
            });
        }
        MountpointState::Stale if config.force => {
            unmount(&config.mountpoint, true).map_err(|e| e.to_string())?;
            if mountpoint_state(&config.mountpoint) != MountpointState::Ready {
                return Err(stale_message(&config.mountpoint));
            }
        }
        MountpointState::Stale => return Err(stale_message(&config.mountpoint)),
    }
    if !Path::new("/dev/fuse").exists() {
        return Err(missing_dev_fuse());
    }
    Ok(())
}

/// A mountpoint with files in it is mounted over, as FUSE allows, but
/// its files are hidden until the unmount: said on stderr and in the log
/// (once, where the log is stderr).
fn warn_if_not_empty(config: &MountConfig) {
    let Ok(mut entries) = std::fs::read_dir(&config.mountpoint) else {
        return;
    };
    if entries.next().is_none() {
        return;
    }
    let line = format!(
        "mountpoint {} is not empty: its files are hidden while novelfs is mounted there",
        config.mountpoint.display()
    );
    if !(config.foreground && config.log_file.is_none()) {
        eprintln!("novelfs: warning: {line}");
    }
    log::warn!("{line}");
}

/// Mounts and serves until unmounted. Returns the process exit code.
/// Without `foreground`, the calling process returns as soon as the mount
/// is ready (or failed), and a detached child serves it. Daemonizing and
/// auto_unmount's watchdog fork: they fail unless the process has a single
/// thread (see `fork_with_socket`).
pub(crate) fn run(config: MountConfig) -> i32 {
    if let Some(h) = Handoff::from_env() {
        return serve_for_holder(config, h);
    }
    if let Err(msg) = preflight(&config) {
        eprintln!("novelfs: {msg}");
        return 1;
    }
    warn_if_not_empty(&config);
    // The kernel compares resolved paths (mountinfo, fusermount3); the
    // preflight has just stat'ed this one, so resolving it cannot hang.
    let mountpoint = std::fs::canonicalize(&config.mountpoint).unwrap_or(config.mountpoint.clone());

    // Where relative arguments were given from: a holder's servers parse
    // the same arguments again, there.
    let given_in = std::env::current_dir().ok();
    let mut ready_pipe: Option<OwnedFd> = None;
    if !config.foreground {
        match fork_with_socket() {
            Err(e) => {
                eprintln!("novelfs: cannot start the daemon: {e}");
                return 1;
            }
            Ok(Forked::Child(write_end)) => {
                // Detach from the terminal's session.
                let _ = nix::unistd::setsid();
                // Do not keep the caller's working directory busy (every
                // path the daemon uses is absolute by now).
                let _ = std::env::set_current_dir("/");
                ready_pipe = Some(write_end);
            }
            Ok(Forked::Parent(daemon)) => {
                // The bucket is checked here, while the daemon mounts and
                // starts its server, which waits for the word (`verdict`).
                if let at @ LibraryAt::Bucket(_) = &config.library
                    && verdict::by_cli()
                {
                    let (checked, cost) = at.check_costing(&config.bucket);
                    verdict::tell(&daemon, &checked, &cost);
                }
                return wait_for_daemon(daemon);
            }
        }
    }

    // Keep the daemon's footprint close to its cache budget: big buffers
    // (big chapters and their line indexes, see `MMAP_THRESHOLD`) go
    // straight to mmap and back to the system when freed, and one arena
    // holds the heap. With two, the cache's entries are made in the arena
    // of whichever thread decodes them and freed into it by whichever
    // thread evicts them, so one arena can fill while the other keeps its
    // freed pages: each keeps its own high-water mark, and the sum goes
    // well over the budget.
    // SAFETY: mallopt only tunes glibc's allocator; called before any thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as i32);
    }
    let mut watchdog = None;
    if config.auto_unmount {
        match Watchdog::start(&mountpoint) {
            Ok(w) => watchdog = Some(w),
            Err(e) => {
                let msg = format!("auto_unmount: cannot start its watchdog process: {e}");
                report_failure(ready_pipe, &msg);
                return 1;
            }
        }
    }
    if config.failover {
        // This process stays as the holder; a child serves.
        return super::failover::holder::lean::hold(
            &config,
            &mountpoint,
            given_in,
            watchdog,
            ready_pipe,
        );
    }
    // Opened here, past every fork and the allocator's settings: a
    // bucket's client starts threads.
    let library = match open_library(&config, ready_pipe.as_ref()) {
        Ok(l) => l,
        Err(msg) => {
            report_failure(ready_pipe, &msg);
            return 1;
        }
    };
    serve(
        library,
        &config,
        &mountpoint,
        Start::Attach(watchdog),
        |outcome| match outcome {
            Ok(()) => {
                if let Some(fd) = ready_pipe {
                    let _ = std::fs::File::from(fd).write_all(b"ok");
                    detach_stdio();
                }
            }
            Err(msg) => report_failure(ready_pipe, &msg),
        },
    )
}

/// A server a holder started (`-o failover`): serves the connection it
/// was handed, reporting to the waiting CLI when it is the first.
fn serve_for_holder(config: MountConfig, mut h: Handoff) -> i32 {
    if h.generation > 1
        && novelfs_library::test_switch::var(handoff::CRASH_VAR).is_some_and(|v| v == "restart")
    {
        // The test fault: a server that cannot start.
        std::process::abort();
    }
    // SAFETY: naming this thread (the process's comm), which the tests and
    // ps show; a valid NUL-terminated name.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"novelfs-server".as_ptr()) };
    // The holder is the daemon a user or systemd sees: killing it ends the
    // mount as killing the daemon does without one, so the server ends
    // with it (the holder is single-threaded: the signal comes when the
    // process ends). A holder already gone before this is seen here.
    // SAFETY: prctl with an int argument.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    if std::os::unix::process::parent_id() != h.holder {
        return 1;
    }
    // SAFETY: as in `run`, before any thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as i32);
    }
    // Before any other thread starts: the holder may ask it to step down.
    super::failover::leave_for_upgrade::watch(h.generation);
    h.start_sentinel();
    // The arguments are parsed; nothing is kept busy.
    let _ = std::env::set_current_dir("/");
    let cli = h.cli.take();
    super::counted::attach(&h.state);
    // Never stat'ed: while no server runs, that would wait on this one.
    let mountpoint = config.mountpoint.clone();
    let library = match open_library(&config, cli.as_ref()) {
        Ok(l) => l,
        Err(msg) => {
            report_failure(cli, &msg);
            return 1;
        }
    };
    serve(
        library,
        &config,
        &mountpoint,
        Start::Handed(h),
        |outcome| match outcome {
            Ok(()) => {
                if let Some(fd) = cli {
                    let _ = std::fs::File::from(fd).write_all(b"ok");
                    detach_stdio();
                }
            }
            Err(msg) => report_failure(cli, &msg),
        },
    )
}

/// A fault for tests (`NOVELFS_TEST_SLOW_START_MS=N`): the daemon opens
/// its library N ms late, as on a machine too busy to start it at once.
const SLOW_START_VAR: &str = "NOVELFS_TEST_SLOW_START_MS";

/// The library; a bucket is checked here unless a waiting CLI (`cli`)
/// checks it and tells how it went (see `verdict`).
fn open_library(config: &MountConfig, cli: Option<&OwnedFd>) -> Result<Library, String> {
    let at = &config.library;
    let reading = BucketReading {
        ttl: config.tree.ttl,
        ahead_bytes: config.ahead_bytes,
        follow: config.follow_published,
        stale_if_error: config.stale_if_error,
        drift: config.drift,
    };
    // The file-name patterns, which the mount waits for before it reports
    // ready (`NovelFs::prepared`), compile on the other core while the
    // bucket's check is on its round trip, not after it.
    if at.is_bucket() {
        let _ =
            novelfs_kit::thread::spawn("novelfs-prepare", None, novelfs_library::prepare_patterns);
    }
    if let Some(ms) = novelfs_library::test_switch::var(SLOW_START_VAR).and_then(|v| v.parse().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    let heard = cli
        .filter(|_| verdict::by_cli())
        .map(|fd| move || verdict::hear(fd));
    let checked_elsewhere = heard
        .as_ref()
        .map(|hear| hear as &dyn Fn() -> Result<verdict::Cost, String>);
    let (mut library, head) = at.open_following(&config.bucket, reading, checked_elsewhere)?;
    library.max_chapter_bytes = config.max_chapter_bytes;
    let library = match &config.path_root {
        Some(root) => library.with_path_root(root).map_err(|e| e.to_string())?,
        None => library,
    };
    // A mount that follows a published snapshot has each book's rows with
    // the book's piece, as it first reads the book. Without one, a fresh
    // machine starts from the whole index an older novelfs published
    // beside a bucket's library, if any; a mount without either reads
    // chapters as they are asked for. Only a mount with an index waits
    // for the head here.
    if let Some(dir) = &config.tree.index_dir
        && head.and_then(|h| h.get()).is_none()
    {
        match at.fetch_published(&config.bucket, dir, &library) {
            Ok(true) => log::info!("index published in {} taken", config.root.display()),
            Ok(false) => {}
            Err(e) => log::warn!("no published index: {}", Chain(&*e)),
        }
    }
    Ok(library)
}

/// The CLI's side of the fork: waits for the daemon's word on the mount.
fn wait_for_daemon(read_end: OwnedFd) -> i32 {
    let mut report = String::new();
    let _ = std::fs::File::from(read_end).read_to_string(&mut report);
    if report.starts_with("ok") {
        return 0;
    }
    let msg = if report.is_empty() {
        "the mount daemon exited before the mount was ready".into()
    } else {
        report
    };
    eprintln!("novelfs: {msg}");
    1
}
