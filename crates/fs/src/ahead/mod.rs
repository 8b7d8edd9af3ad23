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
//!   `mount::pusher` runs: it needs the kernel's notifier).
//!
//! One `Ahead`, owned by the tree, holds the three members and is told
//! what the tree serves; it hands each event to the members that follow
//! it. A member reads a reader's place as a `Track` (book, its chapters,
//! the first one ahead): `disk` gets one per chapter loaded, `outlines` per
//! book or chapter directory listed. `kernel` follows pages read (its
//! `readers` keep the page and format, and it finds the book's chapters
//! on its own thread). `disk` and `outlines` keep, per book, a `window` of
//! the chapters ahead of the track and top it up by halves.
//!
//! `NOVELFS_AHEAD_OFF=disk,outlines,kernel` (any of them) in the daemon's
//! environment switches members off, to measure what each one pays for.

use std::ffi::OsStr;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

mod disk;
mod kernel;
mod outlines;
mod track;
mod window;

use crate::names::PageName;
use crate::node::{ChapterRef, Node};
use crate::outline::Outlines;
use crate::source::{ChapterLoad, LoadObserver, Source};
use disk::Prefetcher;
use kernel::StoreAhead;
use novelfs_library::BookIndex;
#[cfg(not(test))]
use outlines::Outliner;

pub(crate) use kernel::Parts;
pub use kernel::{Store, StoreOutcome};

#[cfg(test)]
pub(crate) use kernel::{AHEAD_BYTES, AHEAD_CHAPTERS};
/// Tests start outliners of their own, with budgets of their own.
#[cfg(test)]
pub(crate) use outlines::Outliner;
#[cfg(test)]
pub(crate) use outlines::{OUTLINE_GUESS, WINDOW};

/// Everything done ahead of the tree's readers: the disk's read-ahead,
/// the outliner and the kernel's stores, started together.
pub(crate) struct Ahead {
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
    ) -> Arc<Ahead> {
        let ahead = Arc::new(Ahead {
            disk: Prefetcher::start(),
            outlines: Outliner::start(source.clone(), outlines.clone(), outlines_budget),
            kernel: StoreAhead::new(),
        });
        // Weak: the outliner holds the source, so a strong tie back would
        // keep both alive past the tree.
        let observer: Weak<dyn LoadObserver> = Arc::downgrade(&ahead) as Weak<Ahead>;
        source.observe(observer);
        ahead
    }

    /// `book` was listed (its chapters in `index` order).
    pub(crate) fn book_listed(&self, book: &Arc<OsStr>, index: &Arc<BookIndex>) {
        self.outlines.book_listed(book, index);
    }

    /// The listing of the chapter directory at `position` of `index` was
    /// taken.
    pub(crate) fn chapter_listed(
        &self,
        book: &Arc<OsStr>,
        index: &Arc<BookIndex>,
        position: usize,
    ) {
        self.outlines.chapter_listed(book, index, position);
    }

    /// Whether a READDIR may concern a reader (cheap: no lock), before the
    /// tree looks up what it lists.
    pub(crate) fn following(&self) -> bool {
        self.kernel.following()
    }

    /// A READDIR of `chapter`'s directory is about to be served (`first`:
    /// at offset 0).
    pub(crate) fn chapter_readdir(&self, chapter: &ChapterRef, first: bool) {
        self.kernel.listed(chapter, first);
    }

    /// `page` of `chapter` (of `version`) was read; with `ino` when a READ
    /// gave the kernel its bytes.
    pub(crate) fn page_read(
        &self,
        chapter: &ChapterRef,
        page: PageName,
        version: u64,
        ino: Option<u64>,
    ) {
        self.kernel.read(chapter, page, version);
        if let Some(ino) = ino {
            self.kernel.given(ino);
        }
    }

    /// The kernel dropped its last lookup of `ino`.
    pub(crate) fn forgotten(&self, ino: u64) {
        self.kernel.forgotten(ino);
    }

    /// The next pages to store into the kernel ahead of its readers: waits
    /// until there are some, or at most `wait` (see `StoreAhead::next`).
    pub(crate) fn stores(&self, parts: &Parts, wait: Option<Duration>) -> Vec<Store> {
        self.kernel.next(parts, wait)
    }

    /// The pages of `chapter` to store before answering a READDIR past its
    /// listing's first reply (see `StoreAhead::at_listing_end`).
    pub(crate) fn stores_at_listing_end(&self, parts: &Parts, chapter: &ChapterRef) -> Vec<Store> {
        self.kernel.at_listing_end(parts, chapter)
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

    #[cfg(test)]
    pub(crate) fn disk(&self) -> &Prefetcher {
        &self.disk
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

impl LoadObserver for Ahead {
    fn chapter_loaded(&self, load: &ChapterLoad<'_>) {
        self.disk.loaded(load);
    }
}

/// The environment variable naming the members switched off.
pub(crate) const AHEAD_OFF_ENV: &str = "NOVELFS_AHEAD_OFF";

/// Whether `member` (`disk`, `outlines` or `kernel`) is switched off by
/// `NOVELFS_AHEAD_OFF`, read once.
pub(crate) fn switched_off(member: &str) -> bool {
    static OFF: OnceLock<Vec<String>> = OnceLock::new();
    OFF.get_or_init(|| {
        std::env::var(AHEAD_OFF_ENV)
            .unwrap_or_default()
            .split(',')
            .map(|m| m.trim().to_owned())
            .filter(|m| !m.is_empty())
            .collect()
    })
    .iter()
    .any(|m| m == member)
}
