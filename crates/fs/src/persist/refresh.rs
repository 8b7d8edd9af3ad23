//! `novelfs index`: builds or brings up to date a library's persistent
//! index, reading only the chapters whose entries are missing or no longer
//! trusted, and forgetting the chapters that are gone. Written in batches,
//! one transaction each, so a build killed at any moment leaves an index
//! whose entries are all whole.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::identity::{trusted, unix_nanos};
use super::index::PersistentIndex;
use super::rows::{BookRows, Record, chapter_key, split_key, write_batch};
use super::store::Refused;
use crate::cache::Stamp;
use crate::chapter_shape::Outline;
use crate::freshness::SourceFs;
use crate::lock;
use crate::pool::map_spread;
use novelfs_library::Chapter;
use novelfs_library::Library;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// Outlines written in one transaction at most, and how long they wait.
const BATCH: usize = 512;
const BATCH_AGE: Duration = Duration::from_secs(1);

/// What a refresh did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefreshSummary {
    /// The index file.
    pub file: PathBuf,
    /// Chapters read and stored.
    pub indexed: u64,
    /// Chapters whose stored entries still held.
    pub reused: u64,
    /// Entries of chapters that are gone.
    pub removed: u64,
    /// Chapters that cannot be read (listed as errors; nothing stored).
    pub unreadable: u64,
    /// Chapters changed too recently for an entry to prove anything yet
    /// (read now, stored by a later run or mount).
    pub too_recent: u64,
    pub elapsed: Duration,
}

/// Where a refresh is, for a progress display.
pub enum Step<'a> {
    /// Every book was scanned: how many chapters there are.
    Start { chapters: u64 },
    /// One more chapter is done.
    Chapter,
    /// A book is done, with the chapters done so far.
    Book { name: &'a str, done: u64 },
}

/// Why an index could not be built or refreshed.
#[derive(Debug)]
pub enum RefreshError {
    /// The index file is not used (newer, or unusable).
    Refused(Refused),
    /// The index file opened read-only.
    ReadOnly(PathBuf),
    /// SQLite failed on the index at `index`.
    Sql {
        index: PathBuf,
        error: rusqlite::Error,
    },
    /// The library's `novels/` could not be listed.
    Library {
        novels: PathBuf,
        error: std::io::Error,
    },
}

impl std::fmt::Display for RefreshError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RefreshError::Refused(refused) => refused.fmt(f),
            RefreshError::ReadOnly(index) => {
                write!(f, "index {} cannot be written", index.display())
            }
            RefreshError::Sql { index, .. } => write!(f, "index {}", index.display()),
            RefreshError::Library { novels, .. } => write!(f, "{}", novels.display()),
        }
    }
}

impl std::error::Error for RefreshError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RefreshError::Refused(_) | RefreshError::ReadOnly(_) => None,
            RefreshError::Sql { error, .. } => Some(error),
            RefreshError::Library { error, .. } => Some(error),
        }
    }
}

/// Builds or refreshes the index of `library` in `dir`.
pub fn refresh(
    library: &Library,
    dir: &Path,
    progress: &mut dyn FnMut(Step),
) -> Result<RefreshSummary, RefreshError> {
    let started = Instant::now();
    // No mount: the type of the mount `novels/` lies on is not asked, and
    // the granularity of its times does not depend on it.
    let granularity = match library.local_root() {
        Some(_) => SourceFs::of(&library.novels_dir(), None).granularity,
        None => SourceFs::in_bucket().granularity,
    };
    let index =
        PersistentIndex::open(dir, library, 8 << 20, granularity).map_err(RefreshError::Refused)?;
    if !index.writable() {
        return Err(RefreshError::ReadOnly(index.path().to_path_buf()));
    }
    let sql = |error| RefreshError::Sql {
        index: index.path().to_path_buf(),
        error,
    };
    let mut stale = stored_keys(&index).map_err(sql)?;
    let names = library
        .book_names()
        .map_err(|error| RefreshError::Library {
            novels: library.novels_dir(),
            error,
        })?;
    library.list_ahead(names.iter().map(|n| n.as_os_str()));
    let books: Vec<_> = names
        .into_iter()
        .filter_map(|name| Some((library.index_book(&name).ok()?, name)))
        .collect();
    let chapters = books.iter().map(|(b, _)| b.chapters.len() as u64).sum();
    progress(Step::Start { chapters });
    let mut summary = RefreshSummary {
        file: index.path().to_path_buf(),
        ..RefreshSummary::default()
    };
    let mut batch = Batch::default();
    let mut done = 0;
    // The book's stored rows in one query, not one per chapter; the next
    // book's are taken a book ahead, with its chapters to read.
    let mut next_rows = match books.first() {
        Some((book_index, book)) => {
            Some(rows_reading_ahead(library, &index, book_index, book).map_err(sql)?)
        }
        None => None,
    };
    for (i, (book_index, book)) in books.iter().enumerate() {
        let rows = next_rows.take().expect("rows taken a book ahead");
        if let Some((after_index, after)) = books.get(i + 1) {
            next_rows = Some(rows_reading_ahead(library, &index, after_index, after).map_err(sql)?);
        }
        // The chapters of a book are read and outlined on both CPUs; what
        // is stored is written here, in batches, in the book's order.
        let outcomes = map_spread(&book_index.chapters, |chapter| {
            index_chapter(library, &index, &rows, granularity, book, chapter)
        });
        for (chapter, outcome) in book_index.chapters.iter().zip(outcomes) {
            stale.remove(&chapter_key(book, &chapter.os_name));
            done += 1;
            progress(Step::Chapter);
            match outcome {
                Outcome::Gone => {}
                Outcome::Reused => summary.reused += 1,
                Outcome::Unreadable => summary.unreadable += 1,
                Outcome::TooRecent => summary.too_recent += 1,
                Outcome::Read(record) => {
                    batch.records.push(record);
                    summary.indexed += 1;
                    if batch.full() {
                        batch.write(&index).map_err(sql)?;
                    }
                }
            }
        }
        progress(Step::Book {
            name: &book.to_string_lossy(),
            done,
        });
    }
    batch.write(&index).map_err(sql)?;
    summary.removed = remove(&index, &stale).map_err(sql)?;
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// The stored rows of `book`, its reading of the chapters they do not
/// hold started: in a bucket each is a GET, and the bodies' fetchers keep
/// up to 64 in flight while the book before is outlined, where the
/// outlining alone would have two (one per CPU). A chapter whose entry
/// holds is not read.
fn rows_reading_ahead(
    library: &Library,
    index: &PersistentIndex,
    book_index: &novelfs_library::BookIndex,
    book: &OsStr,
) -> rusqlite::Result<BookRows> {
    let rows = index.book_rows(book.as_bytes())?;
    if library.listing_ttl().is_some() {
        let unread = book_index.chapters.iter().filter(|c| {
            library
                .chapter_metadata(book, &c.os_name)
                .is_some_and(|meta| {
                    index
                        .lookup_in(&rows, book, &c.os_name, &Stamp::of(&meta))
                        .is_none()
                })
        });
        library.read_ahead(book, unread.map(|c| c.os_name.as_os_str()));
    }
    Ok(rows)
}

/// What became of one chapter in a refresh.
enum Outcome {
    /// Gone since its book was scanned.
    Gone,
    /// Its stored entry still holds.
    Reused,
    Unreadable,
    /// Changed too recently for an entry to prove anything yet.
    TooRecent,
    /// Read and outlined: to be stored.
    Read(Record),
}

/// Looks at one chapter and, unless its stored entry holds, reads and
/// outlines it.
fn index_chapter(
    library: &Library,
    index: &PersistentIndex,
    rows: &BookRows,
    granularity: Duration,
    book: &std::ffi::OsStr,
    chapter: &Chapter,
) -> Outcome {
    let key = chapter_key(book, &chapter.os_name);
    let Some(meta) = library.chapter_metadata(book, &chapter.os_name) else {
        return Outcome::Gone;
    };
    if index
        .lookup_in(rows, book, &chapter.os_name, &Stamp::of(&meta))
        .is_some()
    {
        return Outcome::Reused;
    }
    let read_at = SystemTime::now();
    let Ok(Some(read)) = library.read_chapter(book, &chapter.os_name, chapter, |_| false) else {
        return Outcome::Unreadable;
    };
    let stamp = Stamp::of(&read.meta);
    let Ok(text) = read.text else {
        return Outcome::Unreadable;
    };
    if !unix_nanos(read_at).is_some_and(|at| trusted(&stamp, at, granularity)) {
        return Outcome::TooRecent;
    }
    let outline = Outline::compute(library, book, &chapter.os_name, &text);
    Outcome::Read(Record {
        key,
        stamp,
        read_at,
        outline: Arc::new(outline),
        names: index.names(book, &chapter.os_name),
    })
}

struct Batch {
    records: Vec<Record>,
    since: Instant,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            records: Vec::new(),
            since: Instant::now(),
        }
    }
}

impl Batch {
    fn full(&self) -> bool {
        self.records.len() >= BATCH || self.since.elapsed() >= BATCH_AGE
    }

    fn write(&mut self, index: &PersistentIndex) -> rusqlite::Result<()> {
        if !self.records.is_empty() {
            let mut conn = lock(&index.conn);
            write_batch(&mut conn, index.profile, index.granularity, &self.records)?;
        }
        *self = Batch::default();
        Ok(())
    }
}

/// The chapters the index holds for this profile.
fn stored_keys(index: &PersistentIndex) -> rusqlite::Result<HashSet<Vec<u8>>> {
    let conn = lock(&index.conn);
    let mut stmt = conn.prepare(
        "SELECT books.name, chapters.file FROM chapters JOIN books ON books.id = chapters.book
         WHERE chapters.profile = ?1",
    )?;
    let keys = stmt.query_map([index.profile], |r| {
        let (book, file): (Vec<u8>, Vec<u8>) = (r.get(0)?, r.get(1)?);
        Ok(chapter_key(
            OsStr::from_bytes(&book),
            OsStr::from_bytes(&file),
        ))
    })?;
    keys.collect()
}

/// Forgets the chapters at `keys`; how many entries went.
fn remove(index: &PersistentIndex, keys: &HashSet<Vec<u8>>) -> rusqlite::Result<u64> {
    let mut conn = lock(&index.conn);
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let mut removed = 0;
    {
        let mut stmt = tx.prepare(
            "DELETE FROM chapters
             WHERE profile = ?1 AND book = (SELECT id FROM books WHERE name = ?2) AND file = ?3",
        )?;
        for (book, file) in keys.iter().filter_map(|key| split_key(key)) {
            removed += stmt.execute(rusqlite::params![index.profile, book, file])? as u64;
        }
    }
    tx.commit()?;
    Ok(removed)
}
