//! Where a library's books and chapters are, and how pages name them:
//! the directories under `novels/`, their display paths, and a book's
//! chapter index found by its name. Every look goes through the library's
//! backing, with paths relative to its root.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use super::backing::{EntryKind, Meta, SourceKind};
use super::{BookIndex, Library, NovelError, backing, scan};

/// Whether an error only says that a path is not there (not that it
/// cannot be read).
fn is_absence(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR)
}

/// Whether `name` is one plain path component.
fn plain(name: &OsStr) -> bool {
    !name.is_empty()
        && name.as_bytes() != b"."
        && name.as_bytes() != b".."
        && !name.as_bytes().contains(&b'/')
}

impl Library {
    /// The library root as pages print it.
    pub fn root_display(&self) -> &str {
        &self.root_display
    }

    pub fn novels_dir(&self) -> PathBuf {
        self.root.join("novels")
    }

    pub fn book_dir(&self, book: &OsStr) -> PathBuf {
        self.novels_dir().join(book)
    }

    /// `novels` or `novels/{book}`, relative to the root.
    pub(crate) fn rel_dir(book: Option<&OsStr>) -> PathBuf {
        match book {
            Some(book) => Path::new("novels").join(book),
            None => PathBuf::from("novels"),
        }
    }

    /// `novels/{book}/{file}`, relative to the root.
    pub(crate) fn rel_chapter(book: &OsStr, file: &OsStr) -> PathBuf {
        let mut path = Vec::with_capacity(7 + book.len() + 1 + file.len());
        path.extend_from_slice(b"novels/");
        path.extend_from_slice(book.as_bytes());
        path.push(b'/');
        path.extend_from_slice(file.as_bytes());
        PathBuf::from(OsString::from_vec(path))
    }

    /// `ROOT/novels/{book}/{file}` as pages print it.
    pub fn display_path(&self, book: &str, file: &str) -> String {
        // Written piece by piece: every page rendered names its chapter,
        // and `format!`'s machinery would be most of the cost.
        let root = &self.root_display;
        let mut path =
            String::with_capacity(root.len() + "/novels//".len() + book.len() + file.len());
        for piece in [root.as_str(), "/novels/", book, "/", file] {
            path.push_str(piece);
        }
        path
    }

    /// Whether `novels/{book}` is a real directory (a symlink is not followed).
    pub fn is_book(&self, book: &OsStr) -> bool {
        self.book_metadata(book).is_some()
    }

    /// The metadata of `novels/{book}` when it is a real directory and
    /// `book` a plain name (one `lstat`; a symlink is not followed).
    pub fn book_metadata(&self, book: &OsStr) -> Option<Meta> {
        if !plain(book) {
            return None;
        }
        self.dir_metadata(Some(book))
    }

    /// The metadata of `novels` (or of `novels/{book}`) when it is a
    /// directory: its stamp changes when a name in it does.
    pub fn dir_metadata(&self, book: Option<&OsStr>) -> Option<Meta> {
        let meta = self.backing.stat(&Self::rel_dir(book)).ok()??;
        meta.is_dir().then_some(meta)
    }

    /// Scans a book given the sanitized name. A book that is not there is
    /// §1.7's "not found"; one that is there (or may be) but cannot be read
    /// says why, since "not found" would send its reader looking for a
    /// typo.
    pub fn scan_book(&self, book: &str) -> Result<BookIndex, NovelError> {
        let not_found = || NovelError::BookNotFound {
            root: self.root_display.clone(),
            book: book.to_string(),
        };
        let unreadable = |e: std::io::Error| NovelError::Io {
            path: self.display_dir(Some(OsStr::new(book))),
            reason: e.to_string(),
            kind: SourceKind::of(&e),
            cause: Some(e.into()),
        };
        if !self.is_book(OsStr::new(book)) {
            return match self.backing.stat(&Self::rel_dir(Some(OsStr::new(book)))) {
                Err(e) if !is_absence(&e) => Err(unreadable(e)),
                _ => Err(not_found()),
            };
        }
        self.index_book(OsStr::new(book)).map_err(|e| {
            if is_absence(&e) {
                not_found()
            } else {
                unreadable(e)
            }
        })
    }

    /// `ROOT/novels` (or `ROOT/novels/{book}`) as pages print it.
    pub fn display_dir(&self, book: Option<&OsStr>) -> String {
        match book {
            Some(book) => format!("{}/novels/{}", self.root_display, book.to_string_lossy()),
            None => format!("{}/novels", self.root_display),
        }
    }

    /// Why `novels/` (or the book directory `book`) cannot be listed;
    /// `None` when it can.
    pub fn unreadable_dir(&self, book: Option<&OsStr>) -> Option<NovelError> {
        let e = self.backing.list(&Self::rel_dir(book)).err()?;
        Some(NovelError::from_io(self.display_dir(book), &e))
    }

    /// The chapter index of the book directory `book`, named as it is on
    /// disk (not sanitized).
    pub fn index_book(&self, book: &OsStr) -> std::io::Result<BookIndex> {
        let names = self.backing.list(&Self::rel_dir(Some(book)))?;
        Ok(BookIndex::new(scan::chapters_of(names)))
    }

    /// The directories in `novels/` (symlinks are not followed), unordered.
    pub fn book_dirs(&self) -> std::io::Result<Vec<OsString>> {
        Ok(self
            .backing
            .list(&Self::rel_dir(None))?
            .into_iter()
            .filter(|(_, kind)| *kind == EntryKind::Dir)
            .map(|(name, _)| name)
            .collect())
    }

    /// The book directories in `novels/` (symlinks are no books), in the
    /// order a listing shows them.
    pub fn book_names(&self) -> std::io::Result<Vec<OsString>> {
        let mut books = self.book_dirs()?;
        books.sort_by(|a, b| {
            scan::locale_compare(&a.to_string_lossy(), &b.to_string_lossy()).then(a.cmp(b))
        });
        Ok(books)
    }

    /// The metadata of the chapter file `file` of `book` when the name
    /// holds a regular file (one `lstat`; a symlink is not followed).
    pub fn chapter_metadata(&self, book: &OsStr, file: &OsStr) -> Option<Meta> {
        let meta = self.backing.stat(&Self::rel_chapter(book, file)).ok()??;
        meta.is_file().then_some(meta)
    }

    /// What the publisher recorded of the book directory `book` in the
    /// snapshot followed, while it stands for the book (see
    /// `Backing::published_figures`).
    pub fn published_figures(&self, book: &OsStr) -> Option<backing::PublishedFigures> {
        self.backing.published_figures(&Self::rel_dir(Some(book)))
    }

    /// A walker comes to the books `books` next, in this order: their
    /// listings are made ahead of it where that costs a request (see
    /// `Backing::list_ahead`).
    pub fn list_ahead<'a>(&self, books: impl Iterator<Item = &'a OsStr>) {
        let dirs = books.map(|b| Self::rel_dir(Some(b))).collect();
        self.backing.list_ahead(dirs);
    }

    /// Starts reading the chapter files `files` of `book` ahead of a
    /// reader (see `Backing::read_ahead`).
    pub fn read_ahead<'a>(&self, book: &OsStr, files: impl Iterator<Item = &'a OsStr>) {
        let paths = files.map(|f| Self::rel_chapter(book, f)).collect();
        self.backing.read_ahead(paths);
    }
}
