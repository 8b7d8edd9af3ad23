//! The two renderings of a page (SPEC §1.6): `formatRead` text and JSON.

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

/// What a page's renderings print around its lines.
#[derive(Debug, Clone, Copy)]
pub struct PageFrame {
    pub offset: u64,
    pub total_lines: u64,
    pub chars: usize,
    pub truncated: bool,
    /// The number of its last line (its offset when it has none).
    pub last: u64,
}

impl PageFrame {
    /// The frame of the page `layout` of a chapter of `total_lines` lines.
    pub fn of(total_lines: u64, layout: &PageLayout) -> PageFrame {
        PageFrame {
            offset: layout.offset,
            total_lines,
            chars: layout.chars,
            truncated: layout.truncated,
            last: layout.offset + layout.taken.max(1) as u64 - 1,
        }
    }
}

impl Page {
    fn frame(&self) -> PageFrame {
        PageFrame {
            offset: self.offset,
            total_lines: self.total_lines,
            chars: self.chars,
            truncated: self.truncated,
            last: self.last_line(),
        }
    }
}

/// `formatRead(...)` followed by the final newline a page file holds.
pub fn render_text(source: &PageOrigin, page: &Page) -> String {
    // Sized for the whole page up front: growing by doubling would leave
    // up to half of every cached page as spare capacity.
    let body: usize = page.lines.iter().map(|l| l.text.len() + 24).sum();
    let mut out = String::with_capacity(body + source.path.len() + 256);
    text_start(&mut out, source);
    for line in &page.lines {
        text_line(&mut out, line.number, &line.text);
    }
    text_end(&mut out, &page.frame());
    out
}

/// The text rendering's part before the lines.
pub fn text_start(out: &mut String, source: &PageOrigin) {
    out.push_str("<path>");
    out.push_str(source.path);
    out.push_str("</path>\n<type>novel-chapter</type>\n<content>\n");
}

/// One line of the text rendering.
pub fn text_line(out: &mut String, number: u64, text: &str) {
    push_number(out, number);
    out.push_str(": ");
    out.push_str(text);
    out.push('\n');
}

/// The text rendering's part after the lines.
pub fn text_end(out: &mut String, frame: &PageFrame) {
    out.push('\n');
    let _ = write_footer(out, frame);
    out.push_str("\n</content>\n");
}

fn write_footer(out: &mut impl std::fmt::Write, f: &PageFrame) -> std::fmt::Result {
    let (total_lines, chars) = (f.total_lines, f.chars);
    if f.truncated {
        write!(
            out,
            "(输出截断。本章共 {total_lines} 行，已显示 {}-{} 行 / {chars} 字。用 offset={} 继续阅读。)",
            f.offset,
            f.last,
            f.last + 1
        )
    } else {
        write!(out, "(本章共 {total_lines} 行 / {chars} 字)")
    }
}

/// The footer's length, written nowhere.
fn footer_len(frame: &PageFrame) -> usize {
    struct Count(usize);
    impl std::fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = write_footer(&mut count, frame);
    count.0
}

/// Appends `n` in decimal, as `{n}` writes it, without `format!`'s
/// machinery (every page and every page's name prints numbers).
pub fn push_number(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        out.push(d as char);
    }
}

fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// The length of `s` as a JSON string (`push_json_string`'s), quotes
/// included.
fn json_string_len(s: &str) -> usize {
    let mut len = 0;
    json_escaped(s, |piece| len += piece.len());
    len
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
    let foot = footer_len(&PageFrame::of(total_lines, layout));
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

/// `JSON.stringify(result, null, 2)` plus a final newline.
pub fn render_json(source: &PageOrigin, page: &Page) -> String {
    let body: usize = page
        .lines
        .iter()
        .map(|l| l.text.len() + l.text.len() / 8 + 64)
        .sum();
    let mut out = String::with_capacity(body + source.path.len() * 2 + source.file.len() * 4 + 512);
    json_start(&mut out, source, &page.frame());
    for (i, line) in page.lines.iter().enumerate() {
        json_line(&mut out, i == 0, line.number, &line.text);
    }
    json_end(&mut out, !page.lines.is_empty());
    out
}

/// The JSON rendering's part before the lines: the object's fields in the
/// original's order, two spaces an indent (`JSON.stringify`'s).
pub fn json_start(out: &mut String, source: &PageOrigin, frame: &PageFrame) {
    out.push_str("{\n  \"book\": ");
    push_json_string(out, source.book);
    out.push_str(",\n  \"chapter\": ");
    push_json_string(out, source.file);
    out.push_str(",\n  \"file\": ");
    push_json_string(out, source.file);
    out.push_str(",\n  \"path\": ");
    push_json_string(out, source.path);
    out.push_str(",\n  \"offset\": ");
    push_number(out, frame.offset);
    out.push_str(",\n  \"totalLines\": ");
    push_number(out, frame.total_lines);
    out.push_str(",\n  \"chars\": ");
    push_number(out, frame.chars as u64);
    out.push_str(",\n  \"truncated\": ");
    out.push_str(if frame.truncated { "true" } else { "false" });
    out.push_str(",\n  \"lines\": [");
}

/// One line of the JSON rendering (`first`: the page's first).
pub fn json_line(out: &mut String, first: bool, number: u64, text: &str) {
    out.push_str(if first { "\n" } else { ",\n" });
    out.push_str("    {\n      \"number\": ");
    push_number(out, number);
    out.push_str(",\n      \"text\": ");
    push_json_string(out, text);
    out.push_str("\n    }");
}

/// The JSON rendering's part after the lines (`any`: whether it had some).
pub fn json_end(out: &mut String, any: bool) {
    out.push_str(if any { "\n  ]\n}\n" } else { "]\n}\n" });
}

/// `s` as a JSON string, escaped as `JSON.stringify` (and serde_json)
/// escape it: the quote, the backslash and the control characters, the
/// usual five by name, the others as `\u00xx`; everything else as it is.
fn push_json_string(out: &mut String, s: &str) {
    json_escaped(s, |piece| out.push_str(piece));
}

/// `s` as a JSON string, in pieces handed to `emit` in order (the one
/// escaping rule of both the rendering and its length).
fn json_escaped(s: &str, mut emit: impl FnMut(&str)) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    emit("\"");
    let mut from = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        let named = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        // Each escaped byte is ASCII: `i` is a character boundary.
        emit(&s[from..i]);
        if named.is_empty() {
            let hex = [
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ];
            emit(std::str::from_utf8(&hex).expect("ASCII"));
        } else {
            emit(named);
        }
        from = i + 1;
    }
    emit(&s[from..]);
    emit("\"");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pages::page::ChapterText;

    #[test]
    fn decimals_are_written_as_rust_writes_them() {
        let mut n = 1u64;
        for k in [0, 1, 9, 10, 99, 100, 401, u64::MAX - 1, u64::MAX]
            .into_iter()
            .chain(std::iter::from_fn(|| {
                n = n
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                Some(n >> (n % 64))
            }))
            .take(10_000)
        {
            let mut written = String::from("x");
            push_number(&mut written, k);
            assert_eq!(written, format!("x{k}"));
        }
    }

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

    /// The JSON rendering is serde_json's pretty printing of the page
    /// (what `JSON.stringify(result, null, 2)` gives), whatever the text.
    #[test]
    fn json_rendering_is_serde_jsons() {
        #[derive(serde::Serialize)]
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
        #[derive(serde::Serialize)]
        struct JsonLine<'a> {
            number: u64,
            text: &'a str,
        }
        let every_byte: String = (0u8..0x80).map(char::from).collect();
        let texts = [
            String::new(),
            every_byte.clone(),
            format!("引\"号\\{every_byte}\u{2028}😀\u{7f}\n第二行\r\n\t"),
            "第一行\n\n第三行".to_string(),
        ];
        let src = PageOrigin {
            book: "书\"\u{1}名",
            file: "第1章\t.md",
            path: "/r/novels/书\"\u{1}名/第1章\t.md",
        };
        let serde_of = |page: &Page| {
            let value = JsonPage {
                book: src.book,
                chapter: src.file,
                file: src.file,
                path: src.path,
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
            serde_json::to_string_pretty(&value).unwrap() + "\n"
        };
        for text in texts {
            let t = ChapterText::new(text);
            for offset in t.chain() {
                let page = t.page(offset, 2).unwrap();
                assert_eq!(render_json(&src, &page), serde_of(&page));
            }
            let empty = Page {
                lines: Vec::new(),
                ..t.page(1, 1).unwrap()
            };
            assert_eq!(render_json(&src, &empty), serde_of(&empty), "no lines");
        }
    }
}
