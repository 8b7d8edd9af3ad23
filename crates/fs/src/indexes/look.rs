//! A look at a book: its chapter index and each chapter file's metadata
//! and version, from one `lstat` each, and what a look saw.

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::SystemTime;

use super::version::chapters_version;
use crate::error::Result;
use crate::source::{BookVersion, Source, mtime_of};

/// A book as looked at now: its chapter index and each chapter file's
/// metadata (`None`: gone since the scan), from one `lstat` each.
#[derive(Clone)]
pub(crate) struct BookLook {
    pub(crate) book: BookVersion,
    pub(crate) metas: Vec<Option<novelfs_library::backing::Meta>>,
    /// Each chapter's version, of the same look (`Source::version_now`:
    /// the bytes of a chapter whose stamp is recent are looked at again).
    pub(super) versions: Vec<Option<u64>>,
}

impl BookLook {
    pub(crate) fn take(source: &Source, book: &OsStr) -> Result<BookLook> {
        let now = source.book(book)?;
        let metas: Vec<_> = now
            .index
            .chapters
            .iter()
            .map(|c| {
                #[cfg(test)]
                source.at(
                    |s| &s.before_stat,
                    &crate::node::chapter_ref(&Arc::from(book), &c.os_name),
                );
                source.library().chapter_metadata(book, &c.os_name)
            })
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

    /// Keeps what this look saw of each chapter of a watched book for the
    /// chapters' own looks (`Source::keep_looks`), unless the watch
    /// reported a change since `reports` (taken before the look): a
    /// listing's look serves the outlines and pages its walker asks for
    /// next. (A walk of the library's books is not followed there.)
    pub(crate) fn keep(&self, source: &Source, book: &Arc<OsStr>, reports: u64) {
        if !source.watched(book) {
            return;
        }
        let looks = self
            .book
            .index
            .chapters
            .iter()
            .zip(self.metas.iter().zip(&self.versions))
            .filter_map(|(c, (meta, version))| {
                let c = crate::node::chapter_ref(book, &c.os_name);
                Some((c, meta.clone()?, (*version)?))
            });
        source.keep_looks(looks, reports);
    }

    /// The version of the book's index this look shows.
    pub(crate) fn version(&self) -> u64 {
        chapters_version(self.book.version, self.versions.iter().copied())
    }
}

/// What a look at a book saw: the version of its index and its newest
/// mtime.
#[derive(Clone, Copy)]
pub(super) struct Look {
    pub(super) version: u64,
    pub(super) newest: SystemTime,
}

impl Look {
    pub(super) fn of(look: &BookLook) -> Look {
        Look {
            version: look.version(),
            newest: newest(look),
        }
    }
}

/// The newest mtime of a looked-at book: its directory's and its chapters'.
fn newest(look: &BookLook) -> SystemTime {
    look.metas
        .iter()
        .flatten()
        .map(mtime_of)
        .fold(look.book.mtime, SystemTime::max)
}
