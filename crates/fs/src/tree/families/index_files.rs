//! The index files: `novel_books.txt|json` at the root and
//! `novel_chapters.txt|json` in each book, each file a rendering of one
//! version of its sources.

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::indexes::{BookLook, Rendered};
use crate::listing::Listed;
use crate::node::{Attr, Kind, Node, UNLOOKED, books_file, chapters_file, index_format};
use crate::switch::Tool;
use novelfs_library::PageFormat;

use super::super::{Found, NovelFs, Stat, listed};

/// The library's index as the sources are now (computed if it is not
/// cached).
fn books_index(fs: &NovelFs) -> Result<Rendered> {
    fs.index_files
        .library(&fs.source, &fs.outlines, fs.switch.tool_on(Tool::Books))
}

/// A book's index as the sources are now (computed if it is not cached).
fn chapters_index(fs: &NovelFs, book: &Arc<OsStr>) -> Result<Rendered> {
    fs.index_files.book(
        &fs.source,
        &fs.outlines,
        book,
        fs.switch.tool_on(Tool::Chapters),
    )
}

/// The node and attributes of an index file in `format`, both of one
/// rendering.
fn found(
    fs: &NovelFs,
    rendered: Rendered,
    format: PageFormat,
    node: impl FnOnce(u64) -> Node,
) -> Result<Found> {
    let size = rendered.bytes(format).len() as u64;
    let node = node(rendered.version);
    let attr = fs.file_attr(&node, size, rendered.mtime);
    Ok(Found { node, attr })
}

/// `name`, a name of the library's index file, as a lookup at the root
/// finds it.
pub(in crate::tree) fn books_found(fs: &NovelFs, name: &OsStr) -> Result<Found> {
    let format = index_format(name);
    found(fs, books_index(fs)?, format, |version| Node::BooksIndex {
        format,
        version,
    })
}

/// `name`, a name of the book's index file, as a lookup in the book
/// finds it.
pub(in crate::tree) fn chapters_found(
    fs: &NovelFs,
    book: Arc<OsStr>,
    name: &OsStr,
) -> Result<Found> {
    let format = index_format(name);
    let rendered = chapters_index(fs, &book)?;
    found(fs, rendered, format, |version| Node::ChaptersIndex {
        book,
        format,
        version,
    })
}

/// An index file as a listing names it: no version, and attributes the
/// kernel may not keep (a lookup gives the real ones). Listing a
/// directory never computes an index.
fn unlooked(node: Node, name: &str) -> Listed {
    Listed {
        attr: Some(Attr {
            ino: 0,
            kind: Kind::File,
            size: 0,
            mtime: std::time::UNIX_EPOCH,
            ttl: Duration::ZERO,
        }),
        ..listed(node, Kind::File, name.into())
    }
}

/// The library's index files as the root's listing names them.
pub(in crate::tree) fn books_listed() -> [Listed; 2] {
    [PageFormat::Text, PageFormat::Json].map(|format| {
        let node = Node::BooksIndex {
            format,
            version: UNLOOKED,
        };
        unlooked(node, books_file(format))
    })
}

/// The book's index files as its listing names them. The looks the
/// listing took tell whether the cached index is current: then its files
/// are listed as a lookup would give them.
pub(in crate::tree) fn chapters_listed(
    fs: &NovelFs,
    book: &Arc<OsStr>,
    look: &BookLook,
) -> [Listed; 2] {
    let on = fs.switch.tool_on(Tool::Chapters);
    let cached = on
        .then(|| fs.index_files.cached_book(book, look.version()))
        .flatten();
    [PageFormat::Text, PageFormat::Json].map(|format| {
        let name = chapters_file(format);
        let current = cached.as_ref().map(|r| {
            let size = r.bytes(format).len() as u64;
            let node = Node::ChaptersIndex {
                book: book.clone(),
                format,
                version: r.version,
            };
            let attr = fs.file_attr(&node, size, r.mtime);
            Listed {
                attr: Some(attr),
                ..listed(node, Kind::File, name.into())
            }
        });
        current.unwrap_or_else(|| {
            let node = Node::ChaptersIndex {
                book: book.clone(),
                format,
                version: UNLOOKED,
            };
            unlooked(node, name)
        })
    })
}

/// The attributes of `version` of the library's index file, while it is
/// cached. The bytes of a version never change, nor do its attributes:
/// whether it is still current is a lookup's question.
pub(in crate::tree) fn books_stat(
    fs: &NovelFs,
    ino: u64,
    format: PageFormat,
    version: u64,
) -> Result<Stat> {
    match fs.index_files.cached_library(version) {
        Some(r) => Ok(Stat::file(r.bytes(format).len() as u64, r.mtime)),
        None => fs.older(ino),
    }
}

/// The attributes of `version` of a book's index file (as `books_stat`).
pub(in crate::tree) fn chapters_stat(
    fs: &NovelFs,
    ino: u64,
    book: &Arc<OsStr>,
    format: PageFormat,
    version: u64,
) -> Result<Stat> {
    match fs.index_files.cached_book(book, version) {
        Some(r) => Ok(Stat::file(r.bytes(format).len() as u64, r.mtime)),
        None => fs.older(ino),
    }
}

/// The bytes of `version` of the library's index file. A version that
/// left the cache is made again only while the sources are still that
/// version, never from newer ones.
pub(in crate::tree) fn books_content(
    fs: &NovelFs,
    format: PageFormat,
    version: u64,
) -> Result<Arc<Vec<u8>>> {
    let r = match fs.index_files.cached_library(version) {
        Some(r) => r,
        None => books_index(fs)?,
    };
    if r.version != version {
        return Err(Error::Stale);
    }
    Ok(r.bytes(format))
}

/// The bytes of `version` of a book's index file (as `books_content`).
pub(in crate::tree) fn chapters_content(
    fs: &NovelFs,
    book: &Arc<OsStr>,
    format: PageFormat,
    version: u64,
) -> Result<Arc<Vec<u8>>> {
    let r = match fs.index_files.cached_book(book, version) {
        Some(r) => r,
        None => chapters_index(fs, book)?,
    };
    if r.version != version {
        return Err(Error::Stale);
    }
    Ok(r.bytes(format))
}

#[cfg(test)]
mod tests;
