//! The disk's page cache, filled ahead of a reader: asks the disk for the
//! next chapters of a book while one is decoded. Who reads a chapter (an
//! agent paging through a book, `find`, `grep -r`) mostly reads the
//! following ones next, and their bytes are then in the page cache when
//! asked for.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::ops::Range;
use std::sync::Mutex;

use novelfs_library::Library;

use super::track::Track;
use super::window::Window;
use crate::lock;
use crate::source::ChapterLoad;

/// How many chapters ahead of the one being loaded are read ahead.
const READ_AHEAD: usize = 16;
/// The window is topped up when fewer than this many are ahead: one
/// message (and one wake-up of the thread) per half window, not one per
/// chapter (a send, a wake-up and a park per chapter were 14% of a cold
/// `find`).
const REFILL_BELOW: usize = READ_AHEAD / 2;

pub(crate) struct Prefetcher {
    /// Per book, the chapters already queued.
    queued_to: Mutex<HashMap<OsString, Window>>,
}

impl Prefetcher {
    /// The reading itself is the library's (`Library::read_ahead`: the
    /// kernel's page cache for a local library, GETs under way for a
    /// bucket); this decides which chapters and when.
    pub(crate) fn start() -> Prefetcher {
        Prefetcher {
            queued_to: Mutex::new(HashMap::new()),
        }
    }

    /// A chapter was read from disk: the chapters after it are asked for,
    /// when wanted (see `wanted`).
    pub(crate) fn loaded(&self, load: &ChapterLoad<'_>) {
        if self.wanted(load.book, load.position, load.was_cached) {
            let track = Track::on(load.book, load.index, load.position);
            self.read_ahead(load.library, track);
        }
    }

    /// Queues the chapters ahead of `track` in `library` that are not
    /// queued yet, when fewer than `REFILL_BELOW` are, and returns their
    /// indices. A sequential reader queues half a window every half window.
    pub(crate) fn read_ahead(&self, library: &Library, track: Track<'_>) -> Range<usize> {
        let from = track.next;
        if super::switched_off("disk") {
            return from..from;
        }
        let queued = {
            let mut queued = lock(&self.queued_to);
            let book: &OsStr = track.book;
            let window = match queued.get_mut(book) {
                Some(window) => window,
                None => queued.entry(book.to_os_string()).or_default(),
            };
            let Some(chapters) = track.top_up(window, READ_AHEAD, REFILL_BELOW) else {
                return from..from;
            };
            window.queued(&chapters);
            chapters
        };
        if !queued.is_empty() {
            let files = track.index.chapters[queued.clone()]
                .iter()
                .map(|c| c.os_name.as_os_str());
            library.read_ahead(track.book, files);
        }
        queued
    }

    /// Whether to read ahead after loading chapter `i` of `book`: not when
    /// its file was already in the page cache (its neighbours most likely
    /// are too, and asking for them costs an open, an fadvise and a close
    /// per chapter on a second thread), unless a read-ahead of this book
    /// is under way and must be kept ahead of the reader.
    pub(crate) fn wanted(&self, book: &OsStr, i: usize, was_cached: bool) -> bool {
        !was_cached || self.queued_to(book).is_some_and(|to| to > i + 1)
    }

    /// The end of the chapters of `book` queued so far.
    pub(crate) fn queued_to(&self, book: &OsStr) -> Option<usize> {
        lock(&self.queued_to).get(book).map(Window::end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use novelfs_library::{BookIndex, Chapter};
    use std::sync::Arc;

    #[test]
    fn read_ahead_is_wanted_for_files_not_cached_or_to_keep_one_going() {
        let index = Arc::new(BookIndex::new(
            (1..=40)
                .map(|i| Chapter::new(format!("第{i}章.md").into()))
                .collect(),
        ));
        let dir = tempfile::tempdir().unwrap();
        let library = Library::open(dir.path()).unwrap();
        let prefetcher = Prefetcher::start();
        let book: &Arc<OsStr> = &Arc::from(OsStr::new("书"));
        assert!(
            !prefetcher.wanted(book, 0, true),
            "cached: nothing under way"
        );
        assert!(prefetcher.wanted(book, 0, false), "not cached");
        prefetcher.read_ahead(&library, Track::on(book, &index, 0));
        assert!(
            prefetcher.wanted(book, 5, true),
            "cached thanks to the read-ahead: keep it ahead"
        );
        assert!(!prefetcher.wanted(book, 16, true), "past its end: stop");
    }

    #[test]
    fn a_sequential_reader_queues_half_a_window_every_half_window() {
        let dir = tempfile::tempdir().unwrap();
        let library = Library::open(dir.path()).unwrap();
        let prefetcher = Prefetcher::start();
        let index = Arc::new(BookIndex::new(
            (1..=40)
                .map(|i| Chapter::new(format!("第{i}章.md").into()))
                .collect(),
        ));
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let ahead = |i| prefetcher.read_ahead(&library, Track::on(&book, &index, i));
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
