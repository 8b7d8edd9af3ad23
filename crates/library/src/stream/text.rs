//! A big chapter served from its file: the line index kept in memory,
//! each line read and decoded when a page asks for it.

use crate::backing::Opened;
use std::io;

use super::chunks::read_full;
use super::detect::detect;
use super::line_index::{self, LineIndex};
use super::{TextEncoding, TextLayout};
use crate::text::decode::UndetectableEncoding;
use crate::text::line::{LINE_CUT, LineStats};

/// Source bytes of a line enough to show it: a unit takes at most 4 bytes
/// (a GB18030 four-byte sequence), so this many hold more than `LINE_CUT`
/// whole units even when the last sequence is cut off.
pub const LINE_PREFIX_BYTES: usize = 4 * (LINE_CUT + 2) + 4;

/// A big chapter: its file, kept open, and its line index. A page is
/// refused once the file is no longer the version it was indexed in.
pub struct StreamedText {
    file: Box<dyn Opened>,
    layout: TextLayout,
    index: LineIndex,
}

impl std::fmt::Debug for StreamedText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamedText")
            .field("meta", self.file.meta())
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl StreamedText {
    /// Detects the encoding of `file` and indexes its lines; the file is
    /// kept to read pages from.
    pub fn open(file: Box<dyn Opened>) -> io::Result<Result<StreamedText, UndetectableEncoding>> {
        let (layout, index) = match detect(&*file, file.meta().len())? {
            Ok(found) => found,
            Err(e) => return Ok(Err(e)),
        };
        let index = match index {
            Some(index) => index,
            None => line_index::index(&*file, &layout)?,
        };
        Ok(Ok(StreamedText {
            file,
            layout,
            index,
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
        if read_full(&*self.file, &mut bytes, start)? < len {
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
        if !self.file.unchanged()? {
            return Err(self.changed());
        }
        Ok(())
    }

    fn changed(&self) -> io::Error {
        io::Error::other("文件在建立行索引后被改动")
    }
}
