//! A page with the names it is rendered with, its two renderings, and
//! its rendered size computed from line sizes alone.

use std::ffi::OsStr;

use crate::{ChapterText, Library, NovelError, Page, PageOrigin, render};

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

impl PageFormat {
    /// The extension of a page file in this format (`offset-1.txt`).
    pub fn extension(self) -> &'static str {
        match self {
            PageFormat::Text => "txt",
            PageFormat::Json => "json",
        }
    }
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
        let [(text_len, json_len)] = self.page_lens(book, file, text, &[offset], limit)[..] else {
            unreachable!("one length pair per offset")
        };
        match format {
            PageFormat::Text => text_len,
            PageFormat::Json => json_len,
        }
    }

    /// `page_len` of the page at each of `offsets` with `limit`, in both
    /// formats (text, JSON): the names and each page's lines are worked
    /// out once for both, which outlining every chapter of a library
    /// repeated per page and format.
    pub fn page_lens(
        &self,
        book: &OsStr,
        file: &OsStr,
        text: &ChapterText,
        offsets: &[u64],
        limit: u32,
    ) -> Vec<(u64, u64)> {
        let (text_names, json_names) = self.names_lens(book, file);
        let total = text.total_lines();
        offsets
            .iter()
            .map(|&offset| {
                let layout = text.layout(offset, limit);
                let lines = text.line_stats(&layout);
                (
                    text_names + render::text_page_len(total, &layout, lines) as u64,
                    json_names + render::json_page_len(total, &layout, lines) as u64,
                )
            })
            .collect()
    }

    /// What the names a page of `file` in `book` prints (the book, the
    /// file and its path under this library's root) add to its size, in
    /// bytes, as text and as JSON: the only part of a page's size that
    /// depends on the names and on `with_path_root`.
    pub fn names_lens(&self, book: &OsStr, file: &OsStr) -> (u64, u64) {
        let book = book.to_string_lossy();
        let file = file.to_string_lossy();
        let path = self.display_path(&book, &file);
        let source = PageOrigin {
            book: &book,
            file: &file,
            path: &path,
        };
        (
            render::text_names_len(&source) as u64,
            render::json_names_len(&source) as u64,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::READ_LIMIT;

    /// What `Outline::compute` lists (`page_lens`) is the length of each
    /// page rendered in each format, for names that JSON escapes.
    #[test]
    fn page_lens_are_the_rendered_pages_lengths() {
        let lib = crate::backing::for_tests::library_at("/");
        let mut text = String::new();
        for i in 0..1500 {
            text.push_str(&format!("第{i}行 \"引\" \\ 😀{}\n", "长".repeat(i % 7)));
        }
        let text = ChapterText::new(text);
        let chain = text.chain();
        assert!(chain.len() > 2, "{chain:?}");
        let (book, file) = ("书 \"一\"", "第1章 \\引.md");
        let lens = lib.page_lens(
            OsStr::new(book),
            OsStr::new(file),
            &text,
            &chain,
            READ_LIMIT,
        );
        let rendered: Vec<(u64, u64)> = chain
            .iter()
            .map(|&offset| {
                let output = PageOutput {
                    book: book.to_string(),
                    file: file.to_string(),
                    path: lib.display_path(book, file),
                    page: text.page(offset, READ_LIMIT).unwrap(),
                };
                (output.text().len() as u64, output.json().len() as u64)
            })
            .collect();
        assert_eq!(lens, rendered);
    }
}
