//! Which threads are waiting on one access to a library's storage (one
//! system call on its files: an open, a `stat`, a read, a page of a
//! directory listing), and since when. A mount's `--source-timeout` is
//! read against this: a request is stuck when one of its accesses has not
//! returned within the timeout, never because its accesses, each one
//! answered, add up to more (a whole library read over a slow network
//! filesystem).
//!
//! Each thread that makes an access has a slot, registered at its first
//! access, holding when its access began (0 between accesses): an access
//! costs a clock read and two atomic stores. Accesses to a bucket are not
//! marked here: each GET or LIST carries its own bound (`cloud::ops`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use novelfs_kit::lock;

/// When the access under way on one thread began.
#[derive(Debug, Default)]
struct Slot {
    /// Nanoseconds after `epoch()`, plus one; 0 while no access is under way.
    since: AtomicU64,
}

/// The instant the slots count from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn stamp(at: Instant) -> u64 {
    let after = at.saturating_duration_since(epoch()).as_nanos();
    u64::try_from(after).unwrap_or(u64::MAX - 1) + 1
}

fn instant(stamp: u64) -> Option<Instant> {
    (stamp != 0).then(|| epoch() + Duration::from_nanos(stamp - 1))
}

/// The slot of every thread that made an access (dead threads' slots are
/// dropped as new ones register).
static SLOTS: Mutex<Vec<Weak<Slot>>> = Mutex::new(Vec::new());

fn slots() -> std::sync::MutexGuard<'static, Vec<Weak<Slot>>> {
    lock(&SLOTS)
}

thread_local! {
    static MINE: Arc<Slot> = {
        let slot = Arc::new(Slot::default());
        let mut all = slots();
        all.retain(|s| s.strong_count() > 0);
        all.push(Arc::downgrade(&slot));
        slot
    };
}

/// Runs `call`, one system call on the library's files, as one access.
/// An access made inside another counts as part of it.
pub fn one<T>(call: impl FnOnce() -> T) -> T {
    let began = MINE.with(|slot| {
        slot.since
            .compare_exchange(
                0,
                stamp(Instant::now()),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
    });
    let _end = End(began);
    call()
}

/// Ends the access `one` began (also when its call panics).
struct End(bool);

impl Drop for End {
    fn drop(&mut self) {
        if self.0 {
            let _ = MINE.try_with(|slot| slot.since.store(0, Ordering::Release));
        }
    }
}

/// The most one read asks of the source in one system call: one access
/// of a big read is as bounded as one of a small one.
pub const READ_CHUNK: usize = 1 << 20;

/// Reads `buf.len()` bytes of `file` at `offset` (fewer at its end), in
/// accesses of at most `READ_CHUNK`.
pub fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        let chunk = (buf.len() - done).min(READ_CHUNK);
        let at = offset + done as u64;
        match one(|| file.read_at(&mut buf[done..done + chunk], at)) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// One thread's accesses, as another thread (a request's deadline) sees
/// them.
#[derive(Clone, Debug)]
pub struct Thread(Arc<Slot>);

/// The calling thread.
pub fn this_thread() -> Thread {
    Thread(MINE.with(Arc::clone))
}

impl Thread {
    /// When the access the thread is waiting on began; `None` between
    /// accesses.
    pub fn in_access_since(&self) -> Option<Instant> {
        instant(self.0.since.load(Ordering::Acquire))
    }
}

/// When the oldest access under way on any thread began.
pub fn oldest() -> Option<Instant> {
    slots()
        .iter()
        .filter_map(Weak::upgrade)
        .filter_map(|s| instant(s.since.load(Ordering::Acquire)))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn an_access_is_seen_from_another_thread_while_it_lasts() {
        let (tell, told) = mpsc::channel();
        let (go_on, wait) = mpsc::channel::<()>();
        let before = Instant::now();
        let worker = std::thread::spawn(move || {
            let me = this_thread();
            assert_eq!(me.in_access_since(), None);
            tell.send(me.clone()).unwrap();
            one(|| {
                // Nested: part of the outer access.
                one(|| wait.recv().unwrap());
                wait.recv().unwrap();
            });
            me.in_access_since()
        });
        let thread = told.recv().unwrap();
        let since = loop {
            if let Some(t) = thread.in_access_since() {
                break t;
            }
            std::thread::yield_now();
        };
        assert!(since >= before && since <= Instant::now());
        assert!(oldest().is_some_and(|t| t <= since));
        go_on.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(thread.in_access_since(), Some(since), "the outer one lasts");
        go_on.send(()).unwrap();
        assert_eq!(worker.join().unwrap(), None, "ended");
        assert_eq!(thread.in_access_since(), None);
    }
}
