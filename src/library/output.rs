//! A page with the names it is rendered with, its two renderings, and
//! its rendered size computed from line sizes alone.

use std::ffi::OsStr;

use super::{ChapterText, Library, NovelError, Page, PageOrigin, render};

/// A page and the names it is rendered with.
#[derive(Debug, Clone)]
pub struct PageOutput {
    pub book: String,
    pub file: String,
    pub path: String,
    pub page: Page,
}

impl PageOutput {
    pub fn source(&self) -> PageOrigin<'_> {
        PageOrigin {
            book: &self.book,
            file: &self.file,
            path: &self.path,
        }
    }
    pub fn text(&self) -> String {
        render::render_text(&self.source(), &self.page)
    }
    pub fn json(&self) -> String {
        render::render_json(&self.source(), &self.page)
    }
    pub fn rendered(&self, format: PageFormat) -> String {
        match format {
            PageFormat::Text => self.text(),
            PageFormat::Json => self.json(),
        }
    }
}

/// The two renderings of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageFormat {
    Text,
    Json,
}

impl Library {
    /// A page of `file` in `book` with the names it is rendered with.
    pub fn page_output(
        &self,
        book: &OsStr,
        file: &OsStr,
        text: &ChapterText,
        offset: u64,
        limit: u32,
    ) -> Result<PageOutput, NovelError> {
        let page = text
            .page(offset, limit)
            .map_err(|e| self.io_error(book, file, e))?;
        let book = book.to_string_lossy().into_owned();
        let file = file.to_string_lossy().into_owned();
        Ok(PageOutput {
            path: self.display_path(&book, &file),
            book,
            file,
            page,
        })
    }

    /// The byte size of that page rendered as `format`, computed from line
    /// sizes without rendering it. `offset` must be in range.
    pub fn page_len(
        &self,
        book: &OsStr,
        file: &OsStr,
        text: &ChapterText,
        offset: u64,
        limit: u32,
        format: PageFormat,
    ) -> u64 {
        let book = book.to_string_lossy();
        let file = file.to_string_lossy();
        let path = self.display_path(&book, &file);
        let source = PageOrigin {
            book: &book,
            file: &file,
            path: &path,
        };
        let layout = text.layout(offset, limit);
        let lines = text.line_stats(&layout);
        (match format {
            PageFormat::Text => render::text_len(&source, text.total_lines(), &layout, lines),
            PageFormat::Json => render::json_len(&source, text.total_lines(), &layout, lines),
        }) as u64
    }
}
