//! The library as it is on disk now: book indexes and decoded chapters,
//! each cached under a stamp of its source and checked against it at every
//! use, so a change on disk shows at the next request.

mod books;
mod loads;

use std::ffi::OsStr;
use std::hash::{Hash, Hasher};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use loads::{Flights, LoadBudget};
use novelfs_library::{BookIndex, ChapterText, Library, NovelError};

use super::ahead::{Prefetcher, in_page_cache};
use super::cache::{Charge, Lru, MIN_TEXTS_BUDGET, Stamp, allocated};
use super::freshness::Freshness;
use super::freshness::held::Held;
use super::freshness::racy::{self, Known, Settling};
use super::freshness::watch::Change;
use super::lock;
#[cfg(test)]
use super::node::ChapterId;
use super::node::{ChapterRef, Node, Result, chapter_ref};

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
    pub meta: std::fs::Metadata,
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
        meta: std::fs::Metadata,
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

/// The version of a book's index: of its directory's stamp and its names.
fn index_version(stamp: &Stamp, index: &BookIndex) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    stamp.hash(&mut hasher);
    for c in &index.chapters {
        c.os_name.hash(&mut hasher);
    }
    hasher.finish()
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
    looked: Mutex<Held<Lru<ChapterRef, (std::fs::Metadata, u64)>>>,
    /// Book indexes, in the cache budget: a library of 2,000 books holds
    /// about 120 MiB of them, and an evicted one costs one directory scan.
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
    loads: Flights,
    big_loads: LoadBudget,
    /// Chapter files read and decoded so far (what tests count to show
    /// that a request decoded nothing).
    decodes: std::sync::atomic::AtomicU64,
    prefetcher: Prefetcher,
    /// The books of `novels/`, as every view lists them.
    book_list: books::BookList,
    /// Where tests step into a request (set once, before the requests).
    #[cfg(test)]
    pub seams: std::sync::OnceLock<Seams>,
}

/// Code a test runs at a point of a request, to make an interleaving with
/// an edit or another request happen there, deterministically.
#[cfg(test)]
pub(crate) type Seam = Box<dyn Fn(&ChapterId) + Send + Sync>;

#[cfg(test)]
#[derive(Default)]
pub(crate) struct Seams {
    /// Before a chapter's source is looked at (its `lstat`).
    pub before_stat: Option<Seam>,
    /// In a load that was let in, before the file is opened.
    pub loading: Option<Seam>,
    /// When a request waits for another request's load of the chapter.
    pub joined: Option<Seam>,
}

pub(crate) fn mtime_of(meta: &std::fs::Metadata) -> SystemTime {
    let secs = meta.mtime();
    let nanos = meta.mtime_nsec().clamp(0, 999_999_999) as u32;
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nanos)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::from_nanos(nanos as u64)
    }
}

/// The stamp of a path (`None` when it is gone; a symlink is not followed).
pub(crate) fn stamp_of(path: &Path) -> Option<Stamp> {
    std::fs::symlink_metadata(path).ok().map(|m| Stamp::of(&m))
}

/// The mtime of a directory, or the epoch when it is gone.
pub(crate) fn dir_mtime(path: &Path) -> SystemTime {
    std::fs::symlink_metadata(path)
        .map(|m| mtime_of(&m))
        .unwrap_or(UNIX_EPOCH)
}

/// The size above which a mount with `texts_budget` for decoded texts
/// serves a chapter from a line index over its file.
pub(crate) fn stream_threshold(texts_budget: usize) -> u64 {
    (texts_budget as u64 / 8).max(1 << 20)
}

/// A version number for a source stamp (a 64-bit digest: two versions of
/// one file colliding is not a practical concern).
pub(crate) fn version_of(stamp: &Stamp) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    stamp.hash(&mut hasher);
    hasher.finish()
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
            looked: Mutex::new(Held::new(Lru::new(indexes_budget / 8))),
            books: Mutex::new(Lru::new(indexes_budget - indexes_budget / 8)),
            texts: Mutex::new(Lru::new(texts_budget)),
            texts_budget,
            table_bytes,
            versions: Settling::new(version_of),
            loads: Flights::default(),
            big_loads: LoadBudget::new(BIG_LOADS_BYTES),
            decodes: std::sync::atomic::AtomicU64::new(0),
            prefetcher: Prefetcher::start(),
            book_list: books::BookList::default(),
            #[cfg(test)]
            seams: std::sync::OnceLock::new(),
        }
    }

    #[cfg(test)]
    fn at(&self, seam: fn(&Seams) -> &Option<Seam>, c: &ChapterId) {
        if let Some(run) = self.seams.get().and_then(|s| seam(s).as_ref()) {
            run(c);
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

    /// Whether the library's watch reports every change in `book`.
    pub(crate) fn watched(&self, book: &OsStr) -> bool {
        self.freshness.covered(Some(book))
    }

    #[cfg(test)]
    pub(crate) fn prefetcher(&self) -> &Prefetcher {
        &self.prefetcher
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

    /// The book's chapter index and the version of its directory.
    ///
    /// A cached index serves while the directory has its stamp, once that
    /// stamp is settled (`racy`): until then the directory is scanned again
    /// and its names compared, since a chapter added in the same tick as
    /// the scan leaves the same stamp.
    pub(crate) fn book(&self, book: &OsStr) -> Result<BookVersion> {
        // Watched before it is read: a change after the scan is reported.
        self.freshness.watch_book(book);
        let meta = self.library.book_metadata(book).ok_or(libc::ENOENT)?;
        let stamp = Stamp::of(&meta);
        let cached = lock(&self.books).get(book).filter(|c| c.stamp == stamp);
        if let Some(cached) = &cached
            && self.freshness.trusted(&stamp, cached.checked)
        {
            return Ok(BookVersion {
                version: cached.version,
                index: cached.index.clone(),
                mtime: mtime_of(&meta),
            });
        }
        let checked = self.freshness.now();
        let scanned = self.library.index_book(book).map_err(|_| libc::ENOENT)?;
        // The same names: the index (and the version) already given out.
        let index = match cached {
            Some(c) if names_equal(&c.index, &scanned) => c.index,
            _ => Arc::new(scanned),
        };
        let version = index_version(&stamp, &index);
        let weight = index.heap_bytes() + 2 * book.len() + 128;
        lock(&self.books).insert(
            Arc::from(book),
            CachedIndex {
                stamp,
                index: index.clone(),
                version,
                checked,
            },
            weight,
        );
        Ok(BookVersion {
            version,
            index,
            mtime: mtime_of(&meta),
        })
    }

    pub(crate) fn book_index(&self, book: &OsStr) -> Result<Arc<BookIndex>> {
        Ok(self.book(book)?.index)
    }

    /// The source file of a chapter, without reading it: a listing of
    /// 10,000 chapter directories must not decode 10,000 files.
    pub(crate) fn chapter_file(&self, c: &ChapterRef) -> Result<ChapterFile> {
        // The chapter's own lstat below decides what it is now; the book's
        // index only places it among its siblings (the chapters ahead of a
        // reader), so a cached index that holds it serves without a look
        // at the book's directory, which was a third of the time of a
        // chapter directory's listing. An index without it is looked at
        // again.
        let cached = lock(&self.books).get(&*c.book).map(|b| b.index.clone());
        let found = cached.and_then(|index| {
            let position = index.exact(c.file.as_bytes())?;
            Some((index, position))
        });
        let (index, position) = match found {
            Some(found) => found,
            None => {
                let index = self.book_index(&c.book)?;
                let position = index.exact(c.file.as_bytes()).ok_or(libc::ENOENT)?;
                (index, position)
            }
        };
        // In a watched book a look holds until the watch reports a change
        // in the chapter (`changed`, before the kernel is told to drop
        // its names): the rule the kernel's caches follow there.
        let watched = self.watched(&c.book);
        if watched && let Some((meta, version)) = lock(&self.looked).held().get(c) {
            return Ok(ChapterFile {
                index,
                position,
                meta,
                version,
            });
        }
        let reports = lock(&self.looked).reports();
        #[cfg(test)]
        self.at(|s| &s.before_stat, c);
        let meta = self
            .library
            .chapter_metadata(&c.book, &c.file)
            .ok_or(libc::ENOENT)?;
        let stamp = Stamp::of(&meta);
        let (meta, version) = match self.versions.known(c, &stamp, self.freshness.granularity()) {
            Known::Version(v) => (meta, v),
            Known::Look(last) => self.look_again(c, meta, last)?,
        };
        if watched && let Some(looked) = lock(&self.looked).since(reports) {
            looked.insert(c.clone(), (meta.clone(), version), LOOKED_BYTES);
        }
        Ok(ChapterFile {
            index,
            position,
            meta,
            version,
        })
    }

    /// The version of a chapter whose metadata `meta` was just taken (see
    /// `chapter_file`): its stamp's, or, while the stamp is recent, of its
    /// bytes.
    pub(crate) fn version_now(
        &self,
        book: &Arc<OsStr>,
        file: &OsStr,
        meta: std::fs::Metadata,
    ) -> u64 {
        let stamp = Stamp::of(&meta);
        if self.versions.is_empty() {
            return version_of(&stamp);
        }
        let c = &chapter_ref(book, file);
        match self.versions.known(c, &stamp, self.freshness.granularity()) {
            Known::Version(v) => v,
            Known::Look(last) => self.look_again(c, meta, last).map_or(last, |(_, v)| v),
        }
    }

    /// The version of a chapter whose stamp proves nothing yet: of its
    /// bytes, read now and compared with those read before (`last` when
    /// they cannot be read; the load says why).
    fn look_again(
        &self,
        c: &ChapterRef,
        meta: std::fs::Metadata,
        last: u64,
    ) -> Result<(std::fs::Metadata, u64)> {
        let at = self.freshness.now();
        let Ok(opened) = self.library.open_chapter_file(&c.book, &c.file) else {
            return Ok((meta, last));
        };
        let (f, meta) = opened.ok_or(libc::ENOENT)?;
        let Ok(digest) = racy::digest_file(&f) else {
            return Ok((meta, last));
        };
        let stamp = Stamp::of(&meta);
        let g = self.freshness.granularity();
        Ok((meta, self.versions.looked(c, &stamp, digest, at, g)))
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
        let leader = match loads::lead_or_join(&self.loads, key) {
            Ok(leader) => leader,
            Err(other) => {
                #[cfg(test)]
                self.at(|s| &s.joined, c);
                return other.wait();
            }
        };
        // A load that ended between the look at the cache and the look at
        // the loads in progress left its text in the cache.
        let result = match self.cached(&leader.key, &source) {
            Some(hit) => Ok(hit),
            None => self.load(c, source, keep),
        };
        leader.finish(&result);
        result
    }

    fn cached(&self, key: &VersionKey, source: &ChapterFile) -> Option<LoadedChapter> {
        lock(&self.texts).get(key).map(|loaded| LoadedChapter {
            version: key.1,
            loaded,
            mtime: source.mtime(),
        })
    }

    /// Reads and decodes the chapter, and caches it under the version of
    /// the file read (unless `keep` is `No`).
    fn load(&self, c: &ChapterRef, source: ChapterFile, keep: KeepText) -> Result<LoadedChapter> {
        // A big chapter's bytes and text are both in memory while it is
        // read and decoded: a budget, not a lock, bounds how many are at
        // once, so one slow read does not hold up every other big chapter.
        // A streamed chapter holds only its line index and a read buffer.
        let streamed = self.library.streams(source.meta.len());
        let admitted = (source.meta.len() > BIG_CHAPTER_BYTES && !streamed)
            .then(|| self.big_loads.admit(source.meta.len()));
        // The text will take about the file's size (exactly, for UTF-8):
        // room for it is made before it is read, not after, and for the
        // other big texts under way too, which are not in the cache yet.
        // The texts give way to the inode table (see `cache::Charge`).
        let coming = match &admitted {
            Some(_) => self.big_loads.in_use(),
            // About 10 bytes of index per line of 100 bytes or more.
            None if streamed => source.meta.len() / 10,
            None => source.meta.len(),
        };
        if keep == KeepText::Yes {
            let mut texts = lock(&self.texts);
            let table = self.table_bytes.load(std::sync::atomic::Ordering::Relaxed);
            texts.set_budget(
                self.texts_budget
                    .saturating_sub(table)
                    .max(MIN_TEXTS_BUDGET),
            );
            texts.make_room(coming as usize);
        }
        #[cfg(test)]
        self.at(|s| &s.loading, c);
        if source.meta.len() > BIG_CHAPTER_BYTES {
            super::hold::big_load();
        }
        let chapter = &source.index.chapters[source.position];
        let mut was_cached = false;
        let at = self.freshness.now();
        let g = self.freshness.granularity();
        let (version, mtime, loaded): (u64, SystemTime, Loaded) =
            match self.library.open_chapter_file(&c.book, &c.file) {
                Ok(None) => return Err(libc::ENOENT),
                Ok(Some((f, meta))) => {
                    self.decodes
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    log::debug!(
                        "{} path={}",
                        crate::events::DECODED,
                        Node::Chapter { chapter: c.clone() }.path()
                    );
                    was_cached = in_page_cache(&f, meta.len());
                    let stamp = Stamp::of(&meta);
                    // Bytes the stamp does not prove are digested first, so
                    // that the next look can tell them from an edit made
                    // under the same stamp.
                    let digest = self
                        .versions
                        .must_digest(c, &stamp, at, g)
                        .then(|| racy::digest_file(&f).ok())
                        .flatten();
                    let loaded = self
                        .library
                        .load_opened_chapter(&c.book, chapter, f, &meta)
                        .map(Arc::new);
                    let version = match digest {
                        Some(d) => self.versions.looked(c, &stamp, d, at, g),
                        None => version_of(&stamp),
                    };
                    (version, mtime_of(&meta), loaded)
                }
                // Opening failed for another reason: an error to show, under
                // the version of the name.
                Err(e) => (source.version(), source.mtime(), Err(e)),
            };
        if let Err(e) = &loaded {
            let path = Node::Chapter { chapter: c.clone() }.path();
            log::info!("gave up on {path}: {e}");
        }
        if self.prefetcher.wanted(&c.book, source.position, was_cached) {
            self.prefetcher.read_ahead(
                &self.library.book_dir(&c.book),
                &c.book,
                &source.index,
                source.position,
            );
        }
        let weight = match &loaded {
            Ok(text) => {
                text.buffer_bytes()
                    .into_iter()
                    .map(allocated)
                    .sum::<usize>()
                    + 256
            }
            Err(_) => 256,
        };
        if keep == KeepText::Yes {
            lock(&self.texts).insert((c.clone(), version), loaded.clone(), weight);
        }
        Ok(LoadedChapter {
            version,
            loaded,
            mtime,
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
            _ => {
                log::warn!(
                    "{}: the version read changed on disk and left the cache",
                    Node::Chapter { chapter: c.clone() }.path()
                );
                Err(libc::EIO)
            }
        }
    }
}

/// Whether two scans of a book found the same chapter files.
fn names_equal(a: &BookIndex, b: &BookIndex) -> bool {
    a.chapters.len() == b.chapters.len()
        && a.chapters
            .iter()
            .zip(&b.chapters)
            .all(|(x, y)| x.os_name == y.os_name)
}
