//! Read-ahead: asks the disk for the next chapters of a book while one is
//! decoded. Who reads a chapter (an agent paging through a book, `find`,
//! `grep -r`) mostly reads the following ones next, and their bytes are
//! then in the page cache when asked for.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::Sender;

use crate::library::BookIndex;

use super::lock;

/// How many chapters ahead of the one being loaded are read ahead.
const READ_AHEAD: usize = 16;
/// The window is topped up when fewer than this many are ahead: one
/// message (and one wake-up of the thread) per half window, not one per
/// chapter (a send, a wake-up and a park per chapter were 14% of a cold
/// `find`).
const REFILL_BELOW: usize = READ_AHEAD / 2;

pub struct Prefetcher {
    /// Chapter files for the read-ahead thread.
    queue: Mutex<Sender<Vec<PathBuf>>>,
    /// Per book, the end of the chapters already queued.
    queued_to: Mutex<HashMap<OsString, usize>>,
}

impl Prefetcher {
    /// Starts the thread that asks the kernel to read files into its page
    /// cache (`POSIX_FADV_WILLNEED` starts the reads and returns); it ends
    /// with the `Prefetcher`.
    pub fn start() -> Prefetcher {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<PathBuf>>();
        let spawned = std::thread::Builder::new()
            .name("novelfs-readahead".into())
            .spawn(move || {
                use std::os::fd::AsRawFd;
                use std::os::unix::fs::OpenOptionsExt;
                for path in rx.into_iter().flatten() {
                    let opened = std::fs::OpenOptions::new()
                        .read(true)
                        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                        .open(&path);
                    if let Ok(f) = opened {
                        // SAFETY: advice on an open descriptor; no memory involved.
                        unsafe {
                            libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_WILLNEED)
                        };
                    }
                }
            });
        if let Err(e) = spawned {
            log::warn!("no read-ahead thread: {e}");
        }
        Prefetcher {
            queue: Mutex::new(tx),
            queued_to: Mutex::new(HashMap::new()),
        }
    }

    /// Queues the chapters after index `i` of `book` (in `book_dir`) that
    /// are not queued yet, when fewer than `REFILL_BELOW` are, and returns
    /// their indices. A sequential reader queues half a window every half
    /// window.
    pub fn read_ahead(
        &self,
        book_dir: &Path,
        book: &OsStr,
        index: &BookIndex,
        i: usize,
    ) -> Range<usize> {
        let end = (i + 1 + READ_AHEAD).min(index.chapters.len());
        let start = {
            let mut queued = lock(&self.queued_to);
            let to = match queued.get_mut(book) {
                Some(to) => to,
                None => queued.entry(book.to_os_string()).or_insert(0),
            };
            // A reader that jumped back re-queues from where it is.
            let start = if *to > end || *to <= i { i + 1 } else { *to };
            if start - (i + 1) >= REFILL_BELOW {
                return start..start;
            }
            *to = end;
            start
        };
        let queued = start.min(end)..end;
        if !queued.is_empty() {
            let batch = index.chapters[queued.clone()]
                .iter()
                .map(|c| book_dir.join(&c.os_name))
                .collect();
            let _ = lock(&self.queue).send(batch);
        }
        queued
    }

    /// The end of the chapters of `book` queued so far.
    pub fn queued_to(&self, book: &OsStr) -> Option<usize> {
        lock(&self.queued_to).get(book).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::library::Chapter;

    #[test]
    fn a_sequential_reader_queues_half_a_window_every_half_window() {
        let dir = tempfile::tempdir().unwrap();
        let prefetcher = Prefetcher::start();
        let index = BookIndex::new(
            (1..=40)
                .map(|i| Chapter::new(format!("第{i}章.md").into()))
                .collect(),
        );
        let ahead = |i| prefetcher.read_ahead(dir.path(), OsStr::new("书"), &index, i);
        assert_eq!(ahead(0), 1..17, "the first load asks for the next 16");
        for i in 1..=8 {
            assert!(ahead(i).is_empty(), "{i}: at least 8 still ahead");
        }
        assert_eq!(ahead(9), 17..26, "topped up once 7 were left");
        assert_eq!(
            ahead(30),
            31..40,
            "a skip asks only for what was not asked yet, never past the end"
        );
        assert_eq!(ahead(0), 1..17, "a jump back asks again from there");
        assert!(ahead(39).is_empty(), "the last chapter");
        assert_eq!(prefetcher.queued_to(OsStr::new("书")), Some(40));
    }
}
