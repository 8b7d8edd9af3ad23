//! Chapters too big to hold decoded: the encoding is detected (SPEC §1.4)
//! and the lines indexed in streaming passes over the file, and each page
//! decodes only its own lines, read from the file when it is asked for.
//!
//! Every line starts right after a LF in the source (a LF byte in UTF-8 and
//! GBK, a LF unit in UTF-16), where no multi-byte sequence of any of these
//! encodings can be pending: decoding a line on its own gives exactly the
//! characters decoding the whole text gives for it. A page shows at most
//! `LINE_CUT` units of a line, so it reads at most `LINE_PREFIX_BYTES` of
//! each, and indexing keeps at most `DECODED_PREFIX_BYTES` of a line while
//! it goes by: memory never grows with a line's or a chapter's length,
//! only with its number of lines (10 bytes each).

mod chunks;
mod detect;
mod line_index;
mod text;

use encoding_rs::{Encoding, GBK, UTF_8, UTF_16BE, UTF_16LE};

pub use detect::detect;
pub use line_index::{LineIndex, index};
pub use text::{LINE_PREFIX_BYTES, StreamedText};

/// How a chapter file's bytes become text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextEncoding {
    /// Valid UTF-8 (`lossy`: after a UTF-8 BOM, where broken sequences
    /// become U+FFFD).
    Utf8 {
        lossy: bool,
    },
    Gbk,
    Utf16 {
        little_endian: bool,
    },
}

impl TextEncoding {
    fn encoding(self) -> &'static Encoding {
        match self {
            TextEncoding::Utf8 { .. } => UTF_8,
            TextEncoding::Gbk => GBK,
            TextEncoding::Utf16 {
                little_endian: true,
            } => UTF_16LE,
            TextEncoding::Utf16 {
                little_endian: false,
            } => UTF_16BE,
        }
    }

    fn newline_width(self) -> u64 {
        match self {
            TextEncoding::Utf16 { .. } => 2,
            _ => 1,
        }
    }
}

/// Which bytes of a file are text, and how they decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextLayout {
    pub encoding: TextEncoding,
    /// The text's bytes: after a BOM, and without the odd last byte that a
    /// UTF-16LE BOM drops.
    pub start: u64,
    pub end: u64,
}

#[cfg(test)]
mod tests {

    use proptest::prelude::*;

    use super::chunks::CHUNK;
    use super::*;
    use crate::pages::page::{ChapterText, READ_LIMIT};
    use crate::text::decode::UndetectableEncoding;
    use crate::text::decode::decode_owned;

    /// The bytes, streamed and decoded whole: the same pages, sizes and
    /// chain, or the same error.
    fn assert_same(bytes: &[u8], what: &str) {
        let streamed =
            StreamedText::open(crate::backing::for_tests::opened(bytes.to_vec())).unwrap();
        let whole = decode_owned(bytes.to_vec());
        let (streamed, text) = match (streamed, whole) {
            (Ok(s), Ok(t)) => (ChapterText::streamed(s), ChapterText::new(t)),
            (Err(a), Err(b)) => return assert_eq!(a, b, "{what}: the same error"),
            (s, w) => panic!("{what}: streamed {:?}, whole {:?}", s.err(), w.err()),
        };
        assert!(streamed.is_streamed() && !text.is_streamed());
        assert_eq!(streamed.total_lines(), text.total_lines(), "{what}");
        assert_eq!(streamed.chars(), text.chars(), "{what}: chars");
        assert_eq!(streamed.chain(), text.chain(), "{what}: chain");
        let total = text.total_lines().max(1);
        let mut offsets: Vec<u64> = text.chain();
        offsets.extend([1, 2, 3, total / 2, total - 1, total]);
        offsets.retain(|&o| text.offset_in_range(o));
        for offset in offsets {
            for limit in [1, 7, READ_LIMIT] {
                let a = text.layout(offset, limit);
                assert_eq!(streamed.layout(offset, limit), a, "{what}: {offset}");
                assert_eq!(streamed.line_stats(&a), text.line_stats(&a), "{what}");
                assert_eq!(
                    streamed.page(offset, limit).unwrap(),
                    text.page(offset, limit).unwrap(),
                    "{what}: page {offset} limit {limit}"
                );
            }
        }
    }

    fn utf16(s: &str, le: bool, bom: bool) -> Vec<u8> {
        let mut out = Vec::new();
        if bom {
            out.extend_from_slice(if le { b"\xFF\xFE" } else { b"\xFE\xFF" });
        }
        for u in s.encode_utf16() {
            out.extend(if le { u.to_le_bytes() } else { u.to_be_bytes() });
        }
        out
    }

    /// A text with every kind of line §1.5 treats apart: CRLF and lone CR,
    /// empty lines, quotes and control characters, lines over the cut (one
    /// longer than what is decoded of it), and an emoji split by the cut.
    fn awkward_text(lines: usize) -> String {
        let mut text = String::new();
        for i in 0..lines {
            match i % 11 {
                0 => text.push_str("第一章 月光落在旧街的石板上，他推开木门。\r\n"),
                1 => text.push('\n'),
                2 => text.push_str(&format!(
                    "“你回来了？”她问。\"{i}\"\\\t\u{1}\r 孤零零的CR\n"
                )),
                3 => text.push_str(&format!("{}😀😀尾\n", "a".repeat(2999))),
                4 => text.push_str(&format!("{}\n", "字".repeat(3001))),
                5 => text.push_str(&format!("{}\r\n", "长".repeat(LINE_PREFIX_BYTES))),
                6 => text.push_str(&format!("{}🌙\n", "月".repeat(2998))),
                _ => text.push_str("他推开木门，听见远处有人唱歌，歌声很轻。\n"),
            }
        }
        text
    }

    #[test]
    fn every_encoding_streams_like_the_whole_decode() {
        for ending in ["", "末行", "末行\r", "\r\n"] {
            let text = format!("{}{ending}", awkward_text(60));
            assert_same(text.as_bytes(), "utf-8");
            let mut bom = b"\xEF\xBB\xBF".to_vec();
            bom.extend_from_slice(text.as_bytes());
            assert_same(&bom, "utf-8 with bom");
            let (gbk, _, _) = encoding_rs::GB18030.encode(&text);
            assert_same(&gbk, "gbk with four-byte sequences");
            let plain = text.replace(['😀', '🌙'], "x");
            let (gbk, _, _) = GBK.encode(&plain);
            assert_same(&gbk, "gbk");
            for le in [true, false] {
                for bom in [true, false] {
                    assert_same(&utf16(&text, le, bom), &format!("utf-16 le={le} bom={bom}"));
                    let ascii = "plain ascii line\r\n".repeat(500) + ending;
                    assert_same(&utf16(&ascii, le, bom), "utf-16 by its NULs");
                    let mut odd = utf16(&text, le, bom);
                    odd.push(0x41);
                    assert_same(&odd, "utf-16 with an odd last byte");
                }
            }
        }
    }

    #[test]
    fn broken_and_undecodable_bytes() {
        // Broken UTF-8 after a BOM becomes U+FFFD, also at chunk edges.
        let mut bytes = b"\xEF\xBB\xBF".to_vec();
        for i in 0..3000 {
            bytes.extend_from_slice("中文行".as_bytes());
            bytes.extend_from_slice([[0xE4, 0xB8].as_slice(), &[0xFF], &[0xF0, 0x9F, 0x98]][i % 3]);
            bytes.push(b'\n');
        }
        assert_same(&bytes, "lossy utf-8");
        // Neither UTF-8 nor GBK (nor UTF-16): the same error and hint.
        let garbage: Vec<u8> = [0x81u8, 0x20, 0xfe, 0x7f, 0xc3, 0x28].repeat(3000);
        assert_same(&garbage, "garbage");
        let units = [
            0x4EB0u16, 0x4EB0, 0x33FF, 0x4EB0, 0x4EB0, 0x33FF, 0x4EB0, 0x4EB0, 0x33FF, 0x4EB0,
        ];
        let suspected: Vec<u8> = units
            .repeat(900)
            .iter()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        assert_same(&suspected, "utf-16 suspected");
        // Valid UTF-8 for more than a chunk, then not: the units before
        // are scored too (they make the hint).
        let mut late: Vec<u16> = vec![0x4E41; 3000];
        late.extend([0x4EB0u16, 0x4EB0, 0x33FF].repeat(1000));
        let late: Vec<u8> = late.iter().flat_map(|u| u.to_le_bytes()).collect();
        assert!(std::str::from_utf8(&late[..CHUNK]).is_ok());
        assert_eq!(
            decode_owned(late.clone()),
            Err(UndetectableEncoding {
                utf16_suspected: true
            })
        );
        assert_same(&late, "utf-16 suspected after a chunk of valid UTF-8");
        // UTF-8 valid but for one sequence cut by a chunk edge, and valid
        // with sequences across every edge.
        let mut across = "字".repeat(5000).into_bytes();
        assert_same(&across, "utf-8 across chunk edges");
        across[CHUNK - 1] = 0xFF;
        assert_same(&across, "utf-8 broken at a chunk edge");
        for empty in [
            &b""[..],
            b"\xEF\xBB\xBF",
            b"\xFF\xFE",
            b"\xFF\xFEA",
            b"\xFE\xFF",
        ] {
            assert_same(empty, "empty");
        }
    }

    /// Lines of characters from every class the rules treat apart.
    fn line() -> impl Strategy<Value = String> {
        let ch = prop_oneof![
            4 => proptest::char::range(' ', '~'),
            4 => proptest::char::range('\u{4E00}', '\u{4F00}'),
            1 => proptest::sample::select(vec!['😀', '🌙', '\r', '\t', '"', '\\', '\u{1}', '\u{3000}']),
        ];
        prop_oneof![
            8 => proptest::collection::vec(ch, 0..40).prop_map(|c| c.into_iter().collect()),
            1 => (2990usize..3010, any::<bool>()).prop_map(|(n, emoji)| {
                let mut s = "a".repeat(n);
                s.push_str(if emoji { "😀😀" } else { "字字" });
                s
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn random_texts_stream_like_the_whole_decode(
            lines in proptest::collection::vec(line(), 1..300),
            crlf in any::<bool>(),
            encoding in 0usize..6,
        ) {
            let text = lines.join(if crlf { "\r\n" } else { "\n" });
            let bytes = match encoding {
                0 => text.into_bytes(),
                1 => [b"\xEF\xBB\xBF".as_slice(), text.as_bytes()].concat(),
                2 => encoding_rs::GB18030.encode(&text).0.into_owned(),
                3 => utf16(&text, true, false),
                4 => utf16(&text, false, true),
                _ => utf16(&text, false, false),
            };
            assert_same(&bytes, &format!("encoding {encoding}"));
        }
    }
}
