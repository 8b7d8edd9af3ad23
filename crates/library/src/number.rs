//! Chapter numbers and titles from file names (SPEC §1.2).
//!
//! The patterns are the original JavaScript regular expressions, rewritten so
//! that `\d` means ASCII digits and `\s` means JavaScript whitespace: Rust's
//! `\d` and `\s` are Unicode-aware and would accept e.g. Arabic-Indic digits.

use std::sync::LazyLock;

use regex::Regex;

use super::text::js::{self, JS_WHITESPACE_CLASS};

/// A chapter number as JavaScript holds it: a double. A leading run of more
/// than 15 digits is rounded, never an overflow.
pub type ChapterNumber = f64;

const CJK_NUMERALS: &str = "零一二三四五六七八九十百千万两";

fn re(pattern: &str) -> Regex {
    let pattern = pattern
        .replace(r"\s", JS_WHITESPACE_CLASS)
        .replace("CJK", CJK_NUMERALS);
    Regex::new(&pattern).expect("static pattern")
}

static NUMBERED: LazyLock<Regex> = LazyLock::new(|| re(r"第?([0-9]{1,4})[章回话]"));
static BETWEEN_SEPARATORS: LazyLock<Regex> = LazyLock::new(|| re(r"[-._\s]([0-9]{1,4})[-._\s]"));
static LEADING: LazyLock<Regex> = LazyLock::new(|| re(r"^第?([0-9]+)[章回话]?[\s._\-—]*"));
static TRAILING: LazyLock<Regex> = LazyLock::new(|| re(r"[-._\s]([0-9]{1,4})$"));
static CJK_NUMBERED: LazyLock<Regex> = LazyLock::new(|| re(r"第([CJK]+)[章回话]"));
static CJK_NUMBERED_ANY: LazyLock<Regex> = LazyLock::new(|| re(r"第[CJK]+[章回话]"));
static NUMBERED_ANY: LazyLock<Regex> = LazyLock::new(|| re(r"第?[0-9]{1,4}[章回话]"));
static SEPARATOR_RUNS: LazyLock<Regex> = LazyLock::new(|| re(r"[_\-.]+"));
static LAST_EXTENSION: LazyLock<Regex> = LazyLock::new(|| re(r"\.[^.]+$"));

/// Compiles the patterns before the first request: compiled on first use,
/// they would cost a fresh daemon's first requests a share of their CPU.
pub fn compile_patterns() {
    for pattern in [
        &NUMBERED,
        &BETWEEN_SEPARATORS,
        &LEADING,
        &TRAILING,
        &CJK_NUMBERED,
        &CJK_NUMBERED_ANY,
        &NUMBERED_ANY,
        &SEPARATOR_RUNS,
        &LAST_EXTENSION,
    ] {
        LazyLock::force(pattern);
    }
}

/// Full-width `０-９ － ． ／` to ASCII (code point − 0xFEE0), as the tool's
/// `normalizeChapterWidth` does before any number parsing.
pub fn normalize_width(s: &str) -> String {
    normalized_width(s).into_owned()
}

/// `normalize_width`, borrowing a name with nothing to change (nearly
/// every name: each of a book's names is parsed when it is listed).
fn normalized_width(s: &str) -> std::borrow::Cow<'_, str> {
    fn full_width(c: char) -> bool {
        matches!(c, '\u{FF10}'..='\u{FF19}' | '\u{FF0D}'..='\u{FF0F}')
    }
    if !s.chars().any(full_width) {
        return std::borrow::Cow::Borrowed(s);
    }
    s.chars()
        .map(|c| match c {
            c if full_width(c) => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            _ => c,
        })
        .collect()
}

/// The name without its last `.ext` (`\.[^.]+$`).
pub fn strip_last_extension(name: &str) -> &str {
    match LAST_EXTENSION.find(name) {
        Some(m) => &name[..m.start()],
        None => name,
    }
}

/// `parseChapterNumber`: the five patterns in order, first match wins.
///
/// Each pattern's one group is read from its match rather than captured: the
/// match is found by the regex's automaton alone, where capturing runs a
/// second engine and allocates its slots, for every name of every listing.
pub fn parse_chapter_number(name: &str) -> Option<ChapterNumber> {
    let normalized = normalized_width(name);
    let stem = strip_last_extension(&normalized);
    for pattern in [&*NUMBERED, &*BETWEEN_SEPARATORS, &*LEADING, &*TRAILING] {
        if let Some(m) = pattern.find(stem) {
            return only_digit_run(m.as_str()).parse::<f64>().ok();
        }
    }
    CJK_NUMBERED
        .find(stem)
        .and_then(|m| cjk_to_number(between_marker(m.as_str())))
}

/// The group of `NUMBERED`, `BETWEEN_SEPARATORS`, `LEADING` and `TRAILING`:
/// in each, what surrounds the group (第, 章回话, separators, whitespace) holds
/// no ASCII digit, so the group is the match's one run of digits.
fn only_digit_run(matched: &str) -> &str {
    let start = matched
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(matched.len());
    let rest = &matched[start..];
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The group of `CJK_NUMBERED` (`第([CJK]+)[章回话]`): the match without its
/// first and last character.
fn between_marker(matched: &str) -> &str {
    let inner = matched.strip_prefix('第').unwrap_or(matched);
    let mut chars = inner.chars();
    chars.next_back();
    chars.as_str()
}

/// `cjkToNumber`: digits 零一二两三…九 and the units 十 百 千. 万 is not
/// understood and makes the whole parse fail.
pub fn cjk_to_number(s: &str) -> Option<ChapterNumber> {
    let mut total = 0u64;
    let mut current = 0u64;
    for c in s.chars() {
        let digit = match c {
            '零' => Some(0),
            '一' => Some(1),
            '二' | '两' => Some(2),
            '三' => Some(3),
            '四' => Some(4),
            '五' => Some(5),
            '六' => Some(6),
            '七' => Some(7),
            '八' => Some(8),
            '九' => Some(9),
            _ => None,
        };
        if let Some(d) = digit {
            current = d;
            continue;
        }
        let unit = match c {
            '十' => 10,
            '百' => 100,
            '千' => 1000,
            _ => return None,
        };
        total += current.max(1) * unit;
        current = 0;
    }
    Some((total + current) as f64)
}

/// `cleanChapterTitle(stem)`: the stem without its chapter-number marker,
/// separators turned into single spaces.
pub fn clean_chapter_title(stem: &str) -> String {
    let s = NUMBERED_ANY.replace(stem, "");
    let s = CJK_NUMBERED_ANY.replace(&s, "");
    let s = LEADING.replace(&s, "");
    let s = SEPARATOR_RUNS.replace_all(&s, " ");
    js::trim(&s).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(name: &str) -> Option<f64> {
        parse_chapter_number(name)
    }

    #[test]
    fn arabic_chapter_markers() {
        assert_eq!(n("第1章 启程.md"), Some(1.0));
        assert_eq!(n("第02章 故人.md"), Some(2.0));
        assert_eq!(n("12回.txt"), Some(12.0));
        assert_eq!(n("序 第3话"), Some(3.0));
        // Five digits before 章: the first four-digit window that touches 章 wins.
        assert_eq!(n("第12345章"), Some(2345.0));
    }

    #[test]
    fn full_width_digits_are_mapped_first() {
        assert_eq!(n("第０７章 宽字.md"), Some(7.0));
        assert_eq!(n("１"), Some(1.0));
        assert_eq!(n("０７"), Some(7.0));
    }

    #[test]
    fn separators_leading_and_trailing() {
        assert_eq!(n("星河-40-渡口.md"), Some(40.0));
        assert_eq!(n("Part-70-English.TXT"), Some(70.0));
        assert_eq!(n("01-短篇1.md"), Some(1.0));
        assert_eq!(n("尾声-9.md"), Some(9.0));
        assert_eq!(
            n("x　12　y"),
            Some(12.0),
            "U+3000 is a JS whitespace separator"
        );
        assert_eq!(n("1"), Some(1.0));
        assert_eq!(n("01"), Some(1.0));
    }

    #[test]
    fn unicode_digits_are_not_digits() {
        // Arabic-Indic digits match Rust's \d but not JavaScript's.
        assert_eq!(n("٣"), None);
        assert_eq!(n("第٣章"), None);
    }

    #[test]
    fn long_leading_numbers_are_doubles() {
        assert_eq!(n("12345678901234567890"), Some(12345678901234567890.0));
        assert_eq!(n("99999999999999999999999.md"), Some(1e23));
    }

    #[test]
    fn chinese_numerals() {
        assert_eq!(n("第一章"), Some(1.0));
        assert_eq!(n("第十章"), Some(10.0));
        assert_eq!(n("第十二章"), Some(12.0));
        assert_eq!(n("第二十三章 灯火.txt"), Some(23.0));
        assert_eq!(n("第一千零二章 尽头.md"), Some(1002.0));
        assert_eq!(cjk_to_number("一千零一"), Some(1001.0));
        assert_eq!(cjk_to_number("两百"), Some(200.0));
        assert_eq!(n("第一万章"), None);
        assert_eq!(n("楔子.md"), None);
        assert_eq!(n("二十三"), None, "CJK numerals need 第…章");
    }

    /// `parseChapterNumber` as the patterns' groups give it, captured.
    fn captured(name: &str) -> Option<f64> {
        let normalized = normalized_width(name);
        let stem = strip_last_extension(&normalized);
        for pattern in [&*NUMBERED, &*BETWEEN_SEPARATORS, &*LEADING, &*TRAILING] {
            if let Some(caps) = pattern.captures(stem) {
                return caps[1].parse::<f64>().ok();
            }
        }
        CJK_NUMBERED
            .captures(stem)
            .and_then(|caps| cjk_to_number(&caps[1]))
    }

    #[test]
    fn a_group_read_from_the_match_is_the_captured_group() {
        // Every name of up to four pieces from markers, digits, separators
        // and numerals: each pattern matches somewhere among them.
        let pieces = [
            "第", "1", "07", "12345", "章", "回", "话", "-", ".", "_", " ", "　", "—", "一", "十",
            "两", "万", "x", "０７", "．", ".md",
        ];
        let mut names = vec![String::new()];
        let mut checked = 0;
        for _ in 0..4 {
            let mut longer = Vec::new();
            for name in &names {
                for piece in pieces {
                    let name = format!("{name}{piece}");
                    let (read, want) = (n(&name), captured(&name));
                    assert!(
                        read == want
                            || read.is_some_and(f64::is_nan) && want.is_some_and(f64::is_nan),
                        "{name:?}: read {read:?}, captured {want:?}"
                    );
                    checked += 1;
                    longer.push(name);
                }
            }
            names = longer;
        }
        assert!(checked > 200_000, "{checked} names");
    }

    #[test]
    fn titles() {
        assert_eq!(clean_chapter_title("第1章 启程"), "启程");
        assert_eq!(clean_chapter_title("第二十三章 灯火"), "灯火");
        assert_eq!(clean_chapter_title("01-短篇1"), "短篇1");
        assert_eq!(clean_chapter_title("星河-40-渡口"), "星河 40 渡口");
        assert_eq!(clean_chapter_title("第32章"), "");
        assert_eq!(clean_chapter_title("a__b..c"), "a b c");
    }
}
