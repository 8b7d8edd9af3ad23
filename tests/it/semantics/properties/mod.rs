//! Property tests of the library layer (SPEC §1.2–§1.6), one module per
//! part of the specification: `paging` (§1.5, §1.6), `decoding` (§1.4),
//! `chapter_numbers` (§1.2), `find_chapter` (§1.3), and `fixed_cases`, which
//! keeps a broken generator from making the properties vacuous. This file
//! holds the spec's constants and the generators they share.
//!
//! Every expected value here comes from a small model written from the spec
//! (and the seed's pseudo-code), not from running the implementation:
//! `split /\r?\n/`, the 3000-unit cut, the paging loop, the two renderings,
//! the decoding rules that apply to valid UTF-8, and `find_chapter`.

mod chapter_numbers;
mod decoding;
mod find_chapter;
mod fixed_cases;
mod paging;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
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
