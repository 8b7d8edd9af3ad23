//! Work spread over both CPUs for the length of one call: the calling
//! thread and one scoped helper take items in turn until none are left.
//!
//! Scoped threads rather than a standing pool (rayon): nothing stays
//! behind between calls (no idle threads, no malloc arenas of their own
//! to count in the budget), and each worker holds only the item it is on.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Workers at most, the calling thread included: the machines novelfs is
/// measured on have two cores, and other requests go on meanwhile.
pub(crate) const WORKERS: usize = 2;

/// Fewer items than this are done on the calling thread: a helper thread
/// costs tens of microseconds to start.
pub(crate) const SPREAD_FROM: usize = 16;

/// `f` of each item, in the items' order, computed by up to `WORKERS`
/// threads (on the calling thread alone when there are few items or no
/// thread can be started).
pub(crate) fn map_spread<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() < SPREAD_FROM {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            done.push((i, f(item)));
        }
        done
    };
    let pieces: Vec<Vec<(usize, R)>> = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..WORKERS)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("novelfs-walk".into())
                    .spawn_scoped(s, || {
                        unpinned();
                        work()
                    })
                    .ok()
            })
            .collect();
        let mut pieces = vec![work()];
        for helper in helpers {
            match helper.join() {
                Ok(piece) => pieces.push(piece),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        pieces
    });
    let mut slots: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    for (i, r) in pieces.into_iter().flatten() {
        slots[i] = Some(r);
    }
    slots
        .into_iter()
        .map(|r| r.expect("every item was taken by a worker"))
        .collect()
}

/// Lets the calling thread run on every CPU the process may run on. A
/// thread starts pinned where its creator is, and FUSE over io_uring pins
/// each queue's thread to its CPU: a thread started from a request there
/// (a walk's helper, a spare thread, the deadline timer) would share that
/// one CPU with the request's own.
pub fn unpinned() {
    // SAFETY: a zeroed cpu_set_t is valid; both calls only read or write
    // that set, of the size given. The process's own mask is its first
    // thread's, which nothing pins.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(libc::getpid(), size, &mut set) == 0 {
            libc::sched_setaffinity(0, size, &set);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_items_order_and_every_item_is_done_once() {
        let items: Vec<u64> = (0..1000).collect();
        let calls = AtomicUsize::new(0);
        let squares = map_spread(&items, |&i| {
            calls.fetch_add(1, Ordering::Relaxed);
            i * i
        });
        assert_eq!(squares, items.iter().map(|i| i * i).collect::<Vec<_>>());
        assert_eq!(calls.load(Ordering::Relaxed), 1000);
        assert_eq!(map_spread(&[3u8], |&i| i + 1), [4]);
        assert!(map_spread(&[] as &[u8], |&i| i).is_empty());
    }

    /// The CPUs thread `tid` (0: the caller) may run on.
    fn cpus_of(tid: libc::pid_t) -> Vec<usize> {
        // SAFETY: as in `unpinned`.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
                0
            );
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect()
        }
    }

    #[test]
    fn a_helper_started_from_a_pinned_thread_runs_on_every_cpu() {
        let everywhere = cpus_of(std::process::id() as libc::pid_t);
        std::thread::spawn(move || {
            // Pinned to one CPU, as a queue thread of FUSE over io_uring is.
            // SAFETY: as in `unpinned`.
            unsafe {
                let mut one: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(everywhere[0], &mut one);
                assert_eq!(
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one),
                    0
                );
            }
            let caller = std::thread::current().id();
            let items: Vec<u32> = (0..64).collect();
            let seen = map_spread(&items, |_| {
                std::thread::sleep(std::time::Duration::from_millis(2));
                (std::thread::current().id() != caller).then(|| cpus_of(0))
            });
            let helper = seen
                .into_iter()
                .flatten()
                .next()
                .expect("the helper took items");
            assert_eq!(
                helper, everywhere,
                "the helper is not pinned with its caller"
            );
            assert_eq!(cpus_of(0), [everywhere[0]], "the caller stays where it was");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn both_workers_take_items() {
        let items: Vec<u32> = (0..64).collect();
        let threads = map_spread(&items, |_| {
            std::thread::sleep(std::time::Duration::from_millis(2));
            std::thread::current().id()
        });
        let distinct: std::collections::HashSet<_> = threads.into_iter().collect();
        assert_eq!(distinct.len(), WORKERS);
    }
}
