//! The request handlers, free of FUSE types: which names exist, what they
//! are, what bytes they hold. `fuse.rs` only translates requests to these.
//!
//! Nothing here is trusted across requests: every operation re-validates
//! its node against the source (through stamp-checked caches), so a change
//! on disk shows at the next lookup.
//!
//! Files are read by inode, without handles (the mount answers OPEN with
//! ENOSYS, so the kernel stops sending OPEN and RELEASE and keeps each
//! file's page cache): that is sound because every file whose bytes depend
//! on a source carries the version of that source in its node, so an
//! inode's bytes never change. An edit makes the same name a new inode.

use std::ffi::{OsStr, OsString};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::library::index::{is_books_file, is_chapters_file};
use crate::library::{Library, NovelError};

use super::ahead::Outliner;
use super::cache::{Budget, HeapTrim, Stamp};
use super::freshness::{self, Change, Freshness, Invalidation, Watch};
use super::gave_up::GaveUp;
use super::indexes::{BookLook, IndexFiles, Rendered};
use super::inodes::InodeTable;
use super::listing::{Listed, Listing, Listings};
use super::lock;
use super::names::{ERROR_FILE, PageName};
use super::node::{
    Attr, ChapterRef, Kind, Node, Result, UNLOOKED, books_file, chapter_ref, chapters_file,
    index_format,
};
use super::outline::Outlines;
use super::pages::Pages;
use super::persist::MountIndex;
use super::resolve;
use super::source::{Source, dir_mtime, mtime_of, stamp_of};
use super::store_ahead::{Parts, Store, StoreAhead, StoreOutcome};
use super::switch::{Switch, Tool};
use crate::library::PageFormat;

/// Settings of one mount.
#[derive(Debug, Clone)]
pub struct FsConfig {
    /// How long the kernel may cache entries and attributes of what is
    /// not watched; 0 = ask every time (and nothing is watched).
    pub ttl: Duration,
    /// The assistant's switch file; `None` = the default location.
    pub state_file: Option<PathBuf>,
    /// Bytes of decoded chapters, outlines, rendered pages and listings
    /// kept in memory.
    pub cache_bytes: usize,
    /// Watch the library for changes (inotify) so that the kernel may
    /// cache for long; only with a non-zero `ttl`.
    pub watch: bool,
    /// Where the persistent index of chapter outlines lives; `None`: none.
    pub index_dir: Option<PathBuf>,
}

impl Default for FsConfig {
    fn default() -> Self {
        FsConfig {
            ttl: Duration::from_secs(1),
            state_file: None,
            cache_bytes: 256 << 20,
            watch: true,
            index_dir: None,
        }
    }
}

pub struct NovelFs {
    source: Arc<Source>,
    freshness: Arc<Freshness>,
    inodes: InodeTable,
    outlines: Arc<Outlines>,
    outliner: Outliner,
    pages: Pages,
    listings: Listings,
    index_files: IndexFiles,
    switch: Switch,
    heap_trim: HeapTrim,
    gave_up: GaveUp,
    store_ahead: StoreAhead,
    /// Compiles the file-name patterns while the mount is being attached.
    preparing: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// A name resolved with its attributes, both of the same look at its source.
struct Found {
    node: Node,
    attr: Attr,
}

impl Found {
    /// As the one entry of a directory that holds only its `ERROR`.
    fn listed_as_error(self) -> Listed {
        Listed {
            node: self.node,
            kind: Kind::File,
            name: ERROR_FILE.into(),
            attr: Some(self.attr),
        }
    }
}

fn error_bytes(e: &NovelError) -> Arc<Vec<u8>> {
    Arc::new(e.error_line().into_bytes())
}

impl NovelFs {
    pub fn new(library: Library, config: FsConfig) -> Self {
        let budget = Budget::split(config.cache_bytes);
        // On the other core while the mount is attached (see `prepared`).
        let preparing = std::thread::Builder::new()
            .name("novelfs-prepare".into())
            .spawn(crate::library::prepare_patterns)
            .ok();
        let freshness = Arc::new(Freshness::new(
            &library.novels_dir(),
            config.ttl,
            config.watch,
        ));
        // SQLite's page cache is a quarter of the outlines' share.
        let stored_cache = budget.outlines / 4;
        let stored = config
            .index_dir
            .as_deref()
            .and_then(|dir| MountIndex::open(dir, &library, stored_cache));
        let outlines_budget = budget.outlines - stored.as_ref().map_or(0, |_| stored_cache);
        let inodes = InodeTable::default();
        let source = Arc::new(Source::new(
            library,
            freshness.clone(),
            budget.texts,
            budget.indexes,
            inodes.bytes(),
        ));
        let outlines = Arc::new(Outlines::new(outlines_budget).with_stored(stored));
        NovelFs {
            outliner: Outliner::start(source.clone(), outlines.clone(), budget.outlines),
            source,
            freshness,
            inodes,
            outlines,
            pages: Pages::new(budget.pages),
            listings: Listings::new(budget.listings),
            index_files: IndexFiles::new(budget.index_files),
            switch: Switch::new(config.state_file),
            heap_trim: HeapTrim::default(),
            gave_up: GaveUp::default(),
            store_ahead: StoreAhead::new(),
            preparing: Mutex::new(preparing),
        }
    }

    /// Waits until the file-name patterns are compiled. The mount is
    /// reported ready only then: compiled on first use they cost a fresh
    /// mount's first pass a tenth of its CPU (2-3 ms), in the requests
    /// that needed them.
    pub fn prepared(&self) {
        if let Some(thread) = lock(&self.preparing).take() {
            let _ = thread.join();
        }
    }

    /// The watch over the library, when changes are pushed to the kernel.
    pub fn watch(&self) -> Option<&Watch> {
        self.freshness.watch()
    }

    /// Whether the kernel is told of changes (then directories need no
    /// OPENDIR: their cached listings are dropped on change).
    pub fn watching(&self) -> bool {
        self.freshness.covered(None)
    }

    /// Why the library is not watched (`None` when it is).
    pub(crate) fn unwatched(&self) -> Option<&str> {
        self.freshness.unwatched()
    }

    /// The configured TTL (what unwatched names get).
    pub fn ttl(&self) -> Duration {
        self.freshness.ttl()
    }

    pub fn library(&self) -> &Library {
        self.source.library()
    }

    /// The path of `ino` for log lines (never fails).
    pub fn describe(&self, ino: u64) -> String {
        self.inodes.describe(ino)
    }

    pub fn node(&self, ino: u64) -> Result<Node> {
        self.inodes.node(ino)
    }

    /// The kernel dropped `n` lookups of `ino`.
    pub fn forget(&self, ino: u64, n: u64) {
        self.store_ahead.forgotten(ino);
        if self.inodes.forget(ino, n) {
            self.listings.forget(ino);
            self.heap_trim.freed();
        }
    }

    /// Bytes the inode table holds (inside the cache budget).
    pub fn inode_table_bytes(&self) -> usize {
        self.inodes
            .bytes()
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Inodes currently known (for tests of `forget`).
    pub fn inode_count(&self) -> usize {
        self.inodes.len()
    }

    /// Whether `novel_read` is switched on.
    pub fn switched_on(&self) -> bool {
        self.switch.switched_on()
    }

    /// Whether the switch flipped since the previous call (the first call
    /// only records it).
    pub fn switch_flipped(&self) -> bool {
        self.switch.flipped()
    }

    /// How many chapter files were read and decoded so far (for tests
    /// that show what a request costs).
    pub fn decodes(&self) -> u64 {
        self.source.decodes()
    }

    /// The library's index as the sources are now (computed if it is not
    /// cached).
    fn books_index(&self) -> Result<Rendered> {
        self.index_files.library(
            &self.source,
            &self.outlines,
            self.switch.tool_on(Tool::Books),
        )
    }

    /// A book's index as the sources are now (computed if it is not cached).
    fn chapters_index(&self, book: &Arc<OsStr>) -> Result<Rendered> {
        self.index_files.book(
            &self.source,
            &self.outlines,
            book,
            self.switch.tool_on(Tool::Chapters),
        )
    }

    /// The node and attributes of an index file in `format`, both of one
    /// rendering.
    fn index_found(
        &self,
        rendered: Rendered,
        format: PageFormat,
        node: impl FnOnce(u64) -> Node,
    ) -> Result<Found> {
        let size = rendered.bytes(format).len() as u64;
        let node = node(rendered.version);
        let attr = self.file_attr(&node, size, rendered.mtime);
        Ok(Found { node, attr })
    }

    /// An index file as a listing names it: no version, and attributes the
    /// kernel may not keep (a lookup gives the real ones). Listing a
    /// directory never computes an index.
    fn index_listed(&self, node: Node, name: &str) -> Listed {
        Listed {
            node,
            kind: Kind::File,
            name: name.into(),
            attr: Some(Attr {
                ino: 0,
                kind: Kind::File,
                size: 0,
                mtime: std::time::UNIX_EPOCH,
                ttl: Duration::ZERO,
            }),
        }
    }

    /// The node's current attributes; ENOENT when it no longer exists.
    fn attr_of(&self, ino: u64, node: &Node) -> Result<Attr> {
        let ttl = self.freshness.ttl_for(node);
        let library = self.library();
        let dir = |mtime| Attr {
            ino,
            kind: Kind::Directory,
            size: 0,
            mtime,
            ttl,
        };
        let file = |size: u64, mtime| Attr {
            ino,
            kind: Kind::File,
            size,
            mtime,
            ttl,
        };
        let link = |target: &OsStr, mtime| Attr {
            ino,
            kind: Kind::Symlink,
            size: target.len() as u64,
            mtime,
            ttl,
        };
        // A version that is no longer the current one (it may still be open).
        let older = || {
            self.inodes
                .last_attr(ino)
                .map(|last| file(last.size, last.mtime))
        };
        Ok(match node {
            Node::Root => dir(dir_mtime(&library.novels_dir())),
            Node::RootError => file(
                self.root_error()?.len() as u64,
                dir_mtime(&library.novels_dir()),
            ),
            Node::Book { book } => {
                if !library.is_book(book) {
                    return Err(libc::ENOENT);
                }
                dir(dir_mtime(&library.book_dir(book)))
            }
            Node::BookError { book } => {
                let e = library.unreadable_dir(Some(book)).ok_or(libc::ENOENT)?;
                file(
                    e.error_line().len() as u64,
                    dir_mtime(&library.book_dir(book)),
                )
            }
            Node::BookAlias { name, target } => {
                if *resolve::book_alias_target(library, name)? != **target {
                    return Err(libc::ENOENT);
                }
                link(target, dir_mtime(&library.book_dir(target)))
            }
            Node::Chapter { chapter } => dir(self.source.chapter_file(chapter)?.mtime()),
            Node::ChapterAlias { name, target } => {
                if *resolve::alias_target(&self.source, &target.book, name)? != *target.file {
                    return Err(libc::ENOENT);
                }
                link(
                    &target.file,
                    dir_mtime(&library.book_dir(&target.book).join(&*target.file)),
                )
            }
            Node::Ambiguous { book, name } => {
                resolve::ambiguity(&self.source, book, name)?;
                dir(dir_mtime(&library.book_dir(book)))
            }
            Node::AmbiguousError {
                book,
                name,
                version,
            } => match resolve::ambiguity(&self.source, book, name) {
                Ok(a) if a.version == *version => file(a.error.error_line().len() as u64, a.mtime),
                _ => older()?,
            },
            Node::ChapterError { chapter, version } => match self.source.chapter(chapter) {
                Ok(now) if now.version == *version => match now.loaded {
                    Err(e) => file(e.error_line().len() as u64, now.mtime),
                    Ok(_) => older()?,
                },
                _ => older()?,
            },
            Node::Page {
                chapter,
                page,
                version,
            } => match self.outlines.page_size(&self.source, chapter, *page) {
                Ok(now) if now.version == *version => file(now.size, now.mtime),
                _ => older()?,
            },
            // The bytes of a version never change, nor do its attributes:
            // whether it is still current is a lookup's question.
            Node::BooksIndex { format, version } => {
                match self.index_files.cached_library(*version) {
                    Some(r) => file(r.bytes(*format).len() as u64, r.mtime),
                    None => older()?,
                }
            }
            Node::ChaptersIndex {
                book,
                format,
                version,
            } => match self.index_files.cached_book(book, *version) {
                Some(r) => file(r.bytes(*format).len() as u64, r.mtime),
                None => older()?,
            },
        })
    }

    /// Logs (once) that a directory cannot be served, and why.
    fn log_gave_up(&self, e: &NovelError) {
        match e {
            NovelError::Io { path, reason } => self.gave_up.gave_up(path, reason),
            other => self.gave_up.gave_up(&other.to_string(), "cannot be read"),
        }
    }

    /// What the root's `ERROR` says: that the switch is off, or why
    /// `novels/` cannot be listed (gone, unreadable); ENOENT when neither.
    fn root_error(&self) -> Result<String> {
        if !self.switched_on() {
            return Ok(NovelError::SwitchedOff.error_line());
        }
        match self.library().unreadable_dir(None) {
            Some(e) => Ok(e.error_line()),
            None => Err(libc::ENOENT),
        }
    }

    /// Switched off, only the root and its `ERROR` remain reachable (the
    /// index files too follow `novel_read`'s switch, and their own tool's).
    fn check_switch(&self, node: &Node) -> Result<()> {
        if matches!(node, Node::Root | Node::RootError) || self.switched_on() {
            Ok(())
        } else {
            Err(libc::EACCES)
        }
    }

    pub fn getattr(&self, ino: u64) -> Result<Attr> {
        let node = self.node(ino)?;
        self.check_switch(&node)?;
        self.attr_of(ino, &node)
    }

    pub fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr> {
        let parent = self.node(parent)?;
        if !self.switched_on() {
            return match parent {
                Node::Root if name == ERROR_FILE => self.found(Node::RootError),
                _ => Err(libc::EACCES),
            };
        }
        let found = match parent {
            Node::Root if name == ERROR_FILE && self.root_error().is_ok() => {
                self.checked(Node::RootError)?
            }
            Node::Book { book } if name == ERROR_FILE && self.source.book_index(&book).is_err() => {
                self.checked(Node::BookError { book })?
            }
            Node::Root if is_books_file(name) => {
                let format = index_format(name);
                self.index_found(self.books_index()?, format, |version| Node::BooksIndex {
                    format,
                    version,
                })?
            }
            Node::Root => self.checked(resolve::in_root(self.library(), name)?)?,
            Node::Book { book } if is_chapters_file(name) => {
                let format = index_format(name);
                let rendered = self.chapters_index(&book)?;
                self.index_found(rendered, format, |version| Node::ChaptersIndex {
                    book,
                    format,
                    version,
                })?
            }
            Node::Book { book } => self.checked(resolve::in_book(&self.source, book, name)?)?,
            Node::Chapter { chapter } => self.in_chapter(chapter, name)?,
            Node::Ambiguous { book, name: alias } if name == ERROR_FILE => {
                self.ambiguity_error(book, alias)?
            }
            Node::Ambiguous { .. } => return Err(libc::ENOENT),
            Node::RootError
            | Node::BookError { .. }
            | Node::AmbiguousError { .. }
            | Node::ChapterError { .. }
            | Node::Page { .. }
            | Node::BookAlias { .. }
            | Node::ChapterAlias { .. }
            | Node::BooksIndex { .. }
            | Node::ChaptersIndex { .. } => return Err(libc::ENOTDIR),
        };
        Ok(self.intern(found))
    }

    /// The node `name` names in a chapter directory (its `ERROR`, or a
    /// page of the source's current version) with its attributes, both of
    /// one look at the source: asked twice, an edit in between would make
    /// the version of the name not the version of the attributes, and a
    /// name that exists in both versions ENOENT.
    fn in_chapter(&self, chapter: ChapterRef, name: &OsStr) -> Result<Found> {
        if name == ERROR_FILE {
            let now = self.source.chapter(&chapter)?;
            let Err(e) = now.loaded else {
                return Err(libc::ENOENT);
            };
            return Ok(self.chapter_error(chapter, now.version, &e, now.mtime));
        }
        use std::os::unix::ffi::OsStrExt;
        let page = PageName::parse(name.as_bytes()).ok_or(libc::ENOENT)?;
        let now = self.outlines.page_size(&self.source, &chapter, page)?;
        let node = Node::Page {
            chapter,
            page,
            version: now.version,
        };
        let attr = self.file_attr(&node, now.size, now.mtime);
        Ok(Found { node, attr })
    }

    /// The attributes of a file whose size and mtime are known (its inode
    /// is set when it is interned).
    /// An `ERROR` file with its attributes, sized from the error its
    /// reader gets and dated by the same look at the source as `node`'s
    /// version.
    fn error_file(&self, node: Node, error: &NovelError, mtime: std::time::SystemTime) -> Found {
        let attr = self.file_attr(&node, error.error_line().len() as u64, mtime);
        Found { node, attr }
    }

    fn chapter_error(
        &self,
        chapter: ChapterRef,
        version: u64,
        error: &NovelError,
        mtime: std::time::SystemTime,
    ) -> Found {
        self.error_file(Node::ChapterError { chapter, version }, error, mtime)
    }

    /// The `ERROR` of a name that several chapters share.
    fn ambiguity_error(&self, book: Arc<OsStr>, name: Box<OsStr>) -> Result<Found> {
        let a = resolve::ambiguity(&self.source, &book, &name)?;
        let node = Node::AmbiguousError {
            book,
            name,
            version: a.version,
        };
        Ok(self.error_file(node, &a.error, a.mtime))
    }

    fn file_attr(&self, node: &Node, size: u64, mtime: std::time::SystemTime) -> Attr {
        Attr {
            ino: 0,
            kind: Kind::File,
            size,
            mtime,
            ttl: self.freshness.ttl_for(node),
        }
    }

    /// `node` with its current attributes; ENOENT when it does not exist.
    fn checked(&self, node: Node) -> Result<Found> {
        let attr = self.attr_of(0, &node)?;
        Ok(Found { node, attr })
    }

    /// The inode of a name found by a lookup (the kernel now holds it).
    fn intern(&self, found: Found) -> Attr {
        Attr {
            ino: self.inodes.intern(found.node, true, Some(&found.attr)),
            ..found.attr
        }
    }

    fn found(&self, node: Node) -> Result<Attr> {
        // Validated before interning, so a name that does not exist leaves no inode behind.
        Ok(self.intern(self.checked(node)?))
    }

    pub fn readlink(&self, ino: u64) -> Result<OsString> {
        let node = self.node(ino)?;
        self.check_switch(&node)?;
        match &node {
            Node::BookAlias { target, .. } => {
                self.attr_of(ino, &node)?;
                Ok(target.to_os_string())
            }
            Node::ChapterAlias { target, .. } => {
                self.attr_of(ino, &node)?;
                Ok(target.file.to_os_string())
            }
            _ => Err(libc::EINVAL),
        }
    }

    /// Opens a directory, in mounts that are not watched (there OPENDIR
    /// gets ENOSYS and the kernel keeps listings until told otherwise).
    ///
    /// True when the kernel may list the directory from its own cache:
    /// only when what the listing depends on (the source of a chapter, the
    /// book directory, `novels/` and the switch) has the same stamp as at
    /// the previous opendir of this inode, and that stamp was settled then
    /// (`freshness::racy`).
    pub fn opendir(&self, ino: u64) -> Result<bool> {
        if self.getattr(ino)?.kind != Kind::Directory {
            return Err(libc::ENOTDIR);
        }
        let now = self.freshness.now();
        let (digest, settled) = match self.listing_digest(&self.node(ino)?, now) {
            Some((digest, settled)) => (Some(digest), settled),
            None => (None, false),
        };
        Ok(self.listings.opened(ino, digest, settled))
    }

    /// A digest of what a listing of `node` depends on, and whether the
    /// stamps it is of are settled at `now`.
    fn listing_digest(&self, node: &Node, now: std::time::SystemTime) -> Option<(u64, bool)> {
        let library = self.library();
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let stamp = match node {
            Node::Root => {
                let stamp = stamp_of(&library.novels_dir())?;
                (self.switched_on(), stamp).hash(&mut hasher);
                stamp
            }
            Node::Book { book } | Node::Ambiguous { book, .. } => {
                let stamp = stamp_of(&library.book_dir(book))?;
                stamp.hash(&mut hasher);
                stamp
            }
            Node::Chapter { chapter } => {
                // The version tells apart bytes under one stamp.
                let source = self.source.chapter_file(chapter).ok()?;
                source.version().hash(&mut hasher);
                Stamp::of(&source.meta)
            }
            _ => return None,
        };
        Some((hasher.finish(), self.freshness.settled(&stamp, now)))
    }

    /// The listing a READDIR of `ino` at `offset` continues (see
    /// `Listings::continue_or_take`).
    pub fn listing(&self, ino: u64, offset: u64) -> Result<Listing> {
        if self.store_ahead.following()
            && let Ok(Node::Chapter { chapter }) = self.node(ino)
        {
            self.store_ahead.listed(&chapter);
        }
        self.listings
            .continue_or_take(ino, offset, || self.list(ino))
    }

    /// The inode of a listed entry, for readdir (the kernel keeps no
    /// reference to it, so no lookup is counted).
    pub fn listed_ino(&self, e: &Listed) -> u64 {
        self.inodes.intern(e.node.clone(), false, None)
    }

    /// The attributes of a listed entry, for readdirplus: the entry now
    /// counts as a lookup (undo with `forget` if it is not sent). `None`
    /// when it vanished since the listing was taken.
    pub fn listed_plus(&self, e: &Listed) -> Option<Attr> {
        let attr = match e.attr {
            Some(a) => a,
            None => self.attr_of(0, &e.node).ok()?,
        };
        let ino = self.inodes.intern(e.node.clone(), true, Some(&attr));
        Some(Attr { ino, ..attr })
    }

    /// The entries of a directory. The pages of a chapter carry their
    /// attributes, taken from the same version of the chapter as their
    /// names, so a listing taken while the chapter changes is whole.
    fn list(&self, ino: u64) -> Result<Vec<Listed>> {
        let node = self.node(ino)?;
        self.check_switch(&node)?;
        let entry = |node: Node, kind: Kind, name: OsString| Listed {
            node,
            kind,
            name,
            attr: None,
        };
        let ttl = self.freshness.ttl_for(&node);
        Ok(match node {
            Node::Root if !self.switched_on() => {
                vec![entry(Node::RootError, Kind::File, ERROR_FILE.into())]
            }
            Node::Root => {
                let index_files = [PageFormat::Text, PageFormat::Json].map(|format| {
                    let node = Node::BooksIndex {
                        format,
                        version: UNLOOKED,
                    };
                    self.index_listed(node, books_file(format))
                });
                // `novels/` gone or unreadable: the root stays, with an
                // ERROR saying why, and lists the books again once they can
                // be.
                let names = match self.library().book_names() {
                    Ok(names) => {
                        self.gave_up.back(&self.library().display_dir(None));
                        names
                    }
                    Err(_) => match self.library().unreadable_dir(None) {
                        Some(e) => {
                            self.log_gave_up(&e);
                            return Ok(vec![entry(Node::RootError, Kind::File, ERROR_FILE.into())]);
                        }
                        None => return Err(libc::EIO),
                    },
                };
                names
                    .into_iter()
                    // A book of a reserved name is reached by its aliases.
                    .filter(|b| !is_books_file(b))
                    .map(|b| {
                        entry(
                            Node::Book {
                                book: Arc::from(b.as_os_str()),
                            },
                            Kind::Directory,
                            b,
                        )
                    })
                    .chain(index_files)
                    .collect()
            }
            Node::Book { book } => {
                // The book was looked at for this listing: each chapter's
                // attributes need only its own `lstat`, not `attr_of`'s
                // second look at the book per chapter.
                let look = match BookLook::take(&self.source, &book) {
                    Ok(look) => {
                        self.gave_up.back(&self.library().display_dir(Some(&book)));
                        look
                    }
                    // A book that cannot be read holds an ERROR saying why
                    // (not nothing, which would look like an empty book).
                    Err(errno) => {
                        let Some(e) = self.library().unreadable_dir(Some(&book)) else {
                            return Err(errno);
                        };
                        self.log_gave_up(&e);
                        let mtime = dir_mtime(&self.library().book_dir(&book));
                        let node = Node::BookError { book };
                        return Ok(vec![self.error_file(node, &e, mtime).listed_as_error()]);
                    }
                };
                let mut chapter_ttl = None;
                let chapters = look
                    .book
                    .index
                    .chapters
                    .iter()
                    .zip(&look.metas)
                    // A chapter of a reserved name is reached by its aliases.
                    .filter(|(c, _)| !is_chapters_file(&c.os_name))
                    .map(|(c, meta)| {
                        let node = Node::Chapter {
                            chapter: chapter_ref(&book, &c.os_name),
                        };
                        let ttl = *chapter_ttl.get_or_insert_with(|| self.freshness.ttl_for(&node));
                        let attr = meta.as_ref().map(|meta| Attr {
                            ino: 0,
                            kind: Kind::Directory,
                            size: 0,
                            mtime: mtime_of(meta),
                            ttl,
                        });
                        Listed {
                            attr,
                            ..entry(node, Kind::Directory, c.os_name.clone())
                        }
                    })
                    .collect::<Vec<_>>();
                // Their listings are what a walk of the tree asks for next.
                self.outliner.book_listed(&book, &look.book.index);
                // The same looks tell whether the cached index is current:
                // then its files are listed as a lookup would give them.
                let on = self.switch.tool_on(Tool::Chapters);
                let cached = on
                    .then(|| self.index_files.cached_book(&book, look.version()))
                    .flatten();
                let index_files = [PageFormat::Text, PageFormat::Json].map(|format| {
                    let name = chapters_file(format);
                    let current = cached.as_ref().map(|r| {
                        let size = r.bytes(format).len() as u64;
                        let node = Node::ChaptersIndex {
                            book: book.clone(),
                            format,
                            version: r.version,
                        };
                        let attr = self.file_attr(&node, size, r.mtime);
                        Listed {
                            attr: Some(attr),
                            ..entry(node, Kind::File, name.into())
                        }
                    });
                    current.unwrap_or_else(|| {
                        let node = Node::ChaptersIndex {
                            book: book.clone(),
                            format,
                            version: UNLOOKED,
                        };
                        self.index_listed(node, name)
                    })
                });
                chapters.into_iter().chain(index_files).collect()
            }
            Node::Chapter { chapter } => {
                let now = self.outlines.outline(&self.source, &chapter)?;
                // The next chapters' listings are what a walk asks for next.
                self.outliner
                    .chapter_listed(&chapter.book, &now.index, now.position);
                let outline = match now.outline {
                    Ok(outline) => outline,
                    Err(e) => {
                        let error = self.chapter_error(chapter, now.version, &e, now.mtime);
                        return Ok(vec![error.listed_as_error()]);
                    }
                };
                outline
                    .pages
                    .iter()
                    .flat_map(|p| {
                        [
                            (PageFormat::Text, p.text_bytes),
                            (PageFormat::Json, p.json_bytes),
                        ]
                        .map(|(format, size)| {
                            let page = PageName {
                                offset: p.offset,
                                limit: None,
                                format,
                            };
                            (page, size)
                        })
                    })
                    .map(|(page, size)| Listed {
                        name: OsString::from(page.to_name()),
                        node: Node::Page {
                            chapter: chapter.clone(),
                            page,
                            version: now.version,
                        },
                        kind: Kind::File,
                        attr: Some(Attr {
                            ino: 0,
                            kind: Kind::File,
                            size,
                            mtime: now.mtime,
                            ttl,
                        }),
                    })
                    .collect()
            }
            Node::Ambiguous { book, name } => {
                vec![self.ambiguity_error(book, name)?.listed_as_error()]
            }
            _ => return Err(libc::ENOTDIR),
        })
    }

    /// The bytes of a file inode. They never change: an inode of a version
    /// that is gone is served from the cache, or not at all (EIO).
    fn content(&self, node: &Node) -> Result<Arc<Vec<u8>>> {
        match node {
            Node::RootError => Ok(Arc::new(self.root_error()?.into_bytes())),
            Node::BookError { book } => match self.library().unreadable_dir(Some(book)) {
                Some(e) => Ok(error_bytes(&e)),
                None => Err(libc::ENOENT),
            },
            Node::AmbiguousError {
                book,
                name,
                version,
            } => match resolve::ambiguity(&self.source, book, name)? {
                a if a.version == *version => Ok(error_bytes(&a.error)),
                _ => Err(libc::EIO),
            },
            Node::ChapterError { chapter, version } => {
                match self.source.chapter_version(chapter, *version)? {
                    Err(e) => Ok(error_bytes(&e)),
                    Ok(_) => Err(libc::EIO),
                }
            }
            Node::Page {
                chapter,
                page,
                version,
            } => self.pages.bytes(&self.source, chapter, *page, *version),
            // A version that left the cache is made again only while the
            // sources are still that version, never from newer ones.
            Node::BooksIndex { format, version } => {
                let r = match self.index_files.cached_library(*version) {
                    Some(r) => r,
                    None => self.books_index()?,
                };
                if r.version != *version {
                    return Err(libc::EIO);
                }
                Ok(r.bytes(*format))
            }
            Node::ChaptersIndex {
                book,
                format,
                version,
            } => {
                let r = match self.index_files.cached_book(book, *version) {
                    Some(r) => r,
                    None => self.chapters_index(book)?,
                };
                if r.version != *version {
                    return Err(libc::EIO);
                }
                Ok(r.bytes(*format))
            }
            _ => Err(libc::EISDIR),
        }
    }

    /// `size` bytes of the file `ino` from `offset`.
    pub fn read(&self, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>> {
        let node = self.node(ino)?;
        self.check_switch(&node)?;
        let bytes = self.content(&node)?;
        if let Node::Page {
            chapter,
            page,
            version,
        } = &node
        {
            self.store_ahead.read(chapter, *page, *version);
            self.store_ahead.given(ino);
        }
        let start = (offset.min(bytes.len() as u64)) as usize;
        let end = start.saturating_add(size as usize).min(bytes.len());
        Ok(bytes[start..end].to_vec())
    }

    /// What the store-ahead plans read of the tree.
    fn parts(&self) -> Parts<'_> {
        Parts {
            source: &self.source,
            outlines: &self.outlines,
            pages: &self.pages,
            inodes: &self.inodes,
        }
    }

    /// The next pages to store into the kernel's page cache ahead of its
    /// readers (`store_ahead`), with the inodes the kernel holds for them:
    /// waits until there are some to send, or at most `wait`.
    pub fn stores_ahead(&self, wait: Option<Duration>) -> Vec<Store> {
        self.store_ahead.next(&self.parts(), wait)
    }

    /// A page was just opened and its reader asks whether it is a terminal
    /// (the IOCTL that Python's `open()` sends before it reads): the store
    /// of its bytes into the kernel's page cache, unless the kernel was
    /// given them already. Sent before that answer, it spares the reader
    /// the READ that follows (the same bytes a READ would get, rendered
    /// once either way). Its reader is followed from there, as after a READ.
    pub fn store_on_open(&self, ino: u64) -> Option<Store> {
        let node = self.node(ino).ok()?;
        let Node::Page {
            chapter,
            page,
            version,
        } = &node
        else {
            return None;
        };
        // A warm pass opens pages the kernel has: one lookup, nothing else.
        if !self.store_ahead.not_given(ino) {
            return None;
        }
        self.check_switch(&node).ok()?;
        let bytes = self.content(&node).ok()?;
        self.store_ahead.read(chapter, *page, *version);
        self.store_ahead.claim(ino, node.clone(), bytes)
    }

    /// The pages to store before answering a READDIR of `ino` at
    /// `offset`: past the first reply of a chapter directory's listing, the
    /// kernel holds its pages' inodes, and a reader followed there reads
    /// them next (see `StoreAhead::at_listing_end`).
    pub fn stores_at_listing(&self, ino: u64, offset: u64) -> Vec<Store> {
        if offset == 0 || !self.store_ahead.following() {
            return Vec::new();
        }
        let Ok(Node::Chapter { chapter }) = self.node(ino) else {
            return Vec::new();
        };
        self.store_ahead.at_listing_end(&self.parts(), &chapter)
    }

    /// What the kernel said to a store from `stores_ahead` or
    /// `stores_at_listing`.
    pub fn store_finished(&self, store: Store, outcome: StoreOutcome) {
        self.store_ahead.finished(store, outcome);
    }

    /// What the kernel must drop after `changes` (see `freshness::plan`).
    pub fn invalidations(&self, changes: &[Change]) -> Vec<Invalidation> {
        let library = self.library();
        self.plan_invalidations(changes, |book| library.is_book(book))
    }

    /// `invalidations`, with how a book is looked up on disk given. The
    /// plan is made over a snapshot of the inode table, taken and released
    /// before the disk is asked anything: lookups go on meanwhile. (A node
    /// interned after the snapshot was looked up after the change, so it
    /// is already of the new state.)
    fn plan_invalidations(
        &self,
        changes: &[Change],
        is_book: impl Fn(&OsStr) -> bool,
    ) -> Vec<Invalidation> {
        let known = self.inodes.known();
        freshness::plan(changes, &known, is_book)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::freshness::WATCHED_TTL;
    use crate::fs::node::ROOT_INO;
    use crate::fs::source::{BIG_CHAPTER_BYTES, Seams};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Condvar, Mutex};

    /// A library of one book, `书`, served by a `NovelFs` (also for the
    /// sibling test modules).
    pub(super) struct Fixture {
        _dir: tempfile::TempDir,
        pub(super) book_dir: PathBuf,
        pub(super) fs: NovelFs,
    }

    pub(super) fn fixture(files: &[(&str, &str)]) -> Fixture {
        fixture_with_cache(files, FsConfig::default().cache_bytes)
    }

    fn fixture_with_cache(files: &[(&str, &str)], cache_bytes: usize) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let book_dir = dir.path().join("novels/书");
        std::fs::create_dir_all(&book_dir).unwrap();
        for (name, body) in files {
            std::fs::write(book_dir.join(name), body).unwrap();
        }
        let config = FsConfig {
            state_file: Some(dir.path().join("no-state.json")),
            cache_bytes,
            ..FsConfig::default()
        };
        let fs = NovelFs::new(Library::open(dir.path()).unwrap(), config);
        Fixture {
            _dir: dir,
            book_dir,
            fs,
        }
    }

    fn walk(fs: &NovelFs, path: &str) -> Result<Attr> {
        let mut attr = fs.getattr(ROOT_INO)?;
        for part in path.split('/').filter(|p| !p.is_empty()) {
            let node = fs.node(attr.ino)?;
            attr = fs.lookup(attr.ino, OsStr::new(part))?;
            // Follow aliases the way the kernel would.
            if attr.kind == Kind::Symlink {
                let target = fs.readlink(attr.ino)?;
                let parent = fs.inodes.intern(node, false, None);
                attr = fs.lookup(parent, &target)?;
            }
        }
        Ok(attr)
    }

    fn read_all(fs: &NovelFs, ino: u64) -> Vec<u8> {
        fs.read(ino, 0, u32::MAX).unwrap()
    }

    #[test]
    fn tree_shape_without_a_mount() {
        let f = fixture(&[
            ("第1章 起.md", "一\n二"),
            ("第2章 承.md", "x"),
            ("第02章 另.md", "y"),
        ]);
        let book = walk(&f.fs, "书").unwrap();
        assert_eq!(book.kind, Kind::Directory);
        let names: Vec<_> =
            f.fs.list(book.ino)
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .collect();
        assert_eq!(
            names,
            [
                "第1章 起.md",
                "第02章 另.md",
                "第2章 承.md",
                "novel_chapters.txt",
                "novel_chapters.json"
            ]
        );
        let alias = f.fs.lookup(book.ino, OsStr::new("1")).unwrap();
        assert_eq!(alias.kind, Kind::Symlink);
        assert_eq!(f.fs.readlink(alias.ino).unwrap(), "第1章 起.md");
        let page = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        let bytes = read_all(&f.fs, page.ino);
        assert_eq!(bytes.len() as u64, page.size);
        assert!(String::from_utf8(bytes).unwrap().contains("1: 一\n2: 二\n"));
        let ambiguous = f.fs.lookup(book.ino, OsStr::new("2")).unwrap();
        assert_eq!(ambiguous.kind, Kind::Directory);
        let listed: Vec<_> =
            f.fs.list(ambiguous.ino)
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .collect();
        assert_eq!(listed, ["ERROR"]);
        assert_eq!(
            f.fs.lookup(ambiguous.ino, OsStr::new("offset-1.txt")),
            Err(libc::ENOENT)
        );
        assert_eq!(walk(&f.fs, "书/1/offset-3.txt"), Err(libc::ENOENT));
        assert_eq!(walk(&f.fs, "书/1/offset-01.txt"), Err(libc::ENOENT));
        assert_eq!(walk(&f.fs, "书/99"), Err(libc::ENOENT));
    }

    #[test]
    fn a_new_version_is_a_new_inode_and_the_old_one_keeps_its_bytes() {
        let f = fixture(&[("第1章 起.md", "旧")]);
        let old = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        let old_bytes = read_all(&f.fs, old.ino);
        std::fs::write(f.book_dir.join("第1章 起.md"), "新的内容").unwrap();
        let new = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        assert_ne!(new.ino, old.ino);
        assert_eq!(
            f.fs.getattr(old.ino).unwrap().size,
            old.size,
            "an open old version keeps its size"
        );
        assert_eq!(
            read_all(&f.fs, old.ino),
            old_bytes,
            "the old version is still served from the cache"
        );
        assert!(String::from_utf8(old_bytes).unwrap().contains("1: 旧\n"));
        assert!(
            String::from_utf8(read_all(&f.fs, new.ino))
                .unwrap()
                .contains("1: 新的内容\n")
        );
    }

    #[test]
    fn an_old_version_that_left_the_cache_is_eio_never_new_bytes() {
        let f = fixture(&[("第1章 起.md", "旧")]);
        let old = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        // Not read yet: nothing of it is cached but the text, which goes.
        f.fs.source
            .drop_text(&(old_chapter(&f.fs, old.ino), version(&f.fs, old.ino)));
        std::fs::write(f.book_dir.join("第1章 起.md"), "改过了").unwrap();
        assert_eq!(f.fs.read(old.ino, 0, u32::MAX), Err(libc::EIO));
        let new = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        assert!(
            String::from_utf8(read_all(&f.fs, new.ino))
                .unwrap()
                .contains("1: 改过了\n")
        );
    }

    fn old_chapter(fs: &NovelFs, ino: u64) -> ChapterRef {
        match fs.node(ino).unwrap() {
            Node::Page { chapter, .. } => chapter,
            n => panic!("not a page: {n:?}"),
        }
    }

    fn version(fs: &NovelFs, ino: u64) -> u64 {
        match fs.node(ino).unwrap() {
            Node::Page { version, .. } => version,
            n => panic!("not a page: {n:?}"),
        }
    }

    #[test]
    fn readdir_pieces_continue_their_own_listing() {
        let f = fixture(&[("第1章 起.md", "a"), ("第2章 承.md", "b")]);
        let book = walk(&f.fs, "书").unwrap();
        let first = f.fs.listing(book.ino, 0).unwrap();
        assert_eq!(first.start, 0);
        // The kernel continues after entry 2 (the first chapter).
        let resume = first.offset_after(2);
        std::fs::write(f.book_dir.join("第0章 序.md"), "c").unwrap();
        let next = f.fs.listing(book.ino, resume).unwrap();
        assert_eq!(next.start, 3);
        assert!(
            Arc::ptr_eq(&next.entries, &first.entries),
            "the piece comes from the same listing"
        );
        let fresh = f.fs.listing(book.ino, 0).unwrap();
        assert_eq!(
            fresh.entries.len(),
            3 + 2,
            "a new listing sees the new chapter (and the two index files)"
        );
        assert_ne!(fresh.offset_after(2), resume);
        assert!(resume < 1 << 63);
    }

    #[test]
    fn changes_invalidate_only_what_the_kernel_was_given() {
        let f = fixture(&[("第1章 起.md", "a"), ("第2章 承.md", "b")]);
        let one = || Change::Chapter("书".into(), "第1章 起.md".into());
        assert_eq!(f.fs.invalidations(&[one()]), []);
        let book = walk(&f.fs, "书").unwrap();
        let chapter = walk(&f.fs, "书/第1章 起.md").unwrap();
        walk(&f.fs, "书/第1章 起.md/offset-1.txt").unwrap();
        walk(&f.fs, "书/2/offset-1.json").unwrap();
        let alias = f.fs.lookup(book.ino, OsStr::new("2")).unwrap();
        let second = walk(&f.fs, "书/第2章 承.md").unwrap();
        let entry = |parent, name: &str| Invalidation::Entry {
            parent,
            name: name.into(),
        };
        assert_eq!(
            f.fs.invalidations(&[one()]),
            [
                entry(book.ino, "第1章 起.md"),
                entry(chapter.ino, "offset-1.txt"),
                Invalidation::Inode(chapter.ino)
            ],
            "each page by name: a directory in use keeps its children otherwise"
        );
        let mut set =
            f.fs.invalidations(&[Change::Chapters("书".into()), Change::Chapters("书".into())]);
        set.sort_by_key(|i| format!("{i:?}"));
        let mut expected = vec![
            entry(book.ino, "2"),
            entry(book.ino, "第1章 起.md"),
            entry(book.ino, "第2章 承.md"),
            Invalidation::Inode(book.ino),
            Invalidation::Inode(chapter.ino),
            Invalidation::Inode(second.ino),
        ];
        expected.sort_by_key(|i| format!("{i:?}"));
        assert_eq!(
            set, expected,
            "aliases may resolve anew; pages keep their bytes"
        );
        assert_eq!(alias.kind, Kind::Symlink);
        assert_eq!(
            f.fs.invalidations(&[Change::Books]),
            [
                entry(ROOT_INO, "书"),
                Invalidation::Inode(ROOT_INO),
                Invalidation::Inode(book.ino)
            ]
        );
        std::fs::rename(&f.book_dir, f.book_dir.with_file_name("新书")).unwrap();
        let gone = f.fs.invalidations(&[Change::Books]);
        assert_eq!(
            gone.iter()
                .filter(|i| matches!(i, Invalidation::Entry { .. }))
                .count(),
            6,
            "a renamed book: all it held {gone:?}"
        );
    }

    #[test]
    fn ttls_are_long_only_where_the_watch_reports_changes() {
        let f = fixture(&[("第1章 起.md", "a")]);
        assert!(f.fs.watching(), "a temp dir is local and watchable");
        assert_eq!(walk(&f.fs, "书").unwrap().ttl, WATCHED_TTL);
        assert_eq!(walk(&f.fs, "书/1/offset-1.txt").unwrap().ttl, WATCHED_TTL);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("novels/书")).unwrap();
        let config = FsConfig {
            watch: false,
            ..FsConfig::default()
        };
        let unwatched = NovelFs::new(Library::open(dir.path()).unwrap(), config);
        assert!(!unwatched.watching());
        assert_eq!(walk(&unwatched, "书").unwrap().ttl, Duration::from_secs(1));
        let strict = NovelFs::new(
            Library::open(dir.path()).unwrap(),
            FsConfig {
                ttl: Duration::ZERO,
                ..FsConfig::default()
            },
        );
        assert!(
            !strict.watching(),
            "ttl 0 asks every time: nothing to watch for"
        );
    }

    #[test]
    fn loading_a_chapter_not_in_the_page_cache_queues_the_next_ones() {
        let names: Vec<String> = (1..=20).map(|i| format!("第{i}章.md")).collect();
        let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "x")).collect();
        let f = fixture(&files);
        let queued = || f.fs.source.prefetcher().queued_to(OsStr::new("书"));
        let loaded = walk(&f.fs, "书/3/offset-1.txt").unwrap();
        assert!(read_all(&f.fs, loaded.ino).starts_with(b"<path>"));
        let file = std::fs::File::open(f.book_dir.join("第5章.md")).unwrap();
        if crate::fs::prefetch::in_page_cache(&file, 1) {
            assert_eq!(
                queued(),
                None,
                "just written, so cached: nothing to ask for"
            );
        }
        // Out of the page cache (clean pages of an ext4 file can be dropped).
        file.sync_all().unwrap();
        use std::os::fd::AsRawFd;
        // SAFETY: advice on an open descriptor; no memory involved.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if crate::fs::prefetch::in_page_cache(&file, 1) {
            return; // tmpfs, or a kernel that cannot tell.
        }
        walk(&f.fs, "书/5/offset-1.txt").unwrap();
        assert_eq!(
            queued(),
            Some(20),
            "loading chapter 5 (index 4) queued up to 21, the end of the book"
        );
    }

    #[test]
    fn decoded_texts_give_way_to_the_inode_table() {
        let body = "字\n".repeat(100_000);
        let files: Vec<(String, &str)> = (1..=4).map(|n| (format!("第{n}章.md"), &*body)).collect();
        let files: Vec<(&str, &str)> = files.iter().map(|(n, b)| (n.as_str(), *b)).collect();
        // 16 MiB: the texts' share is 12 MiB.
        let f = fixture_with_cache(&files[..3], 16 << 20);
        for n in 1..=3 {
            walk(&f.fs, &format!("书/{n}/offset-1.txt")).unwrap();
        }
        let texts = || f.fs.source.text_bytes();
        let three = texts();
        assert!(three > 3 * body.len(), "all three texts are kept");
        // The kernel is given 100,000 more chapters: the table outgrows
        // the texts' share, and the next load keeps only the minimum.
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        for i in 0..100_000 {
            let chapter = chapter_ref(&book, OsStr::new(&format!("第{i}章 某.md")));
            f.fs.inodes.intern(Node::Chapter { chapter }, true, None);
        }
        assert!(f.fs.inode_table_bytes() > 12 << 20);
        std::fs::write(f.book_dir.join(files[3].0), &body).unwrap();
        walk(&f.fs, "书/4/offset-1.txt").unwrap();
        // Each text (with its line index) outweighs the 1 MiB minimum: the
        // new one is kept alone.
        assert_eq!(texts(), three / 3, "only the text just loaded is left");
    }

    /// Waits until the outline thread has done what was queued.
    fn outlined_ahead(fs: &NovelFs) {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while fs.outliner.pending() > 0 {
            assert!(std::time::Instant::now() < deadline, "outline thread stuck");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// A book of 60 small chapters in listing order, and a big one first.
    fn walked_book() -> (Fixture, Vec<ChapterRef>, ChapterRef) {
        let names: Vec<String> = (1..=60).map(|i| format!("第{i}章.md")).collect();
        let body = "字\n".repeat(50);
        let mut files: Vec<(&str, &str)> =
            names.iter().map(|n| (n.as_str(), body.as_str())).collect();
        let big = "字\n".repeat(400_000);
        files.push(("第0章.md", &big));
        let f = fixture(&files);
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let chapters = names
            .iter()
            .map(|n| chapter_ref(&book, OsStr::new(n)))
            .collect();
        let big = chapter_ref(&book, OsStr::new("第0章.md"));
        (f, chapters, big)
    }

    #[test]
    fn listing_a_book_outlines_its_first_chapters_ahead() {
        let (f, chapters, big) = walked_book();
        let outlined = |c: &ChapterRef| f.fs.outlines.is_cached(&f.fs.source, c);
        let book_ino = walk(&f.fs, "书").unwrap().ino;
        f.fs.listing(book_ino, 0).unwrap();
        outlined_ahead(&f.fs);
        assert!(
            !outlined(&big),
            "a chapter over 1 MiB is outlined only when listed"
        );
        // The big chapter is first: the window holds it and 15 small ones.
        let ahead = crate::fs::ahead::WINDOW - 1;
        assert!(
            chapters[..ahead].iter().all(outlined),
            "the first {ahead} outlined"
        );
        assert!(
            !chapters[ahead..].iter().any(outlined),
            "nothing past the window is outlined"
        );
        assert!(f.fs.decodes() as usize <= ahead, "each decoded once");
    }

    #[test]
    fn listing_a_chapter_directory_outlines_the_next_ones_only() {
        let (f, chapters, _) = walked_book();
        let outlined = |c: &ChapterRef| f.fs.outlines.is_cached(&f.fs.source, c);
        // The 20th small chapter, listed without its book.
        let ino = walk(&f.fs, "书/第20章.md").unwrap().ino;
        f.fs.listing(ino, 0).unwrap();
        outlined_ahead(&f.fs);
        let window = crate::fs::ahead::WINDOW;
        assert!(!chapters[..19].iter().any(outlined), "nothing before it");
        assert!(chapters[19..20 + window].iter().all(outlined));
        assert!(!chapters[20 + window..].iter().any(outlined));
        // The walk goes on: the window is refilled by halves.
        let before = f.fs.decodes();
        for n in 21..=27 {
            let ino = walk(&f.fs, &format!("书/第{n}章.md")).unwrap().ino;
            f.fs.listing(ino, 0).unwrap();
        }
        outlined_ahead(&f.fs);
        assert_eq!(
            f.fs.decodes(),
            before,
            "every one listed was outlined ahead"
        );
        let ino = walk(&f.fs, "书/第28章.md").unwrap().ino;
        f.fs.listing(ino, 0).unwrap();
        outlined_ahead(&f.fs);
        assert_eq!(
            f.fs.decodes(),
            before + window as u64 / 2,
            "half a window more"
        );
        assert!(chapters[19..20 + window + window / 2].iter().all(outlined));
        assert!(!outlined(&chapters[20 + window + window / 2]));
    }

    #[test]
    fn outlines_ahead_stay_within_a_quarter_of_the_outlines_share() {
        let (f, _, _) = walked_book();
        let window = crate::fs::ahead::WINDOW;
        let index = f.fs.source.book_index(OsStr::new("书")).unwrap();
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let share = |chapters: usize| 4 * chapters * crate::fs::ahead::OUTLINE_GUESS;
        let small = Outliner::start(
            f.fs.source.clone(),
            f.fs.outlines.clone(),
            share(window - 1),
        );
        assert_eq!(
            small.chapter_listed(&book, &index, 1),
            0,
            "a window over the share"
        );
        let fits = Outliner::start(f.fs.source.clone(), f.fs.outlines.clone(), share(window));
        assert_eq!(fits.chapter_listed(&book, &index, 1), window);
        assert_eq!(fits.chapter_listed(&book, &index, 1), 0, "queued once");
    }

    #[test]
    fn a_book_listing_carries_each_chapters_attributes() {
        let f = fixture(&[("第1章 起.md", "a"), ("第2章 承.md", "b")]);
        let book = walk(&f.fs, "书").unwrap();
        let listing = f.fs.listing(book.ino, 0).unwrap();
        assert_eq!(
            listing.entries.len(),
            2 + 2,
            "two chapters, two index files"
        );
        for e in listing.entries.iter().filter(|e| e.kind == Kind::Directory) {
            let listed = f.fs.listed_plus(e).unwrap();
            let now = f.fs.getattr(listed.ino).unwrap();
            assert_eq!(
                (listed.kind, listed.mtime, listed.ttl),
                (now.kind, now.mtime, now.ttl)
            );
            assert_eq!(listed.ttl, WATCHED_TTL, "a chapter of a watched book");
        }
    }

    #[test]
    fn forgotten_inodes_are_freed() {
        let f = fixture(&[("第1章 起.md", "a")]);
        let before = f.fs.inode_count();
        let page = walk(&f.fs, "书/第1章 起.md/offset-1.json").unwrap();
        let grown = f.fs.inode_count();
        assert!(grown > before);
        f.fs.forget(page.ino, 1);
        assert_eq!(f.fs.inode_count(), grown - 1);
        assert_eq!(f.fs.getattr(page.ino), Err(libc::ENOENT));
    }

    /// Runs `f` with `seams` set on a fixture's source.
    fn with_seams(f: &Fixture, seams: Seams) {
        assert!(f.fs.source.seams.set(seams).is_ok(), "seams are set once");
    }

    /// Rewrites `path` with a different size before every look at a
    /// chapter's source, so no two looks see the same version.
    fn edit_before_every_stat(
        path: PathBuf,
        body: impl Fn(usize) -> Vec<u8> + Send + Sync + 'static,
    ) -> Seams {
        let edits = AtomicUsize::new(0);
        Seams {
            before_stat: Some(Box::new(move |_| {
                let n = edits.fetch_add(1, Ordering::SeqCst) + 1;
                std::fs::write(&path, body(n)).unwrap();
            })),
            ..Seams::default()
        }
    }

    #[test]
    fn a_page_lookup_answers_from_one_look_at_a_source_edited_meanwhile() {
        let f = fixture(&[("第1章 起.md", "一")]);
        let chapter = walk(&f.fs, "书/第1章 起.md").unwrap();
        let path = f.book_dir.join("第1章 起.md");
        with_seams(
            &f,
            edit_before_every_stat(path, |n| "一\n".repeat(n).into_bytes()),
        );
        for name in ["offset-1.txt", "offset-1.json", "offset-1-limit-1.txt"] {
            let page = f.fs.lookup(chapter.ino, OsStr::new(name));
            assert!(page.is_ok(), "{name} exists in every version: {page:?}");
            let page = page.unwrap();
            assert_eq!(
                read_all(&f.fs, page.ino).len() as u64,
                page.size,
                "{name}: the size is of the version read"
            );
        }
    }

    #[test]
    fn an_error_lookup_and_listing_answer_from_one_look_at_a_source_edited_meanwhile() {
        let undecodable = |n: usize| [0x81u8, 0x20, 0xfe, 0x7f].repeat(10 + n);
        let f = fixture(&[("第1章 坏.txt", "")]);
        let path = f.book_dir.join("第1章 坏.txt");
        std::fs::write(&path, undecodable(0)).unwrap();
        let chapter = walk(&f.fs, "书/1").unwrap();
        with_seams(&f, edit_before_every_stat(path, undecodable));
        let error = f.fs.lookup(chapter.ino, OsStr::new("ERROR"));
        assert!(error.is_ok(), "ERROR exists in every version: {error:?}");
        let listed = f.fs.list(chapter.ino).unwrap();
        assert_eq!(listed.len(), 1);
        let plus = f.fs.listed_plus(&listed[0]);
        assert!(plus.is_some(), "readdirplus drops the listed ERROR");
        let plus = plus.unwrap();
        assert_eq!(read_all(&f.fs, plus.ino).len() as u64, plus.size);
    }

    fn big_chapter(fill: &str) -> String {
        let line = format!("{}\n", fill.repeat(200));
        line.repeat((BIG_CHAPTER_BYTES as usize) / line.len() + 2)
    }

    /// How long a test waits for something that should happen at once
    /// before it fails instead of hanging (never reached when it passes).
    const HANG_GUARD: Duration = Duration::from_secs(10);

    #[test]
    fn two_different_big_chapters_load_at_once() {
        let (one, two) = (big_chapter("一"), big_chapter("二"));
        let f = fixture(&[("第1章.md", &one), ("第2章.md", &two)]);
        let entered = Arc::new((Mutex::new(0usize), Condvar::new()));
        let met = Arc::new(Mutex::new(Vec::new()));
        let (e, m) = (entered.clone(), met.clone());
        with_seams(
            &f,
            Seams {
                loading: Some(Box::new(move |_| {
                    let (count, changed) = &*e;
                    let mut n = count.lock().unwrap();
                    *n += 1;
                    changed.notify_all();
                    // Each load waits, inside, for the other to be inside too.
                    let (n, _) = changed
                        .wait_timeout_while(n, HANG_GUARD, |n| *n < 2)
                        .unwrap();
                    m.lock().unwrap().push(*n >= 2);
                })),
                ..Seams::default()
            },
        );
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        std::thread::scope(|s| {
            for file in ["第1章.md", "第2章.md"] {
                let c = chapter_ref(&book, OsStr::new(file));
                let fs = &f.fs;
                s.spawn(move || assert!(fs.source.chapter(&c).unwrap().loaded.is_ok()));
            }
        });
        assert_eq!(
            *met.lock().unwrap(),
            [true, true],
            "each big load was under way while the other was"
        );
    }

    #[test]
    fn readers_of_one_big_chapter_wait_for_one_decode() {
        let f = fixture(&[("第1章.md", &big_chapter("一"))]);
        let joined = Arc::new((Mutex::new(0usize), Condvar::new()));
        let loads = Arc::new(AtomicUsize::new(0));
        let (j, l, j2) = (joined.clone(), loads.clone(), joined.clone());
        with_seams(
            &f,
            Seams {
                loading: Some(Box::new(move |_| {
                    l.fetch_add(1, Ordering::SeqCst);
                    // The first load goes on once the second reader waits for it.
                    let (count, changed) = &*j;
                    let n = count.lock().unwrap();
                    drop(
                        changed
                            .wait_timeout_while(n, HANG_GUARD, |n| *n < 1)
                            .unwrap(),
                    );
                })),
                joined: Some(Box::new(move |_| {
                    let (count, changed) = &*j2;
                    *count.lock().unwrap() += 1;
                    changed.notify_all();
                })),
                ..Seams::default()
            },
        );
        let c = chapter_ref(&Arc::from(OsStr::new("书")), OsStr::new("第1章.md"));
        let texts: Vec<_> = std::thread::scope(|s| {
            let readers: Vec<_> = (0..2)
                .map(|_| {
                    let (fs, c) = (&f.fs, c.clone());
                    s.spawn(move || fs.source.chapter(&c).unwrap().loaded.unwrap())
                })
                .collect();
            readers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        assert_eq!(loads.load(Ordering::SeqCst), 1, "decoded once");
        assert_eq!(*joined.0.lock().unwrap(), 1, "the second reader waited");
        assert!(Arc::ptr_eq(&texts[0], &texts[1]), "both got the one text");
    }

    #[test]
    fn a_load_that_panics_leaves_the_chapter_loadable() {
        let f = fixture(&[("第1章.md", "一")]);
        let panics = Arc::new(AtomicUsize::new(1));
        let p = panics.clone();
        with_seams(
            &f,
            Seams {
                loading: Some(Box::new(move |_| {
                    if p.fetch_sub(1, Ordering::SeqCst) == 1 {
                        panic!("a load fails halfway");
                    }
                })),
                ..Seams::default()
            },
        );
        let c = chapter_ref(&Arc::from(OsStr::new("书")), OsStr::new("第1章.md"));
        let failed = std::thread::scope(|s| s.spawn(|| f.fs.source.chapter(&c)).join());
        assert!(failed.is_err(), "the first load panicked");
        let again =
            f.fs.source
                .chapter(&c)
                .expect("not left waiting on the failed load");
        assert!(again.loaded.is_ok());
    }

    #[test]
    fn invalidation_planning_asks_the_disk_without_the_inode_lock() {
        let f = fixture(&[("第1章 起.md", "a")]);
        walk(&f.fs, "书/1/offset-1.txt").unwrap();
        std::fs::rename(&f.book_dir, f.book_dir.with_file_name("新书")).unwrap();
        let asked = AtomicUsize::new(0);
        let locked = AtomicUsize::new(0);
        let planned = f.fs.plan_invalidations(&[Change::Books], |book| {
            asked.fetch_add(1, Ordering::SeqCst);
            if !f.fs.inodes.is_free() {
                locked.fetch_add(1, Ordering::SeqCst);
            }
            f.fs.library().is_book(book)
        });
        assert!(asked.load(Ordering::SeqCst) > 0, "the disk was asked");
        assert_eq!(
            locked.load(Ordering::SeqCst),
            0,
            "the inode table was locked while the disk was asked"
        );
        assert_eq!(planned, f.fs.invalidations(&[Change::Books]));
        assert!(planned.len() >= 3, "{planned:?}");
    }

    #[test]
    fn undecodable_chapter_shows_only_error() {
        let f = fixture(&[("第1章 坏.txt", "")]);
        std::fs::write(
            f.book_dir.join("第1章 坏.txt"),
            [0x81u8, 0x20, 0xfe, 0x7f].repeat(10),
        )
        .unwrap();
        let dir = walk(&f.fs, "书/1").unwrap();
        let names: Vec<_> =
            f.fs.list(dir.ino)
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .collect();
        assert_eq!(names, ["ERROR"]);
        assert_eq!(
            f.fs.lookup(dir.ino, OsStr::new("offset-1.txt")),
            Err(libc::EIO)
        );
        let error = f.fs.lookup(dir.ino, OsStr::new("ERROR")).unwrap();
        let text = String::from_utf8(read_all(&f.fs, error.ino)).unwrap();
        assert!(
            text.starts_with("错误：cannot detect text encoding of \""),
            "{text}"
        );
        assert_eq!(text.len() as u64, error.size);
    }

    /// Sets the clock the mount compares stamps with.
    fn clock_at(f: &Fixture, now: std::time::SystemTime) {
        *crate::fs::lock(&f.fs.freshness.fake_now) = Some(now);
    }

    /// Makes this thread's stamps whole seconds (as on sshfs) and waits
    /// for the start of a second, so that the few changes that follow
    /// leave one stamp.
    fn whole_second_stamps() {
        crate::fs::cache::WHOLE_SECONDS.set(true);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        if now.subsec_millis() > 200 {
            std::thread::sleep(Duration::from_millis(u64::from(1005 - now.subsec_millis())));
        }
    }

    fn rewrite(path: &std::path::Path, text: &str) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        file.write_all(text.as_bytes()).unwrap();
    }

    fn text_of(fs: &NovelFs, ino: u64) -> String {
        String::from_utf8(read_all(fs, ino)).unwrap()
    }

    const LATER: Duration = Duration::from_secs(3600);

    #[test]
    fn a_same_size_edit_in_the_second_of_a_read_is_a_new_version() {
        let f = fixture(&[("第1章 起.md", "甲")]);
        let path = f.book_dir.join("第1章 起.md");
        for attempt in 0..5 {
            let (old, new) = if attempt % 2 == 0 {
                ("甲", "乙")
            } else {
                ("乙", "甲")
            };
            whole_second_stamps();
            rewrite(&path, old);
            let stamp = stamp_of(&path).unwrap();
            // The clock stands at the change: the stamp proves nothing.
            clock_at(&f, freshness::racy::changed(&stamp));
            let page = walk(&f.fs, "书/1/offset-1.txt").unwrap();
            assert!(text_of(&f.fs, page.ino).contains(&format!("1: {old}\n")));
            rewrite(&path, new);
            if stamp_of(&path) != Some(stamp) {
                continue; // Not within one second: again.
            }
            let again = walk(&f.fs, "书/1/offset-1.txt").unwrap();
            assert_ne!(again.ino, page.ino, "other bytes under one stamp");
            assert!(text_of(&f.fs, again.ino).contains(&format!("1: {new}\n")));
            assert!(
                text_of(&f.fs, page.ino).contains(&format!("1: {old}\n")),
                "the inode read before keeps its bytes"
            );
            // Looked at again once the stamp settled: the bytes read last
            // are proven, and stay the version they were.
            clock_at(&f, freshness::racy::changed(&stamp) + LATER);
            assert_eq!(walk(&f.fs, "书/1/offset-1.txt").unwrap().ino, again.ino);
            assert_eq!(walk(&f.fs, "书/1/offset-1.txt").unwrap().ino, again.ino);
            return;
        }
        panic!("no two edits within one second in 5 attempts");
    }

    #[test]
    fn a_same_size_edit_in_the_second_of_a_read_changes_the_books_index() {
        let f = fixture(&[("第1章 起.md", "甲\n乙")]);
        let path = f.book_dir.join("第1章 起.md");
        let index = || {
            let file = walk(&f.fs, "书/novel_chapters.txt").unwrap();
            text_of(&f.fs, file.ino)
        };
        for attempt in 0..5 {
            // As many bytes, other characters: 甲 is three bytes.
            let (old, new) = if attempt % 2 == 0 {
                ("甲\n乙", "abc\n乙")
            } else {
                ("abc\n乙", "甲\n乙")
            };
            whole_second_stamps();
            rewrite(&path, old);
            let stamp = stamp_of(&path).unwrap();
            clock_at(&f, freshness::racy::changed(&stamp));
            let before = index();
            rewrite(&path, new);
            if stamp_of(&path) != Some(stamp) {
                continue; // Not within one second: again.
            }
            assert_ne!(index(), before, "the index of the bytes read before");
            return;
        }
        panic!("no two edits within one second in 5 attempts");
    }

    #[test]
    fn a_chapter_added_in_the_second_of_a_listing_is_listed() {
        let f = fixture(&[("第1章 起.md", "甲")]);
        let book = walk(&f.fs, "书").unwrap();
        // The chapters, without the book's index files.
        let names = || -> Vec<OsString> {
            f.fs.list(book.ino)
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .filter(|n| !n.to_string_lossy().starts_with("novel_chapters."))
                .collect()
        };
        let mut name = "第1章 起.md";
        for attempt in 0..5 {
            let other = if attempt % 2 == 0 {
                "第2章 承.md"
            } else {
                "第1章 起.md"
            };
            whole_second_stamps();
            let stamp = stamp_of(&f.book_dir).unwrap();
            clock_at(&f, freshness::racy::changed(&stamp));
            assert_eq!(names(), [name]);
            std::fs::rename(f.book_dir.join(name), f.book_dir.join(other)).unwrap();
            name = other;
            if stamp_of(&f.book_dir) != Some(stamp) {
                continue; // Not within one second: again.
            }
            assert_eq!(names(), [name], "the same stamp, other names");
            let alias = f.fs.lookup(book.ino, OsStr::new(&name[..4]));
            assert!(alias.is_ok(), "{alias:?}");
            return;
        }
        panic!("no listing and rename within one second in 5 attempts");
    }

    #[test]
    fn the_kernel_keeps_a_listing_only_under_a_stamp_settled_when_it_was_taken() {
        let f = fixture(&[("第1章 起.md", "甲")]);
        let novels = f.book_dir.parent().unwrap().to_path_buf();
        let changed = freshness::racy::changed(&stamp_of(&novels).unwrap());
        clock_at(&f, changed);
        assert!(!f.fs.opendir(ROOT_INO).unwrap(), "the first opendir");
        assert!(
            !f.fs.opendir(ROOT_INO).unwrap(),
            "the same stamp, not settled when listed: listed again"
        );
        clock_at(&f, changed + LATER);
        assert!(
            !f.fs.opendir(ROOT_INO).unwrap(),
            "settled now, but not when the kernel listed last"
        );
        assert!(
            f.fs.opendir(ROOT_INO).unwrap(),
            "listed under a settled stamp"
        );
        let book = walk(&f.fs, "书").unwrap();
        assert!(!f.fs.opendir(book.ino).unwrap());
        assert!(f.fs.opendir(book.ino).unwrap());
    }
}

#[cfg(test)]
#[path = "tree_index_tests.rs"]
mod index_tests;

#[cfg(test)]
#[path = "tree_store_tests.rs"]
mod store_tests;
