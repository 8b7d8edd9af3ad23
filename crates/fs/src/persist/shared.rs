//! An index shared through the library's own storage. `novelfs index
//! --publish` records each book's rows beside the book's files in the
//! published snapshot (`rows_by_book`), and a mount that follows the
//! snapshot puts them in its own index as it first reads the book
//! (`Importer`): a fresh machine fetches the rows of the books it reads,
//! not the library's. Rows carry the stamps of the chapters they were made
//! from, and a bucket's stamps are its objects' versions, the same on
//! every machine: an imported row is used only while its chapter is the
//! object it was made from. A library published by an older novelfs has
//! its whole index as one file beside it (`PUBLISHED`, `import`).

use std::collections::{HashMap, VecDeque};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use serde_json::{Value, json};

use super::profile::profile_of;
use super::rows::{BookRows, book_id};
use super::store;
use crate::lock;
use novelfs_kit::cause::Failed;
use novelfs_library::Library;

/// Where an older novelfs published the whole index, relative to the
/// library's root.
pub const PUBLISHED: &str = ".novelfs/index.sqlite";

/// The index file of `library` in `dir`.
pub fn index_file(dir: &Path, library: &Library) -> PathBuf {
    store::file_for(dir, library.root())
}

/// Puts `bytes`, a whole index exported elsewhere, in place of the index
/// of `library` in `dir`; the file it wrote.
pub fn import(dir: &Path, library: &Library, bytes: &[u8]) -> Result<PathBuf, Failed> {
    let path = index_file(dir, library);
    let fail = |e: std::io::Error| Failed::by(format!("index {}", path.display()), e);
    std::fs::create_dir_all(dir).map_err(fail)?;
    let aside = path.with_extension("importing");
    std::fs::write(&aside, bytes).map_err(fail)?;
    for suffix in ["-wal", "-shm"] {
        let mut side = path.clone().into_os_string();
        side.push(suffix);
        let _ = std::fs::remove_file(side);
    }
    std::fs::rename(&aside, &path).map_err(fail)?;
    Ok(path)
}

/// The columns of a row as published, in order (`ctime_after_ns` and
/// `recorded_after_ms` as stored, pages as hex): a row travels as the
/// index file holds it.
const PUBLISHED_COLUMNS: &str =
    "file, dev, ino, size, mtime_ns, ctime_after_ns, recorded_after_ms, chars, lines, pages";

/// The rows of the index of `library` in `dir`, by book, as a publisher
/// records them beside each book's files: `novels/BOOK` →
/// `{"profile": HASH, "rows": [[file, dev, …, pages], …]}`. Rows of
/// another profile (another build's) are not published.
pub fn rows_by_book(dir: &Path, library: &Library) -> Result<HashMap<String, Value>, Failed> {
    let path = index_file(dir, library);
    let fail = |e: rusqlite::Error| Failed::by(format!("index {}", path.display()), e);
    let conn = Connection::open(&path).map_err(fail)?;
    let profile = profile_of(library);
    let mut stmt = conn
        .prepare(&format!(
            "SELECT b.name, {PUBLISHED_COLUMNS} FROM chapters c JOIN books b ON b.id = c.book
             WHERE c.profile = (SELECT id FROM profiles WHERE hash = ?1)"
        ))
        .map_err(fail)?;
    let mut books: HashMap<String, Vec<Value>> = HashMap::new();
    let mut rows = stmt.query([profile]).map_err(fail)?;
    while let Some(r) = rows.next().map_err(fail)? {
        let (book, file): (Vec<u8>, Vec<u8>) = (r.get(0).map_err(fail)?, r.get(1).map_err(fail)?);
        // A bucket's keys are UTF-8: a name that is not is no key's.
        let (Ok(book), Ok(file)) = (String::from_utf8(book), String::from_utf8(file)) else {
            continue;
        };
        let mut row = vec![Value::from(file)];
        for i in 2..10 {
            row.push(Value::from(r.get::<_, i64>(i).map_err(fail)?));
        }
        let pages: Vec<u8> = r.get(10).map_err(fail)?;
        row.push(Value::from(hex(&pages)));
        books
            .entry(format!("novels/{book}"))
            .or_default()
            .push(Value::from(row));
    }
    Ok(books
        .into_iter()
        .map(|(dir, mut rows)| {
            // In one order, so that a book's piece is the same bytes
            // while its rows are.
            rows.sort_by(|a, b| a[0].as_str().cmp(&b[0].as_str()));
            (dir, json!({ "profile": profile, "rows": rows }))
        })
        .collect())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}

/// The books whose rows a mount holds (`MountIndex`), shared with the
/// importer, which drops a book's when it puts new ones in the file.
pub(super) type HeldBooks = Arc<Mutex<VecDeque<(Vec<u8>, Arc<BookRows>)>>>;

/// Puts the rows published beside a book into a mount's index, on a
/// connection of its own, as the book's piece is fetched (before its
/// listing is served, so that its chapters' lookups find them).
pub(super) struct Importer {
    pub(super) conn: Mutex<Connection>,
    pub(super) path: PathBuf,
    /// The profile's number in this file, and its hash (what a publisher's
    /// rows name).
    pub(super) profile: i64,
    pub(super) profile_hash: i64,
    pub(super) held: HeldBooks,
}

impl Importer {
    /// The rows `published` (JSON, `rows_by_book`'s) of the directory
    /// `dir` (`novels/BOOK`) put in the file; rows of another profile, or
    /// of a directory that is no book, are left out.
    pub(super) fn import(&self, dir: &Path, published: &[u8]) {
        let Ok(book) = dir.strip_prefix("novels") else {
            return;
        };
        let book = book.as_os_str();
        if book.is_empty() || book.as_bytes().contains(&b'/') {
            return;
        }
        match self.put(book, published) {
            Ok(n) => log::debug!("index: {n} rows of {} taken from its piece", dir.display()),
            Err(e) => log::debug!(
                "index {}: rows of {} not taken: {e}",
                self.path.display(),
                dir.display()
            ),
        }
        lock(&self.held).retain(|(held, _)| held.as_slice() != book.as_bytes());
    }

    fn put(&self, book: &OsStr, published: &[u8]) -> Result<usize, Failed> {
        let v: Value = serde_json::from_slice(published).map_err(|e| Failed::by("not JSON", e))?;
        if v["profile"].as_i64() != Some(self.profile_hash) {
            return Ok(0);
        }
        let rows = v["rows"].as_array().ok_or(Failed::said("no rows"))?;
        let sql = |e| Failed::by("SQLite", e);
        let mut conn = lock(&self.conn);
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        let book = book_id(&tx, book.as_bytes()).map_err(sql)?;
        let mut written = 0;
        {
            let mut stmt = tx
                .prepare_cached(&format!(
                    "INSERT OR REPLACE INTO chapters (profile, book, {PUBLISHED_COLUMNS})
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
                ))
                .map_err(sql)?;
            for row in rows {
                let numbers: Option<Vec<i64>> = (1..9).map(|i| row[i].as_i64()).collect();
                let (Some(file), Some(n), Some(pages)) =
                    (row[0].as_str(), numbers, row[9].as_str().and_then(unhex))
                else {
                    continue;
                };
                stmt.execute(rusqlite::params![
                    self.profile,
                    book,
                    file.as_bytes(),
                    n[0],
                    n[1],
                    n[2],
                    n[3],
                    n[4],
                    n[5],
                    n[6],
                    n[7],
                    pages
                ])
                .map_err(sql)?;
                written += 1;
            }
        }
        tx.commit().map_err(sql)?;
        Ok(written)
    }
}
