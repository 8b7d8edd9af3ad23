//! The `novel_chapters` and `novel_books` calls over a library on disk:
//! the books counted, every chapter read once for its figures.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use super::{
    BOOKS_TOOL, BookChapters, BookTotals, CHAPTERS_TOOL, ChapterStats, LibraryBooks,
    counted_as_book, iso_millis, updated_of,
};
use crate::{BookIndex, Chapter, Library, NovelError, js, sanitize_segment, switch};

impl Library {
    /// The books `novel_books` counts, unordered: real directories of
    /// `novels/` (symlinks are not followed), not dot directories, not
    /// `创作资料`. No `novels/` is no books.
    pub fn counted_books(&self) -> Vec<OsString> {
        let Ok(books) = self.book_dirs() else {
            return Vec::new();
        };
        books
            .into_iter()
            .filter(|name| counted_as_book(name))
            .collect()
    }

    /// A chapter's figures and `updated`, read as the original reads it
    /// (the mtime of the file read; a file gone since the scan is an error).
    pub fn chapter_stats(
        &self,
        book: &OsStr,
        chapter: &Chapter,
    ) -> (Result<ChapterStats, NovelError>, String) {
        match self.open_chapter_file(book, &chapter.os_name) {
            Ok(Some(f)) => {
                let updated = updated_of(f.meta());
                let stats = self
                    .load_opened_chapter(book, chapter, f)
                    .map(|t| ChapterStats::of(&t));
                (stats, updated)
            }
            Ok(None) => (
                Err(self.io_error(book, &chapter.os_name, std::io::ErrorKind::NotFound.into())),
                iso_millis(0, 0),
            ),
            Err(e) => (Err(e), iso_millis(0, 0)),
        }
    }

    /// The listing of the book directory `book` (named as on disk), every
    /// chapter read once.
    pub fn book_chapters(&self, book: &OsStr, index: &BookIndex) -> BookChapters {
        BookChapters::new(book.to_string_lossy().into_owned(), index, |_, c| {
            self.chapter_stats(book, c)
        })
    }

    /// One `novel_chapters` call, checks in the tool's order.
    pub fn novel_chapters(
        &self,
        book: &str,
        state_file: Option<&Path>,
    ) -> Result<BookChapters, NovelError> {
        if !switch::tool_switched_on(state_file, CHAPTERS_TOOL) {
            return Err(NovelError::ToolSwitchedOff {
                tool: CHAPTERS_TOOL,
            });
        }
        if js::trim(book).is_empty() {
            return Err(NovelError::EmptyBook);
        }
        let book = sanitize_segment(book)?;
        let index = self.scan_book(&book)?;
        let listing = self.book_chapters(OsStr::new(&book), &index);
        match listing.error() {
            Some(e) => Err(e.clone()),
            None => Ok(listing),
        }
    }

    /// One `novel_books` call: every chapter of every counted book read
    /// once (one at a time: memory holds one chapter's text).
    pub fn novel_books(&self, state_file: Option<&Path>) -> Result<LibraryBooks, NovelError> {
        if !switch::tool_switched_on(state_file, BOOKS_TOOL) {
            return Err(NovelError::ToolSwitchedOff { tool: BOOKS_TOOL });
        }
        let books = self
            .counted_books()
            .into_iter()
            .filter_map(|book| {
                // A book that cannot be scanned is left out, as the original
                // skips it.
                let index = self.index_book(&book).ok()?;
                let (chapters, chars) = self.book_chapters(&book, &index).totals();
                Some(BookTotals {
                    name: book.to_string_lossy().into_owned(),
                    chapters,
                    chars,
                })
            })
            .collect();
        Ok(LibraryBooks::new(self.root_display.clone(), books))
    }
}
