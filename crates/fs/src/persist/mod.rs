//! The persistent index: what each chapter file's text is — its reading
//! chain with the pages' sizes and its figures, never the text — kept in
//! SQLite across mounts, so that a fresh mount of a known library lists
//! chapters, sizes pages and makes the index files without decoding.
//!
//! An entry stands for the bytes of one file identity (dev, ino, size,
//! mtime and ctime in nanoseconds) and is trusted only when all of it
//! matches and it was recorded outside the racy window of the file's last
//! change (`freshness::racy`: git's rule for its index). What an outline
//! depends on besides the bytes (the path root pages print, the size limit,
//! this build's paging and rendering) is its `profile`.

mod recorder;
mod refresh;
mod store;
#[cfg(test)]
mod tests;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension};

use super::cache::Stamp;
use super::chapter_shape::{Outline, OutlinePage};
use super::freshness::racy;
use super::lock;
use novelfs_library::index::ChapterStats;
use novelfs_library::{ChapterText, Library};

pub(crate) use recorder::Recorder;
pub use refresh::{RefreshSummary, Step, refresh};
pub(crate) use store::Refused;
pub use store::default_dir;

/// A chapter's place under `novels/`: `book/file`, as bytes on disk.
pub(crate) fn chapter_key(book: &OsStr, file: &OsStr) -> Vec<u8> {
    let mut key = Vec::with_capacity(book.len() + 1 + file.len());
    key.extend_from_slice(book.as_bytes());
    key.push(b'/');
    key.extend_from_slice(file.as_bytes());
    key
}

/// The identity an entry stands for, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: i64,
    ino: i64,
    size: i64,
    mtime_ns: i64,
    ctime_ns: i64,
}

fn nanos((secs, nanos): (i64, i64)) -> Option<i64> {
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

impl Identity {
    fn of(stamp: &Stamp) -> Option<Identity> {
        Some(Identity {
            dev: stamp.dev as i64,
            ino: stamp.ino as i64,
            size: i64::try_from(stamp.size).ok()?,
            mtime_ns: nanos(stamp.mtime)?,
            ctime_ns: nanos(stamp.ctime)?,
        })
    }
}

fn unix_nanos(t: SystemTime) -> Option<i64> {
    let d = t.duration_since(UNIX_EPOCH).ok()?;
    i64::try_from(d.as_nanos()).ok()
}

/// Whether an entry recorded at `recorded` for `stamp` proves the bytes
/// the file has now: its last change lies a whole granularity before the
/// moment the bytes were read (any later change moves a time past it).
fn trusted(stamp: &Stamp, recorded_ns: i64, granularity: Duration) -> bool {
    let Ok(recorded) = u64::try_from(recorded_ns) else {
        return false;
    };
    racy::settled(
        stamp,
        UNIX_EPOCH + Duration::from_nanos(recorded),
        granularity,
    )
}

/// The pages as stored: per page the offset's step from the last page's,
/// the text size and the JSON size, each as a LEB128 number (a typical
/// page takes 5 bytes, not 24).
fn encode_pages(pages: &[OutlinePage]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pages.len() * 6);
    let mut last = 0;
    for p in pages {
        for n in [p.offset - last, p.text_bytes, p.json_bytes] {
            put_varint(&mut out, n);
        }
        last = p.offset;
    }
    out
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn decode_pages(mut bytes: &[u8]) -> Option<Vec<OutlinePage>> {
    let mut next = || -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = bytes.split_first()?;
            bytes = rest;
            n |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(n);
            }
        }
        None
    };
    let mut pages = Vec::new();
    let mut offset = 0u64;
    while let Some(step) = next() {
        offset = offset.checked_add(step)?;
        pages.push(OutlinePage {
            offset,
            text_bytes: next()?,
            json_bytes: next()?,
        });
    }
    // A chain starts at line 1 and climbs.
    let climbs = pages.first().is_some_and(|p| p.offset == 1)
        && pages.windows(2).all(|w| w[0].offset < w[1].offset);
    climbs.then_some(pages)
}

/// One outline to store.
pub(crate) struct Record {
    pub key: Vec<u8>,
    /// Of the file the outline was made from.
    pub stamp: Stamp,
    /// When its bytes were read (or earlier).
    pub read_at: SystemTime,
    pub outline: Arc<Outline>,
}

/// What an outline depends on besides the bytes of its chapter: the path
/// root pages print, the chapter size limit, and how this build decodes,
/// pages and renders — the outlines of a few fixed probe texts, so that a
/// build that pages or sizes differently never trusts another's entries.
pub(crate) fn profile_of(library: &Library) -> i64 {
    let mut hash = store::FNV_OFFSET;
    let mut feed = |bytes: &[u8]| hash = store::fnv1a(bytes, hash);
    feed(&store::SCHEMA_VERSION.to_le_bytes());
    feed(library.display_path("", "").as_bytes());
    feed(&library.max_chapter_bytes.to_le_bytes());
    for (i, bytes) in probe_texts().iter().enumerate() {
        let decoded = novelfs_library::decode::decode_text(bytes);
        feed(format!("{decoded:?}").as_bytes());
        let Ok(decoded) = decoded else { continue };
        let file = format!("第{i}章 探针\"\\.txt");
        let outline = Outline::compute(
            library,
            OsStr::new("探针 book"),
            OsStr::new(&file),
            &ChapterText::new(decoded),
        );
        feed(format!("{:?}", outline.stats).as_bytes());
        feed(&encode_pages(&outline.pages));
    }
    hash as i64
}

/// Texts that exercise the decoder, the paging and the sizes: UTF-8 with
/// escapes, surrogate pairs, CRLF and a line over the cut; GBK; UTF-16
/// with and without a BOM; invalid bytes.
fn probe_texts() -> Vec<Vec<u8>> {
    let mut long = String::new();
    for i in 0..400 {
        long.push_str(&format!(
            "第{i}行：\t\"引号\" \\ 𠀀😀 <b>&amp;</b> \u{1}\r\n"
        ));
        if i % 97 == 0 {
            long.push_str(&"长".repeat(3100));
            long.push('\n');
        }
        if i % 50 == 0 {
            long.push_str("\n\n");
        }
    }
    let (gbk, _, _) = encoding_rs::GBK.encode("第一章 开始\n他说：“你好。”\n");
    let utf16: Vec<u8> = "第二章\n内容\n"
        .encode_utf16()
        .flat_map(|u| u.to_le_bytes())
        .collect();
    let mut bom = vec![0xFF, 0xFE];
    bom.extend_from_slice(&utf16);
    vec![
        long.into_bytes(),
        gbk.into_owned(),
        utf16,
        bom,
        b"\xff\xfe\xfd bad \x80\x81".to_vec(),
        Vec::new(),
        b"one line, no end".to_vec(),
    ]
}

/// A library's persistent index, open for lookups (and, when the file is
/// writable, for a `Recorder`).
pub(crate) struct PersistentIndex {
    path: PathBuf,
    root: PathBuf,
    conn: Mutex<Connection>,
    writable: bool,
    profile: i64,
    granularity: Duration,
}

impl PersistentIndex {
    /// Opens the index of `library` in `dir` (see `store::open`), with a
    /// page cache of `cache_bytes`; entries are trusted at `granularity`
    /// (`racy::granularity_of` the library).
    pub(crate) fn open(
        dir: &Path,
        library: &Library,
        cache_bytes: usize,
        granularity: Duration,
    ) -> Result<PersistentIndex, Refused> {
        let root = library.root().to_path_buf();
        let path = store::file_for(dir, &root);
        let opened = store::open(&path, &root, cache_bytes)?;
        let profile =
            profile_id(&opened.conn, profile_of(library), opened.writable).map_err(|e| {
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
            granularity,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn writable(&self) -> bool {
        self.writable
    }

    /// The stored outline of the chapter at `key` when it is trusted for
    /// the file whose stamp is `stamp` (see the module's rule). A mount
    /// and a refresh look up through a book's rows (`lookup_in`).
    #[cfg(test)]
    pub(crate) fn lookup(&self, key: &[u8], stamp: &Stamp) -> Option<Outline> {
        self.trust(&self.stored_row(key)?, stamp)
    }

    /// The row stored for the chapter at `key`.
    fn stored_row(&self, key: &[u8]) -> Option<Row> {
        let conn = lock(&self.conn);
        lookup_row(&conn, self.profile, key).unwrap_or_else(|e| {
            log::debug!("index {}: {e}", self.path.display());
            None
        })
    }

    /// The outline `row` holds when it proves the bytes of the file whose
    /// stamp is `stamp`: the same identity, recorded outside the racy
    /// window of its last change.
    fn trust(&self, row: &Row, stamp: &Stamp) -> Option<Outline> {
        self.proves(row, stamp)?;
        Some(Outline {
            pages: decode_pages(&row.pages)?,
            stats: row.stats,
        })
    }

    /// Whether `row` proves the bytes of the file whose stamp is `stamp`
    /// (see `trust`).
    fn proves(&self, row: &Row, stamp: &Stamp) -> Option<()> {
        let identity = Identity::of(stamp)?;
        (row.identity == identity && trusted(stamp, row.recorded_ns, self.granularity))
            .then_some(())
    }

    /// The row stored for `book/file`: found in `rows` (the book's, from
    /// `book_rows`) when they are held, else queried.
    fn row_in<'a>(
        &self,
        rows: &'a BookRows,
        book: &OsStr,
        file: &OsStr,
    ) -> Option<std::borrow::Cow<'a, Row>> {
        match rows {
            BookRows::Held(rows) => rows.get(file.as_bytes()).map(std::borrow::Cow::Borrowed),
            BookRows::TooMany => self
                .stored_row(&chapter_key(book, file))
                .map(std::borrow::Cow::Owned),
        }
    }

    /// The stored outline of `book/file` when it is trusted for `stamp`
    /// (`row_in`, `trust`).
    fn lookup_in(
        &self,
        rows: &BookRows,
        book: &OsStr,
        file: &OsStr,
        stamp: &Stamp,
    ) -> Option<Outline> {
        let row = self.row_in(rows, book, file)?;
        self.trust(&row, stamp)
    }

    /// The stored figures of `book/file` when its row is trusted for
    /// `stamp` (as `lookup_in`), without decoding its pages.
    fn stats_in(
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

    /// Every row of `book` (the keys `book/…`), in one query, by file
    /// name; `TooMany` past `HELD_ROWS`.
    fn book_rows(&self, book: &[u8]) -> rusqlite::Result<BookRows> {
        let conn = lock(&self.conn);
        // The limit is written into the statement: SQLite plans a LIMIT of
        // a bound parameter by its value, so binding one makes every
        // execution prepare the statement anew.
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT file, {ROW_COLUMNS} FROM chapters
             WHERE profile = ?1 AND book = (SELECT id FROM books WHERE name = ?2) LIMIT {}",
            HELD_ROWS + 1
        ))?;
        let mut rows = std::collections::HashMap::new();
        let mut query = stmt.query(rusqlite::params![self.profile, book])?;
        while let Some(r) = query.next()? {
            if rows.len() == HELD_ROWS {
                return Ok(BookRows::TooMany);
            }
            rows.insert(r.get::<_, Vec<u8>>(0)?, row_at(r, 1)?);
        }
        Ok(BookRows::Held(rows))
    }

    /// A writer of this index on its own thread (`None` when the file is
    /// read-only or cannot be opened a second time).
    fn recorder(&self, queue: usize) -> Option<Recorder> {
        if !self.writable {
            return None;
        }
        let opened = store::open(&self.path, &self.root, 256 << 10).ok()?;
        opened
            .writable
            .then(|| Recorder::start(opened.conn, self.profile, self.granularity, queue))
    }
}

#[derive(Clone)]
struct Row {
    identity: Identity,
    recorded_ns: i64,
    stats: ChapterStats,
    pages: Vec<u8>,
}

fn lookup_row(conn: &Connection, profile: i64, key: &[u8]) -> rusqlite::Result<Option<Row>> {
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

/// A chapter key's book and file (`chapter_key`: a book's name holds no `/`).
fn split_key(key: &[u8]) -> Option<(&[u8], &[u8])> {
    let slash = key.iter().position(|&b| b == b'/')?;
    Some((&key[..slash], &key[slash + 1..]))
}

/// The columns of a row that `row_at` reads, in its order.
const ROW_COLUMNS: &str =
    "dev, ino, size, mtime_ns, ctime_after_ns, recorded_after_ms, chars, lines, pages";

/// The row whose columns (`ROW_COLUMNS`) start at column `first` of `r`.
fn row_at(r: &rusqlite::Row, first: usize) -> rusqlite::Result<Row> {
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

/// The number the profile whose hash is `hash` has in this file: made
/// when the file can be written, else -1 when it has none (no row has it).
fn profile_id(conn: &Connection, hash: i64, writable: bool) -> rusqlite::Result<i64> {
    if writable {
        conn.execute("INSERT OR IGNORE INTO profiles(hash) VALUES (?1)", [hash])?;
    }
    conn.query_row("SELECT id FROM profiles WHERE hash = ?1", [hash], |r| {
        r.get(0)
    })
    .optional()
    .map(|id| id.unwrap_or(-1))
}

/// The number of the book `name` in this file, made if it has none.
fn book_id(tx: &rusqlite::Transaction, name: &[u8]) -> rusqlite::Result<i64> {
    tx.prepare_cached("INSERT OR IGNORE INTO books(name) VALUES (?1)")?
        .execute([name])?;
    tx.prepare_cached("SELECT id FROM books WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
}

/// Writes `records` in one transaction (those whose bytes were not read
/// outside the racy window, or whose identity does not fit, are left
/// out); how many were written.
fn write_batch(
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
        let mut books: std::collections::HashMap<&[u8], i64> = std::collections::HashMap::new();
        for r in records {
            let (Some(id), Some(at), Some((book, file))) = (
                Identity::of(&r.stamp),
                unix_nanos(r.read_at),
                split_key(&r.key),
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
                encode_pages(&r.outline.pages),
            ])?;
            written += 1;
        }
    }
    tx.commit()?;
    Ok(written)
}

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
    books: Mutex<std::collections::VecDeque<(Vec<u8>, Arc<BookRows>)>>,
}

/// Books whose rows are held at once: the two workers of a walk, and a
/// reader or two.
const HELD_BOOKS: usize = 4;

/// Rows of a book held at most; a bigger book is looked up row by row.
const HELD_ROWS: usize = 4096;

/// The stored rows of one book, by file name, read in one query: a walk of
/// a book (`novel_books`, a listing) asks for each of its chapters, and a
/// query per chapter, each its own read transaction with its locks on the
/// WAL's shared memory, cost more than the rest of the walk. Rows recorded
/// after the query are not seen (those chapters are decoded as without an
/// index); a row is trusted only as `PersistentIndex::lookup` trusts one.
enum BookRows {
    Held(std::collections::HashMap<Vec<u8>, Row>),
    TooMany,
}

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

    /// The index of `library` in `dir` with a page cache of `cache_bytes`;
    /// `None` (said in the log) when it cannot be used.
    pub(crate) fn open(dir: &Path, library: &Library, cache_bytes: usize) -> Option<MountIndex> {
        let granularity = racy::granularity_of(&library.novels_dir());
        match PersistentIndex::open(dir, library, cache_bytes, granularity) {
            Ok(index) => {
                let recorder = index.recorder(RECORD_QUEUE);
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
                    books: Mutex::new(std::collections::VecDeque::new()),
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
        meta: &std::fs::Metadata,
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
        meta: &std::fs::Metadata,
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
    pub(crate) fn reading(&self, meta: &std::fs::Metadata) -> Option<Reading> {
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
                outline,
            });
        }
    }
}
