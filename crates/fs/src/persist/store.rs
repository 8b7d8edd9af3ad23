//! The index file itself: where a library's lives, how it is opened (read
//! and write, or read-only when it cannot be written), its schema, and
//! what is done with a file that is corrupt or from a newer novelfs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

/// The layout of the tables (`PRAGMA user_version`). A file with a higher
/// one is from a newer novelfs and is left alone; one with a lower one is
/// made anew when it can be written (it is a cache), and not used when it
/// cannot. 3: the versions and stamps in rows are `stable_hash`'s (XXH3),
/// and page sizes are kept without their names' share (`bare`).
pub(crate) const SCHEMA_VERSION: i64 = 3;

/// How long a writer waits for another process's transaction (two mounts
/// and `novelfs index` may share the file) before giving up on a batch.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The default folder of index files: `$XDG_CACHE_HOME/novelfs`, else
/// `~/.cache/novelfs`; `None` when neither variable is set.
pub fn default_dir() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    if let Some(cache) = std::env::var_os("XDG_CACHE_HOME").and_then(absolute) {
        return Some(cache.join("novelfs"));
    }
    std::env::var_os("HOME")
        .and_then(absolute)
        .map(|home| home.join(".cache").join("novelfs"))
}

/// FNV-1a, 64 bits: stable across builds and Rust versions, unlike std's
/// hasher, since its values are written to disk.
pub(crate) fn fnv1a(bytes: &[u8], mut hash: u64) -> u64 {
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x100_0000_01b3);
    }
    hash
}

pub(crate) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// The index file of the library at the canonical path `root` in `dir`.
pub(crate) fn file_for(dir: &Path, root: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let hash = fnv1a(root.as_os_str().as_bytes(), FNV_OFFSET);
    dir.join(format!("{hash:016x}.sqlite"))
}

/// Why an index file is not used.
#[derive(Debug)]
pub enum Refused {
    /// Written by a newer novelfs (its schema version).
    Newer { path: PathBuf, version: i64 },
    /// It cannot be opened, nor made anew.
    Unusable { path: PathBuf, reason: String },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Newer { path, version } => write!(
                f,
                "index {} is from a newer novelfs (schema {version}; this one reads up to \
                 {SCHEMA_VERSION}): not used, chapters are read as without an index",
                path.display()
            ),
            Refused::Unusable { path, reason } => write!(
                f,
                "index {} cannot be used ({reason}): chapters are read as without an index",
                path.display()
            ),
        }
    }
}

impl std::error::Error for Refused {}

/// An open index file.
pub(crate) struct Opened {
    pub conn: Connection,
    pub writable: bool,
}

/// Opens (or creates) the index file at `path`, with a page cache of
/// about `cache_bytes`. A file that cannot be written is opened
/// read-only; a corrupt one is set aside (renamed `….corrupt-SECONDS`)
/// and made anew; one from a newer novelfs is refused.
pub(crate) fn open(path: &Path, root: &Path, cache_bytes: usize) -> Result<Opened, Refused> {
    let unusable = |reason: String| Refused::Unusable {
        path: path.to_path_buf(),
        reason,
    };
    let opened = match open_checked(path, root, cache_bytes) {
        Err(Failure::Corrupt(reason)) => {
            let aside = set_aside(path).map_err(|e| unusable(format!("{reason}; {e}")))?;
            log::warn!(
                "index {} is corrupt ({reason}): set aside as {}, and made anew",
                path.display(),
                aside.display()
            );
            open_checked(path, root, cache_bytes)
        }
        other => other,
    };
    opened.map_err(|f| match f {
        Failure::Newer(version) => Refused::Newer {
            path: path.to_path_buf(),
            version,
        },
        Failure::Corrupt(reason) | Failure::Other(reason) => unusable(reason),
    })
}

enum Failure {
    Corrupt(String),
    Newer(i64),
    Other(String),
}

fn failure(e: rusqlite::Error) -> Failure {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
            Failure::Corrupt(e.to_string())
        }
        _ => Failure::Other(e.to_string()),
    }
}

fn open_checked(path: &Path, root: &Path, cache_bytes: usize) -> Result<Opened, Failure> {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let opened = match open_writable_waiting(path) {
        Ok(conn) => Opened {
            conn,
            writable: true,
        },
        Err(_) if path.exists() => Opened {
            conn: open_read_only(path).map_err(failure)?,
            writable: false,
        },
        Err(e) => return Err(failure(e)),
    };
    let conn = &opened.conn;
    // In KiB when negative: SQLite's page cache counts in the budget.
    let kib = (cache_bytes / 1024).max(64) as i64;
    conn.pragma_update(None, "cache_size", -kib)
        .map_err(failure)?;
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(failure)?;
    if version > SCHEMA_VERSION {
        return Err(Failure::Newer(version));
    }
    if !opened.writable && version != SCHEMA_VERSION {
        return Err(Failure::Other(format!(
            "from an older novelfs (schema {version}) and read-only"
        )));
    }
    if opened.writable {
        make_schema(conn, root, path).map_err(failure)?;
    }
    check_root(conn, root)?;
    Ok(opened)
}

/// Reads the whole schema and the root it was made for: a file that is
/// not a database, or whose first pages are damaged, fails here.
fn check_root(conn: &Connection, root: &Path) -> Result<(), Failure> {
    use rusqlite::OptionalExtension;
    use std::os::unix::ffi::OsStrExt;
    let stored: Option<Vec<u8>> = conn
        .query_row("SELECT value FROM meta WHERE key = 'root'", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(failure)?;
    match stored {
        Some(stored) if stored != root.as_os_str().as_bytes() => Err(Failure::Other(format!(
            "made for another library, {}",
            String::from_utf8_lossy(&stored)
        ))),
        _ => Ok(()),
    }
}

/// Makes the tables, in one transaction: another process may be making
/// them at the same moment, and the statements are idempotent.
fn make_schema(conn: &Connection, root: &Path, path: &Path) -> rusqlite::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version != SCHEMA_VERSION {
        // An older layout: its entries are dropped with it (a file just
        // made has version 0 and nothing to drop).
        if version != 0 {
            log::warn!(
                "index {} is from an older novelfs (schema {version}; this one writes \
                 {SCHEMA_VERSION}): its entries are not used, and chapters are read and \
                 recorded anew",
                path.display()
            );
        }
        tx.execute_batch(
            "DROP TABLE IF EXISTS chapters;
             DROP TABLE IF EXISTS books;
             DROP TABLE IF EXISTS profiles;",
        )?;
    }
    // A row takes about 80 bytes for a chapter of a few KiB: the book's
    // name is stored once (`books`), the profile as a small number
    // (`profiles`), the ctime as its distance from the mtime (mostly 0),
    // and the moment of recording in whole milliseconds after the mtime,
    // rounded down (which only makes an entry harder to trust).
    tx.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value BLOB NOT NULL);
         CREATE TABLE IF NOT EXISTS profiles(
             id INTEGER PRIMARY KEY,
             hash INTEGER NOT NULL UNIQUE
         );
         CREATE TABLE IF NOT EXISTS books(
             id INTEGER PRIMARY KEY,
             name BLOB NOT NULL UNIQUE
         );
         CREATE TABLE IF NOT EXISTS chapters(
             profile INTEGER NOT NULL,
             book INTEGER NOT NULL,
             file BLOB NOT NULL,
             dev INTEGER NOT NULL,
             ino INTEGER NOT NULL,
             size INTEGER NOT NULL,
             mtime_ns INTEGER NOT NULL,
             ctime_after_ns INTEGER NOT NULL,
             recorded_after_ms INTEGER NOT NULL,
             chars INTEGER NOT NULL,
             lines INTEGER NOT NULL,
             pages BLOB NOT NULL,
             PRIMARY KEY(profile, book, file)
         ) WITHOUT ROWID;
         PRAGMA user_version = {SCHEMA_VERSION};"
    ))?;
    tx.execute(
        "INSERT OR IGNORE INTO meta(key, value) VALUES('root', ?1)",
        [root.as_os_str().as_bytes()],
    )?;
    tx.commit()
}

/// `open_writable`, waiting while another process holds the file: making
/// it a WAL file takes a lock that SQLite's busy handler does not wait
/// for, and a writable file that is busy must not be taken for a
/// read-only one.
fn open_writable_waiting(path: &Path) -> rusqlite::Result<Connection> {
    let until = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match open_writable(path) {
            Err(e)
                if matches!(
                    e.sqlite_error_code(),
                    Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
                ) && std::time::Instant::now() < until =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

fn open_writable(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    if conn.is_readonly(rusqlite::MAIN_DB)? {
        // SQLite opens a write-protected file read-only without a word.
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_READONLY),
            None,
        ));
    }
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // A writable file can still sit in a folder that is not (no room for
    // the WAL beside it): that fails here, and the file is read only.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

/// A file that cannot be written, e.g. shipped beside a library image on
/// a read-only medium: opened `immutable`, since SQLite cannot make the
/// WAL's shared-memory file beside it, and nothing can change it.
fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    let uri = format!(
        "file:{}?mode=ro&immutable=1",
        uri_escape(&path.to_string_lossy())
    );
    Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

fn uri_escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '%' | '?' | '#' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Renames a corrupt file (and its WAL and shared-memory files) out of the
/// way; the new name says when.
fn set_aside(path: &Path) -> std::io::Result<PathBuf> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let aside = PathBuf::from(format!("{}.corrupt-{secs}", path.display()));
    std::fs::rename(path, &aside)?;
    for suffix in ["-wal", "-shm"] {
        let side = PathBuf::from(format!("{}{suffix}", path.display()));
        let _ = std::fs::remove_file(side);
    }
    Ok(aside)
}
