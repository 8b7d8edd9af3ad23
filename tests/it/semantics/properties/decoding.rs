//! Decoding (SPEC §1.4): valid UTF-8, arbitrary bytes and UTF-16 with a
//! BOM against a model of the rules.

use novelfs::library::decode::decode_text;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{Index, select};

use super::*;

// ---------------------------------------------------------------------------
// Decoding (SPEC §1.4).

/// The WHATWG UTF-16 decoder: unpaired surrogates become U+FFFD; a dangling
/// odd byte is one more U+FFFD, unless a lead surrogate is already pending
/// at the end (then both are a single error).
pub(super) fn whatwg_utf16(bytes: &[u8], little_endian: bool) -> String {
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
pub(super) fn nul_heavy(bytes: &[u8]) -> Option<bool> {
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
pub(super) fn nul_boundary_string() -> impl Strategy<Value = String> {
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
