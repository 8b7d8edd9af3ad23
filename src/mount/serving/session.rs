//! One FUSE session: the kernel mount novelfs asks for, the fuser session
//! over it, the threads beside it (pushing invalidations, unmounting on a
//! signal), and serving until the mount goes.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;

use fuser::Config;

use super::ending::Ending;
use super::fuse::FuseAdapter;
use super::pusher::{push_changes, store_ahead};
use crate::mount::access::Access;
use crate::mount::config::MountConfig;
use crate::mount::failover::handoff::{self, Handoff};
use crate::mount::failover::left_unanswered;
use crate::mount::logging;
use crate::mount::os::attach::attach;
use crate::mount::os::mountinfo::mount_id;
use crate::mount::os::mountpoint::{detach_if_ours, unmount_or_detach};
use crate::mount::os::watchdog::Watchdog;
use novelfs_fs::{JournalFile, NovelFs};
use novelfs_library::Library;

/// Where a server's connection comes from.
pub(crate) enum Start {
    /// Mounted here, by this process (the daemon without a holder), with
    /// auto_unmount's watchdog if any.
    Attach(Option<Watchdog>),
    /// Handed over by a holder (`-o failover`, see `holder`).
    Handed(Handoff),
}

/// Mounts `library` at `mountpoint` (resolved, as the kernel writes it in
/// mountinfo), or takes the connection a holder hands over, and serves
/// until unmounted; returns the exit code. `ready` is told once, with `Ok`
/// when the mount answers or with why it failed.
pub(crate) fn serve(
    library: Library,
    config: &MountConfig,
    mountpoint: &Path,
    start: Start,
    ready: impl FnOnce(Result<(), String>),
) -> i32 {
    let signals = block_termination_signals();
    let library_root = library.root().to_string_lossy().into_owned();
    let fs = Arc::new(NovelFs::new(library, config.tree.clone()).listing_formats(config.formats));
    let access = config.access;
    let source = config.kernel.fsname.as_deref().unwrap_or(&library_root);
    // The watchdog lives as long as this function: it unmounts once this
    // process is gone, and dropping it tells it so.
    let (fd, can_clone, mut handoff, mut watchdog) = match start {
        Start::Attach(watchdog) => match attach(&config.kernel, source, mountpoint) {
            Ok(a) => (a.fd, a.can_clone, None, watchdog),
            Err(msg) => {
                ready(Err(msg));
                return 1;
            }
        },
        Start::Handed(mut h) => match h.fuse.take() {
            // Every worker reads the holder's descriptor, never a clone:
            // the kernel fails what a closed clone had read, while what
            // was read through the holder's stays for NOTIFY_RESEND.
            Some(fd) => (fd, false, Some(h), None),
            None => {
                ready(Err("the holder handed no connection".into()));
                return 1;
            }
        },
    };
    // The descriptor the session takes, for answers written beside it.
    let fuse = fd.as_raw_fd();
    let mount_id = mount_id(mountpoint);
    if let (Some(w), Some(id)) = (watchdog.as_mut(), mount_id) {
        w.arm(id);
    }
    let resumed = handoff.as_ref().is_some_and(|h| h.generation > 1);
    #[cfg_attr(not(feature = "io-uring"), allow(unused_mut))]
    let mut cfg = fuser_config(access, config.threads, can_clone);
    #[cfg(feature = "io-uring")]
    {
        cfg.io_uring = if handoff.is_some() && !handoff::switched_off("dev_fuse") {
            // A ring cannot be handed to a next server (see
            // `transport::failover_keeps_to_dev_fuse`).
            fuser::IoUringMode::Off
        } else {
            config.io_uring.to_fuser()
        };
        // Each CPU's queue gets `threads` threads, so that one slow chapter
        // does not hold up the other requests made on that CPU.
        cfg.io_uring_threads_per_queue = config.threads;
    }
    let mut replayed = String::new();
    if let Some(h) = handoff.as_mut() {
        if let Err(msg) = h.stand_by() {
            ready(Err(msg));
            return 1;
        }
        match keep_inodes(&fs, h) {
            Ok(said) => replayed = said,
            Err(msg) => {
                ready(Err(msg));
                return 1;
            }
        }
    }
    let adapter = FuseAdapter::new(fs.clone(), config.threads.max(1), config.source_timeout)
        .with_mode_mask(access.mode_mask());
    let listing_notifier = adapter.notifier_slot();
    let acl = access.session_acl();
    let session = match handoff.as_mut().filter(|_| resumed) {
        Some(h) => match h.negotiated() {
            Some(n) => fuser::Session::from_fd_initialized(adapter, fd, acl, cfg, n),
            None => Err(std::io::Error::other(
                "the holder kept no INIT parameters of the connection",
            )),
        },
        None => fuser::Session::from_fd(adapter, fd, acl, cfg),
    };
    let session = match session {
        Ok(s) => s,
        Err(e) => {
            if handoff.is_none() {
                detach_if_ours(mountpoint, mount_id);
            }
            ready(Err(format!(
                "cannot mount {}: FUSE handshake failed: {e}",
                mountpoint.display()
            )));
            return 1;
        }
    };
    let transport = match session.io_uring_queues() {
        Some(n) => format!("FUSE over io_uring, {n} queues"),
        None => match handoff
            .as_ref()
            .and_then(|_| crate::mount::transport::failover_keeps_to_dev_fuse(config.io_uring))
        {
            Some(why) => format!("classic /dev/fuse, {why}"),
            None => "classic /dev/fuse".to_string(),
        },
    };
    match handoff.as_mut() {
        Some(h) if resumed => {
            let offered = h.negotiated().map_or(0, |n| n.offered);
            let resend = left_unanswered::take_over(fuse, &h.state, offered, &session.notifier());
            log::info!(
                "server {} (pid {}) took over {} from the holder (pid {}): no INIT, transport: {transport}, {replayed}, resend of unanswered requests {resend}",
                h.generation,
                std::process::id(),
                mountpoint.display(),
                h.holder
            );
        }
        Some(h) => {
            if let Some(n) = session.negotiated()
                && let Err(e) = h.keep_negotiated(&n)
            {
                log::warn!("cannot keep the INIT parameters for a next server: {e}");
            }
            left_unanswered::keep(&h.state);
            // The holder's own line follows, with both pids.
            log::info!(
                "mounted {library_root} at {} (transport: {transport}; {}; log: {})",
                mountpoint.display(),
                freshness_of(&fs),
                logging::destination()
            );
        }
        None => log::info!(
            "mounted {library_root} at {} (transport: {transport}; {}; log: {})",
            mountpoint.display(),
            freshness_of(&fs),
            logging::destination()
        ),
    }
    if let Some(why) = &config.no_index_because {
        log::warn!("{why}");
    }
    if let Some(why) = &config.failover_off_because {
        log::info!("{why}");
    }
    if let Some(why) = logging::lost() {
        // Said once the mount is made, so that it never precedes a refusal.
        log::warn!("{why}");
    }
    if session.io_uring_queues().is_some() && autogroups_on() {
        log::info!(
            "the scheduler's autogroups are on (kernel.sched_autogroup_enabled = 1): a reader \
             in another session than the daemon's can be moved to the other CPU on a reply, \
             which costs the wake-up that io_uring saves; sysctl \
             kernel.sched_autogroup_enabled=0 keeps readers where they are (docs/performance.md)"
        );
    }
    fs.prepared();
    // The holder first, then the waiting CLI, which returns once both
    // have let go of its pipe: the holder lets go on the `serving` line,
    // and reads it while the CLI's `ok` is written.
    if let Some(h) = handoff.as_mut() {
        h.serving();
    }
    ready(Ok(()));

    let _ = listing_notifier.set(session.notifier());
    let notifier = session.notifier();
    let ending = fs.clone();
    let store_fs = fs.clone();
    let spawned = novelfs_kit::thread::spawn("novelfs-store", None, move || {
        store_ahead(&store_fs, &notifier)
    });
    if let Err(e) = spawned {
        log::warn!("no thread storing pages ahead of readers: {e}");
    }
    if fs.watch().is_some() {
        let notifier = session.notifier();
        let spawned = novelfs_kit::thread::spawn("novelfs-notify", None, move || {
            push_changes(&fs, &notifier)
        });
        if let Err(e) = spawned {
            log::warn!("no thread telling the kernel of changes on disk: {e}");
        }
    } else {
        drop(fs);
    }
    let ended = Ending::default();
    ended.watch(fuse);
    let signal_ended = ended.clone();
    let signal_mountpoint = mountpoint.to_path_buf();
    let spawned = novelfs_kit::thread::spawn("novelfs-signal", None, move || {
        let mut sig = 0;
        // SAFETY: waiting on the set blocked above; sig is a valid out pointer.
        unsafe { libc::sigwait(&signals, &mut sig) };
        log::info!("signal {sig}: unmounting {}", signal_mountpoint.display());
        unmount_or_detach(&signal_mountpoint);
        // Detached while a reader still holds a file, the connection
        // lives on: the signal still ends the server.
        signal_ended.exit_unless_ended(&format!("signal {sig}"));
    });
    if let Err(e) = spawned {
        log::warn!("no thread unmounting on a signal: {e}");
    }
    let code = match session.run() {
        Ok(()) => 0,
        Err(e) => {
            log::error!("session ended with an error: {e}");
            1
        }
    };
    ended.ran();
    // The loop also ends when serving fails, with the mount still there
    // (a holder's connection is the holder's to end or hand on).
    if handoff.is_none() {
        detach_if_ours(mountpoint, mount_id);
    }
    ending.finish();
    log::info!("unmounted {}", mountpoint.display());
    code
}

/// A holder's server: replays the inode journal the servers before it
/// left (none for the first), then records into it. Says what it replayed.
fn keep_inodes(fs: &NovelFs, h: &mut Handoff) -> Result<String, String> {
    let file = h
        .journal
        .try_clone()
        .map_err(|e| format!("cannot write the inode journal: {e}"))?;
    let found =
        JournalFile::open(file).map_err(|e| format!("cannot read the inode journal: {e}"))?;
    let mut said = "no inode journal replayed (first server)".to_string();
    let mut keep = 0;
    if h.generation > 1 {
        if handoff::switched_off("journal") {
            said = "inode journal not replayed (switched off)".into();
        } else {
            let (records, len) = fs
                .resume_inodes(&found.records)
                .map_err(|e| e.to_string())?;
            said = format!(
                "{records} inode journal records replayed ({} bytes)",
                found.records.len()
            );
            keep = len;
        }
    }
    // A record cut short by the death is dropped, and appending starts
    // after the last whole one.
    found
        .journal
        .keep(keep)
        .map_err(|e| format!("cannot trim the inode journal: {e}"))?;
    if handoff::switched_off("compact") {
        fs.journal_inodes(Box::new(NeverCompacted(found.journal)));
    } else {
        fs.journal_inodes(Box::new(found.journal));
    }
    if found.headerless {
        // Written by an older build: rewritten with its header.
        fs.compact_inodes();
    }
    Ok(said)
}

/// The test switch `NOVELFS_TEST_FAILOVER_OFF=compact`: a journal that
/// grows with every change, as before compaction.
struct NeverCompacted(JournalFile);

impl novelfs_fs::JournalSink for NeverCompacted {
    fn append(&self, record: &[u8]) {
        self.0.append(record);
    }
    fn snapshot_part(&self, _part: &[u8]) {}
    fn end_snapshot(&self, _keep: bool) -> bool {
        false
    }
}

/// Whether changes are pushed to the kernel, or why not.
fn freshness_of(fs: &NovelFs) -> String {
    let tree = match fs.unwatched() {
        None => "watched: changes are pushed to the kernel as they happen".into(),
        Some(why) => format!("unwatched ({why}): {}", fs.freshness_rule()),
    };
    match fs.library().storage_freshness() {
        Some(storage) => format!("{tree}; names from {storage}"),
        None => tree,
    }
}

fn fuser_config(access: Access, threads: usize, can_clone: bool) -> Config {
    let mut cfg = Config::default();
    cfg.acl = access.session_acl();
    cfg.n_threads = Some(threads.max(1));
    // Cloning the connection per worker opens /dev/fuse again, which a
    // user mounting through fusermount3 may not do.
    cfg.clone_fd = threads > 1 && can_clone;
    cfg
}

fn block_termination_signals() -> libc::sigset_t {
    // SAFETY: plain libc signal-set manipulation on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Whether the scheduler puts each session in a group of its own: the
/// daemon (a session of its own) and its readers are then in different
/// groups, and a reply wakes the reader on the other, idle CPU rather
/// than on the busy one its queue serves, so the round trip pays the
/// cross-CPU wake-up that per-CPU queues avoid.
fn autogroups_on() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
        .is_ok_and(|v| v.trim() == "1")
}
