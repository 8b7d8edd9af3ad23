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

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use novelfs_library::index::{
    self, BOOKS_TOOL, BookChapters, BookTotals, CHAPTERS_TOOL, ChapterStats, LibraryBooks,
};
use novelfs_library::{BookIndex, NovelError};

use super::cache::Lru;
use super::freshness::held::Held;
use super::freshness::watch::Change;
use super::lock;
use super::node::{Result, chapter_ref};
use super::outline::{ChapterCount, Outlines};
use super::pool::map_spread;
use super::source::{BookVersion, ChapterFile, KeepText, Source, dir_mtime, mtime_of, stamp_of};
use novelfs_library::PageFormat as Format;

/// What an index file holds in one version: the text and the JSON, or,
/// when the call fails (a chapter that cannot be read, the tool switched
/// off), the error line in the text and `{"error": "错误：…"}` in the JSON,
/// which parses as every `.json` file does.
#[derive(Clone)]
pub(crate) struct Rendered {
    pub(crate) version: u64,
    pub(crate) text: Arc<Vec<u8>>,
    pub(crate) json: Arc<Vec<u8>>,
    /// The newest mtime of the sources it was made from.
    pub(crate) mtime: SystemTime,
}

impl Rendered {
    /// The bytes of `format`.
    pub(crate) fn bytes(&self, format: Format) -> Arc<Vec<u8>> {
        match format {
            Format::Text => self.text.clone(),
            Format::Json => self.json.clone(),
        }
    }

    fn weight(&self) -> usize {
        256 + self.text.len()
            + if Arc::ptr_eq(&self.text, &self.json) {
                0
            } else {
                self.json.len()
            }
    }

    /// The rendering of a call that fails with `error`.
    fn failed(version: u64, error: &NovelError, mtime: SystemTime) -> Rendered {
        Rendered {
            version,
            text: Arc::new(error.error_line().into_bytes()),
            json: Arc::new(error.error_json().into_bytes()),
            mtime,
        }
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Library,
    Book(Arc<OsStr>),
}

/// A book as looked at now: its chapter index and each chapter file's
/// metadata (`None`: gone since the scan), from one `lstat` each.
pub(crate) struct BookLook {
    pub(crate) book: BookVersion,
    pub(crate) metas: Vec<Option<std::fs::Metadata>>,
    /// Each chapter's version, of the same look (`Source::version_now`:
    /// the bytes of a chapter whose stamp is recent are looked at again).
    versions: Vec<Option<u64>>,
}

impl BookLook {
    pub(crate) fn take(source: &Source, book: &OsStr) -> Result<BookLook> {
        let now = source.book(book)?;
        let metas: Vec<_> = now
            .index
            .chapters
            .iter()
            .map(|c| source.library().chapter_metadata(book, &c.os_name))
            .collect();
        let shared: Arc<OsStr> = Arc::from(book);
        let versions = now
            .index
            .chapters
            .iter()
            .zip(&metas)
            .map(|(c, meta)| {
                let meta = meta.clone()?;
                Some(source.version_now(&shared, &c.os_name, meta))
            })
            .collect();
        Ok(BookLook {
            book: now,
            metas,
            versions,
        })
    }

    /// The version of the book's index this look shows.
    pub(crate) fn version(&self) -> u64 {
        chapters_version(self.book.version, self.versions.iter().copied())
    }
}

/// The version of a book's index, from its directory's version and each
/// chapter's (in list order; `None`: gone).
pub(crate) fn chapters_version(book: u64, chapters: impl Iterator<Item = Option<u64>>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ("chapters", book).hash(&mut h);
    for c in chapters {
        c.hash(&mut h);
    }
    h.finish()
}

/// The version of an index that fails with `error`.
fn error_version(error: &NovelError) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ("error", error.error_line()).hash(&mut h);
    h.finish()
}

fn off_version(tool: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ("off", tool).hash(&mut h);
    h.finish()
}

pub(crate) struct IndexFiles {
    rendered: Mutex<Lru<(Key, u64), Rendered>>,
    /// Each watched book's index as last looked at. Looking at a book
    /// again costs an `lstat` of each of its chapters, for every lookup of
    /// its index files and for each book of every read of `novel_books`
    /// (most of the `statx` calls of a `grep -r`); in a watched book what
    /// a look saw holds until the watch reports a change there (`Held`,
    /// `changed`).
    seen: Mutex<Held<HashMap<Arc<OsStr>, Look>>>,
    /// What `novel_books` counts of each book, by the version of the
    /// book's index: a few dozen bytes a book, so that a change in one
    /// book costs the library index only that book.
    totals: Mutex<HashMap<Arc<OsStr>, (u64, u64, u64)>>,
}

impl IndexFiles {
    pub(crate) fn new(budget: usize) -> IndexFiles {
        IndexFiles {
            rendered: Mutex::new(Lru::new(budget)),
            seen: Mutex::new(Held::new(HashMap::new())),
            totals: Mutex::new(HashMap::new()),
        }
    }

    /// The library's watch reported `changes`: what was seen of the books
    /// they touch is looked at again.
    pub(crate) fn changed(&self, changes: &[Change]) {
        let mut held = lock(&self.seen);
        let seen = held.reported();
        for change in changes {
            match change {
                Change::All | Change::Books => seen.clear(),
                Change::Chapters(book) | Change::Chapter(book, _) => {
                    seen.remove(book.as_os_str());
                }
            }
        }
    }

    /// What was seen of `book` while the watch reported no change in it.
    fn seen(&self, source: &Source, book: &OsStr) -> Option<Look> {
        if !source.watched(book) {
            return None;
        }
        lock(&self.seen).held().get(book).copied()
    }

    /// The number of reports the watch made so far (before a look).
    fn reports(&self) -> u64 {
        lock(&self.seen).reports()
    }

    /// Keeps what a look at a watched `book` saw, unless the watch
    /// reported a change since `reports` (the look may be older than it).
    fn saw(&self, source: &Source, book: &Arc<OsStr>, reports: u64, look: Look) {
        if source.watched(book)
            && let Some(seen) = lock(&self.seen).since(reports)
        {
            seen.insert(book.clone(), look);
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

    /// `novel_chapters.*` of `book` as the sources are now: cached, or
    /// made from the chapters' outlines.
    pub(crate) fn book(
        &self,
        source: &Source,
        outlines: &Outlines,
        book: &Arc<OsStr>,
        on: bool,
    ) -> Result<Rendered> {
        if !on {
            let version = off_version(CHAPTERS_TOOL);
            let error = NovelError::ToolSwitchedOff {
                tool: CHAPTERS_TOOL,
            };
            let mtime = dir_mtime(&source.library().book_dir(book));
            return Ok(Rendered::failed(version, &error, mtime));
        }
        if let Some(seen) = self.seen(source, book)
            && let Some(hit) = self.cached_book(book, seen.version)
        {
            return Ok(hit);
        }
        let reports = self.reports();
        let look = match BookLook::take(source, book) {
            Ok(look) => look,
            // A book (or library) that cannot be listed: its index holds
            // the error its `ERROR` file holds, never nothing.
            Err(errno) => {
                let library = source.library();
                let error = library
                    .unreadable_dir(None)
                    .or_else(|| library.unreadable_dir(Some(book)))
                    .ok_or(errno)?;
                let mtime = dir_mtime(&library.book_dir(book));
                let rendered = Rendered::failed(error_version(&error), &error, mtime);
                self.keep(Key::Book(book.clone()), &rendered);
                return Ok(rendered);
            }
        };
        let seen = Look::of(&look);
        let rendered = match self.cached_book(book, seen.version) {
            Some(hit) => hit,
            None => self.make_book(source, outlines, book, look),
        };
        if rendered.version == seen.version {
            self.saw(source, book, reports, seen);
        }
        Ok(rendered)
    }

    /// Walks a book's chapters for their outlines (each from one look at
    /// its chapter).
    ///
    /// A chapter that cannot be read while the book changes (listed, then
    /// deleted or replaced) fails the walk only because of the change: the
    /// book is looked at again and, when it changed, walked again, up to
    /// `WALK_ATTEMPTS` times, so the index shows the book before or after
    /// the change. A chapter that stays unreadable in an unchanged book
    /// is the original tool's error.
    fn walk_settled(
        &self,
        source: &Source,
        outlines: &Outlines,
        book: &Arc<OsStr>,
        mut look: BookLook,
        walk: Walk,
    ) -> WalkedBook {
        let mut attempts = 1;
        loop {
            let walked = walk_book(source, outlines, book, &look, walk);
            if walked.failed() && attempts < WALK_ATTEMPTS {
                match BookLook::take(source, book) {
                    Ok(again) if again.version() != look.version() => {
                        look = again;
                        attempts += 1;
                        continue;
                    }
                    _ => {}
                }
            }
            lock(&self.totals).insert(book.clone(), {
                let (chapters, chars) = walked.totals();
                (walked.version, chapters, chars)
            });
            return walked;
        }
    }

    /// Renders a book's index from a walk of it, and keeps it.
    fn make_book(
        &self,
        source: &Source,
        outlines: &Outlines,
        book: &Arc<OsStr>,
        look: BookLook,
    ) -> Rendered {
        let walked = self.walk_settled(source, outlines, book, look, Walk::Book);
        let (version, mtime) = (walked.version, walked.mtime);
        let listing = walked.listing(book);
        let rendered = match listing.json() {
            Ok(json) => Rendered {
                version,
                text: Arc::new(listing.text().into_bytes()),
                json: Arc::new(json.into_bytes()),
                mtime,
            },
            Err(e) => Rendered::failed(version, &e, mtime),
        };
        self.keep(Key::Book(book.clone()), &rendered);
        rendered
    }

    /// `novel_books.*` as the sources are now: cached, or made from each
    /// book's totals (themselves cached by the version of the book).
    pub(crate) fn library(
        &self,
        source: &Source,
        outlines: &Outlines,
        on: bool,
    ) -> Result<Rendered> {
        let library = source.library();
        let novels = library.novels_dir();
        if !on {
            let error = NovelError::ToolSwitchedOff { tool: BOOKS_TOOL };
            let version = off_version(BOOKS_TOOL);
            return Ok(Rendered::failed(version, &error, dir_mtime(&novels)));
        }
        // The books the root lists (one listing for every view), less
        // those the original does not count.
        let mut names: Vec<OsString> = source
            .book_names()
            .map(|names| {
                names
                    .iter()
                    .filter(|n| index::counted_as_book(n))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        // No books: `novels/` may be gone or unreadable (a dead network
        // filesystem), which is an error, not an empty library.
        if names.is_empty()
            && let Some(error) = library.unreadable_dir(None)
        {
            let rendered = Rendered::failed(error_version(&error), &error, dir_mtime(&novels));
            self.keep(Key::Library, &rendered);
            return Ok(rendered);
        }
        names.sort();
        let novels_stamp = stamp_of(&novels);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        ("books", &novels_stamp, library.root_display()).hash(&mut h);
        let mut mtime = dir_mtime(&novels);
        // One book per worker at a time, on both CPUs: a look holds the
        // book's index and a metadata per chapter, and every look of 2,000
        // books held at once was more than the whole cache budget. A book
        // whose totals are not known for this look is indexed right away,
        // from the same look.
        let counted: Vec<Option<CountedBook>> = map_spread(&names, |name| {
            let book: Arc<OsStr> = Arc::from(name.as_os_str());
            let known_at = |version: u64| {
                lock(&self.totals)
                    .get(&book)
                    .filter(|t| t.0 == version)
                    .map(|t| (t.1, t.2))
            };
            let held = self
                .seen(source, &book)
                .and_then(|seen| Some((seen, known_at(seen.version)?)));
            let (seen, (chapters, chars)) = match held {
                Some(held) => held,
                None => {
                    let reports = self.reports();
                    // A book that cannot be scanned is left out, as the
                    // original leaves it out.
                    let look = BookLook::take(source, &book).ok()?;
                    let seen = Look::of(&look);
                    self.saw(source, &book, reports, seen);
                    // Only the totals: the book's own index is rendered
                    // when it is read.
                    let counts = known_at(seen.version).unwrap_or_else(|| {
                        self.walk_settled(source, outlines, &book, look, Walk::Library)
                            .totals()
                    });
                    (seen, counts)
                }
            };
            Some(CountedBook {
                totals: BookTotals {
                    name: book.to_string_lossy().into_owned(),
                    chapters,
                    chars,
                },
                book,
                seen,
            })
        });
        let totals: Vec<BookTotals> = counted
            .into_iter()
            .flatten()
            .map(|counted| {
                (&counted.book, counted.seen.version).hash(&mut h);
                mtime = mtime.max(counted.seen.newest);
                counted.totals
            })
            .collect();
        let version = h.finish();
        if let Some(hit) = self.cached_library(version) {
            return Ok(hit);
        }
        let books = LibraryBooks::new(library.root_display().to_string(), totals);
        let rendered = Rendered {
            version,
            text: Arc::new(books.text().into_bytes()),
            json: Arc::new(books.json().into_bytes()),
            mtime,
        };
        self.keep(Key::Library, &rendered);
        Ok(rendered)
    }
}

/// What a look at a book saw: the version of its index and its newest
/// mtime.
#[derive(Clone, Copy)]
struct Look {
    version: u64,
    newest: SystemTime,
}

impl Look {
    fn of(look: &BookLook) -> Look {
        Look {
            version: look.version(),
            newest: newest(look),
        }
    }
}

/// What `novel_books` counts of one book, of one look at it.
struct CountedBook {
    book: Arc<OsStr>,
    seen: Look,
    totals: BookTotals,
}

/// Walks of a book that changes underneath before its index is shown
/// with the error of the last one.
const WALK_ATTEMPTS: usize = 8;

/// One walk of a book: each chapter's figures (or the error that stops
/// it from being read) and mtime, in list order, with the version and
/// newest mtime of what it read.
struct WalkedBook {
    /// The book's chapters as the walk's look listed them.
    index: Arc<BookIndex>,
    chapters: Vec<(std::result::Result<ChapterStats, NovelError>, SystemTime)>,
    version: u64,
    mtime: SystemTime,
}

impl WalkedBook {
    /// Whether a chapter could not be read.
    fn failed(&self) -> bool {
        self.chapters.iter().any(|(stats, _)| stats.is_err())
    }

    /// What `novel_books` counts of the book (`index::totals_of`).
    fn totals(&self) -> (u64, u64) {
        index::totals_of(self.chapters.iter().map(|(stats, _)| stats))
    }

    /// The book's index listing.
    fn listing(self, book: &OsStr) -> BookChapters {
        let mut chapters = self.chapters.into_iter();
        BookChapters::new(book.to_string_lossy().into_owned(), &self.index, |_, _| {
            let (stats, mtime) = chapters.next().expect("one walked entry per chapter");
            (stats, iso_of(mtime))
        })
    }
}

/// Reads the figures of each chapter `look` lists, from the look it
/// took (one `lstat` per chapter for the whole walk), as `walk` says:
/// each worker (`pool`) holds only the chapter it is on.
fn walk_book(
    source: &Source,
    outlines: &Outlines,
    book: &Arc<OsStr>,
    look: &BookLook,
    walk: Walk,
) -> WalkedBook {
    let index = &look.book.index;
    let count_of = |position: &usize| {
        let c = &index.chapters[*position];
        let meta = look.metas[*position].clone().ok_or(libc::ENOENT)?;
        let version = look.versions[*position].ok_or(libc::ENOENT)?;
        let now = ChapterFile::looked(index.clone(), *position, meta, version);
        let chapter = chapter_ref(book, &c.os_name);
        match walk {
            // The book's own index: its outlines stay for its listings.
            Walk::Book => outlines
                .outline_keeping(source, &chapter, now, KeepText::Yes)
                .map(ChapterCount::of),
            Walk::Library => outlines.count(source, &chapter, now),
        }
    };
    let positions: Vec<usize> = (0..index.chapters.len()).collect();
    let read = match walk {
        Walk::Book => map_spread(&positions, count_of),
        Walk::Library => positions.iter().map(count_of).collect(),
    };
    let mut versions = Vec::with_capacity(read.len());
    let mut mtime = look.book.mtime;
    let chapters = read
        .into_iter()
        .zip(&index.chapters)
        .map(|(read, c)| match read {
            Ok(now) => {
                versions.push(Some(now.version));
                mtime = mtime.max(now.mtime);
                (now.stats, now.mtime)
            }
            Err(_) => {
                // Gone since the scan: the original's `stat` fails.
                versions.push(None);
                let gone = std::io::Error::from(std::io::ErrorKind::NotFound);
                let error = NovelError::Io {
                    path: source
                        .library()
                        .display_path(&book.to_string_lossy(), &c.file),
                    reason: gone.to_string(),
                };
                (Err(error), UNIX_EPOCH)
            }
        })
        .collect();
    WalkedBook {
        index: index.clone(),
        chapters,
        version: chapters_version(look.book.version, versions.into_iter()),
        mtime,
    }
}

/// What a walk of one book is for, which decides where it reads its
/// chapters and whether their texts stay cached.
#[derive(Clone, Copy)]
enum Walk {
    /// `novel_chapters` of one book: on both CPUs; the texts stay, for a
    /// reader of the book.
    Book,
    /// One of the books `novel_books` walks on both CPUs already: on the
    /// calling thread; each text is needed once, for its outline.
    Library,
}

/// The newest mtime of a looked-at book: its directory's and its chapters'.
fn newest(look: &BookLook) -> SystemTime {
    look.metas
        .iter()
        .flatten()
        .map(mtime_of)
        .fold(look.book.mtime, SystemTime::max)
}

/// `updated` of a chapter whose mtime is `t`.
fn iso_of(t: SystemTime) -> String {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => index::iso_millis(d.as_secs() as i64, i64::from(d.subsec_nanos())),
        Err(e) => {
            let d = e.duration();
            index::iso_millis(-(d.as_secs() as i64), -i64::from(d.subsec_nanos()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updated_before_and_after_the_epoch() {
        let t = UNIX_EPOCH + std::time::Duration::new(1767323045, 123_456_789);
        assert_eq!(iso_of(t), "2026-01-02T03:04:05.123Z");
        let before = UNIX_EPOCH - std::time::Duration::from_millis(1500);
        assert_eq!(iso_of(before), "1969-12-31T23:59:58.500Z");
    }
}
