//! Stepping down (patch: handing a live connection to another server): the
//! `/dev/fuse` readers stop taking requests, and the caller waits until
//! every request they took is answered before it exits. Process-wide: a
//! process serves one session.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static STOPPING: AtomicBool = AtomicBool::new(false);
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Tells every `/dev/fuse` reader of the process to take no more requests
/// once it is done with the one it holds. A reader waiting in `read` takes
/// at most one more (it cannot be called back without losing what it
/// reads), and answers it.
pub fn stop_reading() {
    STOPPING.store(true, Ordering::SeqCst);
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
