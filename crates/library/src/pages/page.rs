//! Paging a decoded chapter (SPEC §1.5).
//!
//! All budgets are in UTF-16 code units because the original counts
//! JavaScript string lengths. `ChapterText` splits a chapter once and keeps
//! each line's length, so every page — and the whole reading chain — can be
//! laid out without touching the text again.

use crate::stream::StreamedText;
use crate::text::js::utf16_len;
pub use crate::text::line::{LINE_CUT, LINE_CUT_SUFFIX, LineStats};

pub const READ_LIMIT: u32 = 400;
pub const READ_MAX_CHARS: usize = 20_000;
pub const MAX_OFFSET: u64 = 9_007_199_254_740_991;

/// A decoded chapter split with `/\r?\n/`.
#[derive(Debug)]
pub struct ChapterText {
    body: Body,
}

#[derive(Debug)]
enum Body {
    /// The whole text, in memory.
    Text {
        text: String,
        /// Byte range of each line (without its `\r\n`); u32 halves the
        /// index of a 100,000-line chapter (chapters are capped far below
        /// 4 GiB).
        spans: Vec<(u32, u32)>,
        /// Sizes of each line as shown (after the 3000-unit cut and its
        /// suffix).
        stats: Vec<LineStats>,
    },
    /// Too big to hold decoded: lines are read from the file when a page
    /// shows them.
    Stream(StreamedText),
}

impl ChapterText {
    pub fn new(mut text: String) -> Self {
        // Decoders allocate for the worst case; a cached chapter should
        // hold only its text.
        text.shrink_to_fit();
        assert!(
            text.len() < u32::MAX as usize,
            "chapter text of {} bytes",
            text.len()
        );
        let bytes = text.as_bytes();
        let mut spans = Vec::with_capacity(memchr::memchr_iter(b'\n', bytes).count() + 1);
        let mut start = 0;
        for i in memchr::memchr_iter(b'\n', bytes) {
            let end = if i > start && bytes[i - 1] == b'\r' {
                i - 1
            } else {
                i
            };
            spans.push((start as u32, end as u32));
            start = i + 1;
        }
        spans.push((start as u32, text.len() as u32));
        let stats = spans
            .iter()
            .map(|&(s, e)| LineStats::of(&text[s as usize..e as usize]))
            .collect();
        ChapterText {
            body: Body::Text { text, spans, stats },
        }
    }

    /// A chapter served from its file through a line index.
    pub fn streamed(text: StreamedText) -> Self {
        ChapterText {
            body: Body::Stream(text),
        }
    }

    /// Whether the chapter is served from its file.
    #[cfg(test)]
    pub(crate) fn is_streamed(&self) -> bool {
        matches!(self.body, Body::Stream(_))
    }

    fn stats(&self) -> &[LineStats] {
        match &self.body {
            Body::Text { stats, .. } => stats,
            Body::Stream(s) => s.stats(),
        }
    }

    /// UTF-16 units of the whole text (line ends included).
    pub fn chars(&self) -> u64 {
        match &self.body {
            Body::Text { text, .. } => utf16_len(text) as u64,
            Body::Stream(s) => s.chars(),
        }
    }

    /// `countTextLines`: 0 for an empty text, else the number of split pieces.
    pub fn total_lines(&self) -> u64 {
        match &self.body {
            Body::Text { text, spans, .. } if !text.is_empty() => spans.len() as u64,
            Body::Stream(s) if !s.is_empty() => s.lines() as u64,
            _ => 0,
        }
    }

    /// Whether `offset` passes the tool's `offset <= max(totalLines, 1)` check.
    pub fn offset_in_range(&self, offset: u64) -> bool {
        offset >= 1 && offset <= self.total_lines().max(1)
    }

    /// Line `i` as shown (cut at `LINE_CUT` units, with the suffix).
    fn shown(&self, i: usize) -> std::io::Result<std::borrow::Cow<'_, str>> {
        // The stats already tell whether the line is cut.
        let cut = self.stats()[i].units as usize > LINE_CUT;
        match &self.body {
            Body::Text { text, spans, .. } => {
                let (s, e) = spans[i];
                let line = &text[s as usize..e as usize];
                Ok(if cut {
                    shown_line(line).into()
                } else {
                    line.into()
                })
            }
            Body::Stream(s) => {
                let line = s.line(i)?;
                Ok(if cut { shown_line(&line) } else { line }.into())
            }
        }
    }

    /// Which lines a page starting at `offset` takes: (count, chars, hit_char_cap).
    /// `offset` must be in range.
    pub fn layout(&self, offset: u64, limit: u32) -> PageLayout {
        let first = (offset - 1) as usize;
        let mut taken = 0usize;
        let mut chars = 0usize;
        let mut hit_char_cap = false;
        for line in self.stats().iter().skip(first).take(limit as usize) {
            let add = line.units as usize + usize::from(taken > 0);
            if chars + add > READ_MAX_CHARS && taken > 0 {
                hit_char_cap = true;
                break;
            }
            chars += add;
            taken += 1;
        }
        let truncated = hit_char_cap || (first + taken) < self.total_lines() as usize;
        PageLayout {
            offset,
            taken,
            chars,
            truncated,
        }
    }

    /// The shown sizes of the lines a layout takes.
    pub fn line_stats(&self, layout: &PageLayout) -> &[LineStats] {
        let first = (layout.offset - 1) as usize;
        &self.stats()[first..first + layout.taken]
    }

    /// The capacities of the buffers it holds (text, line spans, line
    /// stats), for cache accounting.
    pub fn buffer_bytes(&self) -> [usize; 3] {
        match &self.body {
            Body::Text { text, spans, stats } => [
                text.capacity(),
                spans.capacity() * std::mem::size_of::<(u32, u32)>(),
                stats.capacity() * std::mem::size_of::<LineStats>(),
            ],
            Body::Stream(s) => {
                let [starts, stats] = s.index_bytes();
                [0, starts, stats]
            }
        }
    }

    /// The page itself. Only a streamed chapter can fail, when its file
    /// cannot be read or changed since it was indexed.
    pub fn page(&self, offset: u64, limit: u32) -> std::io::Result<Page> {
        let layout = self.layout(offset, limit);
        let mut lines = Vec::with_capacity(layout.taken);
        self.each_shown(&layout, |number, text| {
            lines.push(PageLine {
                number,
                text: text.to_string(),
            })
        })?;
        Ok(Page {
            offset,
            total_lines: self.total_lines(),
            chars: layout.chars,
            truncated: layout.truncated,
            lines,
        })
    }

    /// Each line of the page `layout` as shown, with its number, borrowed
    /// from the text where it is not cut: a page rendered from them
    /// copies each line once.
    pub fn each_shown(
        &self,
        layout: &PageLayout,
        mut f: impl FnMut(u64, &str),
    ) -> std::io::Result<()> {
        let first = (layout.offset - 1) as usize;
        for i in first..first + layout.taken {
            f(i as u64 + 1, &self.shown(i)?);
        }
        if let Body::Stream(s) = &self.body {
            // The lines were read after this look: a file changed in place
            // while they were read shows here.
            s.check_unchanged()?;
        }
        Ok(())
    }

    /// The offsets of the reading chain: 1, then `last + 1` of every
    /// truncated page, with the default limit.
    pub fn chain(&self) -> Vec<u64> {
        let mut offsets = vec![1];
        let mut offset = 1u64;
        loop {
            let layout = self.layout(offset, READ_LIMIT);
            if !layout.truncated {
                return offsets;
            }
            offset += layout.taken as u64;
            offsets.push(offset);
        }
    }
}

/// Where a page ends, without building it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    pub offset: u64,
    pub taken: usize,
    pub chars: usize,
    pub truncated: bool,
}

/// A line as the tool shows it: cut at 3000 UTF-16 units plus the suffix;
/// a surrogate pair split by the cut leaves U+FFFD, as Node writes a lone
/// surrogate to UTF-8.
fn shown_line(line: &str) -> String {
    if utf16_len(line) <= LINE_CUT {
        return line.to_string();
    }
    let mut out = String::with_capacity(LINE_CUT * 3 + LINE_CUT_SUFFIX.len());
    let mut units = 0;
    for c in line.chars() {
        let w = c.len_utf16();
        if units + w > LINE_CUT {
            if units < LINE_CUT {
                out.push('\u{FFFD}');
            }
            break;
        }
        out.push(c);
        units += w;
    }
    out.push_str(LINE_CUT_SUFFIX);
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageLine {
    pub number: u64,
    pub text: String,
}

/// One `read` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub offset: u64,
    pub total_lines: u64,
    pub chars: usize,
    pub truncated: bool,
    pub lines: Vec<PageLine>,
}

impl Page {
    pub fn last_line(&self) -> u64 {
        self.lines.last().map_or(self.offset, |l| l.number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ct(s: &str) -> ChapterText {
        ChapterText::new(s.to_string())
    }

    fn texts(p: &Page) -> Vec<&str> {
        p.lines.iter().map(|l| l.text.as_str()).collect()
    }

    #[test]
    fn splitting() {
        assert_eq!(ct("").total_lines(), 0);
        assert_eq!(texts(&ct("").page(1, 400).unwrap()), [""]);
        assert_eq!(
            ct("a\n").total_lines(),
            2,
            "trailing newline makes an empty last line"
        );
        assert_eq!(
            texts(&ct("a\r\nb\r\n").page(1, 400).unwrap()),
            ["a", "b", ""]
        );
        assert_eq!(
            texts(&ct("a\rb").page(1, 400).unwrap()),
            ["a\rb"],
            "a lone CR is not a break"
        );
        assert_eq!(texts(&ct("a\r\r\nb").page(1, 400).unwrap()), ["a\r", "b"]);
    }

    #[test]
    fn offset_range() {
        let empty = ct("");
        assert!(empty.offset_in_range(1));
        assert!(!empty.offset_in_range(2));
        let three = ct("a\nb\nc");
        assert!(three.offset_in_range(3));
        assert!(!three.offset_in_range(4));
        assert!(!three.offset_in_range(0));
    }

    #[test]
    fn empty_file_page() {
        let p = ct("").page(1, 400).unwrap();
        assert_eq!((p.total_lines, p.chars, p.truncated), (0, 0, false));
        assert_eq!(
            p.lines,
            [PageLine {
                number: 1,
                text: String::new()
            }]
        );
    }

    #[test]
    fn limit_and_truncation() {
        let t = ct("a\nb\nc\nd");
        let p = t.page(2, 2).unwrap();
        assert_eq!(texts(&p), ["b", "c"]);
        assert_eq!((p.chars, p.truncated), (3, true));
        let p = t.page(3, 2).unwrap();
        assert_eq!((p.truncated, p.last_line()), (false, 4));
    }

    #[test]
    fn long_line_cut_with_suffix() {
        let line = "字".repeat(3200);
        let p = ct(&line).page(1, 400).unwrap();
        assert_eq!(
            p.lines[0].text,
            format!("{}{}", "字".repeat(3000), LINE_CUT_SUFFIX)
        );
        assert_eq!(p.chars, 3000 + 9);
    }

    #[test]
    fn cut_splitting_a_surrogate_pair() {
        let line = format!("{}🌙🌙", "a".repeat(2999));
        let p = ct(&line).page(1, 1).unwrap();
        assert_eq!(
            p.lines[0].text,
            format!("{}\u{FFFD}{}", "a".repeat(2999), LINE_CUT_SUFFIX)
        );
        assert_eq!(p.chars, 3009);
    }

    #[test]
    fn budget_always_returns_one_line() {
        // 10 lines of 2999 units each: 6 fit (6*2999+5 = 17999), the 7th would pass 20000.
        let t = ct(&vec!["x".repeat(2999); 10].join("\n"));
        let p = t.page(1, 400).unwrap();
        assert_eq!(p.lines.len(), 6);
        assert!(p.truncated);
        assert_eq!(t.chain(), [1, 7]);
        // An oversized first line is cut, never refused.
        let big = ct(&"y".repeat(50_000));
        let p = big.page(1, 400).unwrap();
        assert_eq!((p.lines.len(), p.chars, p.truncated), (1, 3009, false));
    }

    #[test]
    fn chain_follows_truncated_pages() {
        let t = ct(&(1..=1000)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join("\n"));
        assert_eq!(t.chain(), [1, 401, 801]);
    }
}
