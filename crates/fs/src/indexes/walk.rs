//! Walks of a book: each chapter's figures read from one look at it, for
//! the book's own index or for the library's count.

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use novelfs_library::backing::SourceKind;
use novelfs_library::index::{self, BookChapters, ChapterStats};
use novelfs_library::{BookIndex, NovelError};

use super::look::BookLook;
use super::version::chapters_version;
use crate::error::Error;
use crate::node::chapter_ref;
use crate::outline::{ChapterCount, Outlines};
use crate::pool::map_spread;
use crate::source::{ChapterFile, KeepText, Source};

/// Walks of a book that changes underneath before its index is shown
/// with the error of the last one.
pub(super) const WALK_ATTEMPTS: usize = 8;

/// One walk of a book: each chapter's figures (or the error that stops
/// it from being read) and mtime, in list order, with the version and
/// newest mtime of what it read.
pub(super) struct WalkedBook {
    /// The book's chapters as the walk's look listed them.
    index: Arc<BookIndex>,
    chapters: Vec<(std::result::Result<ChapterStats, NovelError>, SystemTime)>,
    pub(super) version: u64,
    pub(super) mtime: SystemTime,
}

impl WalkedBook {
    /// Whether a chapter could not be read.
    pub(super) fn failed(&self) -> bool {
        self.chapters.iter().any(|(stats, _)| stats.is_err())
    }

    /// What `novel_books` counts of the book (`index::totals_of`).
    pub(super) fn totals(&self) -> (u64, u64) {
        index::totals_of(self.chapters.iter().map(|(stats, _)| stats))
    }

    /// The book's index listing.
    pub(super) fn listing(self, book: &OsStr) -> BookChapters {
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
pub(super) fn walk_book(
    source: &Source,
    outlines: &Outlines,
    book: &Arc<OsStr>,
    look: &BookLook,
    walk: Walk,
) -> WalkedBook {
    let index = &look.book.index;
    // The first chapter the library's walk reads (its figures neither
    // cached nor stored) begins the reading of the book: the chapters from
    // there on are read, so they are asked for at once.
    let reading = std::sync::Once::new();
    let count_of = |position: &usize| {
        let c = &index.chapters[*position];
        let meta = look.metas[*position].clone().ok_or(Error::NotFound)?;
        let version = look.versions[*position].ok_or(Error::NotFound)?;
        let now = ChapterFile::looked(index.clone(), *position, meta, version);
        let chapter = chapter_ref(book, &c.os_name);
        match walk {
            // The book's own index: its outlines stay for its listings.
            Walk::Book => outlines
                .outline_keeping(source, &chapter, now, KeepText::Yes)
                .map(ChapterCount::of),
            Walk::Library => outlines.count(source, &chapter, now, || {
                reading.call_once(|| source.walk_reads(book, index, *position));
            }),
        }
    };
    if let Walk::Book = walk {
        source.walk_begins(book);
    }
    let positions: Vec<usize> = (0..index.chapters.len()).collect();
    let read = match walk {
        Walk::Book => {
            // Chapters outlined already (ahead of a walk, or by their
            // listings) are counted here: a helper thread costs more to
            // start than a hundred of them. Only the others are spread.
            let outlined = |p: &usize| {
                let c = &index.chapters[*p];
                look.versions[*p].is_some_and(|v| outlines.holds(&chapter_ref(book, &c.os_name), v))
            };
            let mut read: Vec<Option<_>> = positions
                .iter()
                .map(|p| outlined(p).then(|| count_of(p)))
                .collect();
            let missing: Vec<usize> = positions
                .iter()
                .copied()
                .filter(|p| read[*p].is_none())
                .collect();
            for (p, r) in missing.iter().zip(map_spread(&missing, count_of)) {
                read[*p] = Some(r);
            }
            read.into_iter()
                .map(|r| r.expect("every chapter counted"))
                .collect()
        }
        Walk::Library => positions.iter().map(count_of).collect::<Vec<_>>(),
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
                    kind: SourceKind::NotFound,
                    cause: Some(gone.into()),
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
pub(super) enum Walk {
    /// `novel_chapters` of one book: on both CPUs; the texts stay, for a
    /// reader of the book.
    Book,
    /// One of the books `novel_books` walks on both CPUs already: on the
    /// calling thread; each text is needed once, for its outline.
    Library,
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
