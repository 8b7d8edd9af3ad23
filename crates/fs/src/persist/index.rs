//! A library's persistent index, open: its lookups, each trusted by the
//! rule in `identity`, and a writer of it for a mount.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::Connection;

use super::bare::{NamesLen, dressed};
use super::identity::{Identity, trusted};
use super::pages::decode_pages;
use super::profile::{profile_id, profile_of};
use super::rows::{self, BookRows, Row, chapter_key, lookup_row};
use super::shared::{HeldBooks, Importer};
use super::{Recorder, Refused, store};
use crate::cache::Stamp;
use crate::chapter_shape::Outline;
use crate::lock;
use novelfs_library::index::ChapterStats;
use novelfs_library::{Library, MAX_CHAPTER_BYTES_CAP};

/// A library's persistent index, open for lookups (and, when the file is
/// writable, for a `Recorder`).
pub(crate) struct PersistentIndex {
    pub(super) path: PathBuf,
    root: PathBuf,
    pub(super) conn: Mutex<Connection>,
    writable: bool,
    pub(super) profile: i64,
    /// The profile's hash (`profile_of`): what published rows name.
    profile_hash: i64,
    pub(super) granularity: Duration,
    /// The library as this mount serves it: the root its pages print, which
    /// sizes the names of every page (`bare`), and its size limit.
    library: Library,
}

impl PersistentIndex {
    /// Opens the index of `library` in `dir` (see `store::open`), with a
    /// page cache of `cache_bytes`; entries are trusted at `granularity`
    /// (`SourceFs::granularity` of the library's filesystem).
    pub(crate) fn open(
        dir: &Path,
        library: &Library,
        cache_bytes: usize,
        granularity: Duration,
    ) -> Result<PersistentIndex, Refused> {
        let root = library.root().to_path_buf();
        let path = store::file_for(dir, &root);
        let opened = store::open(&path, &root, cache_bytes)?;
        let profile_hash = profile_of(library);
        let profile =
            profile_id(&opened.conn, profile_hash, opened.writable, &path).map_err(|e| {
                Refused::Unusable {
                    path: path.clone(),
                    reason: e.to_string(),
                }
            })?;
        Ok(PersistentIndex {
            path,
            root,
            conn: Mutex::new(opened.conn),
            writable: opened.writable,
            profile,
            profile_hash,
            granularity,
            library: library.clone(),
        })
    }

    /// What the names of `book/file` add to each of its pages here.
    pub(super) fn names(&self, book: &OsStr, file: &OsStr) -> NamesLen {
        NamesLen::of(&self.library, book, file)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn writable(&self) -> bool {
        self.writable
    }

    /// The stored outline of the chapter at `key` when it is trusted for
    /// the file whose stamp is `stamp` (see `identity`). A mount
    /// and a refresh look up through a book's rows (`lookup_in`).
    #[cfg(test)]
    pub(crate) fn lookup(&self, key: &[u8], stamp: &Stamp) -> Option<Outline> {
        let (book, file) = rows::split_key(key)?;
        let (book, file) = (OsStr::from_bytes(book), OsStr::from_bytes(file));
        self.trust(&self.stored_row(key)?, book, file, stamp)
    }

    /// The row stored for the chapter at `key`.
    fn stored_row(&self, key: &[u8]) -> Option<Row> {
        let conn = lock(&self.conn);
        lookup_row(&conn, self.profile, key).unwrap_or_else(|e| {
            log::debug!("index {}: {e}", self.path.display());
            None
        })
    }

    /// The outline `row` (of `book/file`) holds when it proves the bytes
    /// of the file whose stamp is `stamp`: the same identity, recorded
    /// outside the racy window of its last change. Its pages' sizes are
    /// those of this mount's names.
    fn trust(&self, row: &Row, book: &OsStr, file: &OsStr, stamp: &Stamp) -> Option<Outline> {
        self.proves(row, stamp)?;
        let pages = decode_pages(&row.pages)?;
        Some(Outline {
            pages: dressed(&pages, self.names(book, file))?,
            stats: row.stats,
        })
    }

    /// Whether `row` proves the bytes of the file whose stamp is `stamp`
    /// (see `trust`) and the chapter is one this mount reads: a chapter
    /// over its size limit (the row's size is the file's) is read as
    /// without an index, and refused there.
    fn proves(&self, row: &Row, stamp: &Stamp) -> Option<()> {
        let identity = Identity::of(stamp)?;
        let max = self.library.max_chapter_bytes.min(MAX_CHAPTER_BYTES_CAP);
        let within = u64::try_from(row.identity.size).is_ok_and(|size| size <= max);
        (within && row.identity == identity && trusted(stamp, row.recorded_ns, self.granularity))
            .then_some(())
    }

    /// The row stored for `book/file`: found in `rows` (the book's, from
    /// `book_rows`) when they are held, else queried.
    fn row_in<'a>(&self, rows: &'a BookRows, book: &OsStr, file: &OsStr) -> Option<Cow<'a, Row>> {
        match rows {
            BookRows::Held(rows) => rows.get(file.as_bytes()).map(Cow::Borrowed),
            BookRows::TooMany => self.stored_row(&chapter_key(book, file)).map(Cow::Owned),
        }
    }

    /// The stored outline of `book/file` when it is trusted for `stamp`
    /// (`row_in`, `trust`).
    pub(super) fn lookup_in(
        &self,
        rows: &BookRows,
        book: &OsStr,
        file: &OsStr,
        stamp: &Stamp,
    ) -> Option<Outline> {
        let row = self.row_in(rows, book, file)?;
        self.trust(&row, book, file, stamp)
    }

    /// The stored figures of `book/file` when its row is trusted for
    /// `stamp` (as `lookup_in`), without decoding its pages.
    pub(super) fn stats_in(
        &self,
        rows: &BookRows,
        book: &OsStr,
        file: &OsStr,
        stamp: &Stamp,
    ) -> Option<ChapterStats> {
        let row = self.row_in(rows, book, file)?;
        self.proves(&row, stamp)?;
        Some(row.stats)
    }

    /// Every row of `book` (`rows::book_rows`).
    pub(super) fn book_rows(&self, book: &[u8]) -> rusqlite::Result<BookRows> {
        rows::book_rows(&lock(&self.conn), self.profile, book)
    }

    /// What puts the rows published beside a book into this index, on a
    /// connection of its own (`None` when the file is read-only or cannot
    /// be opened a second time); it drops a book's rows from `held`.
    pub(super) fn importer(&self, held: HeldBooks) -> Option<Importer> {
        if !self.writable {
            return None;
        }
        let opened = store::open(&self.path, &self.root, 256 << 10).ok()?;
        opened.writable.then(|| Importer {
            conn: Mutex::new(opened.conn),
            path: self.path.clone(),
            profile: self.profile,
            profile_hash: self.profile_hash,
            held,
        })
    }

    /// A writer of this index on its own thread (`None` when the file is
    /// read-only or cannot be opened a second time).
    pub(super) fn recorder(&self, queue: usize) -> Option<Recorder> {
        if !self.writable {
            return None;
        }
        let opened = store::open(&self.path, &self.root, 256 << 10).ok()?;
        opened
            .writable
            .then(|| Recorder::start(opened.conn, self.profile, self.granularity, queue))
    }
}
