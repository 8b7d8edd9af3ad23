//! Stepping down (patch: handing a live connection to another server): the
//! `/dev/fuse` readers stop taking requests, and the caller waits until
//! every request they took is answered before it exits. Process-wide: a
//! process serves one session.
//!
//! A reader waiting in `read` is called back by a signal (`SIGRTMIN`, its
//! handler installed without `SA_RESTART`): the kernel then returns
//! `EINTR` without taking a request. The signal goes only to readers that
//! are in (or about to enter) `read`, again until each has stopped, so a
//! reader busy with a request is not interrupted in its work.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static STOPPING: AtomicBool = AtomicBool::new(false);
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// The readers: their thread ids, whether each is in `read`, whether each
/// has stopped.
static READERS: Mutex<Vec<Reader>> = Mutex::new(Vec::new());

struct Reader {
    tid: libc::pid_t,
    in_read: &'static AtomicBool,
    stopped: &'static AtomicBool,
}

/// One `/dev/fuse` reader's part, registered as it starts.
pub(crate) struct ReaderState {
    in_read: &'static AtomicBool,
    stopped: &'static AtomicBool,
}

impl ReaderState {
    pub(crate) fn register() -> ReaderState {
        // Leaked: a reader lives as long as its session, once per thread.
        let in_read: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
        let stopped: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        READERS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Reader {
                tid,
                in_read,
                stopped,
            });
        ReaderState { in_read, stopped }
    }

    /// Around each `read`.
    pub(crate) fn reading(&self, now: bool) {
        self.in_read.store(now, Ordering::SeqCst);
    }

    /// This reader takes no more requests.
    pub(crate) fn stop(&self) -> ! {
        self.in_read.store(false, Ordering::SeqCst);
        self.stopped.store(true, Ordering::SeqCst);
        loop {
            std::thread::park();
        }
    }
}

extern "C" fn nothing(_: libc::c_int) {}

/// Tells every `/dev/fuse` reader of the process to take no more requests
/// once it is done with the one it holds, and calls back those waiting in
/// `read`. Call `readers_stopped` until it says they all have.
pub fn stop_reading() {
    STOPPING.store(true, Ordering::SeqCst);
    // SAFETY: a handler that does nothing, without SA_RESTART, so that a
    // `read` it interrupts returns EINTR.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = nothing as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGRTMIN(), &action, std::ptr::null_mut());
    }
    readers_stopped();
}

/// Whether every reader has stopped; calls back again those still in
/// `read` (a signal that came just before one entered it was lost).
pub fn readers_stopped() -> bool {
    let readers = READERS.lock().unwrap_or_else(|e| e.into_inner());
    let mut all = true;
    for r in readers.iter().filter(|r| !r.stopped.load(Ordering::SeqCst)) {
        all = false;
        if r.in_read.load(Ordering::SeqCst) {
            // SAFETY: a signal to a thread of this process.
            unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), r.tid, libc::SIGRTMIN()) };
        }
    }
    all
}

/// The requests read and not yet answered: being dispatched, or with a
/// reply not yet sent (sent or dropped, which sends EIO).
pub fn requests_in_flight() -> usize {
    IN_FLIGHT.load(Ordering::SeqCst)
}

pub(crate) fn stopping() -> bool {
    STOPPING.load(Ordering::SeqCst)
}

/// Counts one request in flight while it lives.
#[derive(Debug)]
pub(crate) struct InFlight(());

impl InFlight {
    pub(crate) fn new() -> InFlight {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        InFlight(())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}
