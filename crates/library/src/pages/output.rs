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

    /// The page at `offset` of `text` in `format`, rendered in one pass
    /// into a buffer of its size: each line is copied once, from the text,
    /// and nothing else is allocated but the chapter's path (the store
    /// thread renders every page of a `grep -r`). The bytes of
    /// `page_output(..).rendered(format)`.
    pub fn render_page(
        &self,
        book: &OsStr,
        file: &OsStr,
        text: &ChapterText,
        offset: u64,
        limit: u32,
        format: PageFormat,
    ) -> Result<Vec<u8>, NovelError> {
        self.with_origin(book, file, |source| {
            self.render_from(source, text, offset, limit, format)
        })
        .map_err(|e| self.io_error(book, file, e))
    }

    /// `render_page`, the names worked out.
    fn render_from(
        &self,
        source: &PageOrigin,
        text: &ChapterText,
        offset: u64,
        limit: u32,
        format: PageFormat,
    ) -> std::io::Result<Vec<u8>> {
        let layout = text.layout(offset, limit);
        let total_lines = text.total_lines();
        let lines = text.line_stats(&layout);
        let frame = render::PageFrame::of(total_lines, &layout);
        let mut out;
        let shown = match format {
            PageFormat::Text => {
                out = String::with_capacity(render::text_len(source, total_lines, &layout, lines));
                render::text_start(&mut out, source);
                let shown =
                    text.each_shown(&layout, |n, line| render::text_line(&mut out, n, line));
                render::text_end(&mut out, &frame);
                shown
            }
            PageFormat::Json => {
                out = String::with_capacity(render::json_len(source, total_lines, &layout, lines));
                render::json_start(&mut out, source, &frame);
                let mut first = true;
                let shown = text.each_shown(&layout, |n, line| {
                    render::json_line(&mut out, first, n, line);
                    first = false;
                });
                render::json_end(&mut out, !first);
                shown
            }
        };
        shown?;
        Ok(out.into_bytes())
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
        self.with_origin(book, file, |source| {
            (
                render::text_names_len(source) as u64,
                render::json_names_len(source) as u64,
            )
        })
    }

    /// `f` of the names a page of `file` in `book` prints: the book, the
    /// file and its path under this library's root.
    fn with_origin<R>(&self, book: &OsStr, file: &OsStr, f: impl FnOnce(&PageOrigin) -> R) -> R {
        let (book, file) = (book.to_string_lossy(), file.to_string_lossy());
        let path = self.display_path(&book, &file);
        f(&PageOrigin {
            book: &book,
            file: &file,
            path: &path,
        })
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

    #[test]
    fn a_page_rendered_in_one_pass_is_the_page_output_and_fills_its_buffer() {
        let lib = crate::backing::for_tests::library_at("/");
        let mut text = String::new();
        for i in 0..1500 {
            text.push_str(&format!(
                "第{i}行 \"引\" \\ \u{1}😀{}\n",
                "长".repeat(i % 7)
            ));
        }
        text.push_str(&"长".repeat(3100));
        let text = ChapterText::new(text);
        let (book, file) = (OsStr::new("书 \"一\""), OsStr::new("第1章 \\引.md"));
        for offset in text.chain().into_iter().chain([2, 1499, 1501]) {
            for limit in [1, 7, READ_LIMIT] {
                for format in [PageFormat::Text, PageFormat::Json] {
                    let out = lib.page_output(book, file, &text, offset, limit).unwrap();
                    let page = lib
                        .render_page(book, file, &text, offset, limit, format)
                        .unwrap();
                    assert_eq!(
                        page,
                        out.rendered(format).into_bytes(),
                        "{offset} {limit} {format:?}"
                    );
                    assert_eq!(page.capacity(), page.len(), "sized once: {offset} {limit}");
                }
            }
        }
    }
}
