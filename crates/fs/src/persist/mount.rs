//! A mount's use of its persistent index: lookups on the request path
//! through the rows of the books looked up last, and records of what
//! requests read, written on the recorder's thread.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::Recorder;
use super::index::PersistentIndex;
use super::rows::{BookRows, Record, chapter_key};
use super::shared::HeldBooks;
use crate::cache::Stamp;
use crate::chapter_shape::Outline;
use crate::freshness::SourceFs;
use crate::lock;
use novelfs_library::Library;
use novelfs_library::index::ChapterStats;

/// Outlines queued for the writer at most: past that, requests drop them
/// rather than wait on the disk.
const RECORD_QUEUE: usize = 4096;

/// A mount's use of its persistent index: lookups on the request path,
/// writes on the recorder's thread.
pub(crate) struct MountIndex {
    index: PersistentIndex,
    /// Taken when the mount ends (`finish`).
    recorder: Mutex<Option<Recorder>>,
    /// The stored rows of the books looked up last (see `BookRows`).
    books: HeldBooks,
}

/// Books whose rows are held at once: the two workers of a walk, and a
/// reader or two.
const HELD_BOOKS: usize = 4;

/// What a request notes before it reads a chapter, to record the outline
/// of what it read.
pub(crate) struct Reading {
    stamp: Stamp,
    at: SystemTime,
}

impl MountIndex {
    /// The mount ends: what is queued is written, the writer's connection
    /// closed, and the WAL folded into the file. The daemon's process ends
    /// without running destructors of what its threads share, so this is
    /// not left to `Drop`.
    pub(crate) fn finish(&self) {
        drop(lock(&self.recorder).take());
        if let Err(e) = lock(&self.index.conn).execute_batch("PRAGMA wal_checkpoint(TRUNCATE);") {
            log::debug!("index {}: {e}", self.index.path.display());
        }
    }

    /// The index of `library` (on the filesystem `source`) in `dir` with a
    /// page cache of `cache_bytes`; `None` (said in the log) when it cannot
    /// be used.
    pub(crate) fn open(
        dir: &Path,
        library: &Library,
        cache_bytes: usize,
        source: &SourceFs,
    ) -> Option<MountIndex> {
        match PersistentIndex::open(dir, library, cache_bytes, source.granularity) {
            Ok(index) => {
                let recorder = index.recorder(RECORD_QUEUE);
                let books = HeldBooks::default();
                // The rows a publisher recorded beside a book, as the
                // mount fetches the book's listing.
                if let Some(importer) = index.importer(books.clone()) {
                    library
                        .on_published_index(Arc::new(move |dir, rows| importer.import(dir, rows)));
                }
                log::info!(
                    "index {}{}",
                    index.path().display(),
                    if recorder.is_some() {
                        ""
                    } else {
                        " (read-only)"
                    }
                );
                Some(MountIndex {
                    index,
                    recorder: Mutex::new(recorder),
                    books,
                })
            }
            Err(refused) => {
                log::warn!("{refused}");
                None
            }
        }
    }

    /// The stored outline of `book/file` when it holds for `meta`, the
    /// file's metadata just taken.
    pub(crate) fn lookup(
        &self,
        book: &OsStr,
        file: &OsStr,
        meta: &novelfs_library::backing::Meta,
    ) -> Option<Outline> {
        self.index
            .lookup_in(&self.book_rows(book), book, file, &Stamp::of(meta))
    }

    /// The stored figures of `book/file` when they hold for `meta` (as
    /// `lookup`), for what counts a chapter and needs none of its pages.
    pub(crate) fn lookup_stats(
        &self,
        book: &OsStr,
        file: &OsStr,
        meta: &novelfs_library::backing::Meta,
    ) -> Option<ChapterStats> {
        self.index
            .stats_in(&self.book_rows(book), book, file, &Stamp::of(meta))
    }

    /// The rows of `book`: held, or read now (and held in place of the
    /// book looked up longest ago).
    fn book_rows(&self, book: &OsStr) -> Arc<BookRows> {
        let key = book.as_bytes();
        if let Some((_, rows)) = lock(&self.books).iter().find(|(b, _)| b == key) {
            return rows.clone();
        }
        let rows = Arc::new(self.index.book_rows(key).unwrap_or_else(|e| {
            log::debug!("index {}: {e}", self.index.path.display());
            BookRows::Held(Default::default())
        }));
        let mut books = lock(&self.books);
        if books.len() >= HELD_BOOKS {
            books.pop_front();
        }
        books.push_back((key.to_vec(), rows.clone()));
        rows
    }

    /// Notes the moment before a chapter whose metadata is `meta` is read
    /// (`None` when nothing can be recorded).
    pub(crate) fn reading(&self, meta: &novelfs_library::backing::Meta) -> Option<Reading> {
        lock(&self.recorder).as_ref()?;
        Some(Reading {
            stamp: Stamp::of(meta),
            at: SystemTime::now(),
        })
    }

    /// Records the outline of what was read after `reading`: its caller
    /// vouches that the bytes read had `reading`'s stamp.
    pub(crate) fn record(
        &self,
        book: &OsStr,
        file: &OsStr,
        reading: Reading,
        outline: Arc<Outline>,
    ) {
        if let Some(recorder) = &*lock(&self.recorder) {
            recorder.record(Record {
                key: chapter_key(book, file),
                stamp: reading.stamp,
                read_at: reading.at,
                names: self.index.names(book, file),
                outline,
            });
        }
    }
}
