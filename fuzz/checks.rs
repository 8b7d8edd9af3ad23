//! The invariants the fuzz targets check, one function per target.
//!
//! Shared by the libFuzzer harnesses (`fuzz/fuzz_targets/*.rs`) and by the
//! ordinary test `tests/fuzz_regressions.rs`, which runs the committed seeds
//! and every minimized crash through the same code, so CI exercises the
//! harness logic without libFuzzer. Both include this file with `#[path]`;
//! it only uses `std` and the public API of `novelfs`.
//!
//! Every function takes the raw fuzz input and panics when an invariant is
//! broken.

#![allow(dead_code)]

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use novelfs::fs::PageName;
use novelfs::library::PageFormat;
use novelfs::library::decode::decode_text;
use novelfs::library::js::{is_js_whitespace, to_lower, trim, utf16_len};
use novelfs::library::lookup::{BookIndex, Lookup};
use novelfs::library::number::{
    clean_chapter_title, normalize_width, parse_chapter_number, strip_last_extension,
};
use novelfs::library::page::{
    ChapterText, LINE_CUT, LINE_CUT_SUFFIX, MAX_OFFSET, Page, PageLine, READ_LIMIT, READ_MAX_CHARS,
};
use novelfs::library::scan::{Chapter, chapter_order};

// ---------------------------------------------------------------- decode

/// `decode`: arbitrary bytes through `decode_text` (SPEC §1.4).
pub fn decode(data: &[u8]) {
    let result = decode_text(data);
    if let Ok(text) = &result {
        // A `String` is valid UTF-8 by construction; re-validating guards
        // against an `unsafe` shortcut ever creeping into the decoder.
        assert!(std::str::from_utf8(text.as_bytes()).is_ok());
    }
    // Determinism: the same bytes always decode the same way.
    assert_eq!(decode_text(data), result);

    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    // Valid UTF-8 can start with EF BB BF but never with FF FE / FE FF.
    let nuls = data.iter().filter(|&&b| b == 0).count();
    if !data.starts_with(b"\xEF\xBB\xBF") && nuls * 20 <= data.len() {
        // Rule 1 does not apply, rule 2 needs > 5% NUL, so rule 3 returns it as is.
        assert_eq!(
            result.as_deref(),
            Ok(s),
            "valid UTF-8 without BOM, {nuls} NUL of {}",
            data.len()
        );
    }
    // Any text survives a round trip through each BOM'd encoding.
    let mut utf8 = b"\xEF\xBB\xBF".to_vec();
    utf8.extend_from_slice(data);
    assert_eq!(decode_text(&utf8).as_deref(), Ok(s), "UTF-8 with BOM");
    let mut le = b"\xFF\xFE".to_vec();
    le.extend(s.encode_utf16().flat_map(u16::to_le_bytes));
    assert_eq!(decode_text(&le).as_deref(), Ok(s), "UTF-16LE with BOM");
    let mut be = b"\xFE\xFF".to_vec();
    be.extend(s.encode_utf16().flat_map(u16::to_be_bytes));
    assert_eq!(decode_text(&be).as_deref(), Ok(s), "UTF-16BE with BOM");
}

// -------------------------------------------------------- chapter_number

/// `chapter_number`: a file name through `parse_chapter_number`,
/// `clean_chapter_title` and `Chapter::new` (SPEC §1.2).
pub fn chapter_number(data: &[u8]) {
    let name = String::from_utf8_lossy(data);
    let number = parse_chapter_number(&name);
    if let Some(n) = number {
        assert!(n >= 0.0, "negative or NaN chapter number {n} for {name:?}");
        // A chapter number is a run of ASCII digits read as a double, or a
        // CJK numeral: always integral. It is infinite only as JavaScript's
        // `parseInt` is, for a leading run of more than 308 digits (step 3).
        if n.is_finite() {
            assert_eq!(n.fract(), 0.0, "fractional chapter number {n} for {name:?}");
        } else {
            let run = longest_ascii_digit_run(&normalize_width(&name));
            assert!(
                run > 308,
                "infinite chapter number from a {run}-digit run in {name:?}"
            );
        }
    }
    let stem = strip_last_extension(&name);
    for s in [&*name, stem] {
        let title = clean_chapter_title(s);
        assert!(
            !title.starts_with(is_js_whitespace) && !title.ends_with(is_js_whitespace),
            "title {title:?} of {s:?} is not trimmed"
        );
        assert!(
            !title.contains(['_', '-', '.']),
            "separator left in title {title:?} of {s:?}"
        );
    }
    let chapter = Chapter::new(OsString::from(name.as_ref()));
    assert_eq!(chapter.file, name);
    assert_eq!(chapter.number, number);
    assert_eq!(chapter.title(), clean_chapter_title(stem));
}

fn longest_ascii_digit_run(s: &str) -> usize {
    s.split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap_or(0)
}

// ---------------------------------------------------------------- lookup

/// At most this many file names per input, to keep executions fast.
const MAX_NAMES: usize = 64;

/// `lookup`: the input is file names and a last `chapter` argument, all
/// separated by `/` (the one byte a file name cannot hold). File names are
/// raw bytes, as on disk; the argument is text.
pub fn lookup(data: &[u8]) {
    let mut pieces: Vec<&[u8]> = data.split(|&b| b == b'/').collect();
    let arg = String::from_utf8_lossy(pieces.pop().unwrap_or_default());
    let mut names: Vec<&[u8]> = Vec::new();
    for p in pieces {
        if !p.is_empty() && !p.contains(&0) && !names.contains(&p) && names.len() < MAX_NAMES {
            names.push(p);
        }
    }
    let mut chapters: Vec<Chapter> = names
        .iter()
        .map(|n| Chapter::new(OsString::from_vec(n.to_vec())))
        .collect();
    chapters.sort_by(chapter_order);
    for w in chapters.windows(2) {
        assert!(
            chapter_order(&w[0], &w[1]).is_lt(),
            "distinct names must sort strictly: {:?} {:?}",
            w[0].file,
            w[1].file
        );
    }
    let index = BookIndex::new(chapters);
    let chapters = &index.chapters;

    check_find(&index, &arg);

    for (k, c) in chapters.iter().enumerate() {
        // A name given byte for byte is that file (the filesystem's rule, §2).
        assert_eq!(index.exact(c.os_name.as_bytes()), Some(k));
        // §1.3 step 1 as an argument: a file name (that `trim` leaves alone)
        // finds the first chapter whose lower-cased name equals its lower-cased
        // form. Not necessarily the same file: `A.md`/`a.md`, or `K.md` with
        // a Kelvin sign, lower-case alike and the first in sort order wins.
        check_find(&index, &c.file);
        if trim(&c.file) == c.file {
            let lower = to_lower(&c.file);
            let first = chapters
                .iter()
                .position(|d| to_lower(&d.file) == lower)
                .unwrap();
            assert_eq!(
                index.find(&c.file),
                Lookup::Found(first),
                "exact file name {:?}",
                c.file
            );
        }
    }

    for (n, group) in index.duplicate_groups() {
        assert!(group.len() > 1);
        assert!(group.windows(2).all(|w| w[0] < w[1]));
        assert!(group.iter().all(|&i| chapters[i].number == Some(n)));
    }
}

/// `find` against a plain walk of the list written from SPEC §1.3.
fn check_find(index: &BookIndex, arg: &str) {
    let chapters = &index.chapters;
    let got = index.find(arg);
    match &got {
        Lookup::Found(i) => assert!(*i < chapters.len(), "Found({i}) of {}", chapters.len()),
        Lookup::Ambiguous { number, indices } => {
            assert!(indices.len() > 1);
            assert!(indices.iter().all(|&i| i < chapters.len()));
            assert!(indices.iter().all(|&i| chapters[i].number == Some(*number)));
        }
        Lookup::NotFound => {}
    }
    assert_eq!(
        got,
        reference_find(chapters, arg),
        "find({arg:?}) in {:?}",
        files(chapters)
    );

    // Step 3: an all-digit argument never matches a substring (`1` must not find `第11章`).
    let needle = trim(arg);
    let normalized = normalize_width(needle);
    if let Lookup::Found(i) = got
        && !normalized.is_empty()
        && normalized.bytes().all(|b| b.is_ascii_digit())
    {
        let c = &chapters[i];
        let lower = to_lower(needle);
        assert!(
            to_lower(&c.file) == lower
                || to_lower(strip_last_extension(&c.file)) == lower
                || (c.number.is_some() && c.number == parse_chapter_number(needle)),
            "all-digit {arg:?} found {:?} by substring",
            c.file
        );
    }
}

fn files(chapters: &[Chapter]) -> Vec<&str> {
    chapters.iter().map(|c| c.file.as_str()).collect()
}

/// SPEC §1.3 as a linear walk, no maps.
fn reference_find(chapters: &[Chapter], arg: &str) -> Lookup {
    let needle = trim(arg);
    let lower = to_lower(needle);
    if let Some(i) = chapters.iter().position(|c| to_lower(&c.file) == lower) {
        return Lookup::Found(i);
    }
    let mut lower_stem = lower.as_str();
    for ext in [".md", ".markdown", ".txt"] {
        if let Some(s) = lower.strip_suffix(ext) {
            lower_stem = s;
        }
    }
    if let Some(i) = chapters
        .iter()
        .position(|c| to_lower(strip_last_extension(&c.file)) == lower_stem)
    {
        return Lookup::Found(i);
    }
    if let Some(n) = parse_chapter_number(needle) {
        let same: Vec<usize> = (0..chapters.len())
            .filter(|&i| chapters[i].number == Some(n))
            .collect();
        match same.len() {
            0 => {}
            1 => return Lookup::Found(same[0]),
            _ => {
                return Lookup::Ambiguous {
                    number: n,
                    indices: same,
                };
            }
        }
    }
    let normalized = normalize_width(needle);
    if !normalized.is_empty() && normalized.bytes().all(|b| b.is_ascii_digit()) {
        return Lookup::NotFound;
    }
    chapters
        .iter()
        .position(|c| to_lower(c.title()).contains(&lower) || to_lower(&c.file).contains(&lower))
        .map_or(Lookup::NotFound, Lookup::Found)
}

// ------------------------------------------------------------- page_name

/// `page_name`: a directory entry name through `PageName::parse` (SPEC §2).
pub fn page_name(data: &[u8]) {
    if let Some(p) = PageName::parse(data) {
        assert!((1..=MAX_OFFSET).contains(&p.offset));
        assert!(p.limit.is_none_or(|l| (1..=READ_LIMIT).contains(&l)));
        // One spelling per page: the name parsed is the name printed.
        assert_eq!(p.to_name().as_bytes(), data, "{p:?}");
    }
    // The other direction: every valid page prints a name that parses back.
    let mut raw = [0u8; 11];
    let n = data.len().min(raw.len());
    raw[..n].copy_from_slice(&data[..n]);
    let offset = 1 + u64::from_le_bytes(raw[..8].try_into().unwrap()) % MAX_OFFSET;
    let limit = match u16::from_le_bytes([raw[8], raw[9]]) % (READ_LIMIT as u16 + 1) {
        0 => None,
        l => Some(u32::from(l)),
    };
    let format = if raw[10] & 1 == 0 {
        PageFormat::Text
    } else {
        PageFormat::Json
    };
    let p = PageName {
        offset,
        limit,
        format,
    };
    assert_eq!(PageName::parse(p.to_name().as_bytes()), Some(p));
}

// ---------------------------------------------------------------- paging

/// `paging`: bytes 0..8 pick the offset, 8..10 the limit, byte 10 a repeat
/// count 1..=16 (so a 4 KiB input can reach the 20000-unit budget), the rest
/// is the chapter text (lossy UTF-8). Missing header bytes count as zero.
pub fn paging(data: &[u8]) {
    let mut raw = [0u8; 11];
    let n = data.len().min(raw.len());
    raw[..n].copy_from_slice(&data[..n]);
    let repeat = 1 + usize::from(raw[10] % 16);
    let text = String::from_utf8_lossy(&data[n..]).repeat(repeat);

    let ct = ChapterText::new(text.clone());
    let total = ct.total_lines();
    let pieces = js_split_lines(&text);
    assert_eq!(
        total,
        if text.is_empty() {
            0
        } else {
            pieces.len() as u64
        }
    );

    let offset = 1 + u64::from_le_bytes(raw[..8].try_into().unwrap()) % total.max(1);
    let limit = 1 + u32::from(u16::from_le_bytes([raw[8], raw[9]])) % READ_LIMIT;
    assert!(ct.offset_in_range(offset));
    check_page(&ct, &pieces, offset, limit);

    // The reading chain a chapter directory lists: 1, then last + 1 of each
    // truncated page, ending at the first page that is not truncated.
    let chain = ct.chain();
    assert_eq!(chain[0], 1);
    for (k, &o) in chain.iter().enumerate() {
        assert!(ct.offset_in_range(o), "chain offset {o} of {total} lines");
        let page = ct
            .page(o, READ_LIMIT)
            .expect("a text in memory always pages");
        match chain.get(k + 1) {
            Some(&next) => {
                assert!(page.truncated);
                assert_eq!(next, page.last_line() + 1);
            }
            None => assert!(!page.truncated),
        }
    }
}

fn check_page(ct: &ChapterText, pieces: &[&str], offset: u64, limit: u32) {
    let page = ct
        .page(offset, limit)
        .expect("a text in memory always pages");
    assert!(
        !page.lines.is_empty(),
        "a page in range has at least one line"
    );
    assert!(
        page.lines.len() <= limit as usize,
        "{} lines, limit {limit}",
        page.lines.len()
    );
    let joined = page
        .lines
        .iter()
        .map(|l| l.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        page.chars,
        utf16_len(&joined),
        "chars is the UTF-16 length of the joined lines"
    );
    assert!(page.chars <= READ_MAX_CHARS || page.lines.len() == 1);
    for (k, line) in page.lines.iter().enumerate() {
        assert_eq!(line.number, offset + k as u64);
        assert!(utf16_len(&line.text) <= LINE_CUT + utf16_len(LINE_CUT_SUFFIX));
    }
    assert_eq!(page.total_lines, ct.total_lines());
    assert_eq!(ct.layout(offset, limit).taken, page.lines.len());
    assert_eq!(
        page,
        reference_page(pieces, ct.total_lines(), offset, limit)
    );
}

/// `text.split(/\r?\n/)`.
fn js_split_lines(text: &str) -> Vec<&str> {
    let mut pieces: Vec<&str> = text.split('\n').collect();
    let last = pieces.len() - 1;
    for p in &mut pieces[..last] {
        *p = p.strip_suffix('\r').unwrap_or(p);
    }
    pieces
}

/// The seed's paging loop (SPEC §1.5), on UTF-16 code units.
fn reference_page(pieces: &[&str], total_lines: u64, offset: u64, limit: u32) -> Page {
    let suffix: Vec<u16> = LINE_CUT_SUFFIX.encode_utf16().collect();
    let mut chars = 0usize;
    let mut lines = Vec::new();
    let mut hit_char_cap = false;
    let mut i = (offset - 1) as usize;
    while i < pieces.len() && lines.len() < limit as usize {
        let mut line: Vec<u16> = pieces[i].encode_utf16().collect();
        if line.len() > LINE_CUT {
            line.truncate(LINE_CUT);
            line.extend_from_slice(&suffix);
        }
        let add = line.len() + usize::from(!lines.is_empty());
        if chars + add > READ_MAX_CHARS && !lines.is_empty() {
            hit_char_cap = true;
            break;
        }
        chars += add;
        // A lone surrogate left by the cut is written as U+FFFD.
        lines.push(PageLine {
            number: i as u64 + 1,
            text: String::from_utf16_lossy(&line),
        });
        i += 1;
    }
    let truncated = hit_char_cap || (offset - 1 + lines.len() as u64) < total_lines;
    Page {
        offset,
        total_lines,
        chars,
        truncated,
        lines,
    }
}
