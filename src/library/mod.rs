//! The `novel_read` semantics as plain functions over a library directory.
//! No FUSE here: the CLI and the filesystem both call into this module.

mod chapters;
pub mod decode;
pub mod error;
pub mod index;
pub mod js;
pub mod line;
pub mod lookup;
pub mod number;
pub mod page;
pub mod render;
pub mod scan;
pub mod stream;
pub mod switch;

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

pub use chapters::{ChapterRow, ChapterTable, SharedNumber, chapter_table};
pub use error::NovelError;
pub use lookup::{BookIndex, Lookup};
pub use page::{ChapterText, Page, READ_LIMIT};
pub use render::PageOrigin;
pub use scan::Chapter;

/// Builds what file-name parsing and sorting need (regexes, collation
/// tables) ahead of the first request: a mount calls it on a thread of its
/// own, so the first listing finds them ready.
pub fn prepare_patterns() {
    number::compile_patterns();
    lookup::compile_patterns();
    scan::load_collator();
}

/// Chapters above this size are refused rather than read into memory.
pub const DEFAULT_MAX_CHAPTER_BYTES: u64 = 256 << 20;

/// The largest chapter file ever read, whatever `max_chapter_bytes` says.
pub const MAX_CHAPTER_BYTES_CAP: u64 = 2 << 30;

/// Chapters above this size are served from a line index over their file
/// rather than decoded whole (a mount lowers it to a share of its cache).
pub const DEFAULT_STREAM_ABOVE: u64 = 64 << 20;

/// A library root: the directory holding `novels/`.
#[derive(Debug, Clone)]
pub struct Library {
    root: PathBuf,
    root_display: String,
    /// Larger chapter files are an error (never above `MAX_CHAPTER_BYTES_CAP`).
    pub max_chapter_bytes: u64,
    /// Larger chapter files are served through a line index (see `stream`).
    pub stream_above: u64,
}

/// The arguments of one `novel_read` call, as strings where the tool
/// validates them itself.
#[derive(Debug, Clone, Default)]
pub struct ReadArgs<'a> {
    pub book: &'a str,
    pub chapter: &'a str,
    pub offset: Option<&'a str>,
    pub limit: Option<&'a str>,
}

/// A page and the names it is rendered with.
#[derive(Debug, Clone)]
pub struct PageOutput {
    pub book: String,
    pub file: String,
    pub path: String,
    pub page: Page,
}

impl PageOutput {
    pub fn source(&self) -> PageOrigin<'_> {
        PageOrigin {
            book: &self.book,
            file: &self.file,
            path: &self.path,
        }
    }
    pub fn text(&self) -> String {
        render::render_text(&self.source(), &self.page)
    }
    pub fn json(&self) -> String {
        render::render_json(&self.source(), &self.page)
    }
    pub fn rendered(&self, format: PageFormat) -> String {
        match format {
            PageFormat::Text => self.text(),
            PageFormat::Json => self.json(),
        }
    }
}

/// The two renderings of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageFormat {
    Text,
    Json,
}

/// `sanitizeSegment`: strip characters Windows forbids, leading and trailing
/// dots and whitespace, and defuse reserved device names.
pub fn sanitize_segment(s: &str) -> Result<String, NovelError> {
    let kept: String = s.chars().filter(|c| !r#"\/:*?"<>|"#.contains(*c)).collect();
    let trimmed = kept.trim_matches(|c: char| c == '.' || js::is_js_whitespace(c));
    if trimmed.is_empty() {
        return Err(NovelError::BookEmptyAfterSanitize);
    }
    let upper = trimmed.to_ascii_uppercase();
    let reserved = matches!(upper.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || ((upper.starts_with("COM") || upper.starts_with("LPT"))
            && upper.len() == 4
            && matches!(upper.as_bytes()[3], b'1'..=b'9'));
    Ok(if reserved {
        format!("_{trimmed}")
    } else {
        trimmed.to_string()
    })
}

/// A valid `--path-root`: absolute, without trailing slashes.
pub fn normalize_path_root(root: &str) -> Result<String, String> {
    if !root.starts_with('/') {
        return Err(format!(
            "path root must be an absolute path (like /library), not {root:?}"
        ));
    }
    if root.chars().any(char::is_control) {
        return Err(format!(
            "path root must not contain control characters: {root:?}"
        ));
    }
    let trimmed = root.trim_end_matches('/');
    Ok(if trimmed.is_empty() { "/" } else { trimmed }.to_string())
}

/// `optionalInt`: an integer argument in `[min, max]`, else `error`.
pub fn parse_int_arg(
    value: Option<&str>,
    default: u64,
    max: u64,
    error: NovelError,
) -> Result<u64, NovelError> {
    let Some(raw) = value else { return Ok(default) };
    match raw.trim().parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(error),
    }
}

/// Whether an error only says that a path is not there (not that it
/// cannot be read).
fn is_absence(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR)
}

impl Library {
    /// Opens a library; the root is made absolute and canonical because
    /// every page prints it.
    /// Whether `root` is a library root at all (it holds a `novels/`
    /// directory): the one rule of every command that takes a root.
    /// `root` is written in the error as given.
    pub fn check_root(root: &Path) -> Result<(), NovelError> {
        match std::fs::metadata(root.join("novels")) {
            Ok(m) if m.is_dir() => Ok(()),
            _ => Err(NovelError::NotALibrary {
                root: root.to_string_lossy().into_owned(),
            }),
        }
    }

    pub fn open(root: &Path) -> std::io::Result<Library> {
        let root = std::fs::canonicalize(root)?;
        let root_display = root.to_string_lossy().into_owned();
        Ok(Library {
            root,
            root_display,
            max_chapter_bytes: DEFAULT_MAX_CHAPTER_BYTES,
            stream_above: DEFAULT_STREAM_ABOVE,
        })
    }

    /// Writes `root` instead of the canonical host root in every page's
    /// `<path>`, JSON `path` and error text, so that pages read the same
    /// wherever the library lives (a sandbox sees `/library`, not the host's
    /// directory). Sizes follow, since they are computed from `display_path`.
    pub fn with_path_root(mut self, root: &str) -> Result<Library, String> {
        // `/` writes `/novels/…`, not `//novels/…`.
        self.root_display = normalize_path_root(root)?.trim_end_matches('/').to_string();
        Ok(self)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn novels_dir(&self) -> PathBuf {
        self.root.join("novels")
    }

    pub fn book_dir(&self, book: &OsStr) -> PathBuf {
        self.novels_dir().join(book)
    }

    /// `ROOT/novels/{book}/{file}` as pages print it.
    pub fn display_path(&self, book: &str, file: &str) -> String {
        format!("{}/novels/{book}/{file}", self.root_display)
    }

    /// Whether `novels/{book}` is a real directory (a symlink is not followed).
    pub fn is_book(&self, book: &OsStr) -> bool {
        self.book_metadata(book).is_some()
    }

    /// The metadata of `novels/{book}` when it is a real directory and
    /// `book` a plain name (one `lstat`; a symlink is not followed).
    pub fn book_metadata(&self, book: &OsStr) -> Option<std::fs::Metadata> {
        let plain = !book.is_empty()
            && book.as_bytes() != b"."
            && book.as_bytes() != b".."
            && !book.as_bytes().contains(&b'/');
        let meta = std::fs::symlink_metadata(self.book_dir(book))
            .ok()
            .filter(|_| plain)?;
        meta.is_dir().then_some(meta)
    }

    /// Scans a book given the sanitized name. A book that is not there is
    /// §1.7's "not found"; one that is there (or may be) but cannot be read
    /// says why, since "not found" would send its reader looking for a
    /// typo.
    pub fn scan_book(&self, book: &str) -> Result<BookIndex, NovelError> {
        let not_found = || NovelError::BookNotFound {
            root: self.root_display.clone(),
            book: book.to_string(),
        };
        let unreadable = |e: std::io::Error| NovelError::Io {
            path: self.display_dir(Some(OsStr::new(book))),
            reason: e.to_string(),
        };
        if !self.is_book(OsStr::new(book)) {
            return match std::fs::symlink_metadata(self.book_dir(OsStr::new(book))) {
                Err(e) if !is_absence(&e) => Err(unreadable(e)),
                _ => Err(not_found()),
            };
        }
        self.index_book(OsStr::new(book)).map_err(|e| {
            if is_absence(&e) {
                not_found()
            } else {
                unreadable(e)
            }
        })
    }

    /// `ROOT/novels` (or `ROOT/novels/{book}`) as pages print it.
    pub fn display_dir(&self, book: Option<&OsStr>) -> String {
        match book {
            Some(book) => format!("{}/novels/{}", self.root_display, book.to_string_lossy()),
            None => format!("{}/novels", self.root_display),
        }
    }

    /// Why `novels/` (or the book directory `book`) cannot be listed;
    /// `None` when it can.
    pub fn unreadable_dir(&self, book: Option<&OsStr>) -> Option<NovelError> {
        let dir = match book {
            Some(book) => self.book_dir(book),
            None => self.novels_dir(),
        };
        let e = std::fs::read_dir(dir).err()?;
        Some(NovelError::Io {
            path: self.display_dir(book),
            reason: e.to_string(),
        })
    }

    /// The chapter index of the book directory `book`, named as it is on
    /// disk (not sanitized).
    pub fn index_book(&self, book: &OsStr) -> std::io::Result<BookIndex> {
        Ok(BookIndex::new(scan::scan_chapters(&self.book_dir(book))?))
    }

    /// The book directories in `novels/` (symlinks are no books), in the
    /// order a listing shows them.
    pub fn book_names(&self) -> std::io::Result<Vec<OsString>> {
        let mut books: Vec<OsString> = std::fs::read_dir(self.novels_dir())?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name())
            .collect();
        books.sort_by(|a, b| {
            scan::locale_compare(&a.to_string_lossy(), &b.to_string_lossy()).then(a.cmp(b))
        });
        Ok(books)
    }

    /// The metadata of the chapter file `file` of `book` when the name
    /// holds a regular file (one `lstat`; a symlink is not followed).
    pub fn chapter_metadata(&self, book: &OsStr, file: &OsStr) -> Option<std::fs::Metadata> {
        let meta = std::fs::symlink_metadata(self.book_dir(book).join(file)).ok()?;
        meta.is_file().then_some(meta)
    }

    /// Whether a chapter file of `len` bytes is served through a line index.
    pub fn streams(&self, len: u64) -> bool {
        len > self.stream_above
    }

    /// Reads and decodes a chapter file opened with `open_chapter_file`:
    /// whole, or, above `stream_above`, as a line index over the file.
    pub fn load_opened_chapter(
        &self,
        book: &OsStr,
        chapter: &Chapter,
        f: std::fs::File,
        meta: &std::fs::Metadata,
    ) -> Result<ChapterText, NovelError> {
        if self.streams(meta.len()) {
            return self.stream_opened_chapter(book, chapter, f, meta);
        }
        let bytes = self.read_opened_chapter(book, &chapter.os_name, f, meta)?;
        self.decode_chapter(book, chapter, bytes)
    }

    /// Detects the encoding of an opened chapter file and indexes its
    /// lines, streaming over it; the file stays open to read pages from.
    pub fn stream_opened_chapter(
        &self,
        book: &OsStr,
        chapter: &Chapter,
        f: std::fs::File,
        meta: &std::fs::Metadata,
    ) -> Result<ChapterText, NovelError> {
        let file = &chapter.os_name;
        self.check_size(book, file, meta.len())?;
        match stream::StreamedText::open(f, meta) {
            Ok(Ok(text)) => Ok(ChapterText::streamed(text)),
            Ok(Err(e)) => Err(NovelError::Encoding {
                path: self.display_path(&book.to_string_lossy(), &chapter.file),
                utf16_suspected: e.utf16_suspected,
            }),
            Err(e) => Err(self.io_error(book, file, e)),
        }
    }

    /// A page of `file` in `book` with the names it is rendered with.
    pub fn page_output(
        &self,
        book: &OsStr,
        file: &OsStr,
        text: &ChapterText,
        offset: u64,
        limit: u32,
    ) -> Result<PageOutput, NovelError> {
        let page = text
            .page(offset, limit)
            .map_err(|e| self.io_error(book, file, e))?;
        let book = book.to_string_lossy().into_owned();
        let file = file.to_string_lossy().into_owned();
        Ok(PageOutput {
            path: self.display_path(&book, &file),
            book,
            file,
            page,
        })
    }

    /// The byte size of that page rendered as `format`, computed from line
    /// sizes without rendering it. `offset` must be in range.
    pub fn page_len(
        &self,
        book: &OsStr,
        file: &OsStr,
        text: &ChapterText,
        offset: u64,
        limit: u32,
        format: PageFormat,
    ) -> u64 {
        let book = book.to_string_lossy();
        let file = file.to_string_lossy();
        let path = self.display_path(&book, &file);
        let source = PageOrigin {
            book: &book,
            file: &file,
            path: &path,
        };
        let layout = text.layout(offset, limit);
        let lines = text.line_stats(&layout);
        (match format {
            PageFormat::Text => render::text_len(&source, text.total_lines(), &layout, lines),
            PageFormat::Json => render::json_len(&source, text.total_lines(), &layout, lines),
        }) as u64
    }

    /// Reads and decodes a chapter file. The file is opened without
    /// following symlinks, so a chapter swapped for a link after the scan
    /// still cannot leak anything outside the library.
    pub fn load_chapter(&self, book: &OsStr, chapter: &Chapter) -> Result<ChapterText, NovelError> {
        let file = &chapter.os_name;
        let Some((f, meta)) = self.open_chapter_file(book, file)? else {
            return Err(self.io_error(book, file, std::io::ErrorKind::NotFound.into()));
        };
        self.load_opened_chapter(book, chapter, f, &meta)
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

    fn io_error(&self, book: &OsStr, file: &OsStr, e: std::io::Error) -> NovelError {
        NovelError::Io {
            path: self.display_path(&book.to_string_lossy(), &file.to_string_lossy()),
            reason: e.to_string(),
        }
    }

    /// Opens a chapter file for reading, without following symlinks, with
    /// the metadata of the file actually opened. `Ok(None)` when the name
    /// no longer holds a regular file (deleted or renamed since the scan,
    /// or replaced by a symlink or a directory).
    pub fn open_chapter_file(
        &self,
        book: &OsStr,
        file: &OsStr,
    ) -> Result<Option<(std::fs::File, std::fs::Metadata)>, NovelError> {
        let full = self.book_dir(book).join(file);
        let f = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&full)
        {
            Ok(f) => f,
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOENT | libc::ELOOP | libc::ENOTDIR)
                ) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(self.io_error(book, file, e)),
        };
        let meta = f.metadata().map_err(|e| self.io_error(book, file, e))?;
        if !meta.is_file() {
            return Ok(None);
        }
        Ok(Some((f, meta)))
    }

    /// Reads an opened chapter file whole, refusing one above the size limit.
    pub fn read_opened_chapter(
        &self,
        book: &OsStr,
        file: &OsStr,
        f: std::fs::File,
        meta: &std::fs::Metadata,
    ) -> Result<Vec<u8>, NovelError> {
        let io_err = |e: std::io::Error| self.io_error(book, file, e);
        let max = self.check_size(book, file, meta.len())?;
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        f.take(max + 1).read_to_end(&mut bytes).map_err(io_err)?;
        if bytes.len() as u64 > max {
            return Err(io_err(std::io::Error::other("文件在读取时超过大小上限")));
        }
        Ok(bytes)
    }

    /// The size limit, or the error for a file of `len` bytes above it.
    fn check_size(&self, book: &OsStr, file: &OsStr, len: u64) -> Result<u64, NovelError> {
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

    /// One `novel_read` call, checks in the tool's order.
    pub fn read(
        &self,
        args: &ReadArgs,
        state_file: Option<&Path>,
    ) -> Result<PageOutput, NovelError> {
        if !switch::switched_on(state_file) {
            return Err(NovelError::SwitchedOff);
        }
        if js::trim(args.book).is_empty() {
            return Err(NovelError::EmptyBook);
        }
        if js::trim(args.chapter).is_empty() {
            return Err(NovelError::EmptyChapter);
        }
        let offset = parse_int_arg(args.offset, 1, page::MAX_OFFSET, NovelError::BadOffset)?;
        let limit = parse_int_arg(
            args.limit,
            READ_LIMIT as u64,
            READ_LIMIT as u64,
            NovelError::BadLimit,
        )? as u32;
        let book = sanitize_segment(args.book)?;
        let index = self.scan_book(&book)?;
        let i = match index.find(args.chapter) {
            Lookup::Found(i) => i,
            Lookup::Ambiguous { number, indices } => {
                let files = indices
                    .iter()
                    .map(|&i| index.chapters[i].file.clone())
                    .collect();
                return Err(NovelError::Ambiguous { number, files });
            }
            Lookup::NotFound => {
                return Err(NovelError::ChapterNotFound {
                    book: book.clone(),
                    needle: js::trim(args.chapter).to_string(),
                });
            }
        };
        let chapter = &index.chapters[i];
        let text = self.load_chapter(OsStr::new(&book), chapter)?;
        if !text.offset_in_range(offset) {
            return Err(NovelError::OffsetOutOfRange {
                offset,
                file: chapter.file.clone(),
                total_lines: text.total_lines(),
            });
        }
        let page = text
            .page(offset, limit)
            .map_err(|e| self.io_error(OsStr::new(&book), &chapter.os_name, e))?;
        Ok(PageOutput {
            path: self.display_path(&book, &chapter.file),
            file: chapter.file.clone(),
            book,
            page,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize() {
        assert_eq!(sanitize_segment(" ..星河:旧梦?.. ").unwrap(), "星河旧梦");
        assert_eq!(sanitize_segment("con").unwrap(), "_con");
        assert_eq!(sanitize_segment("LPT9").unwrap(), "_LPT9");
        assert_eq!(sanitize_segment("COM10").unwrap(), "COM10");
        assert_eq!(sanitize_segment("a/b").unwrap(), "ab");
        assert_eq!(
            sanitize_segment("../..").unwrap_err(),
            NovelError::BookEmptyAfterSanitize
        );
        assert_eq!(
            sanitize_segment("\u{3000}").unwrap_err(),
            NovelError::BookEmptyAfterSanitize
        );
    }

    #[test]
    fn int_args() {
        assert_eq!(parse_int_arg(None, 1, 9, NovelError::BadOffset), Ok(1));
        assert_eq!(parse_int_arg(Some("9"), 1, 9, NovelError::BadOffset), Ok(9));
        for bad in ["0", "10", "-1", "1.5", "abc", "", "99999999999999999999999"] {
            assert_eq!(
                parse_int_arg(Some(bad), 1, 9, NovelError::BadLimit),
                Err(NovelError::BadLimit),
                "{bad}"
            );
        }
    }

    #[test]
    fn path_roots() {
        assert_eq!(normalize_path_root("/library/").unwrap(), "/library");
        assert_eq!(normalize_path_root("/").unwrap(), "/");
        assert!(normalize_path_root("library").is_err());
        assert!(normalize_path_root("/a\nb").is_err());
        let lib = Library::open(Path::new("/"))
            .unwrap()
            .with_path_root("/library")
            .unwrap();
        assert_eq!(lib.display_path("书", "1.md"), "/library/novels/书/1.md");
        let lib = lib.with_path_root("/").unwrap();
        assert_eq!(lib.display_path("书", "1.md"), "/novels/书/1.md");
    }
}
