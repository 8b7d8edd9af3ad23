//! `novel_chapters.*` of a book: cached while its look holds, else made
//! from a walk of its chapters that settles while the book changes.

use std::ffi::OsStr;
use std::sync::Arc;

use novelfs_library::NovelError;
use novelfs_library::index::CHAPTERS_TOOL;

use super::look::{BookLook, Look};
use super::rendered::Rendered;
use super::version::{error_version, off_version};
use super::walk::{WALK_ATTEMPTS, Walk, WalkedBook, walk_book};
use super::{IndexFiles, Key};
use crate::error::Result;
use crate::lock;
use crate::outline::Outlines;
use crate::source::{Source, dir_mtime};

impl IndexFiles {
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
            let mtime = dir_mtime(source.library(), Some(book));
            return Ok(Rendered::failed(version, &error, mtime));
        }
        if let Some(seen) = self.seen(source, book)
            && let Some(hit) = self.cached_book(book, seen.version)
        {
            return Ok(hit);
        }
        let reports = self.reports();
        let listed = self.listed_look(source, book).map(Ok);
        let look = match listed.unwrap_or_else(|| BookLook::take(source, book)) {
            Ok(look) => look,
            // A book (or library) that cannot be listed: its index holds
            // the error its `ERROR` file holds, never nothing.
            Err(failed) => {
                let library = source.library();
                let error = library
                    .unreadable_dir(None)
                    .or_else(|| library.unreadable_dir(Some(book)))
                    .ok_or(failed)?;
                let mtime = dir_mtime(library, Some(book));
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
    pub(super) fn walk_settled(
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
        #[cfg(test)]
        self.books_made
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
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
}
