//! A chapter's line index, built as the bytes of its text go by: where
//! each line starts in the file and its sizes as a page shows them, with at
//! most `DECODED_PREFIX_BYTES` of a line held at a time.

use crate::backing::Opened;
use std::io;

use encoding_rs::{CoderResult, Decoder};

use super::chunks::for_each_chunk;
use super::{TextEncoding, TextLayout};
use crate::text::js::utf16_units;
use crate::text::line::{LINE_CUT, LineStats};

/// Decoded bytes of a line kept to measure it: at most 3 UTF-8 bytes per
/// unit, so this many hold more than `LINE_CUT` units.
const DECODED_PREFIX_BYTES: usize = 3 * (LINE_CUT + 2) + 4;

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
pub(super) struct Indexer {
    encoding: TextEncoding,
    start: u64,
    starts: Vec<u32>,
    stats: Vec<LineStats>,
    chars: u64,
    line: LineAcc,
}

impl Indexer {
    pub(super) fn new(layout: &TextLayout) -> Indexer {
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

    /// Indexes `len` bytes of UTF-8 that the caller validates itself (the
    /// detector, as it reads them).
    pub(super) fn validated_utf8(len: u64) -> Indexer {
        let mut lines = Indexer::new(&TextLayout {
            encoding: TextEncoding::Utf8 { lossy: false },
            start: 0,
            end: len,
        });
        lines.line.validated = true;
        lines
    }

    /// The text's bytes from `offset` on (chunks in order, each of even
    /// length but the last).
    pub(super) fn feed(&mut self, offset: u64, bytes: &[u8]) {
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

    pub(super) fn finish(mut self) -> LineIndex {
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
pub fn index(file: &dyn Opened, layout: &TextLayout) -> io::Result<LineIndex> {
    let mut indexer = Indexer::new(layout);
    for_each_chunk(file, layout.start, layout.end, |offset, bytes| {
        indexer.feed(offset, bytes);
        true
    })?;
    Ok(indexer.finish())
}
