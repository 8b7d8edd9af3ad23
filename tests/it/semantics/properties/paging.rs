//! Paging (SPEC §1.5, §1.6): a model of the lines, the cut and the paging
//! loop, and both renderings of a page, against the library's.

use novelfs::library::page::{ChapterText, Page};
use novelfs::library::render::{PageOrigin, render_json, render_text};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

use super::*;

// ---------------------------------------------------------------------------
// The model of SPEC §1.5 / §1.6.

pub(super) fn u16len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// `text.split(/\r?\n/)`: split on LF; a CR right before an LF belongs to the break.
pub(super) fn split_lines(text: &str) -> Vec<String> {
    let pieces: Vec<&str> = text.split('\n').collect();
    let n = pieces.len();
    pieces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if i + 1 < n {
                p.strip_suffix('\r').unwrap_or(p)
            } else {
                p
            }
            .to_string()
        })
        .collect()
}

pub(super) fn model_total_lines(text: &str) -> u64 {
    if text.is_empty() {
        0
    } else {
        split_lines(text).len() as u64
    }
}

/// The 3000-unit cut: first 3000 UTF-16 units (a lone half of a split pair
/// becomes U+FFFD) plus the suffix.
pub(super) fn shown(line: &str) -> String {
    let units: Vec<u16> = line.encode_utf16().collect();
    if units.len() <= CUT {
        return line.to_string();
    }
    String::from_utf16_lossy(&units[..CUT]) + CUT_SUFFIX
}

#[derive(Debug, PartialEq)]
pub(super) struct ModelPage {
    offset: u64,
    total_lines: u64,
    chars: usize,
    pub(super) truncated: bool,
    pub(super) lines: Vec<(u64, String)>,
}

/// The seed's paging loop, as written there.
pub(super) fn model_page(all: &[String], total_lines: u64, offset: u64, limit: u32) -> ModelPage {
    let mut lines: Vec<(u64, String)> = Vec::new();
    let mut chars = 0;
    let mut hit_char_cap = false;
    let mut i = (offset - 1) as usize;
    while i < all.len() && lines.len() < limit as usize {
        let line = shown(&all[i]);
        let add = u16len(&line) + usize::from(!lines.is_empty());
        if chars + add > BUDGET && !lines.is_empty() {
            hit_char_cap = true;
            break;
        }
        chars += add;
        lines.push((i as u64 + 1, line));
        i += 1;
    }
    let truncated = hit_char_cap || offset - 1 + (lines.len() as u64) < total_lines;
    ModelPage {
        offset,
        total_lines,
        chars,
        truncated,
        lines,
    }
}

fn as_model(page: &Page) -> ModelPage {
    ModelPage {
        offset: page.offset,
        total_lines: page.total_lines,
        chars: page.chars,
        truncated: page.truncated,
        lines: page
            .lines
            .iter()
            .map(|l| (l.number, l.text.clone()))
            .collect(),
    }
}

/// `formatRead` plus the final newline (SPEC §1.6).
fn expected_text(path: &str, m: &ModelPage) -> String {
    let mut out = format!("<path>{path}</path>\n<type>novel-chapter</type>\n<content>\n");
    for (n, text) in &m.lines {
        out += &format!("{n}: {text}\n");
    }
    let last = m.lines.last().unwrap().0;
    out += "\n";
    if m.truncated {
        out += &format!(
            "(输出截断。本章共 {} 行，已显示 {}-{} 行 / {} 字。用 offset={} 继续阅读。)",
            m.total_lines,
            m.offset,
            last,
            m.chars,
            last + 1
        );
    } else {
        out += &format!("(本章共 {} 行 / {} 字)", m.total_lines, m.chars);
    }
    out + "\n</content>\n"
}

/// ECMAScript `QuoteJSONString` for well-formed strings.
pub(super) fn js_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out += "\\\"",
            '\\' => out += "\\\\",
            '\u{8}' => out += "\\b",
            '\u{c}' => out += "\\f",
            '\n' => out += "\\n",
            '\r' => out += "\\r",
            '\t' => out += "\\t",
            c if (c as u32) < 0x20 => out += &format!("\\u{:04x}", c as u32),
            c => out.push(c),
        }
    }
    out + "\""
}

/// `JSON.stringify(result, null, 2) + "\n"`.
fn expected_json(book: &str, file: &str, path: &str, m: &ModelPage) -> String {
    let mut out = String::from("{\n");
    out += &format!("  \"book\": {},\n", js_quote(book));
    out += &format!("  \"chapter\": {},\n", js_quote(file));
    out += &format!("  \"file\": {},\n", js_quote(file));
    out += &format!("  \"path\": {},\n", js_quote(path));
    out += &format!("  \"offset\": {},\n", m.offset);
    out += &format!("  \"totalLines\": {},\n", m.total_lines);
    out += &format!("  \"chars\": {},\n", m.chars);
    out += &format!("  \"truncated\": {},\n", m.truncated);
    out += "  \"lines\": [\n";
    for (i, (n, text)) in m.lines.iter().enumerate() {
        out += "    {\n";
        out += &format!("      \"number\": {n},\n");
        out += &format!("      \"text\": {}\n", js_quote(text));
        out += if i + 1 < m.lines.len() {
            "    },\n"
        } else {
            "    }\n"
        };
    }
    out + "  ]\n}\n"
}

/// Everything SPEC §1.5/§1.6 says about one page.
fn check_page(
    ct: &ChapterText,
    all: &[String],
    offset: u64,
    limit: u32,
    src: (&str, &str, &str),
) -> Page {
    let total = ct.total_lines();
    let page = ct.page(offset, limit).unwrap();
    let want = model_page(all, total, offset, limit);
    let got = as_model(&page);
    assert_eq!(
        got, want,
        "page(offset={offset}, limit={limit}) differs from the spec's loop"
    );

    // The individual properties, stated directly (they also hold for the model).
    let n = page.lines.len();
    assert!(n >= 1, "a page always has a line");
    assert!(n <= limit as usize, "{n} lines > limit {limit}");
    for (k, l) in page.lines.iter().enumerate() {
        assert_eq!(
            l.number,
            offset + k as u64,
            "line numbers are absolute and consecutive"
        );
    }
    let joined: Vec<&str> = page.lines.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(
        page.chars,
        u16len(&joined.join("\n")),
        "chars = UTF-16 length of lines joined by \\n"
    );
    assert!(
        page.chars <= BUDGET || n == 1,
        "chars {} > {BUDGET} with {n} lines",
        page.chars
    );
    let last = page.lines[n - 1].number;
    assert_eq!(page.last_line(), last);
    assert_eq!(
        page.truncated,
        last < total,
        "truncated iff the page ends before the last line"
    );
    if n < limit as usize && (last as usize) < all.len() {
        // Stopped early, so only because the next line would break the budget.
        let next = u16len(&shown(&all[last as usize]));
        assert!(
            page.chars + 1 + next > BUDGET,
            "page stopped at {last} with room for line {}",
            last + 1
        );
    }
    let layout = ct.layout(offset, limit);
    assert_eq!(
        (layout.offset, layout.taken, layout.chars, layout.truncated),
        (offset, n, page.chars, page.truncated)
    );

    // Renderings.
    let (book, file, path) = src;
    let source = PageOrigin { book, file, path };
    let text = render_text(&source, &page);
    assert_eq!(text, expected_text(path, &want));
    let footer = if page.truncated {
        format!("用 offset={} 继续阅读。)\n</content>\n", last + 1)
    } else {
        format!(
            "\n\n(本章共 {} 行 / {} 字)\n</content>\n",
            total, page.chars
        )
    };
    assert!(text.ends_with(&footer), "footer: want …{footer:?}");

    let json = render_json(&source, &page);
    assert_eq!(json, expected_json(book, file, path, &want));
    // Sizes known without rendering (what stat and listings use).
    let stats = ct.line_stats(&layout);
    assert_eq!(
        novelfs::library::render::text_len(&source, total, &layout, stats),
        text.len(),
        "text_len"
    );
    assert_eq!(
        novelfs::library::render::json_len(&source, total, &layout, stats),
        json.len(),
        "json_len"
    );
    let v: serde_json::Value = serde_json::from_str(&json).expect("render_json parses");
    let obj = v.as_object().expect("an object");
    assert_eq!(
        obj.keys().map(String::as_str).collect::<Vec<_>>(),
        JSON_KEYS
    );
    assert_eq!(v["book"], book);
    assert_eq!(v["chapter"], file);
    assert_eq!(v["file"], file);
    assert_eq!(v["path"], path);
    assert_eq!(v["offset"].as_u64(), Some(offset));
    assert_eq!(v["totalLines"].as_u64(), Some(total));
    assert_eq!(v["chars"].as_u64(), Some(page.chars as u64));
    assert_eq!(v["truncated"].as_bool(), Some(page.truncated));
    let lines = v["lines"].as_array().expect("lines is an array");
    assert_eq!(lines.len(), n);
    for (jl, l) in lines.iter().zip(&page.lines) {
        let keys: Vec<&str> = jl.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["number", "text"]);
        assert_eq!(jl["number"].as_u64(), Some(l.number));
        assert_eq!(jl["text"].as_str(), Some(l.text.as_str()));
    }
    page
}

const SRC: (&str, &str, &str) = ("星河", "第01章 初遇.md", "/lib/novels/星河/第01章 初遇.md");

proptest! {
    #![proptest_config(config(256))]

    /// Following `offset = last + 1` from 1 while truncated reads every line
    /// exactly once, in order, with the cut rule, and visits `chain()`.
    #[test]
    fn reading_chain_covers_every_line_once(text in chapter_text()) {
        let all = split_lines(&text);
        let total = model_total_lines(&text);
        let ct = ChapterText::new(text.clone());
        prop_assert_eq!(ct.total_lines(), total);

        let mut offsets = Vec::new();
        let mut numbers = Vec::new();
        let mut texts = Vec::new();
        let mut offset = 1u64;
        loop {
            prop_assert!(ct.offset_in_range(offset), "chain offset {} out of range", offset);
            offsets.push(offset);
            let page = check_page(&ct, &all, offset, READ_LIMIT, SRC);
            let truncated = page.truncated;
            for l in page.lines {
                numbers.push(l.number);
                texts.push(l.text);
            }
            if !truncated {
                break;
            }
            offset = *numbers.last().unwrap() + 1;
            prop_assert!(offsets.len() as u64 <= total.max(1), "the chain does not advance");
        }
        let want_numbers: Vec<u64> = (1..=total.max(1)).collect();
        prop_assert_eq!(numbers, want_numbers);
        let want_texts: Vec<String> = all.iter().map(|l| shown(l)).collect();
        prop_assert!(texts == want_texts, "line texts differ from the original lines after the cut rule");
        prop_assert_eq!(offsets, ct.chain());
    }

    /// Any valid offset with any limit 1..=400.
    #[test]
    fn random_pages_follow_the_spec(
        text in chapter_text(),
        pages in vec((any::<Index>(), 1u32..=READ_LIMIT), 1..6),
        book in name_string(),
        file in name_string(),
    ) {
        let all = split_lines(&text);
        let total = model_total_lines(&text);
        let ct = ChapterText::new(text);
        let max = total.max(1);
        prop_assert!(!ct.offset_in_range(0));
        prop_assert!(ct.offset_in_range(1));
        prop_assert!(ct.offset_in_range(max));
        prop_assert!(!ct.offset_in_range(max + 1));
        let path = format!("/r/novels/{book}/{file}");
        for (ix, limit) in pages {
            let offset = ix.index(max as usize) as u64 + 1;
            check_page(&ct, &all, offset, limit, (&book, &file, &path));
        }
    }
}
