//! The disk's page cache, filled ahead of a reader: asks the disk for the
//! next chapters of a book while one is decoded. Who reads a chapter (an
//! agent paging through a book, `find`, `grep -r`) mostly reads the
//! following ones next, and their bytes are then in the page cache when
//! asked for.

use std::ffi::OsStr;
use std::ops::Range;
use std::sync::Arc;

use novelfs_library::{BookIndex, Library};

use super::track::{PagePlace, Track};

/// How many chapters ahead of the one being loaded are read ahead. The
/// window is topped up when fewer than half of it are ahead: one message
/// (and one wake-up of the thread) per half window, not one per chapter
/// (a send, a wake-up and a park per chapter would show in a cold `find`).
const READ_AHEAD: usize = 16;

/// The window where each chapter is a request (a bucket): a half window
/// is several batches of GETs in flight, so a reader faster than one
/// batch's round trip (`grep -r` at 20 ms a request) does not wait for
/// each; their bodies count in the bodies' share of `--cache-size`.
pub(super) const READ_AHEAD_REQUESTED: usize = super::window::MAX_REACH;

/// The reading itself is the library's (`Library::read_ahead`: the
/// kernel's page cache for a local library, GETs under way for a bucket);
/// this decides which chapters and when, from the reader's track (its
/// `disk` window: what was asked for already).
pub(crate) struct Prefetcher {
    window: usize,
}

impl Prefetcher {
    /// A prefetcher for a library where each chapter read is a request
    /// (`requested`: a bucket) or not.
    pub(crate) fn start(requested: bool) -> Prefetcher {
        Prefetcher {
            window: match requested {
                true => READ_AHEAD_REQUESTED,
                false => READ_AHEAD,
            },
        }
    }

    /// The chapters to ask for after the chapter at `position` of
    /// `track`'s book was loaded (by its reader, or by a member working
    /// ahead of it: the files are wanted before either decodes them), when
    /// fewer than half its window are asked for ahead of it; marked asked
    /// for in the track. A sequential reader queues half a window every
    /// half window. Read them with `read`, out of the tracks' lock.
    pub(crate) fn queue<P: PagePlace>(
        &self,
        track: &mut Track<P>,
        position: usize,
    ) -> Range<usize> {
        let from = position + 1;
        // The wide window only for a reader well into the book, or one a
        // walk said reads all of it (its window opened whole,
        // `queue_whole`, reaching past a narrow one): one who reads a page
        // or two of its start costs no more GETs than that.
        let window = match from < READ_AHEAD && track.disk.end() <= from + READ_AHEAD {
            true => READ_AHEAD,
            false => self.window,
        };
        // In a bucket, no further than its reader has earned by reading in
        // order (`Reach`): a reader reading here and there pays for what
        // it reads alone.
        let window = track.reach(window);
        if super::switched_off("disk") || window == 0 {
            return from..from;
        }
        let Some(chapters) = track.top_up(&track.disk, from, window, window.div_ceil(2)) else {
            return from..from;
        };
        track.disk.queued(&chapters);
        chapters
    }

    /// The chapters to ask for from `from` in `track`'s book, which a walk
    /// reads from there to its end: the whole window (unless some are
    /// asked for from there already), marked asked for. Read them with
    /// `read`, out of the tracks' lock.
    pub(crate) fn queue_whole<P: PagePlace>(
        &self,
        track: &mut Track<P>,
        from: usize,
    ) -> Range<usize> {
        track.walked();
        if super::switched_off("disk") || track.disk.end() > from {
            return from..from;
        }
        let Some(chapters) = track.top_up(&track.disk, from, self.window, self.window / 2) else {
            return from..from;
        };
        track.disk.queued(&chapters);
        chapters
    }

    /// Asks `library` for the files of `chapters` of `book`.
    pub(crate) fn read(
        &self,
        library: &Library,
        book: &Arc<OsStr>,
        index: &BookIndex,
        chapters: Range<usize>,
    ) {
        if !chapters.is_empty() {
            let files = index.chapters[chapters]
                .iter()
                .map(|c| c.os_name.as_os_str());
            library.read_ahead(book, files);
        }
    }

    /// Whether to read ahead after loading chapter `i` of a book whose
    /// track is `track` (if one is kept): not when its file was already in
    /// the page cache (its neighbours most likely are too, and asking for
    /// them costs an open, an fadvise and a close per chapter on a second
    /// thread), unless a read-ahead of this book is under way and must be
    /// kept ahead of the reader.
    pub(crate) fn wanted<P>(&self, track: Option<&Track<P>>, i: usize, was_cached: bool) -> bool {
        !was_cached || track.is_some_and(|t| t.disk.end() > i + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Track;
    use super::super::track::Tracks;
    use super::*;
    use novelfs_library::Chapter;

    fn index() -> Arc<BookIndex> {
        index_of(40)
    }

    /// A book of `chapters` chapters.
    fn index_of(chapters: usize) -> Arc<BookIndex> {
        Arc::new(BookIndex::new(
            (1..=chapters)
                .map(|i| Chapter::new(format!("第{i:03}章.md").into()))
                .collect(),
        ))
    }

    #[test]
    fn read_ahead_is_wanted_for_files_not_cached_or_to_keep_one_going() {
        let index = index();
        let prefetcher = Prefetcher::start(false);
        let mut tracks = Tracks::<super::super::kernel::Place>::default();
        let book: &Arc<OsStr> = &Arc::from(OsStr::new("书"));
        let mut wanted = |i, cached| prefetcher.wanted(tracks.find(book).map(|t| &*t), i, cached);
        assert!(!wanted(0, true), "cached: nothing under way");
        assert!(wanted(0, false), "not cached");
        prefetcher.queue(tracks.of(book, &index), 0);
        let mut wanted = |i, cached| prefetcher.wanted(tracks.find(book).map(|t| &*t), i, cached);
        assert!(
            wanted(5, true),
            "cached thanks to the read-ahead: keep it ahead"
        );
        assert!(!wanted(16, true), "past its end: stop");
    }

    #[test]
    fn a_sequential_reader_queues_half_a_window_every_half_window() {
        let dir = tempfile::tempdir().unwrap();
        let library = novelfs_storage::open_local(dir.path()).unwrap();
        let prefetcher = Prefetcher::start(false);
        let index = index();
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let mut track = Track::new(&book, &index);
        let mut ahead = |i| {
            let queued = prefetcher.queue(&mut track, i);
            prefetcher.read(&library, &book, &index, queued.clone());
            queued
        };
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
        assert_eq!(track.disk.end(), 40);
    }

    /// A book a walk reads whole has its window opened whole from its
    /// start, and its reader's loads keep it whole: asked for again only
    /// once half of it is read, never narrowed to a start's window.
    #[test]
    fn a_book_a_walk_reads_is_asked_for_whole_and_kept_whole() {
        let prefetcher = Prefetcher::start(true);
        let index = index_of(100);
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let mut track = Track::new(&book, &index);
        assert_eq!(
            prefetcher.queue_whole(&mut track, 0),
            0..READ_AHEAD_REQUESTED
        );
        assert_eq!(prefetcher.queue_whole(&mut track, 0), 0..0, "asked once");
        let half = READ_AHEAD_REQUESTED / 2;
        for i in 0..half {
            assert!(prefetcher.queue(&mut track, i).is_empty(), "{i}");
            assert_eq!(track.disk.end(), READ_AHEAD_REQUESTED, "{i}");
        }
        assert_eq!(
            prefetcher.queue(&mut track, half),
            READ_AHEAD_REQUESTED..half + 1 + READ_AHEAD_REQUESTED,
            "topped up once fewer than half are ahead"
        );
    }

    /// In a bucket, what is asked for ahead of a reader's track is its
    /// reach (`Reach`): the whole window while no reader is on it, nothing
    /// after a lone read, more as it reads in order, nothing after a jump,
    /// the whole window again for a walk. A local library's ignores it.
    #[test]
    fn a_readers_reach_bounds_what_is_asked_for_in_a_bucket() {
        let prefetcher = Prefetcher::start(true);
        let index = index_of(200);
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let mut tracks = Tracks::<super::super::kernel::Place>::new(true);
        let track = tracks.of(&book, &index);
        assert_eq!(prefetcher.queue(track, 50), 51..51 + READ_AHEAD_REQUESTED);
        track.on(100);
        assert!(prefetcher.queue(track, 100).is_empty(), "a lone read");
        track.on(101);
        assert_eq!(prefetcher.queue(track, 101), 102..103, "in order: 1");
        track.on(102);
        assert_eq!(prefetcher.queue(track, 102), 103..105, "2");
        track.on(103);
        assert_eq!(prefetcher.queue(track, 103), 105..108, "4");
        track.on(150);
        assert!(prefetcher.queue(track, 150).is_empty(), "a jump");
        assert_eq!(prefetcher.queue_whole(track, 150), 150..200, "a walk");
        assert!(prefetcher.queue(track, 160).is_empty(), "all of it asked");
        assert_eq!(track.disk.end(), 200);
        let local = Prefetcher::start(false);
        let mut tracks = Tracks::<super::super::kernel::Place>::new(false);
        let track = tracks.of(&book, &index);
        track.on(100);
        assert_eq!(local.queue(track, 100), 101..101 + READ_AHEAD, "local");
    }

    /// In a bucket, a reader of a book's first pages (its first chapter,
    /// then the next ones loaded from what was fetched ahead) has the
    /// narrow window, topped up by halves, until it is well into the book.
    #[test]
    fn a_reader_at_a_books_start_gets_the_narrow_window_in_a_bucket() {
        let prefetcher = Prefetcher::start(true);
        let index = index_of(100);
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let mut track = Track::new(&book, &index);
        assert_eq!(prefetcher.queue(&mut track, 0), 1..17);
        for i in 1..=8 {
            assert!(prefetcher.queue(&mut track, i).is_empty(), "{i}");
        }
        assert_eq!(prefetcher.queue(&mut track, 9), 17..26, "7 left: topped up");
        assert_eq!(
            prefetcher.queue(&mut track, 16),
            26..17 + READ_AHEAD_REQUESTED,
            "well into the book: the wide window"
        );
    }
}
