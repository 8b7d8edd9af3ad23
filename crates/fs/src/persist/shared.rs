//! An index shared through the library's own storage: `novelfs index
//! --publish` exports the index of a library as one file that a bucket
//! keeps beside it, and a fresh machine's mount imports it in place of its
//! own. Rows carry the stamps of the chapters they were made from, and a
//! bucket's stamps are its objects' versions, the same on every machine:
//! an imported row is used only while its chapter is the object it was
//! made from.

use std::path::{Path, PathBuf};

use super::store;
use novelfs_library::Library;

/// Where a published index is kept, relative to the library's root.
pub const PUBLISHED: &str = ".novelfs/index.sqlite";

/// The index file of `library` in `dir`.
pub fn index_file(dir: &Path, library: &Library) -> PathBuf {
    store::file_for(dir, library.root())
}

/// The index of `library` in `dir` as the bytes of one file, its
/// write-ahead log folded in.
pub fn export(dir: &Path, library: &Library) -> Result<Vec<u8>, String> {
    let path = index_file(dir, library);
    let fail = |e: &dyn std::fmt::Display| format!("index {}: {e}", path.display());
    let conn = rusqlite::Connection::open(&path).map_err(|e| fail(&e))?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .map_err(|e| fail(&e))?;
    drop(conn);
    std::fs::read(&path).map_err(|e| fail(&e))
}

/// Puts `bytes`, an index exported elsewhere, in place of the index of
/// `library` in `dir`; the file it wrote.
pub fn import(dir: &Path, library: &Library, bytes: &[u8]) -> Result<PathBuf, String> {
    let path = index_file(dir, library);
    let fail = |e: std::io::Error| format!("index {}: {e}", path.display());
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
