//! Requests that must not wait behind slow ones.
//!
//! A request can take seconds (the first read of a big chapter decodes or
//! indexes it) while fuser serves with a fixed number of worker threads:
//! were they all busy with such requests, a small page of another chapter
//! would wait for them. So a worker runs a request itself only while
//! another worker stays free to read the next one; the last free worker
//! hands each request to a spare thread and goes back to reading at once.
//! Under a light load every request runs on the worker that read it (no
//! hand-over costs a wake-up); under a heavy one, requests queue for at
//! most `MAX_SPARE` threads.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use novelfs_kit::lock;

/// Spare threads at most: requests beyond them queue.
const MAX_SPARE: usize = 32;

/// An idle spare thread ends after this long without a request.
const SPARE_IDLE: Duration = Duration::from_secs(30);

type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    threads: usize,
    idle: usize,
}

#[derive(Default)]
struct Pool {
    queue: Mutex<Queue>,
    ready: Condvar,
}

impl Pool {
    fn run(self: &Arc<Self>, job: Job) {
        let mut q = lock(&self.queue);
        q.jobs.push_back(job);
        // An idle thread counts as idle until it wakes and takes a job:
        // one woken for an earlier job that has not taken it yet is not
        // free for this one, which would otherwise wait behind that job
        // (a big chapter's load, for seconds). So a thread is started
        // whenever the jobs queued outnumber the idle threads.
        if q.jobs.len() <= q.idle {
            drop(q);
            self.ready.notify_one();
            return;
        }
        if q.threads >= MAX_SPARE {
            // Queued for the next spare thread that ends its request.
            return;
        }
        q.threads += 1;
        drop(q);
        let pool = self.clone();
        let spawned = novelfs_kit::thread::spawn("novelfs-spare", None, move || {
            novelfs_fs::unpinned();
            pool.work()
        });
        if let Err(e) = spawned {
            log::warn!("no spare thread: {e}");
            let mut q = lock(&self.queue);
            q.threads -= 1;
            // Nobody may be left to run it: run it here.
            let job = if q.threads == 0 {
                q.jobs.pop_back()
            } else {
                None
            };
            drop(q);
            if let Some(job) = job {
                job();
            }
        }
    }

    fn work(&self) {
        let mut q = lock(&self.queue);
        loop {
            if let Some(job) = q.jobs.pop_front() {
                drop(q);
                job();
                q = lock(&self.queue);
                continue;
            }
            q.idle += 1;
            let (next, timeout) = self
                .ready
                .wait_timeout(q, SPARE_IDLE)
                .unwrap_or_else(|e| e.into_inner());
            q = next;
            q.idle -= 1;
            if timeout.timed_out() && q.jobs.is_empty() {
                q.threads -= 1;
                return;
            }
        }
    }
}

/// Where each request of a mount runs.
#[derive(Clone)]
pub(crate) struct Offload {
    /// Requests running on fuser's workers.
    inline: Arc<AtomicUsize>,
    /// Of fuser's workers, how many may run requests themselves.
    max_inline: usize,
    pool: Arc<Pool>,
}

/// A request running on the worker that read it.
pub(crate) struct Inline<'a> {
    inline: &'a AtomicUsize,
}

impl Drop for Inline<'_> {
    fn drop(&mut self) {
        self.inline.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Offload {
    /// For a session served by `workers` fuser threads.
    pub(crate) fn new(workers: usize) -> Offload {
        Offload {
            inline: Arc::new(AtomicUsize::new(0)),
            max_inline: workers.saturating_sub(1),
            pool: Arc::new(Pool::default()),
        }
    }

    /// Whether every spare thread is taken (a request handed over now
    /// would queue).
    pub(crate) fn saturated(&self) -> bool {
        let q = lock(&self.pool.queue);
        q.threads >= MAX_SPARE && q.idle == 0
    }

    /// Runs `job` with `on` on this worker while another one stays free
    /// (and `inline` allows it), else with a clone of `on` on a spare
    /// thread (returning at once).
    pub(crate) fn serve<C: Clone + Send + 'static>(
        &self,
        on: &C,
        inline: bool,
        job: impl FnOnce(&C) + Send + 'static,
    ) {
        if !inline {
            let on = on.clone();
            self.pool.run(Box::new(move || job(&on)));
            return;
        }
        if self.inline.fetch_add(1, Ordering::AcqRel) < self.max_inline {
            let _inline = Inline {
                inline: &self.inline,
            };
            job(on);
            return;
        }
        self.inline.fetch_sub(1, Ordering::AcqRel);
        let on = on.clone();
        self.pool.run(Box::new(move || job(&on)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::sync::mpsc;

    #[test]
    fn the_last_free_worker_hands_requests_over() {
        let offload = Offload::new(2);
        // One request blocks the first worker.
        let gate = Arc::new(Barrier::new(2));
        let (done, finished) = mpsc::channel();
        let blocker = {
            let offload = offload.clone();
            let gate = gate.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                offload.serve(&(), true, move |_| {
                    gate.wait();
                    done.send("slow").unwrap();
                })
            })
        };
        while offload.inline.load(Ordering::Acquire) == 0 {
            std::thread::yield_now();
        }
        // The second worker must not run the next requests itself: it
        // returns, and they end while the first is still blocked.
        for _ in 0..3 {
            let done = done.clone();
            offload.serve(&(), true, move |_| done.send("fast").unwrap());
        }
        for _ in 0..3 {
            assert_eq!(finished.recv().unwrap(), "fast");
        }
        gate.wait();
        blocker.join().unwrap();
        assert_eq!(finished.recv().unwrap(), "slow");
        assert_eq!(offload.inline.load(Ordering::Acquire), 0);
    }

    #[test]
    fn requests_handed_over_at_once_never_wait_behind_each_other() {
        // A spare thread left idle by an earlier request, then two requests
        // handed over before it wakes (a busy machine's wake-up is slower
        // than a worker's next hand-over): each may hold its thread for as
        // long as a big load takes, so each must get one of its own.
        for _ in 0..20 {
            let pool = Arc::new(Pool::default());
            let (done, finished) = mpsc::channel();
            pool.run(Box::new(move || done.send(()).unwrap()));
            finished.recv().unwrap();
            while lock(&pool.queue).idle == 0 {
                std::thread::yield_now();
            }
            let (started, starts) = mpsc::channel();
            let mut gates = Vec::new();
            for _ in 0..2 {
                let started = started.clone();
                let (gate, held) = mpsc::channel::<()>();
                gates.push(gate);
                pool.run(Box::new(move || {
                    started.send(()).unwrap();
                    let _ = held.recv();
                }));
            }
            let both = (0..2).all(|_| starts.recv_timeout(Duration::from_secs(20)).is_ok());
            // Dropping the gates ends the held requests either way.
            drop(gates);
            assert!(both, "the second request waited for the first to end");
        }
    }

    #[test]
    fn a_lone_worker_runs_nothing_itself() {
        let offload = Offload::new(1);
        let (done, finished) = mpsc::channel();
        let me = std::thread::current().id();
        offload.serve(&(), true, move |_| {
            done.send(std::thread::current().id()).unwrap()
        });
        assert_ne!(finished.recv().unwrap(), me);
    }
}
