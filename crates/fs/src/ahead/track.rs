//! Where readers are: one track per reader, the one notion of a reader's
//! place that every member working ahead of it derives its work from.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::ops::Range;
use std::sync::Arc;

use super::window::{Reach, Window};
use novelfs_library::BookIndex;

/// Tracks kept at once, the most recent first: a reader or two, a walk
/// (`find`, `grep -r`, the outliner's own loads) and a few books an agent
/// goes back and forth between. A track the kernel member follows (with a
/// `Place`) is kept before the others: only another page read displaces
/// it (`kernel::READERS`).
const TRACKS: usize = 8;

/// What a member keeps on a track per page read (the kernel member's
/// `Place`): placed again when the book's chapters change.
pub(crate) trait PagePlace {
    /// The file of the page's chapter.
    fn file(&self) -> &OsStr;
    /// That chapter is at `position` of the book's chapters now.
    fn placed_at(&mut self, position: usize);
}

/// One reader's track in one book: the book, its chapters in reading
/// order, the first chapter ahead of the reader, and how far each member
/// has worked ahead of it. Readers go forward through a book (a jump back
/// starts again where it lands), so what is ahead of one is the chapters
/// from `next` on; a walker whose listings go last chapter first
/// (`backward`: ripgrep's workers) has the chapters before it ahead.
pub(crate) struct Track<P> {
    pub book: Arc<OsStr>,
    pub index: Arc<BookIndex>,
    /// The first chapter ahead of the reader, in `index`: past the one it
    /// listed or read last (0: it listed the book).
    pub next: usize,
    /// The chapters whose files `disk` asked for.
    pub(super) disk: Window,
    /// The chapters whose outlines `outlines` queued.
    pub(super) outlines: Window,
    /// What `kernel` stores ahead of: the page read last, one per format
    /// (the reader's page, where a chapter is not place enough).
    pub(super) pages: Vec<P>,
    /// How far ahead of the reader the members that make requests reach
    /// (`Reach`): heeded only in a bucket (`bounded`), where each chapter
    /// fetched ahead is a GET whether the reader comes to it or not.
    reach: Reach,
    bounded: bool,
    /// Whether its reader goes through the book last chapter first (each
    /// chapter it is on one or two before the one it was on): ripgrep's
    /// workers take a directory's entries from the end.
    backward: bool,
    /// The lowest chapter whose outline was queued for a reader going
    /// backward (`outlines` is the forward window).
    pub(super) outlined_down_to: Option<usize>,
}

impl<P: PagePlace> Track<P> {
    /// Whether its reader reads pages (not only lists).
    pub(crate) fn reads(&self) -> bool {
        !self.pages.is_empty()
    }

    pub(crate) fn new(book: &Arc<OsStr>, index: &Arc<BookIndex>) -> Track<P> {
        Track {
            book: book.clone(),
            index: index.clone(),
            next: 0,
            disk: Window::default(),
            outlines: Window::default(),
            pages: Vec::new(),
            reach: Reach::default(),
            bounded: false,
            backward: false,
            outlined_down_to: None,
        }
    }

    /// The reader listed the book: it is at its start.
    pub(crate) fn at_start(&mut self) {
        self.next = 0;
        self.backward = false;
        self.outlined_down_to = None;
        self.reach.at_start();
    }

    /// The reader is on the chapter at `position` (it listed or read it).
    pub(crate) fn on(&mut self, position: usize) {
        self.next = position + 1;
        self.reach.on(position);
    }

    /// The reader listed the chapter at `position`: it is on it, and which
    /// way it goes through the book is what its listings say (a read of a
    /// chapter listed before is no step back). Two workers interleave:
    /// one or two chapters before the last listed is backward.
    pub(crate) fn listed_on(&mut self, position: usize) {
        if let Some(was) = self.next.checked_sub(1) {
            if position < was && was - position <= 2 {
                self.backward = true;
            } else if position > was {
                self.backward = false;
            }
        }
        self.on(position);
    }

    /// Whether its reader goes through the book last chapter first.
    pub(super) fn backward(&self) -> bool {
        self.backward
    }

    /// Whether what is fetched ahead is bounded by the reader's reach.
    pub(super) fn bounded(&self) -> bool {
        self.bounded
    }

    /// Chapters of `window` to fetch ahead of the reader: all of it where
    /// the reach is not heeded (a local library, or `reach` switched off
    /// by `NOVELFS_AHEAD_OFF`), else its reach.
    pub(super) fn reach(&self, window: usize) -> usize {
        match self.bounded && !super::switched_off("reach") {
            true => self.reach.chapters(window),
            false => window,
        }
    }

    /// A walk reads the book from where it is on: it is fetched ahead in
    /// full (`Reach::walked`).
    pub(super) fn walked(&mut self) {
        self.reach.walked();
    }

    /// The chapters to queue into `window` ahead of chapter `from` (`size`
    /// chapters, topped up when fewer than `low` are ahead; see
    /// `Window::top_up`).
    pub(super) fn top_up(
        &self,
        window: &Window,
        from: usize,
        size: usize,
        low: usize,
    ) -> Option<Range<usize>> {
        window.top_up(from, self.index.chapters.len(), size, low)
    }

    /// The book's chapters are `index` now (its directory changed): what
    /// was done ahead by position starts over, the pages read are placed
    /// in it again (or dropped, gone from it).
    fn reindex(&mut self, index: &Arc<BookIndex>) {
        use std::os::unix::ffi::OsStrExt;
        self.index = index.clone();
        self.next = 0;
        self.disk = Window::default();
        self.outlines = Window::default();
        self.reach = Reach::default();
        self.backward = false;
        self.outlined_down_to = None;
        self.pages
            .retain_mut(|p| match index.exact(p.file().as_bytes()) {
                Some(position) => {
                    p.placed_at(position);
                    true
                }
                None => false,
            });
    }
}

/// Every reader's track, the most recent first: held by the `Ahead`, lent
/// to each member with the event it follows.
pub(crate) struct Tracks<P> {
    tracks: VecDeque<Track<P>>,
    /// Whether each track's members heed its reader's reach (a bucket).
    bounded: bool,
}

impl<P> Default for Tracks<P> {
    fn default() -> Tracks<P> {
        Tracks::new(false)
    }
}

impl<P> Tracks<P> {
    /// Tracks whose members heed their readers' reach (`bounded`: a
    /// bucket's, where each chapter fetched ahead is a request) or not.
    pub(crate) fn new(bounded: bool) -> Tracks<P> {
        Tracks {
            tracks: VecDeque::new(),
            bounded,
        }
    }
}

impl<P: PagePlace> Tracks<P> {
    /// The track in `book`, moved to the front; `None` when none is kept.
    pub(crate) fn find(&mut self, book: &OsStr) -> Option<&mut Track<P>> {
        let i = self.tracks.iter().position(|t| *t.book == *book)?;
        if i > 0 {
            let t = self.tracks.remove(i).expect("found");
            self.tracks.push_front(t);
        }
        self.tracks.front_mut()
    }

    /// The track in `book` with `index` as its chapters, moved to the front
    /// (made if none is kept; placed in `index` again if it had others).
    pub(crate) fn of(&mut self, book: &Arc<OsStr>, index: &Arc<BookIndex>) -> &mut Track<P> {
        if self.find(book).is_none() {
            let mut track = Track::new(book, index);
            track.bounded = self.bounded;
            self.tracks.push_front(track);
            if self.tracks.len() > TRACKS {
                // The least recent that no page read holds; a track with
                // pages goes only when every track has some.
                let i = (1..self.tracks.len())
                    .rev()
                    .find(|&i| self.tracks[i].pages.is_empty())
                    .unwrap_or(self.tracks.len() - 1);
                self.tracks.remove(i);
            }
        }
        let track = self.tracks.front_mut().expect("at the front");
        if !Arc::ptr_eq(&track.index, index) {
            track.reindex(index);
        }
        track
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Track<P>> {
        self.tracks.iter()
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Track<P>> {
        self.tracks.iter_mut()
    }

    /// How many are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.tracks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use novelfs_library::Chapter;

    /// A page read: its chapter's file and place.
    struct Page(std::ffi::OsString, usize);

    impl PagePlace for Page {
        fn file(&self) -> &OsStr {
            &self.0
        }
        fn placed_at(&mut self, position: usize) {
            self.1 = position;
        }
    }

    fn index(n: usize) -> Arc<BookIndex> {
        Arc::new(BookIndex::new(
            (1..=n)
                .map(|i| Chapter::new(format!("第{i}章.md").into()))
                .collect(),
        ))
    }

    /// ripgrep's two workers list a book's chapters from the last, each
    /// one or two before the other's: the track goes backward then, and
    /// forward again once its reader goes on past where it was.
    #[test]
    fn a_reader_taking_the_chapters_last_first_goes_backward() {
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let mut t = Track::<Page>::new(&book, &index(100));
        t.at_start();
        t.listed_on(99);
        assert!(!t.backward(), "one chapter says no way yet");
        t.listed_on(98);
        assert!(t.backward());
        t.listed_on(96);
        assert!(t.backward(), "two before: the other worker's");
        t.listed_on(97);
        assert!(!t.backward(), "on past where it was: forward");
        t.listed_on(10);
        assert!(!t.backward(), "a jump back is no walk backward");
        t.listed_on(20);
        t.on(19);
        assert!(
            !t.backward(),
            "a read of a chapter listed before is no step back"
        );
        t.at_start();
        assert!(!t.backward());
    }

    #[test]
    fn one_track_per_book_the_least_recent_without_pages_dropped_first() {
        let mut tracks = Tracks::<Page>::default();
        let index = index(3);
        let books: Vec<Arc<OsStr>> = (0..=TRACKS)
            .map(|i| Arc::from(OsStr::new(&format!("书{i}"))))
            .collect();
        tracks.of(&books[0], &index).on(1);
        tracks.of(&books[1], &index);
        assert_eq!(tracks.of(&books[0], &index).next, 2, "the same track");
        assert_eq!(tracks.len(), 2);
        for book in &books[2..] {
            tracks.of(book, &index);
        }
        assert_eq!(tracks.len(), TRACKS);
        assert!(tracks.find(&books[1]).is_none(), "the least recent went");
        assert!(tracks.find(&books[0]).is_some());
        // Another index: what was done ahead by position starts over.
        let other = self::index(5);
        let t = tracks.of(&books[0], &other);
        assert_eq!((t.next, t.index.chapters.len()), (0, 5));
    }
}
