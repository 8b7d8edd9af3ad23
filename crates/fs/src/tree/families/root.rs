//! The root directory and its `ERROR`: the books of `novels/` (and the
//! library's index files), or why they cannot be listed, or that
//! `novel_read` is switched off.

use std::ffi::OsStr;
use std::sync::Arc;

use crate::cache::Stamp;
use crate::error::{Error, Result};
use crate::listing::Listed;
use crate::names::ERROR_FILE;
use crate::node::{Kind, Node};
use crate::resolve;
use crate::source::{dir_mtime, stamp_of};
use novelfs_library::NovelError;
use novelfs_library::index::is_books_file;

use super::super::{Found, NovelFs, Stat, digest, index_files, listed};

pub(in crate::tree) fn stat(fs: &NovelFs) -> Stat {
    Stat::dir(dir_mtime(fs.library(), None))
}

pub(in crate::tree) fn error_stat(fs: &NovelFs) -> Result<Stat> {
    Ok(Stat::file(
        error_text(fs)?.len() as u64,
        dir_mtime(fs.library(), None),
    ))
}

/// What the root's `ERROR` says: that the switch is off, or why
/// `novels/` cannot be listed (gone, unreadable); ENOENT when neither.
fn error_text(fs: &NovelFs) -> Result<String> {
    if !fs.switched_on() {
        return Ok(NovelError::SwitchedOff.error_line());
    }
    match fs.library().unreadable_dir(None) {
        Some(e) => Ok(e.error_line()),
        None => Err(Error::NotFound),
    }
}

pub(in crate::tree) fn error_content(fs: &NovelFs) -> Result<Arc<Vec<u8>>> {
    Ok(Arc::new(error_text(fs)?.into_bytes()))
}

/// The node `name` names at the root, with its attributes.
pub(in crate::tree) fn lookup(fs: &NovelFs, name: &OsStr) -> Result<Found> {
    if name == ERROR_FILE && error_text(fs).is_ok() {
        return fs.checked(Node::RootError);
    }
    if is_books_file(name) {
        return index_files::books_found(fs, name);
    }
    fs.checked(resolve::in_root(fs.library(), name)?)
}

/// The books, then the library's index files; switched off or without a
/// readable `novels/`, only the `ERROR` saying why.
pub(in crate::tree) fn list(fs: &NovelFs) -> Result<Vec<Listed>> {
    let error = || vec![listed(Node::RootError, Kind::File, ERROR_FILE.into())];
    if !fs.switched_on() {
        return Ok(error());
    }
    let library = fs.library();
    // `novels/` gone or unreadable: the root stays, with an ERROR saying
    // why, and lists the books again once they can be.
    let names = match fs.source.book_names() {
        Ok(names) => {
            fs.unreadable.readable_again(&library.display_dir(None));
            names
        }
        Err(failed) => match library.unreadable_dir(None) {
            Some(e) => {
                fs.log_unreadable(&e);
                return Ok(error());
            }
            None => {
                return Err(Error::source_failed(failed));
            }
        },
    };
    // A reader of the root's listing (`grep -r`, `find`) comes to the
    // books next, in its order.
    library.list_ahead(names.iter().map(|n| n.as_os_str()));
    Ok(names
        .iter()
        // A book of a reserved name is reached by its aliases.
        .filter(|b| !is_books_file(b))
        .map(|b| {
            let book = Arc::from(b.as_os_str());
            listed(Node::Book { book }, Kind::Directory, b.clone())
        })
        .chain(index_files::books_listed())
        .collect())
}

/// What a listing of the root depends on: `novels/` and the switch.
pub(in crate::tree) fn listing_digest(fs: &NovelFs) -> Option<(u64, Stamp)> {
    let stamp = stamp_of(fs.library(), None)?;
    Some((digest(&(fs.switched_on(), stamp)), stamp))
}
