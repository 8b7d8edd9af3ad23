//! A chapter's outline: its reading chain with each page's sizes, and its
//! figures — what listings, `stat` and the index files need of a chapter,
//! computed once from its text.

use std::ffi::OsStr;

use crate::names::PageName;
use novelfs_library::index::ChapterStats;
use novelfs_library::{ChapterText, Library, PageFormat, READ_LIMIT};

/// One page of a chapter's reading chain and its sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutlinePage {
    pub offset: u64,
    pub text_bytes: u64,
    pub json_bytes: u64,
}

impl OutlinePage {
    /// The page's size in `format`.
    pub(crate) fn bytes(&self, format: PageFormat) -> u64 {
        match format {
            PageFormat::Text => self.text_bytes,
            PageFormat::Json => self.json_bytes,
        }
    }
}

#[derive(Debug)]
pub(crate) struct Outline {
    pub pages: Vec<OutlinePage>,
    /// The chapter's characters and lines, for the index files.
    pub stats: ChapterStats,
}

impl Outline {
    /// The size of `page` when it is a page of the chain, unlimited.
    pub(crate) fn size(&self, page: PageName) -> Option<u64> {
        if page.limit.is_some() {
            return None;
        }
        let i = self
            .pages
            .binary_search_by_key(&page.offset, |p| p.offset)
            .ok()?;
        Some(self.pages[i].bytes(page.format))
    }
}

/// The byte size of a page of `text` — computed from line sizes, never
/// by rendering it. `page.offset` must be in range.
pub(crate) fn page_len(
    library: &Library,
    book: &OsStr,
    file: &OsStr,
    page: PageName,
    text: &ChapterText,
) -> u64 {
    library.page_len(
        book,
        file,
        text,
        page.offset,
        page.limit_or_default(),
        page.format,
    )
}

impl Outline {
    /// The outline of the text of `file` in `book`: its reading chain with
    /// each page's sizes, and its figures.
    pub(crate) fn compute(
        library: &Library,
        book: &OsStr,
        file: &OsStr,
        text: &ChapterText,
    ) -> Outline {
        let chain = text.chain();
        let pages = library
            .page_lens(book, file, text, &chain, READ_LIMIT)
            .into_iter()
            .zip(&chain)
            .map(|((text_bytes, json_bytes), &offset)| OutlinePage {
                offset,
                text_bytes,
                json_bytes,
            })
            .collect::<Vec<_>>();
        Outline {
            pages,
            stats: ChapterStats::of(text),
        }
    }
}
