//! Readers of a big chapter that run until told to stop: what the fault
//! and transport tests keep in flight while they kill or unmount a daemon.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{errno, errno_name};

/// Readers of a big chapter that run until told to stop, counting outcomes.
pub struct Readers {
    stop: Arc<AtomicBool>,
    pub done: Arc<AtomicU64>,
    errors: Arc<Mutex<std::collections::BTreeMap<String, u64>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

pub fn start_readers(dir: PathBuf, pages: u64, n: u64) -> Readers {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(Mutex::new(std::collections::BTreeMap::new()));
    let threads = (0..n)
        .map(|id| {
            let (dir, stop, done, errors) =
                (dir.clone(), stop.clone(), done.clone(), errors.clone());
            std::thread::spawn(move || {
                let mut rng = super::Rng::new(id + 1);
                while !stop.load(Ordering::Relaxed) {
                    let r = if rng.chance(100) {
                        std::fs::read_dir(&dir)
                            .and_then(|d| d.collect::<std::io::Result<Vec<_>>>())
                            .map(|_| ())
                    } else {
                        let offset = 1 + 400 * rng.below(pages);
                        let ext = if rng.chance(500) { "txt" } else { "json" };
                        std::fs::read(dir.join(format!("offset-{offset}.{ext}"))).map(|_| ())
                    };
                    match r {
                        Ok(()) => {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            *errors
                                .lock()
                                .unwrap()
                                .entry(errno_name(errno(&e)))
                                .or_default() += 1
                        }
                    }
                }
            })
        })
        .collect();
    Readers {
        stop,
        done,
        errors,
        threads,
    }
}

impl Readers {
    /// Reads that failed so far.
    pub fn failures(&self) -> u64 {
        self.errors.lock().unwrap().values().sum()
    }

    /// Stops the readers; fails if one does not come back within `secs`.
    pub fn finish(self, secs: u64) -> (u64, std::collections::BTreeMap<String, u64>) {
        self.stop.store(true, Ordering::Relaxed);
        let deadline = Instant::now() + Duration::from_secs(secs);
        for t in self.threads {
            while !t.is_finished() {
                assert!(Instant::now() < deadline, "a reader hung");
                std::thread::sleep(Duration::from_millis(20));
            }
            t.join().unwrap();
        }
        (
            self.done.load(Ordering::Relaxed),
            self.errors.lock().unwrap().clone(),
        )
    }
}

/// Lets six readers of `dir` (a chapter of `pages` chain pages) run for
/// `warmup`, SIGKILLs the daemon `child`, and returns the errors the readers
/// saw; fails if none read before the kill, or if a reader does not come
/// back within 20 s (a request left hanging in the kernel).
pub fn sigkill_mid_read(
    mut child: std::process::Child,
    dir: PathBuf,
    pages: u64,
    warmup: Duration,
) -> std::collections::BTreeMap<String, u64> {
    let readers = start_readers(dir, pages, 6);
    std::thread::sleep(warmup);
    let before = readers.done.load(Ordering::Relaxed);
    child.kill().unwrap();
    child.wait().unwrap();
    // Until the readers have run into the dead daemon, a few times over:
    // under load they may not have been scheduled since the kill, and what
    // fails after it is what the callers look at.
    let deadline = Instant::now() + Duration::from_secs(5);
    while readers.failures() < 12 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (done, errors) = readers.finish(20);
    println!("sigkill: {before} reads before, {done} in all; errors after it {errors:?}");
    assert!(before > 0, "the readers read before the kill");
    errors
}
