//! The index files: `novel_books.txt|json` at the root and
//! `novel_chapters.txt|json` in each book, rendered from the chapters'
//! outlines (one decode per chapter version, shared with the pages) and
//! cached under a version of everything they depend on.
//!
//! A version is a digest of the looks (`lstat`) at the sources: the book
//! directory and each of its chapter files (and, for the library, `novels/`
//! and every counted book), with the state of the tool's switch. Checking
//! that an index is current costs those looks; computing it costs a decode
//! of each chapter whose outline is not cached. Listings do neither (see
//! `NovelFs::list`): they name the files and leave the rest to a lookup.
//!
//! `rendered` is what an index file holds in one version, `version` the
//! versions it is cached under, `look` a look at a book; `book` makes a
//! book's `novel_chapters`, `library` the library's `novel_books`, both
//! from the walks of books in `walk`. `IndexFiles`, here, keeps the
//! rendered versions and what looks at watched books saw.

mod book;
mod library;
mod look;
mod rendered;
mod version;
mod walk;

use std::collections::{HashMap, VecDeque};
use std::ffi::OsStr;
use std::sync::{Arc, Mutex};

use super::cache::Lru;
use super::freshness::held::Held;
use super::freshness::watch::Change;
use super::lock;
use super::source::Source;
use look::Look;

pub(crate) use look::BookLook;
pub(crate) use rendered::Rendered;

/// What looks at watched books saw, held until the watch reports a change.
#[derive(Default)]
struct Seen {
    /// Each book's index as last looked at.
    books: HashMap<Arc<OsStr>, Look>,
    /// The last looks the listings of watched books took, most recent
    /// last: the lookup of a book's index after its listing (a walk reads
    /// the index files after the chapters) takes that look instead of an
    /// `lstat` of each chapter again.
    listed: VecDeque<(Arc<OsStr>, BookLook)>,
}

/// Listings' looks kept (`IndexFiles::listed`): one per walker.
const LISTED_LOOKS: usize = 4;

#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Library,
    Book(Arc<OsStr>),
}

pub(crate) struct IndexFiles {
    rendered: Mutex<Lru<(Key, u64), Rendered>>,
    /// Each watched book's index as last looked at. Looking at a book
    /// again costs an `lstat` of each of its chapters, for every lookup of
    /// its index files and for each book of every read of `novel_books`
    /// (most of the `statx` calls of a `grep -r`); in a watched book what
    /// a look saw holds until the watch reports a change there (`Held`,
    /// `changed`). With them, the looks listings took (`Seen::listed`).
    seen: Mutex<Held<Seen>>,
    /// Books' indexes made (walked and rendered), for tests.
    #[cfg(test)]
    pub(crate) books_made: std::sync::atomic::AtomicUsize,
    /// What `novel_books` counts of each book, by the version of the
    /// book's index: a few dozen bytes a book, so that a change in one
    /// book costs the library index only that book.
    totals: Mutex<HashMap<Arc<OsStr>, (u64, u64, u64)>>,
    /// The profile of this build's outlines (`persist::profile_of`): what
    /// a published snapshot's figures are checked against.
    profile: std::sync::OnceLock<i64>,
}

impl IndexFiles {
    pub(crate) fn new(budget: usize) -> IndexFiles {
        IndexFiles {
            rendered: Mutex::new(crate::cache::lru(budget)),
            seen: Mutex::new(Held::new(Seen::default())),
            #[cfg(test)]
            books_made: std::sync::atomic::AtomicUsize::new(0),
            totals: Mutex::new(HashMap::new()),
            profile: std::sync::OnceLock::new(),
        }
    }

    /// The library's watch reported `changes`: what was seen of the books
    /// they touch is looked at again.
    pub(crate) fn changed(&self, changes: &[Change]) {
        let mut held = lock(&self.seen);
        let seen = held.reported();
        seen.listed.clear();
        for change in changes {
            match change {
                Change::All | Change::Books => seen.books.clear(),
                Change::Chapters(book) | Change::Chapter(book, _) => {
                    seen.books.remove(book.as_os_str());
                }
            }
        }
    }

    /// Keeps the look a listing of a watched `book` took (see `listed`),
    /// unless the watch reported a change since `reports`.
    pub(crate) fn listed(&self, source: &Source, book: &Arc<OsStr>, reports: u64, look: &BookLook) {
        if !source.watched(book) {
            return;
        }
        if let Some(seen) = lock(&self.seen).since(reports) {
            let listed = &mut seen.listed;
            listed.retain(|(b, _)| b != book);
            if listed.len() == LISTED_LOOKS {
                listed.pop_front();
            }
            listed.push_back((book.clone(), look.clone()));
        }
    }

    /// The look a listing of `book` took, while it holds.
    fn listed_look(&self, source: &Source, book: &OsStr) -> Option<BookLook> {
        if !source.watched(book) {
            return None;
        }
        let mut held = lock(&self.seen);
        held.held()
            .listed
            .iter()
            .find(|(b, _)| **b == *book)
            .map(|(_, look)| look.clone())
    }

    /// What was seen of `book` while the watch reported no change in it.
    fn seen(&self, source: &Source, book: &OsStr) -> Option<Look> {
        if !source.watched(book) {
            return None;
        }
        lock(&self.seen).held().books.get(book).copied()
    }

    /// The number of reports the watch made so far (before a look).
    pub(crate) fn reports(&self) -> u64 {
        lock(&self.seen).reports()
    }

    /// Keeps what a look at a watched `book` saw, unless the watch
    /// reported a change since `reports` (the look may be older than it).
    fn saw(&self, source: &Source, book: &Arc<OsStr>, reports: u64, look: Look) {
        if source.watched(book)
            && let Some(seen) = lock(&self.seen).since(reports)
        {
            seen.books.insert(book.clone(), look);
        }
    }

    fn cached(&self, key: Key, version: u64) -> Option<Rendered> {
        lock(&self.rendered).get(&(key, version))
    }

    fn keep(&self, key: Key, r: &Rendered) {
        lock(&self.rendered).insert((key, r.version), r.clone(), r.weight());
    }

    /// A version of the library's index, if it is cached (never computed).
    pub(crate) fn cached_library(&self, version: u64) -> Option<Rendered> {
        self.cached(Key::Library, version)
    }

    /// A version of a book's index, if it is cached (never computed).
    pub(crate) fn cached_book(&self, book: &Arc<OsStr>, version: u64) -> Option<Rendered> {
        self.cached(Key::Book(book.clone()), version)
    }
}
