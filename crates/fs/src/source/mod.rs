//! The library as it is on disk now: book indexes and decoded chapters,
//! each cached under a stamp of its source and checked against it at every
//! use, so a change on disk shows at the next request.
//!
//! `look` looks at a chapter's file without reading it, `load` reads and
//! decodes one and tells the source's `LoadObserver` of it (the source
//! knows nothing of what is done with that), `loads` shares a load among
//! its readers, `stamps` gives what is on disk its versions, `page_cache`
//! tells whether a file's bytes cost the disk anything, `books` lists
//! `novels/`.

mod book;
mod books;
mod load;
mod loads;
mod look;
mod stamps;
#[cfg(test)]
mod test_seams;

use std::ffi::OsStr;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::SystemTime;

use loads::{Flights, LoadBudget};
use novelfs_kit::flight::Part;
use novelfs_library::backing::SourceKind;
use novelfs_library::{BookIndex, ChapterText, Library, NovelError};

use super::cache::{Charge, Lru, Stamp};
use super::error::{Error, Result};
use super::freshness::Freshness;
use super::freshness::held::Held;
use super::freshness::racy::Settling;
use super::freshness::watch::Change;
use super::lock;
use super::node::{ChapterRef, Node, chapter_ref};

pub(crate) use load::{ChapterLoad, LoadObserver};
#[cfg(test)]
pub(crate) use stamps::stamp_of_path;
pub(crate) use stamps::{dir_mtime, mtime_of, stamp_of, version_of};
#[cfg(test)]
#[cfg(test)]
pub(crate) use test_seams::Seams;

/// A chapter's decoded text, or the error that stops it from being read.
pub(crate) type Loaded = std::result::Result<Arc<ChapterText>, NovelError>;

/// A version of a chapter's source.
pub(crate) type VersionKey = (ChapterRef, u64);

/// Chapter files above this size are loaded within `BIG_LOADS_BYTES`.
pub(crate) const BIG_CHAPTER_BYTES: u64 = 4 << 20;

/// How many bytes of big chapters may be read and decoded at once (a
/// bigger one is loaded alone): what loads add to the daemon's memory
/// besides the cache stays bounded, while two big chapters of the usual
/// size load side by side.
pub(crate) const BIG_LOADS_BYTES: u64 = 4 * BIG_CHAPTER_BYTES;

/// A book's chapter index with the version of its directory.
#[derive(Clone)]
pub(crate) struct BookVersion {
    pub version: u64,
    pub index: Arc<BookIndex>,
    /// Of the directory, from the same look as `version`.
    pub mtime: SystemTime,
}

/// A chapter's source file as it is now, not yet read.
pub(crate) struct ChapterFile {
    pub index: Arc<BookIndex>,
    /// Of the chapter in `index`.
    pub position: usize,
    pub meta: novelfs_library::backing::Meta,
    /// Of the bytes `meta` stands for (see `Source::chapter_file`).
    version: u64,
}

impl ChapterFile {
    /// The chapter at `position` of `index` as a look just taken saw it
    /// (`BookLook`: its `lstat` gave `meta`, `Source::version_now` gave
    /// `version`), so a walk of the book looks at each chapter once.
    pub(crate) fn looked(
        index: Arc<BookIndex>,
        position: usize,
        meta: novelfs_library::backing::Meta,
        version: u64,
    ) -> ChapterFile {
        ChapterFile {
            index,
            position,
            meta,
            version,
        }
    }

    pub(crate) fn version(&self) -> u64 {
        self.version
    }
    pub(crate) fn mtime(&self) -> SystemTime {
        mtime_of(&self.meta)
    }
}

/// Whether a chapter's text, once loaded, is kept in the cache of texts.
/// A walk of the whole library for its index (`novel_books`) needs each
/// text once, for its outline: keeping them would evict the texts a reader
/// is on for texts nobody reads next, and churn the heap.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeepText {
    Yes,
    No,
}

/// A chapter as loaded: the version of the source it was read from.
#[derive(Clone)]
pub(crate) struct LoadedChapter {
    pub version: u64,
    pub loaded: Loaded,
    pub mtime: SystemTime,
}

#[derive(Clone)]
struct CachedIndex {
    stamp: Stamp,
    index: Arc<BookIndex>,
    /// Of the stamp and the names (two listings under one stamp that is
    /// not settled may differ).
    version: u64,
    /// When the directory was last scanned.
    checked: SystemTime,
}

/// Bytes a chapter looked at takes in `Looked` (its metadata, key and
/// the LRU's own bookkeeping).
const LOOKED_BYTES: usize = 320;

pub(crate) struct Source {
    library: Library,
    freshness: Arc<Freshness>,
    /// Chapters of watched books as last looked at: a walk looks at each
    /// chapter several times within milliseconds (its listing, its
    /// outline, its pages, the pages stored ahead), an `lstat` each.
    looked: Mutex<Held<Lru<ChapterRef, (novelfs_library::backing::Meta, u64)>>>,
    /// Book indexes, in the cache budget: a library of thousands of books
    /// holds as much of them as of any other cache, and an evicted one
    /// costs one directory scan.
    books: Mutex<Lru<Arc<OsStr>, CachedIndex>>,
    /// Decoded texts by source version: an inode of an older version can
    /// still be read while its text is cached.
    texts: Mutex<Lru<VersionKey, Loaded>>,
    /// The texts' share of the budget, before the inode table's bytes
    /// (`table_bytes`) are taken from it.
    texts_budget: usize,
    table_bytes: Charge,
    /// The versions of chapters read while their stamps proved nothing.
    versions: Settling<ChapterRef>,
    /// Loads in progress, by the version looked at.
    loads: Arc<Flights>,
    big_loads: LoadBudget,
    /// Chapter files read and decoded so far (what tests count to show
    /// that a request decoded nothing).
    decodes: std::sync::atomic::AtomicU64,
    /// Told of every chapter read from disk (see `observe`).
    observer: OnceLock<Weak<dyn LoadObserver>>,
    /// The books of `novels/`, as every view lists them.
    book_list: books::BookList,
    /// Where tests step into a request (set once, before the requests).
    #[cfg(test)]
    pub seams: std::sync::OnceLock<Seams>,
}

/// The size above which a mount with `texts_budget` for decoded texts
/// serves a chapter from a line index over its file.
pub(crate) fn stream_threshold(texts_budget: usize) -> u64 {
    (texts_budget as u64 / 8).max(1 << 20)
}

impl Source {
    pub(crate) fn new(
        mut library: Library,
        freshness: Arc<Freshness>,
        texts_budget: usize,
        indexes_budget: usize,
        table_bytes: Charge,
    ) -> Source {
        // A chapter bigger than an eighth of the texts' share is served
        // through a line index: decoding it whole would take the room of
        // many chapters, and more than the budget past some size.
        library.stream_above = library.stream_above.min(stream_threshold(texts_budget));
        Source {
            library,
            freshness,
            // An eighth of the book indexes' share: a few thousand
            // chapters, the span of a walk's repeated looks.
            looked: Mutex::new(Held::new(crate::cache::lru(indexes_budget / 8))),
            books: Mutex::new(crate::cache::lru(indexes_budget - indexes_budget / 8)),
            texts: Mutex::new(crate::cache::lru(texts_budget)),
            texts_budget,
            table_bytes,
            versions: Settling::new(version_of),
            loads: Arc::new(Flights::new(|| Err(Error::LoadAbandoned))),
            big_loads: LoadBudget::new(BIG_LOADS_BYTES),
            decodes: std::sync::atomic::AtomicU64::new(0),
            observer: OnceLock::new(),
            book_list: books::BookList::default(),
            #[cfg(test)]
            seams: std::sync::OnceLock::new(),
        }
    }

    /// The book directories of `novels/` as every view lists them (see
    /// `books`); the error when `novels/` cannot be listed.
    pub(crate) fn book_names(&self) -> std::io::Result<Arc<Vec<std::ffi::OsString>>> {
        self.book_list.names(&self.library, &self.freshness)
    }

    pub(crate) fn library(&self) -> &Library {
        &self.library
    }

    /// The library's watch reported `changes`: the chapters they touch
    /// are looked at again.
    pub(crate) fn changed(&self, changes: &[Change]) {
        let mut held = lock(&self.looked);
        let looked = held.reported();
        for change in changes {
            match change {
                Change::Chapter(book, file) => {
                    let book: Arc<OsStr> = Arc::from(book.as_os_str());
                    looked.remove(&chapter_ref(&book, file));
                }
                // The LRU cannot drop one book's chapters alone.
                Change::All | Change::Books | Change::Chapters(_) => looked.clear(),
            }
        }
    }

    /// The number of reports the watch made so far (before a look).
    pub(crate) fn looks_reported(&self) -> u64 {
        lock(&self.looked).reports()
    }

    /// Keeps what a look at the chapters of a watched book saw (each
    /// chapter with its metadata and version), unless the watch reported a
    /// change since `reports`: the chapters' own looks then hold it.
    pub(crate) fn keep_looks(
        &self,
        looks: impl Iterator<Item = (ChapterRef, novelfs_library::backing::Meta, u64)>,
        reports: u64,
    ) {
        if let Some(looked) = lock(&self.looked).since(reports) {
            for (c, meta, version) in looks {
                looked.insert(c, (meta, version), LOOKED_BYTES);
            }
        }
    }

    /// Whether the library's watch reports every change in `book`.
    pub(crate) fn watched(&self, book: &OsStr) -> bool {
        self.freshness.covered(Some(book))
    }

    /// How many chapter files were read and decoded so far.
    pub(crate) fn decodes(&self) -> u64 {
        self.decodes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bytes held by the decoded texts.
    #[cfg(test)]
    pub(crate) fn text_bytes(&self) -> usize {
        lock(&self.texts).used_bytes()
    }

    #[cfg(test)]
    pub(crate) fn drop_text(&self, key: &VersionKey) {
        lock(&self.texts).remove(key);
    }

    /// The chapter as it is now: its source version and its decoded text,
    /// or the error that stops it from being read.
    ///
    /// The stamp of a text that is read is taken from the file descriptor
    /// it is read through, never from an earlier `lstat` of the name: the
    /// name may be renamed over, deleted or re-created in between, and the
    /// text must be cached under the version of the file it came from. A
    /// name that no longer holds a file is ENOENT, never a cached error.
    pub(crate) fn chapter(&self, c: &ChapterRef) -> Result<LoadedChapter> {
        let source = self.chapter_file(c)?;
        self.chapter_from(c, source)
    }

    /// `chapter`, with the source already looked at.
    ///
    /// One load per version at a time: a request for a version another
    /// request is loading waits for that load's result instead of reading
    /// and decoding the file a second time. Loads of other chapters go on
    /// meanwhile (big ones within `BIG_LOADS_BYTES`).
    pub(crate) fn chapter_from(
        &self,
        c: &ChapterRef,
        source: ChapterFile,
    ) -> Result<LoadedChapter> {
        self.chapter_keeping(c, source, KeepText::Yes)
    }

    /// `chapter_from`, keeping a text it loads in the cache only when
    /// `keep` says so.
    pub(crate) fn chapter_keeping(
        &self,
        c: &ChapterRef,
        source: ChapterFile,
        keep: KeepText,
    ) -> Result<LoadedChapter> {
        let key = (c.clone(), source.version());
        if let Some(hit) = self.cached(&key, &source) {
            return Ok(hit);
        }
        // A load that ended between the look at the cache and the look at
        // the loads in progress left its text in the cache.
        let leader = match self
            .loads
            .lead_or_join_unless(key.clone(), || self.cached(&key, &source))
        {
            Part::Lead(leader) => leader,
            Part::Found(hit) => return Ok(hit),
            Part::Join(other) => {
                #[cfg(test)]
                self.at(|s| &s.joined, c);
                return other.wait();
            }
        };
        let result = self.load(c, source, keep);
        leader.finish(result.clone());
        result
    }

    fn cached(&self, key: &VersionKey, source: &ChapterFile) -> Option<LoadedChapter> {
        lock(&self.texts).get(key).map(|loaded| LoadedChapter {
            version: key.1,
            loaded,
            mtime: source.mtime(),
        })
    }

    /// The text (or error) of one version of a chapter: cached, or the
    /// source as it is now if it still is that version. EIO otherwise: the
    /// bytes of an inode never change, so they cannot be made up from a
    /// newer source.
    pub(crate) fn chapter_version(&self, c: &ChapterRef, version: u64) -> Result<Loaded> {
        if let Some(loaded) = lock(&self.texts).get(&(c.clone(), version)) {
            return Ok(loaded);
        }
        match self.chapter(c) {
            Ok(now) if now.version == version => Ok(now.loaded),
            Ok(_) => Err(self.version_left(c)),
            Err(e) if gone_or_changed(&e) => Err(self.version_left(c)),
            // The source failed to say (a bucket down, a read refused):
            // nothing is known of a change, and the error is what it is.
            Err(e) => Err(e),
        }
    }

    /// The version read of `c` is no longer the source's: said once here.
    fn version_left(&self, c: &ChapterRef) -> Error {
        let path = Node::Chapter { chapter: c.clone() }.path();
        log::warn!("{path}: the version read changed on disk and left the cache");
        log::debug!("{} path={path}", crate::events::CHANGED);
        Error::Stale
    }
}

/// Whether a failed look at a chapter says that its file is gone or is
/// another version now, by what the source said failed.
fn gone_or_changed(e: &Error) -> bool {
    matches!(
        e,
        Error::NotFound
            | Error::Source {
                kind: SourceKind::NotFound | SourceKind::Changed,
                ..
            }
    )
}
