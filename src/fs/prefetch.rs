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
const READ_AHEAD: usize = 8;

pub struct Prefetcher {
    /// Chapter files for the read-ahead thread.
    queue: Mutex<Sender<PathBuf>>,
    /// Per book, the end of the chapters already queued.
    queued_to: Mutex<HashMap<OsString, usize>>,
}

impl Prefetcher {
    /// Starts the thread that asks the kernel to read files into its page
    /// cache (`POSIX_FADV_WILLNEED` starts the reads and returns); it ends
    /// with the `Prefetcher`.
    pub fn start() -> Prefetcher {
        let (tx, rx) = std::sync::mpsc::channel::<PathBuf>();
        let spawned = std::thread::Builder::new()
            .name("novelfs-readahead".into())
            .spawn(move || {
                use std::os::fd::AsRawFd;
                use std::os::unix::fs::OpenOptionsExt;
                for path in rx {
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
    /// are not queued yet, and returns their indices. A sequential reader
    /// queues one new chapter per load.
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
            let to = queued.entry(book.to_os_string()).or_insert(0);
            // A reader that jumped back re-queues from where it is.
            let start = if *to > end || *to <= i { i + 1 } else { *to };
            *to = end;
            start
        };
        let queue = lock(&self.queue);
        let queued = start.min(end)..end;
        for c in &index.chapters[queued.clone()] {
            let _ = queue.send(book_dir.join(&c.os_name));
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
    fn a_sequential_reader_queues_one_chapter_ahead_per_load() {
        let index = BookIndex::new(
            (1..=20)
                .map(|i| Chapter::new(format!("第{i}章.md").into()))
                .collect(),
        );
        let dir = tempfile::tempdir().unwrap();
        let prefetcher = Prefetcher::start();
        let ahead = |i| prefetcher.read_ahead(dir.path(), OsStr::new("书"), &index, i);
        assert_eq!(ahead(0), 1..9, "the first load asks for the next 8");
        assert_eq!(ahead(1), 9..10);
        assert_eq!(ahead(2), 10..11);
        assert_eq!(
            ahead(6),
            11..15,
            "a skip asks only for what was not asked yet"
        );
        assert_eq!(ahead(0), 1..9, "a jump back asks again from there");
        assert_eq!(ahead(18), 19..20, "never past the last chapter");
        assert_eq!(ahead(19), 20..20);
        assert_eq!(prefetcher.queued_to(OsStr::new("书")), Some(20));
    }
}
