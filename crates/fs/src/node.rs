//! What a name in the tree is (`Node`), and what `stat` shows of it.

use std::ffi::{OsStr, OsString};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use novelfs_library::index;

use super::names::{ERROR_FILE, PageName};
use novelfs_library::PageFormat as Format;

pub const ROOT_INO: u64 = 1;

/// A chapter file of a book: shared by its directory and all its pages, so
/// that a page inode costs a pointer, not two names.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ChapterId {
    pub book: Arc<OsStr>,
    pub file: Box<OsStr>,
}

pub(crate) type ChapterRef = Arc<ChapterId>;

pub(crate) fn chapter_ref(book: &Arc<OsStr>, file: &OsStr) -> ChapterRef {
    Arc::new(ChapterId {
        book: book.clone(),
        file: file.into(),
    })
}

/// Every kind of name the tree can hold. A node is its own inode key, so
/// the same path always gets the same inode, and an alias whose target
/// changed is a different symlink.
///
/// A file whose bytes come from a source carries that source's version:
/// an edit makes the same name a new inode, so an inode's bytes (and the
/// kernel's page cache of them) never change.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Node {
    Root,
    RootError,
    Book {
        book: Arc<OsStr>,
    },
    /// The only name in a book directory that cannot be read.
    BookError {
        book: Arc<OsStr>,
    },
    BookAlias {
        name: Box<OsStr>,
        target: Arc<OsStr>,
    },
    Chapter {
        chapter: ChapterRef,
    },
    ChapterAlias {
        name: Box<OsStr>,
        target: ChapterRef,
    },
    Ambiguous {
        book: Arc<OsStr>,
        name: Box<OsStr>,
    },
    /// `version`: of the book directory, whose files the text names.
    AmbiguousError {
        book: Arc<OsStr>,
        name: Box<OsStr>,
        version: u64,
    },
    ChapterError {
        chapter: ChapterRef,
        version: u64,
    },
    Page {
        chapter: ChapterRef,
        page: PageName,
        version: u64,
    },
    /// `novel_books.txt|json` at the root. `version`: of everything the
    /// library's index depends on (0: named by a listing, never looked up).
    BooksIndex {
        format: Format,
        version: u64,
    },
    /// `novel_chapters.txt|json` in a book (`version` as for `BooksIndex`).
    ChaptersIndex {
        book: Arc<OsStr>,
        format: Format,
        version: u64,
    },
}

/// The version of an index file a listing names without looking at its
/// sources: its attributes are a placeholder the kernel may not keep.
pub(crate) const UNLOOKED: u64 = 0;

/// The name of the library's index file in `format`.
pub(crate) fn books_file(format: Format) -> &'static str {
    match format {
        Format::Text => index::BOOKS_TXT,
        Format::Json => index::BOOKS_JSON,
    }
}

/// The name of a book's index file in `format`.
pub(crate) fn chapters_file(format: Format) -> &'static str {
    match format {
        Format::Text => index::CHAPTERS_TXT,
        Format::Json => index::CHAPTERS_JSON,
    }
}

/// The format of an index file's name (`.txt` or `.json`).
pub(crate) fn index_format(name: &OsStr) -> Format {
    if name.as_encoded_bytes().ends_with(b".json") {
        Format::Json
    } else {
        Format::Text
    }
}

/// Where the kernel holds a node: its parent directory and its name there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub parent: Node,
    pub name: OsString,
}

impl Node {
    /// The node's path in the mount, for log lines.
    pub fn path(&self) -> String {
        let l = |s: &OsStr| s.to_string_lossy().into_owned();
        let c = |c: &ChapterId| format!("/{}/{}", l(&c.book), l(&c.file));
        match self {
            Node::Root => "/".into(),
            Node::RootError => format!("/{ERROR_FILE}"),
            Node::Book { book } => format!("/{}", l(book)),
            Node::BookError { book } => format!("/{}/{ERROR_FILE}", l(book)),
            Node::BookAlias { name, .. } => format!("/{}", l(name)),
            Node::Chapter { chapter } => c(chapter),
            Node::ChapterAlias { name, target } => format!("/{}/{}", l(&target.book), l(name)),
            Node::Ambiguous { book, name } => format!("/{}/{}", l(book), l(name)),
            Node::AmbiguousError { book, name, .. } => {
                format!("/{}/{}/{ERROR_FILE}", l(book), l(name))
            }
            Node::ChapterError { chapter, .. } => format!("{}/{ERROR_FILE}", c(chapter)),
            Node::Page { chapter, page, .. } => format!("{}/{}", c(chapter), page.to_name()),
            Node::BooksIndex { format, .. } => format!("/{}", books_file(*format)),
            Node::ChaptersIndex { book, format, .. } => {
                format!("/{}/{}", l(book), chapters_file(*format))
            }
        }
    }

    /// The book the node lies in (`None` at the root level).
    pub fn book(&self) -> Option<&OsStr> {
        match self {
            Node::Root
            | Node::RootError
            | Node::Book { .. }
            | Node::BookAlias { .. }
            | Node::BooksIndex { .. } => None,
            Node::Chapter { chapter }
            | Node::ChapterError { chapter, .. }
            | Node::Page { chapter, .. } => Some(&chapter.book),
            Node::ChapterAlias { target, .. } => Some(&target.book),
            Node::Ambiguous { book, .. }
            | Node::AmbiguousError { book, .. }
            | Node::ChaptersIndex { book, .. }
            | Node::BookError { book } => Some(book),
        }
    }

    /// Whether the node lies under a book or chapter directory whose own
    /// name is an index file's: the kernel holds it under an alias, where
    /// a change cannot be pushed by name, so it keeps it only for the TTL.
    pub fn shadowed(&self) -> bool {
        let chapter = match self {
            Node::Chapter { chapter }
            | Node::ChapterError { chapter, .. }
            | Node::Page { chapter, .. } => Some(chapter),
            _ => None,
        };
        chapter.is_some_and(|c| index::is_chapters_file(&c.file))
            || match self {
                Node::Book { book } => index::is_books_file(book),
                other => other.book().is_some_and(index::is_books_file),
            }
    }

    /// Whether the node is a directory (whose listing the kernel may cache).
    pub fn is_directory(&self) -> bool {
        matches!(
            self,
            Node::Root | Node::Book { .. } | Node::Chapter { .. } | Node::Ambiguous { .. }
        )
    }

    /// Its parent and its name there (`None` for the root).
    pub fn placement(&self) -> Option<Placement> {
        let (parent, name): (Node, OsString) = match self {
            Node::Root => return None,
            Node::RootError => (Node::Root, ERROR_FILE.into()),
            Node::Book { book } => (Node::Root, book.to_os_string()),
            Node::BookError { book } => (Node::Book { book: book.clone() }, ERROR_FILE.into()),
            Node::BookAlias { name, .. } => (Node::Root, name.to_os_string()),
            Node::Chapter { chapter } => (
                Node::Book {
                    book: chapter.book.clone(),
                },
                chapter.file.to_os_string(),
            ),
            Node::ChapterAlias { name, target } => (
                Node::Book {
                    book: target.book.clone(),
                },
                name.to_os_string(),
            ),
            Node::Ambiguous { book, name } => {
                (Node::Book { book: book.clone() }, name.to_os_string())
            }
            Node::AmbiguousError { book, name, .. } => (
                Node::Ambiguous {
                    book: book.clone(),
                    name: name.clone(),
                },
                ERROR_FILE.into(),
            ),
            Node::ChapterError { chapter, .. } => (
                Node::Chapter {
                    chapter: chapter.clone(),
                },
                ERROR_FILE.into(),
            ),
            Node::Page { chapter, page, .. } => (
                Node::Chapter {
                    chapter: chapter.clone(),
                },
                page.to_name().into(),
            ),
            Node::BooksIndex { format, .. } => (Node::Root, books_file(*format).into()),
            Node::ChaptersIndex { book, format, .. } => (
                Node::Book { book: book.clone() },
                chapters_file(*format).into(),
            ),
        };
        Some(Placement { parent, name })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Directory,
    File,
    Symlink,
}

/// What `stat` shows, and how long the kernel may keep it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    pub ino: u64,
    pub kind: Kind,
    pub size: u64,
    pub mtime: SystemTime,
    pub ttl: Duration,
}

impl Attr {
    pub fn perm(&self) -> u16 {
        match self.kind {
            Kind::Directory => 0o555,
            Kind::File => 0o444,
            Kind::Symlink => 0o777,
        }
    }
    pub fn blocks(&self) -> u64 {
        self.size.div_ceil(512)
    }
}
