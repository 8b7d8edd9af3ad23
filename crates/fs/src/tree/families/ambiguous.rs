//! A name that several chapters of a book share: a directory holding only
//! an `ERROR` that says which chapters.

use std::ffi::OsStr;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::listing::Listed;
use crate::names::ERROR_FILE;
use crate::node::Node;
use crate::resolve;
use crate::source::dir_mtime;

use super::super::{Found, NovelFs, Stat, error_bytes};

/// The directory exists while the name is still shared.
pub(in crate::tree) fn stat(fs: &NovelFs, book: &OsStr, name: &OsStr) -> Result<Stat> {
    resolve::ambiguity(&fs.source, book, name)?;
    Ok(Stat::dir(dir_mtime(fs.library(), Some(book))))
}

/// The `ERROR` of `version` of the book directory, while it is current.
pub(in crate::tree) fn error_stat(
    fs: &NovelFs,
    ino: u64,
    book: &OsStr,
    name: &OsStr,
    version: u64,
) -> Result<Stat> {
    match resolve::ambiguity(&fs.source, book, name) {
        Ok(a) if a.version == version => Ok(Stat::file(a.error.error_line().len() as u64, a.mtime)),
        _ => fs.older(ino),
    }
}

pub(in crate::tree) fn error_content(
    fs: &NovelFs,
    book: &OsStr,
    name: &OsStr,
    version: u64,
) -> Result<Arc<Vec<u8>>> {
    match resolve::ambiguity(&fs.source, book, name)? {
        a if a.version == version => Ok(error_bytes(&a.error)),
        _ => Err(Error::Stale),
    }
}

/// `name` in the directory of the shared name `alias`: only its `ERROR`.
pub(in crate::tree) fn lookup(
    fs: &NovelFs,
    book: Arc<OsStr>,
    alias: Box<OsStr>,
    name: &OsStr,
) -> Result<Found> {
    if name == ERROR_FILE {
        error(fs, book, alias)
    } else {
        Err(Error::NotFound)
    }
}

/// The `ERROR` of the shared name, with its attributes.
fn error(fs: &NovelFs, book: Arc<OsStr>, name: Box<OsStr>) -> Result<Found> {
    let a = resolve::ambiguity(&fs.source, &book, &name)?;
    let node = Node::AmbiguousError {
        book,
        name,
        version: a.version,
    };
    Ok(fs.error_file(node, &a.error, a.mtime))
}

pub(in crate::tree) fn list(
    fs: &NovelFs,
    book: Arc<OsStr>,
    name: Box<OsStr>,
) -> Result<Vec<Listed>> {
    Ok(vec![error(fs, book, name)?.listed_as_error()])
}
