//! Where a reader is in one book: the one notion of a reader's place that
//! the members working ahead of it derive their work from.

use std::ffi::OsStr;
use std::ops::Range;
use std::sync::Arc;

use super::window::Window;
use novelfs_library::BookIndex;

/// A reader's place in one book: the book, its chapters in reading order,
/// and the first chapter ahead of the reader. Readers go forward through a
/// book (a jump back starts a new track where it lands), so what is ahead
/// of one is the chapters from `next` on.
#[derive(Clone, Copy)]
pub(crate) struct Track<'a> {
    pub book: &'a Arc<OsStr>,
    pub index: &'a Arc<BookIndex>,
    /// The first chapter ahead of the reader, in `index`.
    pub next: usize,
}

impl<'a> Track<'a> {
    /// A reader at the start of `book`, before its first chapter (it listed
    /// the book).
    pub(crate) fn start(book: &'a Arc<OsStr>, index: &'a Arc<BookIndex>) -> Track<'a> {
        Track {
            book,
            index,
            next: 0,
        }
    }

    /// A reader on the chapter at `position` of `index` (it listed or
    /// loaded that chapter).
    pub(crate) fn on(
        book: &'a Arc<OsStr>,
        index: &'a Arc<BookIndex>,
        position: usize,
    ) -> Track<'a> {
        Track {
            book,
            index,
            next: position + 1,
        }
    }

    /// The chapters to queue ahead of the reader into `window` (`size`
    /// chapters, topped up when fewer than `low` are ahead; see
    /// `Window::top_up`).
    pub(super) fn top_up(&self, window: &Window, size: usize, low: usize) -> Option<Range<usize>> {
        window.top_up(self.next, self.index.chapters.len(), size, low)
    }
}
