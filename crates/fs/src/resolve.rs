//! Names that are not byte for byte a file name (SPEC §1.3): book aliases,
//! chapter aliases, and ambiguous chapter numbers.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::SystemTime;

use novelfs_library::index::{is_books_file, is_chapters_file};
use novelfs_library::{BookIndex, Library, Lookup, NovelError};

use super::error::{Error, Result};
use super::node::{Node, chapter_ref};
use super::source::Source;

/// A name resolved in a book, with the version of the book directory it
/// was resolved in.
struct Resolved {
    version: u64,
    mtime: SystemTime,
    index: Arc<BookIndex>,
    found: Lookup,
}

/// The error of an ambiguous name, with the book version it holds for.
pub(crate) struct Ambiguity {
    pub version: u64,
    /// Of the book directory, from the same look as `version`.
    pub mtime: SystemTime,
    pub error: NovelError,
}

/// §1.3 for a name in a book that is not byte for byte a file name (such
/// a name is the chapter's own directory, never an alias).
fn resolve_other_name(source: &Source, book: &OsStr, name: &OsStr) -> Result<Resolved> {
    let now = source.book(book)?;
    if now.index.exact(name.as_bytes()).is_some() {
        return Err(Error::NotFound);
    }
    let found = now.index.find(&name.to_string_lossy());
    Ok(Resolved {
        version: now.version,
        mtime: now.mtime,
        index: now.index,
        found,
    })
}

/// What `name` in `book` is ambiguous between; ENOENT when it is not.
pub(crate) fn ambiguity(source: &Source, book: &OsStr, name: &OsStr) -> Result<Ambiguity> {
    let r = resolve_other_name(source, book, name)?;
    match r.found {
        Lookup::Ambiguous { number, indices } => Ok(Ambiguity {
            version: r.version,
            mtime: r.mtime,
            error: NovelError::Ambiguous {
                number,
                files: indices
                    .iter()
                    .map(|&i| r.index.chapters[i].file.clone())
                    .collect(),
            },
        }),
        _ => Err(Error::NotFound),
    }
}

/// The chapter file an alias in `book` names.
pub(crate) fn alias_target(source: &Source, book: &OsStr, name: &OsStr) -> Result<OsString> {
    let r = resolve_other_name(source, book, name)?;
    match r.found {
        Lookup::Found(i) => Ok(r.index.chapters[i].os_name.clone()),
        _ => Err(Error::NotFound),
    }
}

/// The book an alias in the root names (its sanitized form).
pub(crate) fn book_alias_target(library: &Library, name: &OsStr) -> Result<OsString> {
    let text = std::str::from_utf8(name.as_bytes()).map_err(|_| Error::NotFound)?;
    let target = novelfs_library::sanitize_segment(text).map_err(|_| Error::NotFound)?;
    if target.as_bytes() == name.as_bytes() || !library.is_book(OsStr::new(&target)) {
        return Err(Error::NotFound);
    }
    Ok(OsString::from(target))
}

/// The node `name` names in the root, while the switch is on (the index
/// files' names are not asked here).
///
/// An alias of a book whose own name is an index file's is that book's
/// directory, not a symlink: a symlink to the book's name would reach the
/// index file.
pub(crate) fn in_root(library: &Library, name: &OsStr) -> Result<Node> {
    Ok(if library.is_book(name) {
        Node::Book {
            book: Arc::from(name),
        }
    } else {
        let target = book_alias_target(library, name)?;
        if is_books_file(&target) {
            Node::Book {
                book: Arc::from(target.as_os_str()),
            }
        } else {
            Node::BookAlias {
                target: Arc::from(target.as_os_str()),
                name: name.into(),
            }
        }
    })
}

/// The node `name` names in `book` (the index files' names are not asked
/// here).
pub(crate) fn in_book(source: &Source, book: Arc<OsStr>, name: &OsStr) -> Result<Node> {
    let index = source.book_index(&book)?;
    if let Some(i) = index.exact(name.as_bytes()) {
        return Ok(Node::Chapter {
            chapter: chapter_ref(&book, &index.chapters[i].os_name),
        });
    }
    Ok(match index.find(&name.to_string_lossy()) {
        // Not a symlink to a name that is an index file's: the directory.
        Lookup::Found(i) if is_chapters_file(&index.chapters[i].os_name) => Node::Chapter {
            chapter: chapter_ref(&book, &index.chapters[i].os_name),
        },
        Lookup::Found(i) => Node::ChapterAlias {
            target: chapter_ref(&book, &index.chapters[i].os_name),
            name: name.into(),
        },
        Lookup::Ambiguous { .. } => Node::Ambiguous {
            book,
            name: name.into(),
        },
        Lookup::NotFound => return Err(Error::NotFound),
    })
}
