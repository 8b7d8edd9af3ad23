//! Chapter numbers (SPEC §1.2) in Arabic and CJK numerals, against a
//! model.

use novelfs::library::number::parse_chapter_number;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{Index, select};

use super::*;

// ---------------------------------------------------------------------------
// Chapter numbers (SPEC §1.2).

/// A chapter number written the way `cjk_to_number` reads it (1..=9999).
pub(super) fn cjk_numeral(n: u32) -> String {
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
pub(super) fn widen(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '0'..='9' | '-' | '.' | '/' => char::from_u32(c as u32 + 0xFEE0).unwrap(),
            c => c,
        })
        .collect()
}

pub(super) fn name_like() -> impl Strategy<Value = String> {
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
