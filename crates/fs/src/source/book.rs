//! A book as the source holds it: its chapter index, scanned under the
//! stamp of its directory and served while that stamp holds.

use std::ffi::OsStr;
use std::sync::Arc;

use novelfs_library::{BookIndex, NovelError};

use super::stamps::index_version;
use super::{BookVersion, CachedIndex, Source, mtime_of};
use crate::cache::Stamp;
use crate::error::{Error, Result};
use crate::lock;

impl Source {
    /// The book's chapter index and the version of its directory.
    ///
    /// A cached index serves while the directory has its stamp, once that
    /// stamp is settled (`racy`): until then the directory is scanned again
    /// and its names compared, since a chapter added in the same tick as
    /// the scan leaves the same stamp.
    pub(crate) fn book(&self, book: &OsStr) -> Result<BookVersion> {
        // Watched before it is read: a change after the scan is reported.
        self.freshness.watch_book(book);
        let meta = match self.library.book_metadata(book) {
            Some(meta) => meta,
            // Not there, or its storage did not answer: a book is never
            // shown missing for the second (its LIST failing in a bucket).
            None => {
                return Err(match self.library.unreadable_dir(Some(book)) {
                    Some(e @ NovelError::Unavailable { .. }) => e.into(),
                    _ => Error::NotFound,
                });
            }
        };
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
        let scanned = self.library.index_book(book).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::NotFound
            } else {
                Error::source_failed(e)
            }
        })?;
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

    /// The book's chapter index as cached, without a look at its
    /// directory (`None` when none is cached).
    pub(crate) fn cached_index(&self, book: &OsStr) -> Option<Arc<BookIndex>> {
        lock(&self.books).get(book).map(|b| b.index.clone())
    }

    pub(crate) fn book_index(&self, book: &OsStr) -> Result<Arc<BookIndex>> {
        Ok(self.book(book)?.index)
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
