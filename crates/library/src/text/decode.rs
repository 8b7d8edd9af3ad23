//! Encoding detection (SPEC §1.4): the original `decodeTextBuffer`, step by step.
//!
//! Chinese Windows tools save GBK, and some save UTF-16 without a BOM; the
//! order of the steps decides which reading wins, so it is kept exactly.

use encoding_rs::{GBK, UTF_16BE, UTF_16LE};

/// The source is neither UTF-8, GBK nor recognisable UTF-16.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UndetectableEncoding {
    /// The high-byte layout looks like UTF-16 without a BOM; the message
    /// suggests re-saving with a BOM.
    pub utf16_suspected: bool,
}

/// Decodes a chapter's bytes the way the original tool does.
pub fn decode_text(bytes: &[u8]) -> Result<String, UndetectableEncoding> {
    decode_owned(bytes.to_vec())
}

/// `decode_text` for bytes it may keep: valid UTF-8 (the common case)
/// becomes the text without a copy, so a 14 MB chapter needs 14 MB, not 28.
pub fn decode_owned(mut bytes: Vec<u8>) -> Result<String, UndetectableEncoding> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
        return Ok(String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()));
    }
    let bytes = match first_steps(bytes) {
        Ok(text) => return Ok(text),
        Err(bytes) => bytes,
    };
    decode_rest(&bytes)
}

/// Steps 1 (UTF-16 BOMs), 2 and 3; the bytes back when none applies.
fn first_steps(bytes: Vec<u8>) -> Result<String, Vec<u8>> {
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        // Node's `buf.toString("utf16le")` drops an odd last byte silently.
        return Ok(utf16(rest, true));
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return Ok(utf16_replacing_odd_byte(rest, false));
    }
    // Most files hold no NUL at all: one memchr says so.
    let nuls = if memchr::memchr(0, &bytes).is_none() {
        0
    } else {
        memchr::memchr_iter(0, &bytes).count()
    };
    if nuls > 0 && nuls as f64 / bytes.len() as f64 > 0.05 {
        let (mut odd, mut even) = (0usize, 0usize);
        for (i, _) in bytes.iter().enumerate().filter(|(_, b)| **b == 0) {
            if i % 2 == 1 { odd += 1 } else { even += 1 }
        }
        return Ok(utf16_replacing_odd_byte(&bytes, odd >= even));
    }
    // Validated with SIMD: std's check is fast only over ASCII runs, and
    // CJK text has none, so it would be a noticeable part of a cold pass.
    if simdutf8::basic::from_utf8(&bytes).is_ok() {
        // SAFETY: just validated as UTF-8.
        return Ok(unsafe { String::from_utf8_unchecked(bytes) });
    }
    Err(bytes)
}

/// Steps 4 to 6.
fn decode_rest(bytes: &[u8]) -> Result<String, UndetectableEncoding> {
    let mut utf16_suspected = false;
    if bytes.len() >= 8 && bytes.len().is_multiple_of(2) && could_be_utf16(bytes) {
        let le = Utf16Score::of(bytes, true);
        let be = Utf16Score::of(bytes, false);
        let le_wins = le.coherent + le.plausible >= be.coherent + be.plausible;
        let (best, other) = if le_wins { (le, be) } else { (be, le) };
        if best.coherent >= 0.9 && best.plausible >= 0.9 && other.coherent < 0.9 {
            return Ok(utf16_replacing_odd_byte(bytes, le_wins));
        }
        utf16_suspected = best.coherent >= 0.9 && best.plausible >= 0.6;
    }
    if let Some(text) = GBK.decode_without_bom_handling_and_without_replacement(bytes) {
        return Ok(text.into_owned());
    }
    Err(UndetectableEncoding { utf16_suspected })
}

/// A quick necessary condition for step 4 (and its hint): in at least one
/// byte order, at least 90% of the units have a coherent high byte. A
/// sample that already rules both orders out settles it for GBK files
/// without scoring every unit twice.
fn could_be_utf16(bytes: &[u8]) -> bool {
    let units = bytes.len() / 2;
    let (mut bad_le, mut bad_be) = (0usize, 0usize);
    // More than 10% incoherent units in both orders means neither can reach 0.9.
    let limit = units / 10;
    for pair in bytes.chunks_exact(2) {
        bad_le += usize::from(!is_text_high_byte(pair[1]));
        bad_be += usize::from(!is_text_high_byte(pair[0]));
        if bad_le > limit && bad_be > limit {
            return false;
        }
    }
    true
}

/// WHATWG UTF-16 decoding: lone surrogates and an odd last byte become U+FFFD.
fn utf16_replacing_odd_byte(bytes: &[u8], little_endian: bool) -> String {
    let encoding = if little_endian { UTF_16LE } else { UTF_16BE };
    encoding.decode_without_bom_handling(bytes).0.into_owned()
}

fn utf16(bytes: &[u8], little_endian: bool) -> String {
    utf16_replacing_odd_byte(&bytes[..bytes.len() & !1], little_endian)
}

#[derive(Debug, Clone, Copy)]
struct Utf16Score {
    coherent: f64,
    plausible: f64,
}

impl Utf16Score {
    fn of(bytes: &[u8], little_endian: bool) -> Self {
        let units = bytes.len() / 2;
        let (mut coherent, mut plausible) = (0usize, 0usize);
        for pair in bytes.chunks_exact(2) {
            let unit = if little_endian {
                u16::from_le_bytes([pair[0], pair[1]])
            } else {
                u16::from_be_bytes([pair[0], pair[1]])
            };
            if is_text_high_byte((unit >> 8) as u8) {
                coherent += 1;
            }
            if is_plausible_text_code(unit) {
                plausible += 1;
            }
        }
        Utf16Score {
            coherent: coherent as f64 / units as f64,
            plausible: plausible as f64 / units as f64,
        }
    }
}

/// `isTextHighByte`: high bytes that text in common scripts produces.
pub(crate) fn is_text_high_byte(high: u8) -> bool {
    matches!(high, 0x00..=0x06 | 0x0E..=0x33 | 0x4E..=0x9F | 0xD8..=0xDF | 0xFE..=0xFF)
}

/// `isPlausibleTextCode`: a UTF-16 code unit inside a range where prose lives.
pub(crate) fn is_plausible_text_code(unit: u16) -> bool {
    matches!(
        unit,
        0x09 | 0x0A | 0x0D
            | 0x20..=0x7E          // ASCII printable
            | 0xA0..=0x24F         // Latin-1 supplement .. Latin Extended-B
            | 0x370..=0x4FF        // Greek, Cyrillic
            | 0x2000..=0x206F      // general punctuation
            | 0x20A0..=0x20CF      // currency
            | 0x2190..=0x21FF      // arrows
            | 0x2460..=0x27BF      // enclosed alphanumerics, box drawing, dingbats
            | 0x3000..=0x303F      // CJK symbols and punctuation
            | 0x3040..=0x30FF      // hiragana, katakana
            | 0x3105..=0x312F      // bopomofo
            | 0x3400..=0x4DBF      // CJK extension A
            | 0x4E00..=0x9FFF      // CJK unified ideographs
            | 0xD800..=0xDFFF      // surrogates
            | 0xF900..=0xFAFF      // CJK compatibility ideographs
            | 0xFE30..=0xFE4F      // CJK compatibility forms
            | 0xFF00..=0xFFEF      // half-width and full-width forms
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16_bytes(s: &str, le: bool) -> Vec<u8> {
        s.encode_utf16()
            .flat_map(|u| if le { u.to_le_bytes() } else { u.to_be_bytes() })
            .collect()
    }

    const PROSE: &str =
        "月光落在旧街的石板上，他推开木门，听见远处有人唱歌。\n“你回来了？”她轻声问。";

    #[test]
    fn utf8_with_and_without_bom() {
        assert_eq!(decode_text(PROSE.as_bytes()).unwrap(), PROSE);
        let mut bom = b"\xEF\xBB\xBF".to_vec();
        bom.extend_from_slice(PROSE.as_bytes());
        assert_eq!(decode_text(&bom).unwrap(), PROSE);
    }

    #[test]
    fn utf16_with_bom() {
        let mut le = b"\xFF\xFE".to_vec();
        le.extend(utf16_bytes(PROSE, true));
        assert_eq!(decode_text(&le).unwrap(), PROSE);
        let mut be = b"\xFE\xFF".to_vec();
        be.extend(utf16_bytes(PROSE, false));
        assert_eq!(decode_text(&be).unwrap(), PROSE);
    }

    #[test]
    fn odd_byte_after_bom_quirk() {
        let mut le = b"\xFF\xFE".to_vec();
        le.extend(utf16_bytes("ab", true));
        le.push(0x41);
        assert_eq!(decode_text(&le).unwrap(), "ab", "LE BOM: odd byte dropped");
        let mut be = b"\xFE\xFF".to_vec();
        be.extend(utf16_bytes("ab", false));
        be.push(0x41);
        assert_eq!(
            decode_text(&be).unwrap(),
            "ab\u{FFFD}",
            "BE BOM: odd byte is U+FFFD"
        );
    }

    #[test]
    fn utf16_without_bom_cjk() {
        assert_eq!(decode_text(&utf16_bytes(PROSE, true)).unwrap(), PROSE);
        assert_eq!(decode_text(&utf16_bytes(PROSE, false)).unwrap(), PROSE);
    }

    #[test]
    fn utf16_without_bom_ascii_only_uses_nul_ratio() {
        let text = "hello world\nsecond\n";
        assert_eq!(decode_text(&utf16_bytes(text, true)).unwrap(), text);
        assert_eq!(decode_text(&utf16_bytes(text, false)).unwrap(), text);
    }

    #[test]
    fn gbk() {
        let (bytes, _, _) = GBK.encode(PROSE);
        assert!(std::str::from_utf8(&bytes).is_err());
        assert_eq!(decode_text(&bytes).unwrap(), PROSE);
    }

    #[test]
    fn garbage_is_an_error_with_the_right_hint() {
        let garbage: Vec<u8> = [0x81u8, 0x20, 0xfe, 0x7f, 0xc3, 0x28].repeat(300);
        assert_eq!(
            decode_text(&garbage),
            Err(UndetectableEncoding {
                utf16_suspected: false
            })
        );
    }

    #[test]
    fn utf16_suspected_hint() {
        // LE reading: all high bytes coherent, 70% plausible (CJK 0x4EB0),
        // 30% implausible (0x33FF, whose 0xFF byte also defeats GBK). No NULs,
        // so step 2 does not apply, and 0xB0 first makes it invalid UTF-8.
        let units = [
            0x4EB0u16, 0x4EB0, 0x33FF, 0x4EB0, 0x4EB0, 0x33FF, 0x4EB0, 0x4EB0, 0x33FF, 0x4EB0,
        ];
        let bytes: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
        assert_eq!(
            decode_text(&bytes),
            Err(UndetectableEncoding {
                utf16_suspected: true
            })
        );
    }

    #[test]
    fn empty_is_empty_utf8() {
        assert_eq!(decode_text(b"").unwrap(), "");
    }
}
