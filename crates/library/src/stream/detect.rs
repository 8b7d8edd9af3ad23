//! Finding how a big chapter file decodes (SPEC §1.4), by the rules of
//! `decode::decode_owned`, in streaming passes over the file; a UTF-8 file
//! is line-indexed in the same pass.

use crate::backing::Opened;
use std::io;

use encoding_rs::{Decoder, GBK};

use super::chunks::{for_each_chunk, read_full};
use super::line_index::{Indexer, LineIndex};
use super::{TextEncoding, TextLayout};
use crate::text::decode::{UndetectableEncoding, is_plausible_text_code, is_text_high_byte};

/// The length of the UTF-8 sequence `lead` starts (0: not a lead byte).
fn utf8_width(lead: u8) -> usize {
    match lead {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 0,
    }
}

/// All of §1.4's measures of a file, taken in one pass: NUL bytes and
/// their parity, strict UTF-8, both UTF-16 scores and a GBK decode. Each
/// stops as soon as its answer is known.
struct Detector {
    len: u64,
    nuls: u64,
    odd_nuls: u64,
    /// Bytes of an incomplete UTF-8 sequence at the end of the last chunk.
    utf8_carry: Vec<u8>,
    utf8_ok: bool,
    /// Scored only when the length allows UTF-16 (even, at least 8), and
    /// only once the bytes are not UTF-8 (the scores decide nothing then).
    scoring: bool,
    /// Where scoring began, when that was after the start: the bytes
    /// before it are scored by a second read (`detect`).
    scored_from: Option<u64>,
    coherent: [u64; 2],
    plausible: [u64; 2],
    incoherent: [u64; 2],
    gbk: Option<Decoder>,
    gbk_ok: bool,
    scratch: Vec<u8>,
    /// The lines, indexed as UTF-8 while the bytes may still be (the
    /// common case): a UTF-8 chapter then needs no second pass.
    utf8_lines: Option<Indexer>,
    seen: u64,
}

impl Detector {
    fn new(len: u64) -> Detector {
        Detector {
            len,
            nuls: 0,
            odd_nuls: 0,
            utf8_carry: Vec::new(),
            utf8_ok: true,
            scoring: len >= 8 && len.is_multiple_of(2),
            scored_from: None,
            coherent: [0; 2],
            plausible: [0; 2],
            incoherent: [0; 2],
            gbk: Some(GBK.new_decoder_without_bom_handling()),
            gbk_ok: true,
            scratch: vec![0; 64 * 1024],
            utf8_lines: Some(Indexer::validated_utf8(len)),
            seen: 0,
        }
    }

    fn feed(&mut self, offset: u64, bytes: &[u8], last: bool) {
        if memchr::memchr(0, bytes).is_some() {
            for i in memchr::memchr_iter(0, bytes) {
                self.nuls += 1;
                self.odd_nuls += (offset + i as u64) % 2;
            }
        }
        if self.utf8_ok {
            self.feed_utf8(bytes, last);
            if !self.utf8_ok && self.scoring && offset > 0 {
                self.scored_from = Some(offset);
            }
        }
        if self.scoring && !self.utf8_ok {
            self.score(bytes);
        }
        if self.gbk_ok {
            self.feed_gbk(bytes, last);
        }
        self.seen += bytes.len() as u64;
        // Not UTF-8, or likely UTF-16 by its NULs so far: the index would
        // be thrown away.
        if !self.utf8_ok || self.nuls as f64 > self.seen as f64 * 0.05 {
            self.utf8_lines = None;
        }
        if let Some(lines) = self.utf8_lines.as_mut() {
            lines.feed(offset, bytes);
        }
    }

    fn feed_utf8(&mut self, bytes: &[u8], last: bool) {
        let mut rest = bytes;
        if !self.utf8_carry.is_empty() {
            // A sequence cut by the chunk's start: complete it first.
            let need = utf8_width(self.utf8_carry[0]).saturating_sub(self.utf8_carry.len());
            if rest.len() < need {
                self.utf8_carry.extend_from_slice(rest);
                self.utf8_ok = !last;
                return;
            }
            let mut sequence = std::mem::take(&mut self.utf8_carry);
            sequence.extend_from_slice(&rest[..need]);
            if simdutf8::basic::from_utf8(&sequence).is_err() {
                self.utf8_ok = false;
                return;
            }
            rest = &rest[need..];
        }
        match simdutf8::compat::from_utf8(rest) {
            Ok(_) => {}
            Err(e) if e.error_len().is_none() && !last => {
                self.utf8_carry = rest[e.valid_up_to()..].to_vec();
            }
            Err(_) => self.utf8_ok = false,
        }
    }

    fn score(&mut self, bytes: &[u8]) {
        // Chunks have even lengths and offsets, so pairs never straddle
        // two of them.
        for pair in bytes.chunks_exact(2) {
            for (order, unit) in [
                u16::from_le_bytes([pair[0], pair[1]]),
                u16::from_be_bytes([pair[0], pair[1]]),
            ]
            .into_iter()
            .enumerate()
            {
                if is_text_high_byte((unit >> 8) as u8) {
                    self.coherent[order] += 1;
                } else {
                    self.incoherent[order] += 1;
                }
                self.plausible[order] += u64::from(is_plausible_text_code(unit));
            }
        }
        // More than 10% incoherent units in both orders: neither reaches
        // 0.9, and there is no hint either.
        let limit = self.len / 2 / 10;
        if self.incoherent[0] > limit && self.incoherent[1] > limit {
            self.scoring = false;
            self.coherent = [0; 2];
        }
    }

    fn feed_gbk(&mut self, bytes: &[u8], last: bool) {
        let Some(decoder) = self.gbk.as_mut() else {
            return;
        };
        let mut src = bytes;
        loop {
            let (result, read, _) =
                decoder.decode_to_utf8_without_replacement(src, &mut self.scratch, last);
            src = &src[read..];
            match result {
                encoding_rs::DecoderResult::InputEmpty => return,
                encoding_rs::DecoderResult::OutputFull => {}
                encoding_rs::DecoderResult::Malformed(..) => {
                    self.gbk_ok = false;
                    self.gbk = None;
                    return;
                }
            }
        }
    }

    /// Steps 2 to 6, from the measures.
    fn finish(&self) -> Result<TextLayout, UndetectableEncoding> {
        let whole = |encoding| TextLayout {
            encoding,
            start: 0,
            end: self.len,
        };
        if self.nuls > 0 && self.nuls as f64 / self.len as f64 > 0.05 {
            let little_endian = self.odd_nuls >= self.nuls - self.odd_nuls;
            return Ok(whole(TextEncoding::Utf16 { little_endian }));
        }
        if self.utf8_ok {
            return Ok(whole(TextEncoding::Utf8 { lossy: false }));
        }
        let mut utf16_suspected = false;
        if self.scoring {
            let units = (self.len / 2) as f64;
            let share = |n: u64| n as f64 / units;
            let (le_c, le_p) = (share(self.coherent[0]), share(self.plausible[0]));
            let (be_c, be_p) = (share(self.coherent[1]), share(self.plausible[1]));
            let le_wins = le_c + le_p >= be_c + be_p;
            let (best, other) = if le_wins {
                ((le_c, le_p), (be_c, be_p))
            } else {
                ((be_c, be_p), (le_c, le_p))
            };
            if best.0 >= 0.9 && best.1 >= 0.9 && other.0 < 0.9 {
                return Ok(whole(TextEncoding::Utf16 {
                    little_endian: le_wins,
                }));
            }
            utf16_suspected = best.0 >= 0.9 && best.1 >= 0.6;
        }
        if self.gbk_ok {
            return Ok(whole(TextEncoding::Gbk));
        }
        Err(UndetectableEncoding { utf16_suspected })
    }
}

/// How a file decodes, and its line index when the pass that found out
/// could build it too.
type Detected = Result<(TextLayout, Option<LineIndex>), UndetectableEncoding>;

/// Detects how `file` (of `len` bytes) decodes, by the rules of
/// `decode::decode_owned`, reading it once; a file of UTF-8 without a BOM
/// (the common case) is indexed in the same pass.
pub fn detect(file: &dyn Opened, len: u64) -> io::Result<Detected> {
    let mut head = [0u8; 3];
    let got = read_full(file, &mut head, 0)?;
    let head = &head[..got];
    let bom = |encoding, start, end| {
        Ok(Ok((
            TextLayout {
                encoding,
                start,
                end,
            },
            None,
        )))
    };
    if head.starts_with(b"\xEF\xBB\xBF") {
        return bom(TextEncoding::Utf8 { lossy: true }, 3, len);
    }
    if head.starts_with(b"\xFF\xFE") {
        // Node's `buf.toString("utf16le")` drops an odd last byte silently.
        let end = 2 + ((len - 2) & !1);
        return bom(
            TextEncoding::Utf16 {
                little_endian: true,
            },
            2,
            end,
        );
    }
    if head.starts_with(b"\xFE\xFF") {
        let encoding = TextEncoding::Utf16 {
            little_endian: false,
        };
        return bom(encoding, 2, len);
    }
    let mut detector = Detector::new(len);
    for_each_chunk(file, 0, len, |offset, bytes| {
        let last = offset + bytes.len() as u64 == len;
        detector.feed(offset, bytes, last);
        true
    })?;
    if len == 0 {
        detector.feed(0, &[], true);
    }
    if let Some(end) = detector.scored_from.take() {
        for_each_chunk(file, 0, end, |_, bytes| {
            detector.score(bytes);
            detector.scoring
        })?;
    }
    Ok(detector.finish().map(|layout| {
        let lines = match layout.encoding {
            TextEncoding::Utf8 { lossy: false } => detector.utf8_lines.take(),
            _ => None,
        };
        (layout, lines.map(Indexer::finish))
    }))
}
