//! Page sizes as rows keep them: without what the page's names add (its
//! book, its file and its path under the root pages print). The names are
//! the only part of a page's size a mount's `--path-root` changes, so a
//! row made under one root (a published index, made with none) serves a
//! mount under any other: the names' share is taken off when a row is
//! written and the mount's own is added back when it is read.

use std::ffi::OsStr;

use crate::chapter_shape::OutlinePage;
use novelfs_library::Library;

/// What the names of a chapter's pages add to each page's size, in bytes
/// of UTF-8: as text, and as JSON (escaped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NamesLen {
    pub text: u64,
    pub json: u64,
}

impl NamesLen {
    /// The names' share of the pages of `book/file` in `library`.
    pub(crate) fn of(library: &Library, book: &OsStr, file: &OsStr) -> NamesLen {
        let (text, json) = library.names_lens(book, file);
        NamesLen { text, json }
    }
}

/// `pages` without the names' share, as a row keeps them; `None` when a
/// size is smaller than its share (never for an outline of these names).
pub(super) fn bare(pages: &[OutlinePage], names: NamesLen) -> Option<Vec<OutlinePage>> {
    pages
        .iter()
        .map(|p| {
            Some(OutlinePage {
                offset: p.offset,
                text_bytes: p.text_bytes.checked_sub(names.text)?,
                json_bytes: p.json_bytes.checked_sub(names.json)?,
            })
        })
        .collect()
}

/// Pages as a row keeps them (`bare`) with the names' share added back.
pub(super) fn dressed(pages: &[OutlinePage], names: NamesLen) -> Option<Vec<OutlinePage>> {
    pages
        .iter()
        .map(|p| {
            Some(OutlinePage {
                offset: p.offset,
                text_bytes: p.text_bytes.checked_add(names.text)?,
                json_bytes: p.json_bytes.checked_add(names.json)?,
            })
        })
        .collect()
}
