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

#[cfg(test)]
mod tests {
    use super::*;

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
