//! Reading a chapter file into its text: opened without following
//! symlinks, refused above the size limit, decoded whole or, when big,
//! served through a line index over the file (`stream`).

use std::ffi::OsStr;

use super::backing::{Meta, Opened};
use super::{Chapter, ChapterText, Library, MAX_CHAPTER_BYTES_CAP, NovelError, decode, stream};

/// What reading a chapter's file gave, in one call: the metadata of the
/// file actually read, whether its bytes were at hand (no I/O: the page
/// cache, the bodies held), their digest when it was asked for, and the
/// text or why it cannot be had.
pub struct ChapterRead {
    pub meta: Meta,
    pub at_hand: bool,
    pub digest: Option<u64>,
    pub text: Result<ChapterText, NovelError>,
}

impl Library {
    /// Whether a chapter file of `len` bytes is served through a line index.
    pub fn streams(&self, len: u64) -> bool {
        len > self.stream_above
    }

    /// Opens the file `file` of `book`, digests its bytes when `digest_if`
    /// says so of the metadata of the file opened, and reads and decodes
    /// it as `chapter`: the tree's one call for a chapter's text.
    /// `Ok(None)` when the name no longer holds a regular file; a failure
    /// to open it is the `Err`, a failure to read or decode it the text's.
    pub fn read_chapter(
        &self,
        book: &OsStr,
        file: &OsStr,
        chapter: &Chapter,
        digest_if: impl FnOnce(&Meta) -> bool,
    ) -> Result<Option<ChapterRead>, NovelError> {
        let Some(f) = self.open_chapter_file(book, file)? else {
            return Ok(None);
        };
        let meta = f.meta().clone();
        let at_hand = f.at_hand();
        let digest = digest_if(&meta)
            .then(|| super::backing::digest(&*f).ok())
            .flatten();
        let text = self.load_opened_chapter(book, chapter, f);
        Ok(Some(ChapterRead {
            meta,
            at_hand,
            digest,
            text,
        }))
    }

    /// Reads and decodes a chapter file opened with `open_chapter_file`:
    /// whole, or, above `stream_above`, as a line index over the file.
    pub fn load_opened_chapter(
        &self,
        book: &OsStr,
        chapter: &Chapter,
        f: Box<dyn Opened>,
    ) -> Result<ChapterText, NovelError> {
        if self.streams(f.meta().len()) {
            return self.stream_opened_chapter(book, chapter, f);
        }
        let bytes = self.read_opened_chapter(book, &chapter.os_name, &*f)?;
        self.decode_chapter(book, chapter, bytes)
    }

    /// Detects the encoding of an opened chapter file and indexes its
    /// lines, streaming over it; the file stays open to read pages from.
    pub fn stream_opened_chapter(
        &self,
        book: &OsStr,
        chapter: &Chapter,
        f: Box<dyn Opened>,
    ) -> Result<ChapterText, NovelError> {
        let file = &chapter.os_name;
        self.check_size(book, file, f.meta().len())?;
        match stream::StreamedText::open(f) {
            Ok(Ok(text)) => Ok(ChapterText::streamed(text)),
            Ok(Err(e)) => Err(NovelError::Encoding {
                path: self.display_path(&book.to_string_lossy(), &chapter.file),
                utf16_suspected: e.utf16_suspected,
            }),
            Err(e) => Err(self.io_error(book, file, e)),
        }
    }

    /// Reads and decodes a chapter file. The file is opened without
    /// following symlinks, so a chapter swapped for a link after the scan
    /// still cannot leak anything outside the library.
    pub fn load_chapter(&self, book: &OsStr, chapter: &Chapter) -> Result<ChapterText, NovelError> {
        let file = &chapter.os_name;
        let Some(f) = self.open_chapter_file(book, file)? else {
            return Err(self.io_error(book, file, std::io::ErrorKind::NotFound.into()));
        };
        self.load_opened_chapter(book, chapter, f)
    }

    /// Decodes the bytes of `chapter`.
    pub fn decode_chapter(
        &self,
        book: &OsStr,
        chapter: &Chapter,
        bytes: Vec<u8>,
    ) -> Result<ChapterText, NovelError> {
        let text = decode::decode_owned(bytes).map_err(|e| NovelError::Encoding {
            path: self.display_path(&book.to_string_lossy(), &chapter.file),
            utf16_suspected: e.utf16_suspected,
        })?;
        Ok(ChapterText::new(text))
    }

    pub(super) fn io_error(&self, book: &OsStr, file: &OsStr, e: std::io::Error) -> NovelError {
        let path = self.display_path(&book.to_string_lossy(), &file.to_string_lossy());
        NovelError::from_io(path, &e)
    }

    /// Opens a chapter file for reading, without following symlinks, with
    /// the metadata of the file actually opened. `Ok(None)` when the name
    /// no longer holds a regular file (deleted or renamed since the scan,
    /// or replaced by a symlink or a directory).
    pub fn open_chapter_file(
        &self,
        book: &OsStr,
        file: &OsStr,
    ) -> Result<Option<Box<dyn Opened>>, NovelError> {
        self.backing
            .open(&Self::rel_chapter(book, file))
            .map_err(|e| self.io_error(book, file, e))
    }

    /// Reads an opened chapter file whole, refusing one above the size limit.
    pub fn read_opened_chapter(
        &self,
        book: &OsStr,
        file: &OsStr,
        f: &dyn Opened,
    ) -> Result<Vec<u8>, NovelError> {
        let io_err = |e: std::io::Error| self.io_error(book, file, e);
        let max = self.check_size(book, file, f.meta().len())?;
        let bytes = f.read_all(max).map_err(io_err)?;
        if bytes.len() as u64 > max {
            return Err(io_err(std::io::Error::other("文件在读取时超过大小上限")));
        }
        Ok(bytes)
    }

    /// The size limit, or the error for a file of `len` bytes above it.
    pub(super) fn check_size(
        &self,
        book: &OsStr,
        file: &OsStr,
        len: u64,
    ) -> Result<u64, NovelError> {
        // Decoding grows a text by at most 1.5× (2 bytes of GBK or UTF-16
        // become 3 of UTF-8): under 2 GiB, line offsets fit in a u32.
        let max = self.max_chapter_bytes.min(MAX_CHAPTER_BYTES_CAP);
        if len > max {
            return Err(self.io_error(
                book,
                file,
                std::io::Error::other(format!(
                    "文件大小 {len} 字节超过上限 {max} 字节（--max-chapter-bytes）"
                )),
            ));
        }
        Ok(max)
    }
}
