//! What is done ahead of a reader, so that what it asks for next is
//! already where it is served from. Each member fills one cache, on a
//! thread of its own, and never makes a request wait:
//!
//! - `disk`: the disk's page cache (the chapters' files), ahead of the
//!   chapters being decoded (thread `novelfs-readahead`);
//! - `outlines`: the outlines' cache, ahead of a walk listing chapter
//!   directories (thread `novelfs-outline`);
//! - `kernel`: the kernel's page cache (the pages it would READ), ahead of
//!   a reader reading pages (thread `novelfs-store`, which the binary's
//!   `mount::serving::pusher` runs: it needs the kernel's notifier).
//!
//! One `Ahead`, owned by the tree, keeps the readers and the three
//! members, and is told what the tree serves. A reader is a `Track`
//! (`track`): one book, its chapters, the chapter the reader is on, and
//! how far each member has worked ahead of it. Each event finds the
//! track of its book (or makes one), moves it, and lends it to the
//! members that follow that event; each works out its work from the
//! track and differs only in what it fills:
//!
//! ```text
//!  book listed ─────┐                ┌─▶ disk      window: files asked for   (a chapter loaded)
//!  chapter listed ──┼─▶ Ahead ─ Track┼─▶ outlines  window: outlines queued   (a listing)
//!  chapter loaded ──┤   one a reader └─▶ kernel    Place: the page read,     (a READ, a READDIR)
//!  page read ───────┘                               per format, and its plan
//! ```
//!
//! The track is where its reader is: a listing or a READ puts it on a
//! chapter; a load does not (the outliner's and the store thread's loads
//! run ahead of the reader), and `disk` asks for the files after the
//! chapter loaded, whoever loaded it. `disk` and `outlines` top their
//! `window` up by halves; `kernel` keeps on the track the page read last
//! in each format (a chapter is not place enough for it) and the plan
//! made for it, which its store thread makes with the track's chapters.
//! A READ finds its chapter in the track's chapters (or the index the
//! source has cached), never by a look at the book.
//!
//! In a bucket each chapter fetched ahead is a GET, come the reader or
//! not: there `disk` and `kernel` reach no further ahead than the track's
//! `Reach` (`window`), which its reader earns by reading in order, as
//! mountpoint-s3's prefetcher grows its requests: nothing after a lone
//! read, then 1, 2, 4, … chapters up to the window, and nothing again
//! after a jump. A page's LOOKUP also puts the reader on its chapter (in a
//! bucket), before the load that answers it asks for what follows; a
//! track no reader was put on (a walk's, an index's loads) has the whole
//! window, as in a local library, where reading ahead is cheap.
//!
//! `NOVELFS_AHEAD_OFF=disk,outlines,kernel` (any of them) in the daemon's
//! environment switches members off, to measure what each one pays for;
//! `walks` switches off a walk's window opened whole (`walk_reads`), and
//! `reach` a bucket's reader's reach (`window::Reach`): each chapter read
//! has the whole window fetched after it.

use std::ffi::OsStr;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

mod disk;
mod kernel;
mod outlines;
mod track;
mod window;

use crate::lock;
use crate::names::PageName;
use crate::node::{ChapterRef, Node};
use crate::outline::Outlines;
use crate::source::{ChapterLoad, LoadObserver, Source};
use disk::Prefetcher;
use kernel::Place;
use kernel::StoreAhead;
use novelfs_library::{BookIndex, Library};
pub(crate) use outlines::IndexAhead;
#[cfg(not(test))]
use outlines::Outliner;
use track::Tracks;

pub(crate) use kernel::Parts;
pub use kernel::{Store, StoreOutcome};

#[cfg(test)]
pub(crate) use kernel::{AHEAD_BYTES, AHEAD_CHAPTERS};
/// Tests start outliners of their own, with budgets of their own.
#[cfg(test)]
pub(crate) use outlines::Outliner;
#[cfg(test)]
pub(crate) use outlines::{OUTLINE_GUESS, WINDOW};
/// A reader's track, with the kernel member's page read on it.
#[cfg(test)]
pub(crate) type Track = track::Track<kernel::Place>;

/// Everything done ahead of the tree's readers: their tracks, and the
/// disk's read-ahead, the outliner and the kernel's stores working from
/// them, started together.
pub(crate) struct Ahead {
    /// Every reader's track: each event moves one, and each member works
    /// ahead of it. Locked before a member's own lock, never after.
    tracks: Mutex<Tracks<Place>>,
    /// Where a page read in a book without a track finds the book's
    /// chapters: the index cached with it.
    source: Weak<Source>,
    /// Whether each chapter read is a request (a bucket): the chapters
    /// fetched ahead of a reader are then as many as its reach
    /// (`window::Reach`), grown while it reads in order.
    requested: bool,
    disk: Prefetcher,
    outlines: Outliner,
    kernel: StoreAhead,
}

impl Ahead {
    /// Starts the disk's and the outliner's threads (they end with the
    /// `Ahead`) and has `source` tell it of every chapter it reads. The
    /// kernel member's thread is the mount's, since it needs the kernel's
    /// notifier: it calls `stores` in a loop.
    pub(crate) fn start(
        source: &Arc<Source>,
        outlines: &Arc<Outlines>,
        outlines_budget: usize,
        index_ahead: Option<IndexAhead>,
    ) -> Arc<Ahead> {
        let requested = source.library().listing_ttl().is_some();
        let ahead = Arc::new(Ahead {
            tracks: Mutex::new(Tracks::new(requested)),
            source: Arc::downgrade(source),
            requested,
            disk: Prefetcher::start(requested),
            outlines: Outliner::start(
                source.clone(),
                outlines.clone(),
                outlines_budget,
                index_ahead,
            ),
            kernel: StoreAhead::new(),
        });
        // Weak: the outliner holds the source, so a strong tie back would
        // keep both alive past the tree.
        let observer: Weak<dyn LoadObserver> = Arc::downgrade(&ahead) as Weak<Ahead>;
        source.observe(observer);
        ahead
    }

    /// `book` was listed (its chapters in `index` order): its reader is at
    /// its start.
    pub(crate) fn book_listed(&self, book: &Arc<OsStr>, index: &Arc<BookIndex>) {
        let mut tracks = lock(&self.tracks);
        let track = tracks.of(book, index);
        track.at_start();
        self.outlines.reached(track);
    }

    /// The listing of the chapter directory at `position` of `index` was
    /// taken: its reader is on that chapter.
    pub(crate) fn chapter_listed(
        &self,
        book: &Arc<OsStr>,
        index: &Arc<BookIndex>,
        position: usize,
    ) {
        let asked = {
            let mut tracks = lock(&self.tracks);
            let track = tracks.of(book, index);
            track.listed_on(position);
            self.outlines.reached(track);
            self.reached(track, position)
        };
        self.fetch(asked);
    }

    /// A page of `chapter` is looked up (before its chapter is loaded to
    /// answer): in a bucket its reader is on that chapter from now, so
    /// that the load fetches ahead only what the reader's reach takes (a
    /// lone read in a book, nothing).
    pub(crate) fn chapter_entered(&self, chapter: &ChapterRef) {
        if !self.requested {
            return;
        }
        let asked = {
            let mut tracks = lock(&self.tracks);
            self.place(&mut tracks, chapter)
                .and_then(|position| self.reached(tracks.find(&chapter.book)?, position))
        };
        self.fetch(asked);
    }

    /// The reader on `track` is on chapter `position` now: in a bucket,
    /// the chapters its reach takes that were not asked for yet (its loads
    /// ask for them too, later: a reader in order is ahead of its loads).
    fn reached(&self, track: &mut track::Track<Place>, position: usize) -> Option<Asked> {
        if !track.bounded() {
            return None;
        }
        let chapters = self.disk.queue(track, position);
        (!chapters.is_empty()).then(|| (track.book.clone(), track.index.clone(), chapters))
    }

    /// Asks the library for the files of `asked` (out of the tracks' lock).
    fn fetch(&self, asked: Option<Asked>) {
        let Some((book, index, chapters)) = asked else {
            return;
        };
        if let Some(source) = self.source.upgrade() {
            self.disk.read(source.library(), &book, &index, chapters);
        }
    }

    /// Whether a READDIR may concern a reader (cheap: no lock), before the
    /// tree looks up what it lists.
    pub(crate) fn following(&self) -> bool {
        self.kernel.following()
    }

    /// A READDIR of `chapter`'s directory is about to be served (`first`:
    /// at offset 0).
    pub(crate) fn chapter_readdir(&self, chapter: &ChapterRef, first: bool) {
        let mut tracks = lock(&self.tracks);
        self.kernel
            .listed(tracks.find(&chapter.book), chapter, first);
    }

    /// `page` of `chapter` (of `version`) was read; with `ino` when a READ
    /// gave the kernel its bytes. Its reader is on that chapter, at that
    /// page: a page with a limit is off the reading chain and says nothing
    /// of where a reader of the chain is.
    pub(crate) fn page_read(
        &self,
        chapter: &ChapterRef,
        page: PageName,
        version: u64,
        ino: Option<u64>,
    ) {
        if page.limit.is_none() {
            let mut tracks = lock(&self.tracks);
            if let Some(position) = self.place(&mut tracks, chapter) {
                let asked = tracks
                    .find(&chapter.book)
                    .and_then(|track| self.reached(track, position));
                if !switched_off("kernel") {
                    self.kernel
                        .read(&mut tracks, chapter, position, page, version);
                }
                drop(tracks);
                self.fetch(asked);
            }
        }
        if let Some(ino) = ino {
            self.kernel.given(ino);
        }
    }

    /// `chapter`'s position in its book, its track (made if none is kept)
    /// put on it. The track's chapters serve, or the index the source has
    /// cached (a READ comes after the LOOKUP that looked at the book): a
    /// READ never scans a book.
    fn place(&self, tracks: &mut Tracks<Place>, chapter: &ChapterRef) -> Option<usize> {
        use std::os::unix::ffi::OsStrExt;
        let file = chapter.file.as_bytes();
        if let Some(track) = tracks.find(&chapter.book) {
            let same = track.index.chapters.get(track.next.wrapping_sub(1));
            let position = match same {
                Some(c) if c.os_name.as_bytes() == file => Some(track.next - 1),
                _ => track.index.exact(file),
            };
            if let Some(position) = position {
                track.on(position);
                return Some(position);
            }
        }
        let index = self.source.upgrade()?.cached_index(&chapter.book)?;
        let position = index.exact(file)?;
        tracks.of(&chapter.book, &index).on(position);
        Some(position)
    }

    /// The kernel dropped its last lookup of `ino`.
    pub(crate) fn forgotten(&self, ino: u64) {
        self.kernel.forgotten(ino);
    }

    /// The next pages to store into the kernel ahead of its readers: waits
    /// until there are some, or at most `wait` (see `StoreAhead::next`).
    pub(crate) fn stores(&self, parts: &Parts, wait: Option<Duration>) -> Vec<Store> {
        self.kernel.next(parts, &self.tracks, wait)
    }

    /// The pages of `chapter` to store before answering a READDIR past its
    /// listing's first reply (see `StoreAhead::at_listing_end`).
    pub(crate) fn stores_at_listing_end(&self, parts: &Parts, chapter: &ChapterRef) -> Vec<Store> {
        self.kernel.at_listing_end(parts, &self.tracks, chapter)
    }

    /// Whether the kernel may not have the page `ino` yet.
    pub(crate) fn not_given(&self, ino: u64) -> bool {
        self.kernel.not_given(ino)
    }

    /// The store of page `ino`, claimed, unless the kernel was given it.
    pub(crate) fn claim(&self, ino: u64, node: Node, bytes: Arc<Vec<u8>>) -> Option<Store> {
        self.kernel.claim(ino, node, bytes)
    }

    /// What the kernel said to a store.
    pub(crate) fn store_finished(&self, store: Store, outcome: StoreOutcome) {
        self.kernel.finished(store, outcome);
    }

    /// What each member did ahead of the reader of `book`: the end of the
    /// chapters the disk was asked for, the end of those outlined, and the
    /// chapters of the pages read (each with its format).
    #[cfg(test)]
    pub(crate) fn track_of(&self, book: &OsStr) -> Option<TrackSeen> {
        let tracks = lock(&self.tracks);
        let t = tracks.iter().find(|t| *t.book == *book)?;
        Some(TrackSeen {
            next: t.next,
            disk_to: t.disk.end(),
            outlined_to: t.outlines.end(),
            pages_read: t.pages.iter().map(|p| p.position).collect(),
        })
    }

    /// How many tracks are kept.
    #[cfg(test)]
    pub(crate) fn tracks(&self) -> usize {
        lock(&self.tracks).len()
    }

    #[cfg(test)]
    pub(crate) fn outliner(&self) -> &Outliner {
        &self.outlines
    }

    #[cfg(test)]
    pub(crate) fn kernel(&self) -> &StoreAhead {
        &self.kernel
    }
}

/// Chapters of a book to ask the library for: the book, its chapters and
/// which of them.
type Asked = (Arc<OsStr>, Arc<BookIndex>, std::ops::Range<usize>);

/// A test's view of one track (`Ahead::track_of`).
#[cfg(test)]
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TrackSeen {
    pub next: usize,
    pub disk_to: usize,
    pub outlined_to: usize,
    pub pages_read: Vec<usize>,
}

impl LoadObserver for Ahead {
    /// A chapter was read from disk (by its reader, or by a member working
    /// ahead of it): the files after it are asked for, when wanted (see
    /// `Prefetcher::wanted`). A load does not move the reader: a member's
    /// loads run ahead of it.
    fn chapter_loaded(&self, load: &ChapterLoad<'_>) {
        let chapters = {
            let mut tracks = lock(&self.tracks);
            let kept = tracks.find(load.book).map(|t| &*t);
            if !self.disk.wanted(kept, load.position, load.was_cached) {
                return;
            }
            let track = tracks.of(load.book, load.index);
            self.disk.queue(track, load.position)
        };
        self.disk
            .read(load.library, load.book, load.index, chapters);
    }

    /// A walk reads `book` from `position` on: the disk's window of its
    /// reader is opened whole there at once, as for a reader well into a
    /// book, rather than a chapter read alone and then a start's narrow
    /// window.
    fn walk_reads(
        &self,
        library: &Library,
        book: &Arc<OsStr>,
        index: &Arc<BookIndex>,
        position: usize,
    ) {
        if switched_off("walks") {
            return;
        }
        let chapters = {
            let mut tracks = lock(&self.tracks);
            self.disk.queue_whole(tracks.of(book, index), position)
        };
        self.disk.read(library, book, index, chapters);
    }

    /// A walk reads all of `book` (its own index): whatever reader was on
    /// its track, its loads each have the whole window after them again.
    fn walk_begins(&self, book: &OsStr) {
        if let Some(track) = lock(&self.tracks).find(book) {
            track.walked();
        }
    }
}

/// The environment variable naming the members switched off.
pub(crate) const AHEAD_OFF_ENV: &str = "NOVELFS_AHEAD_OFF";

/// Whether `member` (`disk`, `outlines` or `kernel`) is switched off by
/// `NOVELFS_AHEAD_OFF`, read once.
pub(crate) fn switched_off(member: &str) -> bool {
    static OFF: OnceLock<Vec<String>> = OnceLock::new();
    OFF.get_or_init(|| {
        novelfs_library::test_switch::var(AHEAD_OFF_ENV)
            .unwrap_or_default()
            .split(',')
            .map(|m| m.trim().to_owned())
            .filter(|m| !m.is_empty())
            .collect()
    })
    .iter()
    .any(|m| m == member)
}
