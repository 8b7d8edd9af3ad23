//! The chapters' rows in SQL: a chapter's key, the columns of a row and
//! how one is read, a book's rows read in one query, and outlines written
//! in batches.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OptionalExtension};

use super::bare::{NamesLen, bare};
use super::identity::{Identity, trusted, unix_nanos};
use super::pages::encode_pages;
use crate::cache::Stamp;
use crate::chapter_shape::Outline;
use novelfs_library::index::ChapterStats;

/// A chapter's place under `novels/`: `book/file`, as bytes on disk.
pub(crate) fn chapter_key(book: &OsStr, file: &OsStr) -> Vec<u8> {
    let mut key = Vec::with_capacity(book.len() + 1 + file.len());
    key.extend_from_slice(book.as_bytes());
    key.push(b'/');
    key.extend_from_slice(file.as_bytes());
    key
}

/// A chapter key's book and file (`chapter_key`: a book's name holds no `/`).
pub(super) fn split_key(key: &[u8]) -> Option<(&[u8], &[u8])> {
    let slash = key.iter().position(|&b| b == b'/')?;
    Some((&key[..slash], &key[slash + 1..]))
}

/// One outline to store.
pub(crate) struct Record {
    pub key: Vec<u8>,
    /// Of the file the outline was made from.
    pub stamp: Stamp,
    /// When its bytes were read (or earlier).
    pub read_at: SystemTime,
    pub outline: Arc<Outline>,
    /// What the chapter's names add to each of its pages (`bare`).
    pub names: NamesLen,
}

#[derive(Clone)]
pub(super) struct Row {
    pub(super) identity: Identity,
    pub(super) recorded_ns: i64,
    pub(super) stats: ChapterStats,
    pub(super) pages: Vec<u8>,
}

pub(super) fn lookup_row(
    conn: &Connection,
    profile: i64,
    key: &[u8],
) -> rusqlite::Result<Option<Row>> {
    let Some((book, file)) = split_key(key) else {
        return Ok(None);
    };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {ROW_COLUMNS} FROM chapters
         WHERE profile = ?1 AND book = (SELECT id FROM books WHERE name = ?2) AND file = ?3"
    ))?;
    stmt.query_row(rusqlite::params![profile, book, file], |r| row_at(r, 0))
        .optional()
}

/// The columns of a row that `row_at` reads, in its order.
pub(super) const ROW_COLUMNS: &str =
    "dev, ino, size, mtime_ns, ctime_after_ns, recorded_after_ms, chars, lines, pages";

/// The row whose columns (`ROW_COLUMNS`) start at column `first` of `r`.
pub(super) fn row_at(r: &rusqlite::Row, first: usize) -> rusqlite::Result<Row> {
    let mtime_ns: i64 = r.get(first + 3)?;
    let ctime_after_ns: i64 = r.get(first + 4)?;
    let recorded_after_ms: i64 = r.get(first + 5)?;
    Ok(Row {
        identity: Identity {
            dev: r.get(first)?,
            ino: r.get(first + 1)?,
            size: r.get(first + 2)?,
            mtime_ns,
            ctime_ns: mtime_ns.wrapping_add(ctime_after_ns),
        },
        recorded_ns: recorded_after_ms
            .saturating_mul(1_000_000)
            .saturating_add(mtime_ns),
        stats: ChapterStats {
            chars: r.get::<_, i64>(first + 6)? as u64,
            lines: r.get::<_, i64>(first + 7)? as u64,
        },
        pages: r.get(first + 8)?,
    })
}

/// Rows of a book held at most; a bigger book is looked up row by row.
pub(super) const HELD_ROWS: usize = 4096;

/// The stored rows of one book, by file name, read in one query: a walk of
/// a book (`novel_books`, a listing) asks for each of its chapters, and a
/// query per chapter, each its own read transaction with its locks on the
/// WAL's shared memory, cost more than the rest of the walk. Rows recorded
/// after the query are not seen (those chapters are decoded as without an
/// index); a row is trusted only as `PersistentIndex::lookup` trusts one.
pub(super) enum BookRows {
    Held(HashMap<Vec<u8>, Row>),
    TooMany,
}

/// Every row of `book` (the keys `book/…`) under `profile`, in one query,
/// by file name; `TooMany` past `HELD_ROWS`.
pub(super) fn book_rows(
    conn: &Connection,
    profile: i64,
    book: &[u8],
) -> rusqlite::Result<BookRows> {
    // The limit is written into the statement: SQLite plans a LIMIT of
    // a bound parameter by its value, so binding one makes every
    // execution prepare the statement anew.
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT file, {ROW_COLUMNS} FROM chapters
             WHERE profile = ?1 AND book = (SELECT id FROM books WHERE name = ?2) LIMIT {}",
        HELD_ROWS + 1
    ))?;
    let mut rows = HashMap::new();
    let mut query = stmt.query(rusqlite::params![profile, book])?;
    while let Some(r) = query.next()? {
        if rows.len() == HELD_ROWS {
            return Ok(BookRows::TooMany);
        }
        rows.insert(r.get::<_, Vec<u8>>(0)?, row_at(r, 1)?);
    }
    Ok(BookRows::Held(rows))
}

/// The number of the book `name` in this file, made if it has none.
pub(super) fn book_id(tx: &rusqlite::Transaction, name: &[u8]) -> rusqlite::Result<i64> {
    tx.prepare_cached("INSERT OR IGNORE INTO books(name) VALUES (?1)")?
        .execute([name])?;
    tx.prepare_cached("SELECT id FROM books WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
}

/// Writes `records` in one transaction (those whose bytes were not read
/// outside the racy window, or whose identity does not fit, are left
/// out), each page's size without its names' share (`bare`); how many
/// were written.
pub(super) fn write_batch(
    conn: &mut Connection,
    profile: i64,
    granularity: Duration,
    records: &[Record],
) -> rusqlite::Result<usize> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let mut written = 0;
    {
        let mut stmt = tx.prepare_cached(
            "INSERT OR REPLACE INTO chapters
             (profile, book, file, dev, ino, size, mtime_ns, ctime_after_ns, recorded_after_ms,
              chars, lines, pages)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?;
        let mut books: HashMap<&[u8], i64> = HashMap::new();
        for r in records {
            let (Some(id), Some(at), Some((book, file)), Some(pages)) = (
                Identity::of(&r.stamp),
                unix_nanos(r.read_at),
                split_key(&r.key),
                bare(&r.outline.pages, r.names),
            ) else {
                continue;
            };
            if !trusted(&r.stamp, at, granularity) {
                continue;
            }
            let book = match books.get(book) {
                Some(&known) => known,
                None => {
                    let made = book_id(&tx, book)?;
                    books.insert(book, made);
                    made
                }
            };
            stmt.execute(rusqlite::params![
                profile,
                book,
                file,
                id.dev,
                id.ino,
                id.size,
                id.mtime_ns,
                id.ctime_ns.wrapping_sub(id.mtime_ns),
                // Rounded down: an earlier moment of recording only makes
                // the entry harder to trust.
                at.saturating_sub(id.mtime_ns).div_euclid(1_000_000),
                r.outline.stats.chars as i64,
                r.outline.stats.lines as i64,
                encode_pages(&pages),
            ])?;
            written += 1;
        }
    }
    tx.commit()?;
    Ok(written)
}
