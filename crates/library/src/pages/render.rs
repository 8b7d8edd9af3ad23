//! The two renderings of a page (SPEC §1.6): `formatRead` text and JSON.

use serde::Serialize;

use super::page::{LineStats, Page, PageLayout};

/// Where a page came from: the names the renderings print.
#[derive(Debug, Clone, Copy)]
pub struct PageOrigin<'a> {
    /// The sanitized book name (the book directory's name in the mount).
    pub book: &'a str,
    /// The chapter's file name.
    pub file: &'a str,
    /// `ROOT/novels/{book}/{file}`, ROOT canonical.
    pub path: &'a str,
}

/// `formatRead(...)` followed by the final newline a page file holds.
pub fn render_text(source: &PageOrigin, page: &Page) -> String {
    // Sized for the whole page up front: growing by doubling would leave
    // up to half of every cached page as spare capacity.
    let body: usize = page.lines.iter().map(|l| l.text.len() + 24).sum();
    let mut out = String::with_capacity(body + source.path.len() + 256);
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
    out.push_str(&footer(
        page.total_lines,
        page.offset,
        page.last_line(),
        page.chars,
        page.truncated,
    ));
    out.push_str("\n</content>\n");
    out
}

fn footer(total_lines: u64, offset: u64, last: u64, chars: usize, truncated: bool) -> String {
    if truncated {
        format!(
            "(输出截断。本章共 {total_lines} 行，已显示 {offset}-{last} 行 / {chars} 字。用 offset={} 继续阅读。)",
            last + 1
        )
    } else {
        format!("(本章共 {total_lines} 行 / {chars} 字)")
    }
}

fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

fn json_string_len(s: &str) -> usize {
    serde_json::to_string(s).map_or(0, |j| j.len())
}

/// The byte length `render_text` gives for the page `layout` of a chapter
/// whose taken lines have `lines` sizes — without rendering it, so that
/// `stat` and listings never build pages nobody reads.
pub fn text_len(
    source: &PageOrigin,
    total_lines: u64,
    layout: &PageLayout,
    lines: &[LineStats],
) -> usize {
    text_names_len(source) + text_page_len(total_lines, layout, lines)
}

/// The part of `text_len` the names make, the same for every page.
pub fn text_names_len(source: &PageOrigin) -> usize {
    "<path>".len() + source.path.len()
}

/// The part of `text_len` the page makes.
pub fn text_page_len(total_lines: u64, layout: &PageLayout, lines: &[LineStats]) -> usize {
    let head = "</path>\n<type>novel-chapter</type>\n<content>\n".len();
    let body: usize = lines
        .iter()
        .enumerate()
        .map(|(i, l)| digits(layout.offset + i as u64) + ": ".len() + l.bytes as usize + 1)
        .sum();
    let last = layout.offset + layout.taken.max(1) as u64 - 1;
    let foot = footer(
        total_lines,
        layout.offset,
        last,
        layout.chars,
        layout.truncated,
    )
    .len();
    head + body + 1 + foot + "\n</content>\n".len()
}

/// The byte length `render_json` gives, computed like `text_len`.
pub fn json_len(
    source: &PageOrigin,
    total_lines: u64,
    layout: &PageLayout,
    lines: &[LineStats],
) -> usize {
    json_names_len(source) + json_page_len(total_lines, layout, lines)
}

/// The part of `json_len` the names make, the same for every page.
pub fn json_names_len(source: &PageOrigin) -> usize {
    let file = json_string_len(source.file);
    let fields = [
        "  \"book\": ".len() + json_string_len(source.book),
        "  \"chapter\": ".len() + file,
        "  \"file\": ".len() + file,
        "  \"path\": ".len() + json_string_len(source.path),
    ];
    fields.iter().map(|f| f + ",\n".len()).sum::<usize>()
}

/// The part of `json_len` the page makes.
pub fn json_page_len(total_lines: u64, layout: &PageLayout, lines: &[LineStats]) -> usize {
    let fields = [
        "  \"offset\": ".len() + digits(layout.offset),
        "  \"totalLines\": ".len() + digits(total_lines),
        "  \"chars\": ".len() + digits(layout.chars as u64),
        "  \"truncated\": ".len() + if layout.truncated { 4 } else { 5 },
    ];
    let head: usize = "{\n".len()
        + fields.iter().map(|f| f + ",\n".len()).sum::<usize>()
        + "  \"lines\": [\n".len();
    let items: usize = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            "    {\n      \"number\": ".len()
                + digits(layout.offset + i as u64)
                + ",\n      \"text\": \"".len()
                + l.json_bytes as usize
                + "\"\n    }".len()
        })
        .sum();
    let separators = ",\n".len() * lines.len().saturating_sub(1) + "\n".len();
    head + items + separators + "  ]\n}\n".len()
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
pub fn render_json(source: &PageOrigin, page: &Page) -> String {
    let value = JsonPage {
        book: source.book,
        chapter: source.file,
        file: source.file,
        path: source.path,
        offset: page.offset,
        total_lines: page.total_lines,
        chars: page.chars,
        truncated: page.truncated,
        lines: page
            .lines
            .iter()
            .map(|l| JsonLine {
                number: l.number,
                text: &l.text,
            })
            .collect(),
    };
    let body: usize = page
        .lines
        .iter()
        .map(|l| l.text.len() + l.text.len() / 8 + 64)
        .sum();
    let mut out = Vec::with_capacity(body + source.path.len() * 2 + source.file.len() * 4 + 512);
    serde_json::to_writer_pretty(&mut out, &value).expect("plain data serializes");
    out.push(b'\n');
    // SAFETY: serde_json writes only UTF-8 (the strings it is given, whole
    // or escaped, and ASCII punctuation), as its own `to_string_pretty`
    // relies on; checking it again was a page's whole length scanned per
    // JSON page rendered.
    unsafe { String::from_utf8_unchecked(out) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pages::page::ChapterText;

    #[test]
    fn sizes_match_renderings() {
        let texts = [
            String::new(),
            "a".into(),
            "a\n\nb\r\nc\"d\\e\tf\u{1}g\u{7f}h".into(),
            format!("{}🌙🌙\n{}", "x".repeat(2999), "🌙".repeat(3000)),
            format!("\"{}\u{2}", "\\".repeat(3100)),
            (1..=950)
                .map(|i| format!("{i}. 第{i}行"))
                .collect::<Vec<_>>()
                .join("\n"),
            vec!["字".repeat(2999); 9].join("\n"),
        ];
        let src = PageOrigin {
            book: "书\"名",
            file: "第1章\t.md",
            path: "/r/novels/书\"名/第1章\t.md",
        };
        for text in texts {
            let t = ChapterText::new(text.clone());
            for offset in [1, 2, 7, 401, 900]
                .into_iter()
                .filter(|&o| t.offset_in_range(o))
            {
                for limit in [1, 3, 400] {
                    let page = t.page(offset, limit).unwrap();
                    let layout = t.layout(offset, limit);
                    let lines = t.line_stats(&layout);
                    assert_eq!(
                        text_len(&src, t.total_lines(), &layout, lines),
                        render_text(&src, &page).len(),
                        "{offset} {limit}"
                    );
                    assert_eq!(
                        json_len(&src, t.total_lines(), &layout, lines),
                        render_json(&src, &page).len(),
                        "{offset} {limit}"
                    );
                }
            }
        }
    }

    const SRC: PageOrigin = PageOrigin {
        book: "书",
        file: "第1章.md",
        path: "/r/novels/书/第1章.md",
    };

    #[test]
    fn text_page_with_empty_line_and_footer() {
        let page = ChapterText::new("a\n\nb".into()).page(1, 400).unwrap();
        assert_eq!(
            render_text(&SRC, &page),
            "<path>/r/novels/书/第1章.md</path>\n<type>novel-chapter</type>\n<content>\n1: a\n2: \n3: b\n\n(本章共 3 行 / 4 字)\n</content>\n"
        );
    }

    #[test]
    fn truncated_footer_names_the_next_offset() {
        let page = ChapterText::new("a\nb\nc".into()).page(2, 1).unwrap();
        assert!(render_text(&SRC, &page).ends_with("\n2: b\n\n(输出截断。本章共 3 行，已显示 2-2 行 / 1 字。用 offset=3 继续阅读。)\n</content>\n"));
    }

    #[test]
    fn json_key_order_and_indent() {
        let page = ChapterText::new("a".into()).page(1, 400).unwrap();
        assert_eq!(
            render_json(&SRC, &page),
            "{\n  \"book\": \"书\",\n  \"chapter\": \"第1章.md\",\n  \"file\": \"第1章.md\",\n  \"path\": \"/r/novels/书/第1章.md\",\n  \"offset\": 1,\n  \"totalLines\": 1,\n  \"chars\": 1,\n  \"truncated\": false,\n  \"lines\": [\n    {\n      \"number\": 1,\n      \"text\": \"a\"\n    }\n  ]\n}\n"
        );
    }
}
