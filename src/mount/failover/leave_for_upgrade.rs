//! A holder's server stepping down for `novelfs upgrade`: on `STEP_DOWN`
//! from the holder (sent once the next server is ready), it takes no more
//! requests, answers those it holds, and exits; the holder then tells the
//! next server to take over. What it could not answer in time (a request
//! that waits on a slow source) the next server gets again through
//! `FUSE_NOTIFY_RESEND`, as after a crash.

use std::time::{Duration, Instant};

/// The signal the holder sends a serving server to make it step down.
pub(crate) const STEP_DOWN: libc::c_int = libc::SIGUSR2;

/// How long a server stepping down waits for the requests it holds: every
/// millisecond of it is a pause for the readers.
const DRAIN: Duration = Duration::from_secs(1);

/// Blocks `STEP_DOWN` in this thread, and so in every thread started after
/// (call it first), and starts the thread that waits for it.
pub(crate) fn watch(generation: u64) {
    // SAFETY: plain libc signal-set manipulation on a local set.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, STEP_DOWN);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let spawned = novelfs_kit::thread::spawn("novelfs-step-down", None, move || {
        let mut sig = 0;
        // SAFETY: waiting on the set blocked above; sig is a valid out pointer.
        unsafe { libc::sigwait(&set, &mut sig) };
        step_down(generation);
    });
    if let Err(e) = spawned {
        log::warn!("no thread to step down on an upgrade (it will be killed instead): {e}");
    }
}

fn step_down(generation: u64) -> ! {
    let started = Instant::now();
    fuser::stop_reading();
    let drain = if crate::mount::failover::handoff::switched_off("drain") {
        Duration::ZERO
    } else {
        DRAIN
    };
    while !(fuser::readers_stopped() && fuser::requests_in_flight() == 0)
        && started.elapsed() < drain
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    let left = fuser::requests_in_flight();
    log::info!(
        "server {generation} (pid {}) steps down for an upgrade: it took no more requests and answered those it held in {:?}{}",
        std::process::id(),
        started.elapsed(),
        if left > 0 {
            format!(" but {left} (the next server gets them again)")
        } else {
            String::new()
        }
    );
    log::logger().flush();
    // At once: nothing of this process is left to finish, and its other
    // threads may be waiting on the kernel for the next server.
    // SAFETY: ends the process; no destructor needs to run.
    unsafe { libc::_exit(0) }
}
