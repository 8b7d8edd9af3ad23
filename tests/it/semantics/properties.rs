//! Property tests of the library layer (SPEC §1.2–§1.6).
//!
//! Every expected value here comes from a small model written from the spec
//! (and the seed's pseudo-code), not from running the implementation:
//! `split /\r?\n/`, the 3000-unit cut, the paging loop, the two renderings,
//! the decoding rules that apply to valid UTF-8, and `find_chapter`.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use novelfs::library::decode::decode_text;
use novelfs::library::lookup::{BookIndex, Lookup};
use novelfs::library::number::parse_chapter_number;
use novelfs::library::page::{ChapterText, Page};
use novelfs::library::render::{PageOrigin, render_json, render_text};
use novelfs::library::scan::{Chapter, chapter_order};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::RngAlgorithm;

// ---------------------------------------------------------------------------
// Constants of SPEC §1.5, typed again here on purpose.

const READ_LIMIT: u32 = 400;
const BUDGET: usize = 20_000;
const CUT: usize = 3_000;
const CUT_SUFFIX: &str = "…（行过长已裁剪）";
use crate::common::JSON_KEYS;

/// `cases` cases with the fast XorShift generator: in a debug build the
/// default ChaCha generator, not the checks, dominates the run time.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_algorithm: RngAlgorithm::XorShift,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------
// Generators.

const EMOJI: [char; 5] = ['😀', '🌙', '🀄', '𠀀', '👩'];

/// One character of a line: ASCII, CJK, emoji (surrogate pairs), and the
/// awkward ones (lone CR, tab, quotes, control characters, JS whitespace, BOM).
fn text_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => proptest::char::range(' ', '~'),
        4 => proptest::char::range('\u{4E00}', '\u{9FFF}'),
        2 => select(EMOJI.to_vec()),
        1 => select(SPECIAL.to_vec()),
    ]
}

const SPECIAL: [char; 16] = [
    '\r', '\t', '"', '\\', '\u{1}', '\u{8}', '\u{b}', '\u{c}', '\u{1f}', '\u{7f}', '\u{3000}',
    '\u{feff}', '\u{2028}', '\u{fffd}', 'é', '…',
];

/// The mix of `text_char`, drawn from a seed: generating thousands of lines
/// char by char through value trees is what makes a debug run slow.
fn seeded_chars(seed: u64, len: usize, out: &mut String) {
    let mut x = seed;
    for _ in 0..len {
        // splitmix64
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let (kind, r) = (z % 11, (z >> 8) as u32);
        out.push(match kind {
            0..=3 => char::from_u32(0x20 + r % 95).unwrap(),
            4..=7 => char::from_u32(0x4E00 + r % 0x5200).unwrap(),
            8 | 9 => EMOJI[r as usize % EMOJI.len()],
            _ => SPECIAL[r as usize % SPECIAL.len()],
        });
    }
}

#[derive(Debug, Clone)]
enum LineSpec {
    Empty,
    Short(Vec<char>),
    /// `len` characters of the same mix, from a seed.
    Seeded(u64, usize),
    /// A pattern repeated: lines of tens to thousands of units.
    Medium(Vec<char>, usize),
    /// A fill character repeated past the 3000-unit cut.
    Long(char, usize),
    /// `count` one-unit characters, then an emoji that sits on (or next to)
    /// the 3000-unit cut, then a short tail.
    NearCut(char, usize, char, Vec<char>),
}

impl LineSpec {
    fn build(&self, out: &mut String) {
        match self {
            LineSpec::Empty => {}
            LineSpec::Short(cs) => out.extend(cs),
            LineSpec::Seeded(seed, len) => seeded_chars(*seed, *len, out),
            LineSpec::Medium(pattern, n) => {
                for _ in 0..*n {
                    out.extend(pattern);
                }
            }
            LineSpec::Long(c, n) => out.extend(std::iter::repeat_n(*c, *n)),
            LineSpec::NearCut(fill, n, emoji, tail) => {
                out.extend(std::iter::repeat_n(*fill, *n));
                out.push(*emoji);
                out.extend(tail);
            }
        }
    }
}

/// Weights: (empty, short, medium, long, near-cut).
fn line_spec(w: (u32, u32, u32, u32, u32)) -> impl Strategy<Value = LineSpec> {
    prop_oneof![
        w.0 => Just(LineSpec::Empty),
        w.1 => vec(text_char(), 0..40).prop_map(LineSpec::Short),
        w.2 => (vec(text_char(), 1..8), 5usize..300).prop_map(|(p, n)| LineSpec::Medium(p, n)),
        w.3 => (text_char(), 3001usize..4500).prop_map(|(c, n)| LineSpec::Long(c, n)),
        w.4 => (select(vec!['a', '字', '"', '\r']), 2995usize..=3002, select(EMOJI.to_vec()), vec(text_char(), 0..4))
            .prop_map(|(f, n, e, t)| LineSpec::NearCut(f, n, e, t)),
    ]
}

/// Mostly short lines (many-line chapters whose pages end on the 400-line limit).
fn short_line_spec() -> impl Strategy<Value = LineSpec> {
    prop_oneof![
        30 => Just(LineSpec::Empty),
        80 => (any::<u64>(), 0usize..40).prop_map(|(seed, len)| LineSpec::Seeded(seed, len)),
        1 => (text_char(), 3001usize..4500).prop_map(|(c, n)| LineSpec::Long(c, n)),
    ]
}

/// A chapter text: lines joined by `\n` or `\r\n`, with or without a trailing line break.
fn chapter_text() -> impl Strategy<Value = String> {
    let lines = prop_oneof![
        3 => vec((line_spec((3, 8, 2, 1, 1)), any::<bool>()), 0..5),
        3 => vec((line_spec((3, 8, 3, 1, 1)), any::<bool>()), 0..80),
        // Up to 2000 lines: pages end on the 400-line limit.
        2 => vec((short_line_spec(), any::<bool>()), 0..2000),
        // Long and medium lines: pages end on the 20000-unit budget.
        2 => vec((line_spec((1, 2, 6, 1, 1)), any::<bool>()), 0..120),
    ];
    // The end: nothing, a line break, or a lone CR (which is not a break).
    (lines, 0u8..5).prop_map(|(lines, end)| {
        let mut text = String::new();
        for (i, (spec, crlf)) in lines.iter().enumerate() {
            spec.build(&mut text);
            if i + 1 < lines.len() || end >= 3 {
                text.push_str(if *crlf { "\r\n" } else { "\n" });
            }
        }
        if end == 2 {
            text.push('\r');
        }
        text
    })
}

fn name_string() -> impl Strategy<Value = String> {
    vec(text_char(), 0..12).prop_map(|v| v.into_iter().collect())
}

// ---------------------------------------------------------------------------
// The model of SPEC §1.5 / §1.6.

fn u16len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// `text.split(/\r?\n/)`: split on LF; a CR right before an LF belongs to the break.
fn split_lines(text: &str) -> Vec<String> {
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

fn model_total_lines(text: &str) -> u64 {
    if text.is_empty() {
        0
    } else {
        split_lines(text).len() as u64
    }
}

/// The 3000-unit cut: first 3000 UTF-16 units (a lone half of a split pair
/// becomes U+FFFD) plus the suffix.
fn shown(line: &str) -> String {
    let units: Vec<u16> = line.encode_utf16().collect();
    if units.len() <= CUT {
        return line.to_string();
    }
    String::from_utf16_lossy(&units[..CUT]) + CUT_SUFFIX
}

#[derive(Debug, PartialEq)]
struct ModelPage {
    offset: u64,
    total_lines: u64,
    chars: usize,
    truncated: bool,
    lines: Vec<(u64, String)>,
}

/// The seed's paging loop, as written there.
fn model_page(all: &[String], total_lines: u64, offset: u64, limit: u32) -> ModelPage {
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
fn js_quote(s: &str) -> String {
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

// ---------------------------------------------------------------------------
// Decoding (SPEC §1.4).

/// The WHATWG UTF-16 decoder: unpaired surrogates become U+FFFD; a dangling
/// odd byte is one more U+FFFD, unless a lead surrogate is already pending
/// at the end (then both are a single error).
fn whatwg_utf16(bytes: &[u8], little_endian: bool) -> String {
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|p| {
            if little_endian {
                u16::from_le_bytes([p[0], p[1]])
            } else {
                u16::from_be_bytes([p[0], p[1]])
            }
        })
        .collect();
    let mut out: String = char::decode_utf16(units.iter().copied())
        .map(|r| r.unwrap_or('\u{FFFD}'))
        .collect();
    let pending_lead = units.last().is_some_and(|u| (0xD800..0xDC00).contains(u));
    if bytes.len() % 2 == 1 && !pending_lead {
        out.push('\u{FFFD}');
    }
    out
}

/// Rule 2's test: NUL bytes are more than 5% of the file.
fn nul_heavy(bytes: &[u8]) -> Option<bool> {
    let (mut odd, mut even) = (0usize, 0usize);
    for (i, &b) in bytes.iter().enumerate() {
        if b == 0 {
            if i % 2 == 1 { odd += 1 } else { even += 1 }
        }
    }
    // nul / len > 0.05, in integers.
    ((odd + even) * 20 > bytes.len()).then_some(odd >= even)
}

fn gbk(bytes: &[u8]) -> Option<String> {
    encoding_rs::GBK
        .decode_without_bom_handling_and_without_replacement(bytes)
        .map(|c| c.into_owned())
}

fn nul_rich_string() -> impl Strategy<Value = String> {
    let c = prop_oneof![
        3 => Just('\0'),
        3 => proptest::char::range('a', 'z'),
        2 => proptest::char::range('\u{4E00}', '\u{9FFF}'),
        1 => select(EMOJI.to_vec()),
        1 => Just('\u{feff}'),
        1 => any::<char>(),
    ];
    (proptest::option::of(Just('\u{feff}')), vec(c, 0..60))
        .prop_map(|(bom, cs)| bom.into_iter().chain(cs).collect())
}

/// Valid UTF-8 of `20k` bytes with `k - 1`, `k` or `k + 1` NULs: right at
/// rule 2's "more than 5%".
fn nul_boundary_string() -> impl Strategy<Value = String> {
    (
        1usize..=6,
        0usize..3,
        vec(proptest::char::range('a', 'z'), 120),
        vec(any::<Index>(), 7),
    )
        .prop_map(|(k, d, letters, at)| {
            let len = 20 * k;
            let mut cs: Vec<char> = letters[..len].to_vec();
            let nuls = (k + d).saturating_sub(1);
            let mut placed = 0;
            for ix in at.iter().cycle().take(len * 8) {
                if placed == nuls {
                    break;
                }
                let i = ix.index(len);
                if cs[i] != '\0' {
                    cs[i] = '\0';
                    placed += 1;
                } else if let Some(j) = cs.iter().position(|&c| c != '\0') {
                    cs[j] = '\0';
                    placed += 1;
                }
            }
            cs.into_iter().collect()
        })
}

fn byte_soup() -> impl Strategy<Value = Vec<u8>> {
    let prefix = select(vec![
        &b""[..],
        b"\xEF\xBB\xBF",
        b"\xFF\xFE",
        b"\xFE\xFF",
        b"\x00",
        b"\xFF",
    ]);
    let body = prop_oneof![
        vec(any::<u8>(), 0..64),
        vec(
            select(vec![
                0u8, 0x41, 0x4E, 0xD8, 0xDC, 0x81, 0xFF, 0xFE, 0x30, 0x0A
            ]),
            0..64
        ),
        // Valid GBK, possibly cut short.
        (
            vec(proptest::char::range('\u{4E00}', '\u{9FA5}'), 0..20),
            any::<bool>()
        )
            .prop_map(|(cs, cut)| {
                let s: String = cs.into_iter().collect();
                let mut b = encoding_rs::GBK.encode(&s).0.into_owned();
                if cut {
                    b.pop();
                }
                b
            }),
    ];
    (prefix, body).prop_map(|(p, b)| [p, &b[..]].concat())
}

proptest! {
    #![proptest_config(config(512))]

    /// Valid UTF-8 (any `String`): rule 1 (a UTF-8 BOM) strips the BOM;
    /// `FF FE` / `FE FF` never start valid UTF-8; rule 2 (more than 5% NUL)
    /// reads UTF-16; otherwise rule 3 returns the text unchanged.
    #[test]
    fn decoding_valid_utf8(s in prop_oneof![any::<String>(), nul_rich_string(), nul_boundary_string()]) {
        let bytes = s.as_bytes();
        let got = decode_text(bytes);
        let want = if let Some(rest) = s.strip_prefix('\u{feff}') {
            rest.to_string()
        } else if let Some(le) = nul_heavy(bytes) {
            whatwg_utf16(bytes, le)
        } else {
            s.clone()
        };
        prop_assert_eq!(got, Ok(want));
    }

    /// Arbitrary bytes never panic, and every rule that can be stated
    /// without the UTF-16 scoring of rule 4 holds exactly.
    #[test]
    fn decoding_arbitrary_bytes(bytes in prop_oneof![vec(any::<u8>(), 0..300), byte_soup()]) {
        let got = decode_text(&bytes);
        if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
            prop_assert_eq!(got, Ok(String::from_utf8_lossy(rest).into_owned()));
        } else if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
            // The LE-BOM quirk: an odd last byte is dropped.
            prop_assert_eq!(got, Ok(whatwg_utf16(&rest[..rest.len() & !1], true)));
        } else if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
            prop_assert_eq!(got, Ok(whatwg_utf16(rest, false)));
        } else if let Some(le) = nul_heavy(&bytes) {
            prop_assert_eq!(got, Ok(whatwg_utf16(&bytes, le)));
        } else if let Ok(s) = std::str::from_utf8(&bytes) {
            prop_assert_eq!(got, Ok(s.to_string()));
        } else if bytes.len() < 8 || bytes.len() % 2 == 1 {
            // Rule 4 does not apply: GBK or an error without the UTF-16 hint.
            match gbk(&bytes) {
                Some(text) => prop_assert_eq!(got, Ok(text)),
                None => prop_assert!(matches!(got, Err(e) if !e.utf16_suspected)),
            }
        } else {
            match got {
                Ok(text) => prop_assert!(
                    text == whatwg_utf16(&bytes, true) || text == whatwg_utf16(&bytes, false) || Some(&text) == gbk(&bytes).as_ref(),
                    "rule 4 or 5 result expected"
                ),
                Err(_) => prop_assert!(gbk(&bytes).is_none(), "an error although GBK decodes"),
            }
        }
    }

    /// `FF FE` + UTF-16LE of any text (+ a stray byte) is that text; `FE FF`
    /// + UTF-16BE + a stray byte is the text and one U+FFFD.
    #[test]
    fn decoding_utf16_with_bom(s in any::<String>(), stray in proptest::option::of(any::<u8>())) {
        let mut le = b"\xFF\xFE".to_vec();
        le.extend(s.encode_utf16().flat_map(u16::to_le_bytes));
        le.extend(stray);
        prop_assert_eq!(decode_text(&le), Ok(s.clone()));
        let mut be = b"\xFE\xFF".to_vec();
        be.extend(s.encode_utf16().flat_map(u16::to_be_bytes));
        be.extend(stray);
        let want = if stray.is_some() { format!("{s}\u{FFFD}") } else { s.clone() };
        prop_assert_eq!(decode_text(&be), Ok(want));
    }
}

// ---------------------------------------------------------------------------
// Chapter numbers (SPEC §1.2).

/// A chapter number written the way `cjk_to_number` reads it (1..=9999).
fn cjk_numeral(n: u32) -> String {
    const D: [char; 10] = ['零', '一', '二', '三', '四', '五', '六', '七', '八', '九'];
    let digits = [
        (n / 1000, "千"),
        (n / 100 % 10, "百"),
        (n / 10 % 10, "十"),
        (n % 10, ""),
    ];
    let mut out = String::new();
    let mut pending_zero = false;
    for (d, unit) in digits {
        if d == 0 {
            pending_zero = !out.is_empty();
            continue;
        }
        if pending_zero {
            out.push('零');
            pending_zero = false;
        }
        // 10..=19 are written 十, 十一 … (cjk_to_number reads a bare unit as one of it).
        if !(out.is_empty() && d == 1 && unit == "十") {
            out.push(D[d as usize]);
        }
        out += unit;
    }
    out
}

/// ASCII `0-9 - . /` to their full-width forms (the inverse of the spec's mapping).
fn widen(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '0'..='9' | '-' | '.' | '/' => char::from_u32(c as u32 + 0xFEE0).unwrap(),
            c => c,
        })
        .collect()
}

fn name_like() -> impl Strategy<Value = String> {
    let c = prop_oneof![
        3 => proptest::char::range('0', '9'),
        2 => select(vec!['第', '章', '回', '话', '-', '.', '_', ' ', '—', '\u{3000}', '/']),
        1 => select("零一二三四五六七八九十百千万两".chars().collect::<Vec<_>>()),
        1 => proptest::char::range('\u{FF0D}', '\u{FF19}'),
        1 => proptest::char::range('a', 'z'),
        1 => any::<char>(),
    ];
    let ext = select(vec!["", ".md", ".txt", ".MD", ".markdown", ".x"]);
    (vec(c, 0..30), ext).prop_map(|(cs, ext)| cs.into_iter().collect::<String>() + ext)
}

proptest! {
    #![proptest_config(config(512))]

    /// Never panics; a number is a non-negative integer (JS doubles: possibly
    /// rounded or infinite for very long digit runs, never NaN).
    #[test]
    fn chapter_numbers_never_panic(s in prop_oneof![any::<String>(), name_like()]) {
        if let Some(n) = parse_chapter_number(&s) {
            prop_assert!(!n.is_nan() && n >= 0.0 && n == n.trunc(), "{:?} -> {}", s, n);
        }
        // Full-width digits and separators are mapped to ASCII first.
        prop_assert_eq!(parse_chapter_number(&widen(&s)).map(f64::to_bits), parse_chapter_number(&s).map(f64::to_bits));
    }

    /// Rule 1 at the start of the name wins, whatever follows.
    #[test]
    fn chapter_numbers_arabic(n in 0u32..=9999, width in 1usize..=4, marker in select(vec!['章', '回', '话']),
                              prefix in any::<bool>(), rest in any::<String>()) {
        let width = width.max(n.to_string().len());
        let name = format!("{}{n:0width$}{marker}{rest}.md", if prefix { "第" } else { "" });
        prop_assert_eq!(parse_chapter_number(&name), Some(n as f64), "{:?}", name);
    }

    /// Rule 5: `第<CJK numeral>章` when nothing else has a digit.
    #[test]
    fn chapter_numbers_cjk(n in 1u32..=9999, marker in select(vec!['章', '回', '话']),
                           title in vec(proptest::char::range('\u{4E00}', '\u{9FA5}'), 0..6)) {
        let title: String = title.into_iter().collect();
        let name = format!("第{}{marker} {title}.txt", cjk_numeral(n));
        prop_assert_eq!(parse_chapter_number(&name), Some(n as f64), "{:?}", name);
    }

    /// 万 is not understood: a 万 in the numeral means no number at all.
    #[test]
    fn chapter_numbers_cjk_wan(n in 1u32..=9999, at in any::<Index>(),
                               title in vec(proptest::char::range('\u{4E00}', '\u{9FA5}'), 0..6)) {
        let mut numeral: Vec<char> = cjk_numeral(n).chars().collect();
        numeral.insert(at.index(numeral.len() + 1), '万');
        let numeral: String = numeral.into_iter().collect();
        let title: String = title.into_iter().collect();
        let name = format!("第{numeral}章 {title}.md");
        prop_assert_eq!(parse_chapter_number(&name), None, "{:?}", name);
    }

    /// Rule 3 with a long digit run: the value is the JavaScript double.
    #[test]
    fn chapter_numbers_long_leading_run(digits in "[1-9][0-9]{4,30}") {
        prop_assert_eq!(parse_chapter_number(&digits), Some(digits.parse::<f64>().unwrap()));
    }
}

// ---------------------------------------------------------------------------
// Finding a chapter (SPEC §1.3).

fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

fn strip_chapter_ext<'a>(s: &'a str, exts: &[&str]) -> &'a str {
    exts.iter().find_map(|e| s.strip_suffix(e)).unwrap_or(s)
}

/// `find_chapter` written from SPEC §1.3 with linear scans.
fn model_find(chapters: &[Chapter], arg: &str) -> Lookup {
    let needle = arg.trim_matches(is_js_space);
    let lower = needle.to_lowercase();
    if let Some(i) = chapters.iter().position(|c| c.file.to_lowercase() == lower) {
        return Lookup::Found(i);
    }
    let lower_bare = strip_chapter_ext(&lower, &[".md", ".markdown", ".txt"]);
    let without_last_ext = |f: &str| -> String {
        match f.rfind('.') {
            Some(dot) if dot + 1 < f.len() => f[..dot].to_string(),
            _ => f.to_string(),
        }
    };
    if let Some(i) = chapters
        .iter()
        .position(|c| without_last_ext(&c.file).to_lowercase() == lower_bare)
    {
        return Lookup::Found(i);
    }
    if let Some(n) = parse_chapter_number(needle) {
        let hits: Vec<usize> = (0..chapters.len())
            .filter(|&i| chapters[i].number == Some(n))
            .collect();
        match hits.len() {
            0 => {}
            1 => return Lookup::Found(hits[0]),
            _ => {
                return Lookup::Ambiguous {
                    number: n,
                    indices: hits,
                };
            }
        }
    }
    let narrow: String = needle
        .chars()
        .map(|c| {
            if ('\u{FF10}'..='\u{FF19}').contains(&c) {
                char::from_u32(c as u32 - 0xFEE0).unwrap()
            } else {
                c
            }
        })
        .collect();
    if !narrow.is_empty() && narrow.bytes().all(|b| b.is_ascii_digit()) {
        return Lookup::NotFound;
    }
    chapters
        .iter()
        .position(|c| {
            c.title().to_lowercase().contains(&lower) || c.file.to_lowercase().contains(&lower)
        })
        .map_or(Lookup::NotFound, Lookup::Found)
}

fn file_name() -> impl Strategy<Value = Vec<u8>> {
    let ext = select(vec![".md", ".MD", ".txt", ".markdown", ".Markdown", ".TXT"]);
    let title = vec(
        select(vec!['a', 'B', 'c', '字', '甲', ' ', '-', '.', '_', '1']),
        0..5,
    )
    .prop_map(|v| v.into_iter().collect::<String>());
    prop_oneof![
        4 => (any::<bool>(), 0u32..25, select(vec!["章", "回", "-", " ", "."]), title.clone(), ext.clone())
            .prop_map(|(di, n, m, t, e)| format!("{}{n:02}{m}{t}{e}", if di { "第" } else { "" }).into_bytes()),
        1 => (1u32..25, title.clone(), ext.clone()).prop_map(|(n, t, e)| format!("第{}章{t}{e}", cjk_numeral(n)).into_bytes()),
        1 => (any::<String>(), ext.clone()).prop_map(|(s, e)| (s + e).into_bytes()),
        1 => (vec(any::<u8>(), 0..12), ext).prop_map(|(mut b, e)| { b.extend_from_slice(e.as_bytes()); b }),
        1 => name_like().prop_map(String::into_bytes),
    ]
}

proptest! {
    #![proptest_config(config(256))]

    /// Never panics, and agrees with the spec's steps, for arguments that are
    /// arbitrary, numbers, or taken from the file names.
    #[test]
    fn find_follows_the_spec(
        names in vec(file_name(), 0..25),
        free in vec(prop_oneof![any::<String>(), name_like(), (0u32..30).prop_map(|n| n.to_string()), (0u32..30).prop_map(|n| widen(&n.to_string()))], 0..8),
        picks in vec((any::<Index>(), 0u8..6), 0..8),
    ) {
        let mut chapters: Vec<Chapter> = names.into_iter().map(|n| Chapter::new(OsString::from_vec(n))).collect();
        chapters.sort_by(chapter_order);
        let index = BookIndex::new(chapters.clone());
        let mut args = free;
        if !chapters.is_empty() {
            for (ix, how) in picks {
                let c = &chapters[ix.index(chapters.len())];
                let file = c.file.clone();
                args.push(match how {
                    0 => file,
                    1 => file.to_uppercase(),
                    2 => format!(" \u{3000}{file}\t"),
                    3 => without_ext(&file),
                    4 => c.title().to_string(),
                    _ => file.chars().skip(1).take(3).collect(),
                });
            }
        }
        for arg in &args {
            let got = index.find(arg);
            prop_assert_eq!(&got, &model_find(&chapters, arg), "find({:?})", arg);
            match &got {
                Lookup::Found(i) => prop_assert!(*i < chapters.len()),
                Lookup::Ambiguous { number, indices } => {
                    prop_assert!(indices.len() >= 2);
                    prop_assert!(indices.iter().all(|&i| chapters[i].number == Some(*number)));
                }
                Lookup::NotFound => {}
            }
        }
        // A file name (without surrounding whitespace) always finds the
        // first chapter with that lower-cased name.
        for c in &chapters {
            if c.file.trim_matches(is_js_space) == c.file {
                let first = chapters.iter().position(|d| d.file.to_lowercase() == c.file.to_lowercase()).unwrap();
                prop_assert_eq!(index.find(&c.file), Lookup::Found(first), "find({:?})", c.file);
            }
        }
    }
}

fn without_ext(f: &str) -> String {
    match f.rfind('.') {
        Some(dot) => f[..dot].to_string(),
        None => f.to_string(),
    }
}

// ---------------------------------------------------------------------------
// A few fixed cases, so a broken generator cannot make the properties vacuous.

#[test]
fn fixed_cases_of_the_models() {
    assert_eq!(split_lines("a\r\nb\rc\r\r\n"), ["a", "b\rc\r", ""]);
    assert_eq!(model_total_lines(""), 0);
    let line = format!("{}🌙x", "a".repeat(2999));
    assert_eq!(
        shown(&line),
        format!("{}\u{FFFD}{CUT_SUFFIX}", "a".repeat(2999))
    );
    assert_eq!(u16len(&shown(&line)), 3009);
    assert_eq!(cjk_numeral(1001), "一千零一");
    assert_eq!(cjk_numeral(10), "十");
    assert_eq!(cjk_numeral(12), "十二");
    assert_eq!(cjk_numeral(2030), "二千零三十");
    assert_eq!(
        js_quote("a\"\\\u{1}\n\t\u{b}"),
        r#""a\"\\\u0001\n\t\u000b""#
    );
    assert_eq!(
        whatwg_utf16(&[0x41, 0x00, 0x3D, 0xD8, 0x07], true),
        "A\u{FFFD}"
    );
    assert_eq!(whatwg_utf16(&[0x41, 0x00, 0x07], true), "A\u{FFFD}");
    assert_eq!(
        nul_heavy(b"a\0bcdefghijklmnopqrs"),
        None,
        "exactly 5% is not more than 5%"
    );
    assert_eq!(nul_heavy(b"a\0bcdefghijklmnopqr"), Some(true));
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut counts = std::collections::BTreeSet::new();
    for _ in 0..64 {
        use proptest::strategy::ValueTree;
        let s = nul_boundary_string()
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let nuls = s.bytes().filter(|&b| b == 0).count();
        assert_eq!(s.len() % 20, 0);
        counts.insert(nuls as i64 - (s.len() / 20) as i64);
    }
    assert_eq!(
        counts.into_iter().collect::<Vec<_>>(),
        [-1, 0, 1],
        "NUL counts around 5%"
    );
}

/// The generators really produce what the properties are meant to cover: a
/// fixed-seed sample must contain pages ending on the budget, on the limit and
/// at the end, cuts through a surrogate pair, lines of exactly 3000 and 3001
/// units, lone CRs (also last), CRLFs, empty texts, trailing newlines and long chapters.
#[test]
fn generators_reach_the_edge_cases() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        config(128),
        TestRng::deterministic_rng(RngAlgorithm::XorShift),
    );
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    let mut see = |what, yes: bool| *seen.entry(what).or_default() += usize::from(yes);
    for _ in 0..128 {
        let text = chapter_text().new_tree(&mut runner).unwrap().current();
        let all = split_lines(&text);
        see("empty text", text.is_empty());
        see("trailing newline", text.ends_with('\n'));
        see(
            "no trailing newline",
            !text.is_empty() && !text.ends_with('\n'),
        );
        see("CRLF", text.contains("\r\n"));
        see(
            "lone CR kept in a line",
            all.iter().any(|l| l.contains('\r')),
        );
        see("lone CR at the end", text.ends_with('\r'));
        see("over 1200 lines", all.len() > 1200);
        see("line of 3000 units", all.iter().any(|l| u16len(l) == CUT));
        see(
            "line of 3001 units",
            all.iter().any(|l| u16len(l) == CUT + 1),
        );
        see(
            "cut through a pair",
            all.iter()
                .any(|l| shown(l).ends_with(&format!("\u{FFFD}{CUT_SUFFIX}"))),
        );
        let ct = ChapterText::new(text);
        let mut offset = 1;
        loop {
            let m = model_page(&all, ct.total_lines(), offset, READ_LIMIT);
            let last = m.lines.last().unwrap().0;
            if !m.truncated {
                see("page ends at the end", true);
                break;
            }
            see(
                "page ends on the limit",
                m.lines.len() == READ_LIMIT as usize,
            );
            see(
                "page ends on the budget",
                m.lines.len() < READ_LIMIT as usize,
            );
            offset = last + 1;
        }
    }
    eprintln!("edge cases in the sample: {seen:?}");
    for (what, n) in &seen {
        assert!(*n > 0, "the generator never produced: {what} ({seen:?})");
    }
    assert_eq!(seen.len(), 13);
}
