//! The sizes of a line as a page shows it (SPEC §1.5): cut at `LINE_CUT`
//! UTF-16 units with a suffix, and its byte lengths in both renderings.
//! Both a text held in memory and a streamed one measure lines here.

use super::js::utf16_len;

pub const LINE_CUT: usize = 3_000;
pub const LINE_CUT_SUFFIX: &str = "…（行过长已裁剪）";

/// The sizes of one shown line: enough to lay out pages and to know their
/// byte sizes in both renderings without rendering them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineStats {
    /// UTF-16 code units (the tool's character count; at most 3009 once
    /// cut, so u16 keeps the index of a big chapter small).
    pub units: u16,
    /// UTF-8 bytes (at most about 9,000).
    pub bytes: u16,
    /// UTF-8 bytes once escaped as a JSON string body (without quotes; at
    /// most about 18,000).
    pub json_bytes: u16,
}

/// Extra bytes JSON escaping adds for `c` (as serde_json and
/// `JSON.stringify` escape: quote, backslash and control characters).
fn json_escape_extra(c: char) -> usize {
    match c {
        '"' | '\\' | '\u{08}' | '\u{0C}' | '\n' | '\r' | '\t' => 1,
        '\0'..='\u{1F}' => 5,
        _ => 0,
    }
}

/// UTF-16 units and JSON escape bytes (`json_escape_extra`: multi-byte
/// characters are never escaped) of valid UTF-8, counted in one
/// branch-free pass in 16-bit lanes: sixteen to a vector, where a sum
/// into `usize` per byte gets four, and this pass runs over every chapter
/// outlined cold.
fn byte_counts(b: &[u8]) -> (usize, usize) {
    // At most 2 units and 5 escape bytes per byte: a chunk of 8,192 bytes
    // cannot overflow a u16.
    let mut units = 0usize;
    let mut json_extra = 0usize;
    for chunk in b.chunks(8192) {
        let mut u: u16 = 0;
        let mut e: u16 = 0;
        for &x in chunk {
            u += u16::from(x & 0xC0 != 0x80) + u16::from(x >= 0xF0);
            let control = u16::from(x < 0x20);
            let short = u16::from(x == 0x08)
                | u16::from(x == 0x09)
                | u16::from(x == b'\n')
                | u16::from(x == 0x0C)
                | u16::from(x == b'\r');
            let quoted = u16::from(x == b'"') | u16::from(x == b'\\');
            e += control * (5 - 4 * short) + quoted;
        }
        units += usize::from(u);
        json_extra += usize::from(e);
    }
    (units, json_extra)
}

impl LineStats {
    pub(crate) fn of(line: &str) -> LineStats {
        // Byte-wise first (the loops vectorize): a UTF-16 unit per byte
        // that starts a character, two for a 4-byte one; JSON escapes only
        // ASCII bytes. Only a line past the 3000-unit cut needs the walk
        // by characters.
        let b = line.as_bytes();
        let (units, json_extra) = byte_counts(b);
        if units <= LINE_CUT {
            return LineStats {
                units: units as u16,
                bytes: b.len() as u16,
                json_bytes: (b.len() + json_extra) as u16,
            };
        }
        Self::of_long(line)
    }

    fn of_long(line: &str) -> LineStats {
        let mut units = 0usize;
        let mut json_extra = 0usize;
        let mut cut = None;
        for (i, c) in line.char_indices() {
            let w = c.len_utf16();
            if cut.is_none() && units + w > LINE_CUT {
                cut = Some((i, units, json_extra));
            }
            units += w;
            json_extra += json_escape_extra(c);
        }
        let (units, bytes, json_bytes) = match cut {
            None => (units, line.len(), line.len() + json_extra),
            Some((at, kept_units, kept_extra)) => {
                // A surrogate pair split by the cut leaves U+FFFD (3 bytes).
                let replacement = if kept_units < LINE_CUT {
                    '\u{FFFD}'.len_utf8()
                } else {
                    0
                };
                let bytes = at + replacement + LINE_CUT_SUFFIX.len();
                (
                    LINE_CUT + utf16_len(LINE_CUT_SUFFIX),
                    bytes,
                    bytes + kept_extra,
                )
            }
        };
        LineStats {
            units: units as u16,
            bytes: bytes as u16,
            json_bytes: json_bytes as u16,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_agree_with_the_walk_by_characters() {
        let mut every_byte: String = (0u8..0x80).map(char::from).collect();
        every_byte.push_str("中文，“引号”😀𠀀é\u{FFFD}");
        let long = "字😀\"\u{1}".repeat(5000);
        for line in [
            "",
            "plain",
            every_byte.as_str(),
            "\t\u{8}\u{c}\r\"\\",
            long.as_str(),
        ] {
            let units: usize = line.chars().map(char::len_utf16).sum();
            let extra: usize = line.chars().map(json_escape_extra).sum();
            assert_eq!(byte_counts(line.as_bytes()), (units, extra), "{line:?}");
        }
    }
}
