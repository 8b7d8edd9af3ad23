//! The `novel_read` semantics as plain functions over a library directory.
//! No FUSE here: the CLI and the filesystem both call into this module.
//! Here is the front, `Library` and one `novel_read` call (`Library::read`);
//! `args` holds the argument rules, `paths` where books are and how pages
//! name them, `chapter_io` reading a chapter, `output` a rendered page.

#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(unreachable_pub)]

mod args;
pub mod backing;
mod chapter_io;
pub use chapter_io::ChapterRead;
mod chapters;
pub mod error;
pub mod index;
pub mod lookup;
pub mod number;
mod pages;
mod paths;
pub mod scan;
pub mod stable_hash;
pub mod stream;
pub mod switch;
pub mod test_switch;
mod text;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

pub use args::{BadPathRoot, normalize_path_root, parse_int_arg, sanitize_segment};
pub use chapters::{ChapterRow, ChapterTable, SharedNumber, chapter_table};
pub use error::NovelError;
pub use lookup::{BookIndex, Lookup};
pub use pages::output::{PageFormat, PageOutput};
pub use pages::page::{ChapterText, Page, READ_LIMIT};
pub use pages::render::PageOrigin;
// Their paths as the other crates name them.
pub use pages::{page, render};
pub use scan::Chapter;
pub use text::{decode, js, line};

/// Builds what file-name parsing and sorting need (regexes, collation
/// tables) ahead of the first request: a mount calls it on a thread of its
/// own, so the first listing finds them ready.
pub fn prepare_patterns() {
    number::compile_patterns();
    lookup::compile_patterns();
    scan::load_collator();
    PATTERNS_PREPARED.store(true, std::sync::atomic::Ordering::Release);
}

static PATTERNS_PREPARED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether `prepare_patterns` has run to its end in this process: a mount
/// of a bucket starts it while the bucket is checked, and the tree then
/// has none left to wait for.
pub fn patterns_prepared() -> bool {
    PATTERNS_PREPARED.load(std::sync::atomic::Ordering::Acquire)
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
    /// Where the library's bytes are (see `backing`).
    backing: std::sync::Arc<dyn backing::Backing>,
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

impl Library {
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

    /// A library read through `backing`, rooted at `root` (a local
    /// directory, canonical, or a bucket's URL) and written as `display` in
    /// every page until `with_path_root` says otherwise.
    pub fn new(
        backing: std::sync::Arc<dyn backing::Backing>,
        root: PathBuf,
        display: &str,
    ) -> Library {
        Library {
            backing,
            root,
            root_display: display.to_string(),
            max_chapter_bytes: DEFAULT_MAX_CHAPTER_BYTES,
            stream_above: DEFAULT_STREAM_ABOVE,
        }
    }

    /// Writes `root` instead of the canonical host root in every page's
    /// `<path>`, JSON `path` and error text, so that pages read the same
    /// wherever the library lives (a sandbox sees `/library`, not the host's
    /// directory). Sizes follow, since they are computed from `display_path`.
    pub fn with_path_root(mut self, root: &str) -> Result<Library, BadPathRoot> {
        // `/` writes `/novels/…`, not `//novels/…`.
        self.root_display = normalize_path_root(root)?.trim_end_matches('/').to_string();
        Ok(self)
    }

    /// The library's root directory as the host names it (the `s3://` URL
    /// of a bucket).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The local directory the library is, when it is one (see
    /// `Backing::local_root`).
    pub fn local_root(&self) -> Option<&Path> {
        self.backing.local_root()
    }

    /// How long a listing may be trusted without a look, when looks cost
    /// requests (see `Backing::listing_ttl`).
    pub fn listing_ttl(&self) -> Option<std::time::Duration> {
        self.backing.listing_ttl()
    }

    /// How the storage's names stay fresh, where it has a rule of its own
    /// (see `Backing::freshness`).
    pub fn storage_freshness(&self) -> Option<String> {
        self.backing.freshness()
    }

    /// Hands `sink` the rows the library's publisher recorded beside each
    /// directory as it is fetched (see `Backing::on_published_index`).
    pub fn on_published_index(&self, sink: backing::PublishedIndex) {
        self.backing.on_published_index(sink);
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
