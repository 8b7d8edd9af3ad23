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

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};

use encoding_rs::{CoderResult, Decoder, Encoding, GBK, UTF_8, UTF_16BE, UTF_16LE};

use super::decode::{UndetectableEncoding, is_plausible_text_code, is_text_high_byte};
use super::js::utf16_units;
use super::line::{LINE_CUT, LineStats};

/// Bytes read from the file at a time (even, so that UTF-16 units never
/// straddle two chunks; small in tests, so that they cross many).
#[cfg(not(test))]
const CHUNK: usize = 1 << 20;
#[cfg(test)]
const CHUNK: usize = 4096;

/// Source bytes of a line enough to show it: a unit takes at most 4 bytes
/// (a GB18030 four-byte sequence), so this many hold more than `LINE_CUT`
/// whole units even when the last sequence is cut off.
pub const LINE_PREFIX_BYTES: usize = 4 * (LINE_CUT + 2) + 4;

/// Decoded bytes of a line kept to measure it: at most 3 UTF-8 bytes per
/// unit, so this many hold more than `LINE_CUT` units.
const DECODED_PREFIX_BYTES: usize = 3 * (LINE_CUT + 2) + 4;

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

/// Reads `[start, end)` of `file` in chunks, handing each to `each` with
/// its offset.
fn for_each_chunk(
    file: &File,
    start: u64,
    end: u64,
    mut each: impl FnMut(u64, &[u8]) -> bool,
) -> io::Result<()> {
    let mut buf = vec![0u8; CHUNK];
    let mut at = start;
    while at < end {
        let want = ((end - at) as usize).min(CHUNK);
        let got = read_full(file, &mut buf[..want], at)?;
        if got < want {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file got shorter while it was read",
            ));
        }
        if !each(at, &buf[..want]) {
            break;
        }
        at += want as u64;
    }
    Ok(())
}

/// `read_at` until `buf` is full or the file ends; the bytes read.
fn read_full(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

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
            utf8_lines: Some({
                let mut lines = Indexer::new(&TextLayout {
                    encoding: TextEncoding::Utf8 { lossy: false },
                    start: 0,
                    end: len,
                });
                lines.line.validated = true;
                lines
            }),
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
pub fn detect(file: &File, len: u64) -> io::Result<Detected> {
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

/// A chapter's lines as found in its file.
#[derive(Debug)]
pub struct LineIndex {
    /// Source offset of each line's first byte.
    pub starts: Vec<u32>,
    /// Each line's sizes as shown.
    pub stats: Vec<LineStats>,
    /// UTF-16 units of the whole text, line ends included.
    pub chars: u64,
}

/// A line being indexed: its decoder and the start of its text.
struct LineAcc {
    decoder: Option<Decoder>,
    /// The line's first decoded bytes (up to `DECODED_PREFIX_BYTES`).
    prefix: Vec<u8>,
    /// Bytes of the line were left out of `prefix`.
    cut: bool,
    /// UTF-16 units of the bytes left out.
    overflow_units: u64,
    /// UTF-16 units of the whole line, its CR included (set by `finish`).
    units: u64,
    /// Raw UTF-8 bytes fed here were validated already (by the detector,
    /// in the same buffer).
    validated: bool,
    scratch: Vec<u8>,
}

impl LineAcc {
    fn new() -> LineAcc {
        LineAcc {
            decoder: None,
            prefix: Vec::with_capacity(DECODED_PREFIX_BYTES),
            cut: false,
            overflow_units: 0,
            units: 0,
            validated: false,
            scratch: vec![0; 64 * 1024],
        }
    }

    fn start(&mut self, encoding: TextEncoding) {
        self.decoder = match encoding {
            TextEncoding::Utf8 { lossy: false } => None,
            other => Some(other.encoding().new_decoder_without_bom_handling()),
        };
        self.prefix.clear();
        self.cut = false;
        self.overflow_units = 0;
        self.units = 0;
    }

    fn take_decoded(prefix: &mut Vec<u8>, cut: &mut bool, overflow: &mut u64, text: &[u8]) {
        let room = DECODED_PREFIX_BYTES - prefix.len();
        if text.len() > room {
            *cut = true;
            // Counted by first bytes: a character cut in two counts once.
            *overflow += utf16_units(&text[room..]) as u64;
        }
        prefix.extend_from_slice(&text[..text.len().min(room)]);
    }

    fn feed(&mut self, bytes: &[u8], last: bool) {
        let Some(decoder) = self.decoder.as_mut() else {
            Self::take_decoded(
                &mut self.prefix,
                &mut self.cut,
                &mut self.overflow_units,
                bytes,
            );
            return;
        };
        let mut src = bytes;
        loop {
            let (result, read, written, _) = decoder.decode_to_utf8(src, &mut self.scratch, last);
            src = &src[read..];
            Self::take_decoded(
                &mut self.prefix,
                &mut self.cut,
                &mut self.overflow_units,
                &self.scratch[..written],
            );
            if result == CoderResult::InputEmpty {
                return;
            }
        }
    }

    /// Ends the line (`newline`: a LF ended it) and measures it.
    fn finish(&mut self, newline: bool) -> LineStats {
        self.feed(&[], true);
        let text = if self.cut {
            // Possibly cut inside a character.
            String::from_utf8_lossy(&self.prefix)
        } else if self.decoder.is_some() || self.validated {
            // SAFETY: encoding_rs decoders write UTF-8, and `validated`
            // bytes were checked in the very buffer they came from; a line
            // ends at a LF, so it holds whole characters.
            std::borrow::Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(&self.prefix) })
        } else {
            String::from_utf8_lossy(&self.prefix)
        };
        if self.cut {
            // More than `LINE_CUT` units: the cut depends only on the prefix.
            self.units = utf16_units(&self.prefix) as u64 + self.overflow_units;
            return LineStats::of(&text);
        }
        let cr = newline && text.ends_with('\r');
        let line = if cr { &text[..text.len() - 1] } else { &text };
        let stats = LineStats::of(line);
        // Under the cut, the stats count every unit already.
        let units = if usize::from(stats.units) <= LINE_CUT {
            u64::from(stats.units)
        } else {
            utf16_units(line.as_bytes()) as u64
        };
        self.units = units + u64::from(cr);
        stats
    }
}

/// Indexes lines as the bytes of a text go by.
struct Indexer {
    encoding: TextEncoding,
    start: u64,
    starts: Vec<u32>,
    stats: Vec<LineStats>,
    chars: u64,
    line: LineAcc,
}

impl Indexer {
    fn new(layout: &TextLayout) -> Indexer {
        let mut line = LineAcc::new();
        line.start(layout.encoding);
        Indexer {
            encoding: layout.encoding,
            start: layout.start,
            starts: vec![layout.start as u32],
            stats: Vec::new(),
            chars: 0,
            line,
        }
    }

    /// The text's bytes from `offset` on (chunks in order, each of even
    /// length but the last).
    fn feed(&mut self, offset: u64, bytes: &[u8]) {
        let width = self.encoding.newline_width() as usize;
        let mut from = 0;
        for i in memchr::memchr_iter(b'\n', bytes) {
            // The LF unit of UTF-16 sits at an even distance from the text's
            // start, with a NUL as its other byte.
            let at = match self.encoding {
                TextEncoding::Utf16 { little_endian } => {
                    let rel = offset - self.start + i as u64;
                    let (unit_start, nul) = if little_endian {
                        (i, i + 1)
                    } else {
                        (i.wrapping_sub(1), i.wrapping_sub(1))
                    };
                    let aligned = if little_endian {
                        rel.is_multiple_of(2)
                    } else {
                        rel % 2 == 1
                    };
                    if !aligned || bytes.get(nul) != Some(&0) {
                        continue;
                    }
                    unit_start
                }
                _ => i,
            };
            if at < from {
                continue;
            }
            self.line.feed(&bytes[from..at], false);
            self.stats.push(self.line.finish(true));
            self.chars += self.line.units + 1;
            from = at + width;
            self.starts.push((offset + from as u64) as u32);
            self.line.start(self.encoding);
        }
        self.line.feed(&bytes[from..], false);
    }

    fn finish(mut self) -> LineIndex {
        self.stats.push(self.line.finish(false));
        self.chars += self.line.units;
        self.starts.shrink_to_fit();
        self.stats.shrink_to_fit();
        LineIndex {
            starts: self.starts,
            stats: self.stats,
            chars: self.chars,
        }
    }
}

/// Indexes the lines of the text `layout` describes, in one pass.
pub fn index(file: &File, layout: &TextLayout) -> io::Result<LineIndex> {
    let mut indexer = Indexer::new(layout);
    for_each_chunk(file, layout.start, layout.end, |offset, bytes| {
        indexer.feed(offset, bytes);
        true
    })?;
    Ok(indexer.finish())
}

/// A big chapter: its file, kept open, and its line index.
#[derive(Debug)]
pub struct StreamedText {
    file: File,
    layout: TextLayout,
    index: LineIndex,
    /// What the file looked like when it was indexed (size, mtime and
    /// ctime in nanoseconds): a page is refused once it changed.
    seen: (u64, i128, i128),
}

fn seen_of(meta: &std::fs::Metadata) -> (u64, i128, i128) {
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    (
        meta.len(),
        ns(meta.mtime(), meta.mtime_nsec()),
        ns(meta.ctime(), meta.ctime_nsec()),
    )
}

impl StreamedText {
    /// Detects the encoding of `file` and indexes its lines; the file is
    /// kept to read pages from.
    pub fn open(
        file: File,
        meta: &std::fs::Metadata,
    ) -> io::Result<Result<StreamedText, UndetectableEncoding>> {
        let (layout, index) = match detect(&file, meta.len())? {
            Ok(found) => found,
            Err(e) => return Ok(Err(e)),
        };
        let index = match index {
            Some(index) => index,
            None => self::index(&file, &layout)?,
        };
        Ok(Ok(StreamedText {
            file,
            layout,
            index,
            seen: seen_of(meta),
        }))
    }

    pub fn layout(&self) -> &TextLayout {
        &self.layout
    }

    pub fn stats(&self) -> &[LineStats] {
        &self.index.stats
    }

    pub fn lines(&self) -> usize {
        self.index.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.layout.start == self.layout.end
    }

    pub fn chars(&self) -> u64 {
        self.index.chars
    }

    pub fn index_bytes(&self) -> [usize; 2] {
        [
            self.index.starts.capacity() * std::mem::size_of::<u32>(),
            self.index.stats.capacity() * std::mem::size_of::<LineStats>(),
        ]
    }

    /// Line `i` as the page shows it, before the cut: the whole line when
    /// it is at most `LINE_CUT` units, else enough of its start to cut it.
    pub fn line(&self, i: usize) -> io::Result<String> {
        let start = u64::from(self.index.starts[i]);
        let (end, newline) = match self.index.starts.get(i + 1) {
            Some(&next) => (u64::from(next) - self.layout.encoding.newline_width(), true),
            None => (self.layout.end, false),
        };
        let len = ((end - start) as usize).min(LINE_PREFIX_BYTES);
        let mut bytes = vec![0u8; len];
        if read_full(&self.file, &mut bytes, start)? < len {
            return Err(self.changed());
        }
        let whole = len as u64 == end - start;
        let mut text = match self.layout.encoding {
            TextEncoding::Utf8 { .. } => String::from_utf8_lossy(&bytes).into_owned(),
            other => other
                .encoding()
                .decode_without_bom_handling(&bytes)
                .0
                .into_owned(),
        };
        if whole && newline && text.ends_with('\r') {
            text.pop();
        }
        Ok(text)
    }

    /// An error unless the file is still as it was indexed.
    pub fn check_unchanged(&self) -> io::Result<()> {
        if seen_of(&self.file.metadata()?) != self.seen {
            return Err(self.changed());
        }
        Ok(())
    }

    fn changed(&self) -> io::Error {
        io::Error::other("文件在建立行索引后被改动")
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use proptest::prelude::*;

    use super::*;
    use crate::library::decode::decode_owned;
    use crate::library::page::{ChapterText, READ_LIMIT};

    /// The bytes, streamed and decoded whole: the same pages, sizes and
    /// chain, or the same error.
    fn assert_same(bytes: &[u8], what: &str) {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        let meta = file.metadata().unwrap();
        let streamed = StreamedText::open(file, &meta).unwrap();
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
