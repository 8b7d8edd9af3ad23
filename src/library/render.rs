//! The two renderings of a page (SPEC §1.6): `formatRead` text and JSON.

use serde::Serialize;

use super::page::Page;

/// Where a page came from: the names the renderings print.
#[derive(Debug, Clone, Copy)]
pub struct PageSource<'a> {
    /// The sanitized book name (the book directory's name in the mount).
    pub book: &'a str,
    /// The chapter's file name.
    pub file: &'a str,
    /// `ROOT/novels/{book}/{file}`, ROOT canonical.
    pub path: &'a str,
}

/// `formatRead(...)` followed by the final newline a page file holds.
pub fn render_text(source: &PageSource, page: &Page) -> String {
    let mut out = String::with_capacity(page.chars * 3 + 256);
    out.push_str("<path>");
    out.push_str(source.path);
    out.push_str("</path>\n<type>novel-chapter</type>\n<content>\n");
    for line in &page.lines {
        out.push_str(&line.number.to_string());
        out.push_str(": ");
        out.push_str(&line.text);
        out.push('\n');
    }
    out.push('\n');
    let last = page.last_line();
    if page.truncated {
        out.push_str(&format!(
            "(输出截断。本章共 {} 行，已显示 {}-{} 行 / {} 字。用 offset={} 继续阅读。)",
            page.total_lines, page.offset, last, page.chars, last + 1
        ));
    } else {
        out.push_str(&format!("(本章共 {} 行 / {} 字)", page.total_lines, page.chars));
    }
    out.push_str("\n</content>\n");
    out
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonPage<'a> {
    book: &'a str,
    chapter: &'a str,
    file: &'a str,
    path: &'a str,
    offset: u64,
    total_lines: u64,
    chars: usize,
    truncated: bool,
    lines: Vec<JsonLine<'a>>,
}

#[derive(Serialize)]
struct JsonLine<'a> {
    number: u64,
    text: &'a str,
}

/// `JSON.stringify(result, null, 2)` plus a final newline.
pub fn render_json(source: &PageSource, page: &Page) -> String {
    let value = JsonPage {
        book: source.book,
        chapter: source.file,
        file: source.file,
        path: source.path,
        offset: page.offset,
        total_lines: page.total_lines,
        chars: page.chars,
        truncated: page.truncated,
        lines: page.lines.iter().map(|l| JsonLine { number: l.number, text: &l.text }).collect(),
    };
    let mut out = serde_json::to_string_pretty(&value).expect("plain data serializes");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::library::page::ChapterText;

    const SRC: PageSource = PageSource { book: "书", file: "第1章.md", path: "/r/novels/书/第1章.md" };

    #[test]
    fn text_page_with_empty_line_and_footer() {
        let page = ChapterText::new("a\n\nb".into()).page(1, 400);
        assert_eq!(
            render_text(&SRC, &page),
            "<path>/r/novels/书/第1章.md</path>\n<type>novel-chapter</type>\n<content>\n1: a\n2: \n3: b\n\n(本章共 3 行 / 4 字)\n</content>\n"
        );
    }

    #[test]
    fn truncated_footer_names_the_next_offset() {
        let page = ChapterText::new("a\nb\nc".into()).page(2, 1);
        assert!(render_text(&SRC, &page).ends_with("\n2: b\n\n(输出截断。本章共 3 行，已显示 2-2 行 / 1 字。用 offset=3 继续阅读。)\n</content>\n"));
    }

    #[test]
    fn json_key_order_and_indent() {
        let page = ChapterText::new("a".into()).page(1, 400);
        assert_eq!(
            render_json(&SRC, &page),
            "{\n  \"book\": \"书\",\n  \"chapter\": \"第1章.md\",\n  \"file\": \"第1章.md\",\n  \"path\": \"/r/novels/书/第1章.md\",\n  \"offset\": 1,\n  \"totalLines\": 1,\n  \"chars\": 1,\n  \"truncated\": false,\n  \"lines\": [\n    {\n      \"number\": 1,\n      \"text\": \"a\"\n    }\n  ]\n}\n"
        );
    }
}
