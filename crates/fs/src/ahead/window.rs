//! How far ahead of a reader one book is queued: a window of the chapters
//! after the reader's, topped up by halves (one message to a thread and
//! one wake-up per half window, not one per chapter read or listed).

use std::ops::Range;

/// The chapters of one book queued ahead of a reader: those before `end`
/// (in the order of the book's index).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Window {
    end: usize,
}

impl Window {
    /// The end of the chapters queued so far.
    pub(super) fn end(&self) -> usize {
        self.end
    }

    /// The chapters to queue for a reader whose next chapter is `from`, in
    /// a book of `len` chapters and a window of `size` chapters, when
    /// fewer than `low` are queued ahead of it (`None` while enough are).
    /// A reader behind what was queued (it jumped back) starts again from
    /// where it is. The range may be empty (at the book's end); once it is
    /// queued, say so with `queued`.
    pub(super) fn top_up(
        &self,
        from: usize,
        len: usize,
        size: usize,
        low: usize,
    ) -> Option<Range<usize>> {
        let end = (from + size).min(len);
        let start = if self.end > end || self.end < from {
            from
        } else {
            self.end
        };
        (start - from < low).then(|| start.min(end)..end)
    }

    /// `chapters` (from `top_up`) were queued.
    pub(super) fn queued(&mut self, chapters: &Range<usize>) {
        self.end = chapters.end;
    }

    /// What was queued from `from` on was dropped: it is queued again by
    /// the next top-up.
    pub(super) fn dropped(&mut self, from: usize) {
        self.end = self.end.min(from);
    }
}

/// Chapters a reader may skip and still go on in order: one who reads
/// every other chapter, or skips one it read before, is still going
/// through the book.
const NEAR: usize = 2;

/// How far ahead of a reader whose every chapter is a request (a bucket)
/// its chapters are fetched, as mountpoint-s3's prefetcher sizes its
/// requests: nothing after a first read with no chapter before it, then
/// doubling (1, 2, 4, …, `MAX_REACH`) while the reader goes on in order,
/// and nothing again after a jump. A reader who reads chapters here and
/// there costs their GETs alone; one going through a book soon has the
/// whole window ahead of it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Reach {
    /// The chapter a reader going on in order comes to next: past the one
    /// it was on (`None`: no reader was placed, or a walk reads the book).
    expected: Option<usize>,
    chapters: usize,
}

/// The widest reach: the bucket's window (`disk` reads ahead this many
/// chapters of a reader in a bucket).
pub(super) const MAX_REACH: usize = 64;

impl Reach {
    /// Chapters to fetch ahead of the reader, at most: all of `window`
    /// where no reader was placed (loads no reader made: a walk's, an
    /// index's), else what its reading in order has earned.
    pub(super) fn chapters(&self, window: usize) -> usize {
        match self.expected {
            None => window,
            Some(_) => self.chapters.min(window),
        }
    }

    /// The book was listed: a reader not placed yet begins at its start
    /// (its first chapter then goes on in order). A placed reader stays
    /// where it is: an agent lists the book between its chapters.
    pub(super) fn at_start(&mut self) {
        self.expected.get_or_insert(0);
    }

    /// The reader is on chapter `position`: the same chapter changes
    /// nothing, the next ones (within `NEAR`) double the reach, anything
    /// else (a first read, a jump) starts it again from nothing.
    pub(super) fn on(&mut self, position: usize) {
        self.chapters = match self.expected {
            Some(e) if position + 1 == e => return,
            Some(e) if (e..=e + NEAR).contains(&position) => {
                (self.chapters * 2).clamp(1, MAX_REACH)
            }
            _ => 0,
        };
        self.expected = Some(position + 1);
    }

    /// A walk reads the book from where it is on: its loads are fetched
    /// ahead in full, as where no reader was placed.
    pub(super) fn walked(&mut self) {
        *self = Reach::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reach_grows_in_order_and_starts_again_on_a_jump() {
        let mut r = Reach::default();
        assert_eq!(r.chapters(64), 64, "no reader: the whole window");
        r.on(40);
        assert_eq!(r.chapters(64), 0, "a first read with nothing before it");
        r.on(40);
        assert_eq!(r.chapters(64), 0, "the same chapter again");
        let mut grown = Vec::new();
        for position in 41..50 {
            r.on(position);
            grown.push(r.chapters(64));
        }
        assert_eq!(grown, [1, 2, 4, 8, 16, 32, 64, 64, 64], "doubling");
        assert_eq!(r.chapters(16), 16, "never past the window asked for");
        r.on(49);
        assert_eq!(r.chapters(64), 64, "its own chapter again");
        r.on(51 + NEAR);
        assert_eq!(r.chapters(64), 0, "skipping more than NEAR is a jump");
        r.on(54);
        r.on(54 + NEAR);
        assert_eq!(r.chapters(64), 2, "within NEAR: still in order");
        r.on(10);
        assert_eq!(r.chapters(64), 0, "a jump back");
        r.walked();
        assert_eq!(r.chapters(64), 64, "a walk reads the whole book");
    }

    #[test]
    fn a_listed_book_starts_a_reader_at_its_first_chapter() {
        let mut r = Reach::default();
        r.at_start();
        r.on(0);
        assert_eq!(r.chapters(64), 1, "the first chapter of a listed book");
        r.on(1);
        r.at_start();
        r.on(2);
        assert_eq!(r.chapters(64), 4, "listing the book again moves nobody");
        let mut fresh = Reach::default();
        fresh.at_start();
        fresh.on(30);
        assert_eq!(fresh.chapters(64), 0, "a listed book, then a jump");
    }

    #[test]
    fn a_window_is_topped_up_when_fewer_than_low_are_ahead() {
        let mut w = Window::default();
        let first = w.top_up(0, 40, 16, 8).expect("nothing queued yet");
        assert_eq!(first, 0..16);
        w.queued(&first);
        assert_eq!(w.top_up(8, 40, 16, 8), None, "8 still ahead");
        assert_eq!(w.top_up(9, 40, 16, 8), Some(16..25), "7 left: topped up");
        assert_eq!(w.top_up(30, 40, 16, 8), Some(30..40), "a skip starts there");
        assert_eq!(w.top_up(1, 40, 16, 8), None, "15 ahead");
        w.queued(&(16..40));
        assert_eq!(
            w.top_up(2, 40, 16, 8),
            Some(2..18),
            "a jump back starts over"
        );
        assert_eq!(w.top_up(40, 40, 16, 8), Some(40..40), "the book's end");
        w.dropped(20);
        assert_eq!(w.end(), 20);
    }
}
