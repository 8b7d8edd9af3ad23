//! The filesystem's logic, free of FUSE types: which names exist, what
//! they are, what bytes they hold. `fuse.rs` only translates requests.
//!
//! Nothing here is trusted across requests: every operation re-validates
//! its node against the source (through stamp-checked caches), so a change
//! on disk shows at the next lookup or open.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::hash::{Hash, Hasher};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::library::{self, BookIndex, ChapterText, Library, Lookup, NovelError, PageOutput};

use super::cache::{Lru, Stamp};
use super::names::{ERROR_FILE, Format, PageName};

pub type Errno = i32;
pub type Result<T> = std::result::Result<T, Errno>;

pub const ROOT_INO: u64 = 1;

/// Settings of one mount.
#[derive(Debug, Clone)]
pub struct FsConfig {
    /// How long the kernel may cache entries and attributes.
    pub ttl: Duration,
    /// The assistant's switch file; `None` = the default location.
    pub state_file: Option<PathBuf>,
    /// Bytes of decoded chapters plus rendered pages kept in memory.
    pub cache_bytes: usize,
}

impl Default for FsConfig {
    fn default() -> Self {
        FsConfig { ttl: Duration::from_secs(1), state_file: None, cache_bytes: 256 << 20 }
    }
}

/// Every kind of name the tree can hold. A node is its own inode key, so
/// the same path always gets the same inode, and an alias whose target
/// changed is a different symlink.
///
/// A page carries the stamp of the source it was rendered from: an edit
/// makes the same name a new inode, so a handle opened before keeps its
/// inode — and the kernel's page cache of it — with the bytes it opened,
/// while the next lookup finds the new version.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Node {
    Root,
    RootError,
    Book { book: OsString },
    BookAlias { name: OsString, target: OsString },
    Chapter { book: OsString, file: OsString },
    ChapterAlias { book: OsString, name: OsString, target: OsString },
    Ambiguous { book: OsString, name: OsString },
    AmbiguousError { book: OsString, name: OsString },
    ChapterError { book: OsString, file: OsString },
    Page { book: OsString, file: OsString, page: PageName, version: Stamp },
}

impl Node {
    /// The node's path in the mount, for log lines.
    pub fn path(&self) -> String {
        let l = |s: &OsString| s.to_string_lossy().into_owned();
        match self {
            Node::Root => "/".into(),
            Node::RootError => format!("/{ERROR_FILE}"),
            Node::Book { book } => format!("/{}", l(book)),
            Node::BookAlias { name, .. } => format!("/{}", l(name)),
            Node::Chapter { book, file } => format!("/{}/{}", l(book), l(file)),
            Node::ChapterAlias { book, name, .. } | Node::Ambiguous { book, name } => format!("/{}/{}", l(book), l(name)),
            Node::AmbiguousError { book, name } => format!("/{}/{}/{ERROR_FILE}", l(book), l(name)),
            Node::ChapterError { book, file } => format!("/{}/{}/{ERROR_FILE}", l(book), l(file)),
            Node::Page { book, file, page, .. } => format!("/{}/{}/{}", l(book), l(file), page.to_name()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Directory,
    File,
    Symlink,
}

/// What `stat` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    pub ino: u64,
    pub kind: Kind,
    pub size: u64,
    pub mtime: SystemTime,
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

/// A directory entry (without `.` and `..`) as listed, before the kernel
/// is given an inode for it.
#[derive(Debug, Clone)]
pub struct Listed {
    node: Node,
    pub kind: Kind,
    pub name: OsString,
    /// Known when listed (a chapter's pages, from the version listed).
    attr: Option<Attr>,
}

/// An open file: the bytes it will keep reading, whatever happens on disk.
#[derive(Debug, Clone)]
pub struct Opened {
    pub fh: u64,
    /// The bytes equal what the previous open of this inode saw, so the
    /// kernel may keep its page cache.
    pub keep_cache: bool,
}

type Loaded = std::result::Result<Arc<ChapterText>, NovelError>;


/// What listings and `stat` need of a chapter, kept apart from its text:
/// small enough to stay cached when the texts do not fit, so listing a
/// chapter or stat-ing a page of its chain needs no decode.
#[derive(Debug)]
pub struct Outline {
    /// `(offset, text bytes, json bytes)` of each page of the reading chain.
    pages: Vec<(u64, u64, u64)>,
}

impl Outline {
    fn size(&self, page: PageName) -> Option<u64> {
        if page.limit.is_some() {
            return None;
        }
        let i = self.pages.binary_search_by_key(&page.offset, |p| p.0).ok()?;
        Some(match page.format {
            Format::Text => self.pages[i].1,
            Format::Json => self.pages[i].2,
        })
    }
}

type ChapterKey = (OsString, OsString);
type PageKey = (OsString, OsString, PageName);

pub struct NovelFs {
    library: Library,
    config: FsConfig,
    inodes: Mutex<Inodes>,
    books: Mutex<HashMap<OsString, (Stamp, Arc<BookIndex>)>>,
    chapters: Mutex<Lru<ChapterKey, (Stamp, Loaded)>>,
    /// `None` for a chapter that cannot be read (its listing is `ERROR`).
    outlines: Mutex<Lru<ChapterKey, (Stamp, Option<Arc<Outline>>)>>,
    pages: Mutex<Lru<PageKey, (Stamp, Arc<Vec<u8>>)>>,
    handles: Mutex<HashMap<u64, Handle>>,
    /// The listing each open directory handle reads.
    dirs: Mutex<HashMap<u64, Arc<Vec<Listed>>>>,
    next_fh: AtomicU64,
    /// Per inode, a digest of what its previous open (or opendir) served:
    /// the kernel may keep its cache only while it is unchanged.
    last_open: Mutex<HashMap<u64, u64>>,
    switch: Mutex<Option<(Option<Stamp>, bool)>>,
}

/// The inode table. Numbers are never reused; an entry goes when the
/// kernel forgets its last lookup.
#[derive(Default)]
struct Inodes {
    by_node: HashMap<Node, u64>,
    entries: HashMap<u64, InodeEntry>,
    next: u64,
}

/// What an open file reads.
#[derive(Debug, Clone)]
enum Handle {
    /// The bytes fixed at open, and how far from 0 they have been read
    /// without a gap.
    Snapshot(Arc<Vec<u8>>, u64),
    /// A page version whose every byte the kernel has already been given
    /// (and caches, with FOPEN_KEEP_CACHE): opening it renders nothing.
    /// Should the kernel still ask, the version is rendered then.
    Deferred(Node),
}

struct InodeEntry {
    node: Node,
    /// Every byte of this page version has been read once.
    fully_read: bool,
    /// Lookups the kernel holds (entries returned by lookup and readdirplus).
    lookups: u64,
    /// The attributes last reported, for a page version that is gone from
    /// disk but still open.
    last_attr: Option<Attr>,
}

/// A poisoned lock only means another request panicked (and was answered
/// with EIO); the data behind these locks stays consistent.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn mtime_of(meta: &std::fs::Metadata) -> SystemTime {
    let secs = meta.mtime();
    let nanos = meta.mtime_nsec().clamp(0, 999_999_999) as u32;
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nanos)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::from_nanos(nanos as u64)
    }
}

fn lstat(path: &std::path::Path) -> Result<std::fs::Metadata> {
    std::fs::symlink_metadata(path).map_err(|_| libc::ENOENT)
}

fn error_bytes(e: &NovelError) -> Arc<Vec<u8>> {
    Arc::new(e.error_line().into_bytes())
}

impl NovelFs {
    pub fn new(library: Library, config: FsConfig) -> Self {
        // The budget is shared: 1/16 for outlines, the rest split between
        // decoded chapters and rendered pages.
        let outline_budget = (config.cache_bytes / 16).max(1 << 20);
        let half = config.cache_bytes.saturating_sub(outline_budget) / 2;
        let mut inodes = Inodes { next: ROOT_INO + 1, ..Default::default() };
        inodes.by_node.insert(Node::Root, ROOT_INO);
        inodes.entries.insert(ROOT_INO, InodeEntry { node: Node::Root, fully_read: false, lookups: 1, last_attr: None });
        NovelFs {
            library,
            inodes: Mutex::new(inodes),
            books: Mutex::new(HashMap::new()),
            chapters: Mutex::new(Lru::new(half)),
            outlines: Mutex::new(Lru::new(outline_budget)),
            pages: Mutex::new(Lru::new(half)),
            handles: Mutex::new(HashMap::new()),
            dirs: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            last_open: Mutex::new(HashMap::new()),
            switch: Mutex::new(None),
            config,
        }
    }

    pub fn ttl(&self) -> Duration {
        self.config.ttl
    }

    pub fn library(&self) -> &Library {
        &self.library
    }

    /// The inode of `node`, created if new; `counted` when the kernel
    /// will hold a lookup reference for it (lookup, readdirplus).
    fn intern(&self, node: Node, counted: bool, attr: Option<Attr>) -> u64 {
        let mut inodes = lock(&self.inodes);
        let ino = match inodes.by_node.get(&node) {
            Some(&ino) => ino,
            None => {
                let ino = inodes.next;
                inodes.next += 1;
                inodes.by_node.insert(node.clone(), ino);
                inodes.entries.insert(ino, InodeEntry { node, fully_read: false, lookups: 0, last_attr: None });
                ino
            }
        };
        let entry = inodes.entries.get_mut(&ino).expect("interned");
        entry.lookups += u64::from(counted);
        if attr.is_some() {
            entry.last_attr = attr.map(|a| Attr { ino, ..a });
        }
        ino
    }

    /// The path of `ino` for log lines (never fails).
    pub fn describe(&self, ino: u64) -> String {
        self.node(ino).map_or_else(|_| format!("inode {ino}"), |n| n.path())
    }

    pub fn node(&self, ino: u64) -> Result<Node> {
        lock(&self.inodes).entries.get(&ino).map(|e| e.node.clone()).ok_or(libc::ENOENT)
    }

    fn last_attr(&self, ino: u64) -> Option<Attr> {
        lock(&self.inodes).entries.get(&ino).and_then(|e| e.last_attr)
    }

    /// The kernel dropped `n` lookups of `ino`.
    pub fn forget(&self, ino: u64, n: u64) {
        if ino == ROOT_INO {
            return;
        }
        let mut inodes = lock(&self.inodes);
        let Some(entry) = inodes.entries.get_mut(&ino) else { return };
        entry.lookups = entry.lookups.saturating_sub(n);
        if entry.lookups == 0 {
            let node = inodes.entries.remove(&ino).expect("present").node;
            inodes.by_node.remove(&node);
            drop(inodes);
            lock(&self.last_open).remove(&ino);
        }
    }

    /// Inodes currently known (for tests of `forget`).
    pub fn inode_count(&self) -> usize {
        lock(&self.inodes).entries.len()
    }

    /// Whether `novel_read` is switched on; the state file is re-read only
    /// when its stamp changes.
    pub fn enabled(&self) -> bool {
        let path = match &self.config.state_file {
            Some(p) => Some(p.clone()),
            None => library::state::default_state_file(),
        };
        let stamp = path.as_deref().and_then(|p| std::fs::metadata(p).ok()).map(|m| Stamp::of(&m));
        let mut cached = lock(&self.switch);
        if let Some((s, on)) = *cached
            && s == stamp
        {
            return on;
        }
        let on = library::state::tool_enabled(path.as_deref());
        *cached = Some((stamp, on));
        on
    }

    fn book_index(&self, book: &OsStr) -> Result<Arc<BookIndex>> {
        let meta = self.library.book_metadata(book).ok_or(libc::ENOENT)?;
        let stamp = Stamp::of(&meta);
        if let Some((s, index)) = lock(&self.books).get(book)
            && *s == stamp
        {
            return Ok(index.clone());
        }
        let chapters = library::scan::scan_chapters(&self.library.book_dir(book)).map_err(|_| libc::ENOENT)?;
        let index = Arc::new(BookIndex::new(chapters));
        lock(&self.books).insert(book.to_os_string(), (stamp, index.clone()));
        Ok(index)
    }

    /// The source file of chapter `file`, without reading it: a listing of
    /// 10,000 chapter directories must not decode 10,000 files.
    fn chapter_source(&self, book: &OsStr, file: &OsStr) -> Result<(Arc<BookIndex>, usize, std::fs::Metadata)> {
        let index = self.book_index(book)?;
        let i = index.exact(file.as_bytes()).ok_or(libc::ENOENT)?;
        let meta = lstat(&self.library.book_dir(book).join(file))?;
        if !meta.is_file() {
            return Err(libc::ENOENT);
        }
        Ok((index, i, meta))
    }

    /// The chapter `file` of `book` as it is now: its source stamp and its
    /// decoded text, or the error that stops it from being read.
    ///
    /// The stamp of a text that is read is taken from the file descriptor
    /// it is read through, never from an earlier `lstat` of the name: the
    /// name may be renamed over, deleted or re-created in between, and the
    /// text must be cached under the stamp of the file it came from. A
    /// name that no longer holds a file is ENOENT, never a cached error.
    fn chapter(&self, book: &OsStr, file: &OsStr) -> Result<(Stamp, Loaded, SystemTime)> {
        let (index, i, meta) = self.chapter_source(book, file)?;
        let key = (book.to_os_string(), file.to_os_string());
        if let Some((s, loaded)) = lock(&self.chapters).get(&key)
            && s == Stamp::of(&meta)
        {
            return Ok((s, loaded, mtime_of(&meta)));
        }
        let chapter = &index.chapters[i];
        let (stamp, mtime, loaded): (Stamp, SystemTime, Loaded) = match self.library.open_chapter_file(book, file) {
            Ok(None) => return Err(libc::ENOENT),
            Ok(Some((f, meta))) => {
                let loaded = self
                    .library
                    .read_opened_chapter(book, file, f, &meta)
                    .and_then(|bytes| self.library.decode_chapter(book, chapter, &bytes))
                    .map(Arc::new);
                (Stamp::of(&meta), mtime_of(&meta), loaded)
            }
            // Opening failed for another reason: an error to show, under
            // the stamp of the name.
            Err(e) => (Stamp::of(&meta), mtime_of(&meta), Err(e)),
        };
        let weight = match &loaded {
            Ok(text) => text.heap_bytes() + 256,
            Err(_) => 256,
        };
        lock(&self.chapters).insert(key, (stamp, loaded.clone()), weight);
        Ok((stamp, loaded, mtime))
    }

    /// The page as the source is now, with the stamp of that source.
    fn page_bytes(&self, book: &OsStr, file: &OsStr, page: PageName) -> Result<(Arc<Vec<u8>>, SystemTime, Stamp)> {
        let (stamp, loaded, mtime) = self.chapter(book, file)?;
        let chapter = loaded.map_err(|_| libc::EIO)?;
        if !chapter.offset_in_range(page.offset) {
            return Err(libc::ENOENT);
        }
        Ok((self.render_page(book, file, page, stamp, &chapter), mtime, stamp))
    }

    /// The chapter's outline as the source is now (decoding it only when
    /// the outline is not cached for the source's current stamp).
    fn outline(&self, book: &OsStr, file: &OsStr) -> Result<(Stamp, Option<Arc<Outline>>, SystemTime)> {
        let (_, _, meta) = self.chapter_source(book, file)?;
        let key = (book.to_os_string(), file.to_os_string());
        if let Some((s, outline)) = lock(&self.outlines).get(&key)
            && s == Stamp::of(&meta)
        {
            return Ok((s, outline, mtime_of(&meta)));
        }
        let (stamp, loaded, mtime) = self.chapter(book, file)?;
        let outline = loaded.ok().map(|chapter| {
            let pages = chapter
                .chain()
                .into_iter()
                .map(|offset| {
                    let size = |format| self.size_of_page(book, file, PageName { offset, limit: None, format }, &chapter);
                    (offset, size(Format::Text), size(Format::Json))
                })
                .collect::<Vec<_>>();
            Arc::new(Outline { pages })
        });
        let weight = 128 + key.0.len() + key.1.len() + outline.as_ref().map_or(0, |o| o.pages.capacity() * 24);
        lock(&self.outlines).insert(key, (stamp, outline.clone()), weight);
        Ok((stamp, outline, mtime))
    }

    /// The byte size of a page as the source is now, with the stamp of that
    /// source — computed from line sizes, never by rendering the page.
    fn page_size(&self, book: &OsStr, file: &OsStr, page: PageName) -> Result<(u64, SystemTime, Stamp)> {
        let (stamp, outline, mtime) = self.outline(book, file)?;
        match outline {
            None => return Err(libc::EIO),
            Some(o) => {
                if let Some(size) = o.size(page) {
                    return Ok((size, mtime, stamp));
                }
            }
        }
        let (stamp, loaded, mtime) = self.chapter(book, file)?;
        let chapter = loaded.map_err(|_| libc::EIO)?;
        if !chapter.offset_in_range(page.offset) {
            return Err(libc::ENOENT);
        }
        Ok((self.size_of_page(book, file, page, &chapter), mtime, stamp))
    }

    /// `page.offset` must be in range.
    fn size_of_page(&self, book: &OsStr, file: &OsStr, page: PageName, text: &ChapterText) -> u64 {
        let book_name = book.to_string_lossy();
        let file_name = file.to_string_lossy();
        let path = self.library.display_path(&book_name, &file_name);
        let source = library::PageSource { book: &book_name, file: &file_name, path: &path };
        let layout = text.layout(page.offset, page.limit_or_default());
        let lines = text.line_stats(&layout);
        (match page.format {
            Format::Text => library::render::text_len(&source, text.total_lines(), &layout, lines),
            Format::Json => library::render::json_len(&source, text.total_lines(), &layout, lines),
        }) as u64
    }

    /// The page of the chapter version `stamp` (whose text is `chapter`);
    /// `page.offset` must be in range.
    fn render_page(&self, book: &OsStr, file: &OsStr, page: PageName, stamp: Stamp, text: &ChapterText) -> Arc<Vec<u8>> {
        let key = (book.to_os_string(), file.to_os_string(), page);
        if let Some((s, bytes)) = lock(&self.pages).get(&key)
            && s == stamp
        {
            return bytes;
        }
        let book_name = book.to_string_lossy().into_owned();
        let file_name = file.to_string_lossy().into_owned();
        let out = PageOutput {
            path: self.library.display_path(&book_name, &file_name),
            book: book_name,
            file: file_name,
            page: text.page(page.offset, page.limit_or_default()),
        };
        let rendered = match page.format {
            Format::Text => out.text(),
            Format::Json => out.json(),
        };
        let mut rendered = rendered.into_bytes();
        rendered.shrink_to_fit();
        let bytes = Arc::new(rendered);
        lock(&self.pages).insert(key, (stamp, bytes.clone()), bytes.len() + 128);
        bytes
    }

    /// §1.3 for a name in a book that is not byte for byte a file name
    /// (such a name is the chapter's own directory, never an alias).
    fn find_other_name(&self, book: &OsStr, name: &OsStr) -> Result<(Arc<BookIndex>, Lookup)> {
        let index = self.book_index(book)?;
        if index.exact(name.as_bytes()).is_some() {
            return Err(libc::ENOENT);
        }
        let found = index.find(&name.to_string_lossy());
        Ok((index, found))
    }

    fn ambiguity(&self, book: &OsStr, name: &OsStr) -> Result<NovelError> {
        let (index, found) = self.find_other_name(book, name)?;
        match found {
            Lookup::Ambiguous { number, indices } => Ok(NovelError::Ambiguous {
                number,
                files: indices.iter().map(|&i| index.chapters[i].file.clone()).collect(),
            }),
            _ => Err(libc::ENOENT),
        }
    }

    fn alias_target(&self, book: &OsStr, name: &OsStr) -> Result<OsString> {
        let (index, found) = self.find_other_name(book, name)?;
        match found {
            Lookup::Found(i) => Ok(index.chapters[i].os_name.clone()),
            _ => Err(libc::ENOENT),
        }
    }

    fn book_alias_target(&self, name: &OsStr) -> Result<OsString> {
        let text = std::str::from_utf8(name.as_bytes()).map_err(|_| libc::ENOENT)?;
        let target = library::sanitize_segment(text).map_err(|_| libc::ENOENT)?;
        if target.as_bytes() == name.as_bytes() || !self.library.is_book(OsStr::new(&target)) {
            return Err(libc::ENOENT);
        }
        Ok(OsString::from(target))
    }

    fn dir_mtime(&self, path: &std::path::Path) -> SystemTime {
        lstat(path).map(|m| mtime_of(&m)).unwrap_or(UNIX_EPOCH)
    }

    /// The node's current attributes; ENOENT when it no longer exists.
    fn attr_of(&self, ino: u64, node: &Node) -> Result<Attr> {
        let dir = |mtime| Attr { ino, kind: Kind::Directory, size: 0, mtime };
        let file = |size: usize, mtime| Attr { ino, kind: Kind::File, size: size as u64, mtime };
        let link = |target: &OsStr, mtime| Attr { ino, kind: Kind::Symlink, size: target.len() as u64, mtime };
        Ok(match node {
            Node::Root => dir(self.dir_mtime(&self.library.novels_dir())),
            Node::RootError => file(self.root_error()?.len(), self.dir_mtime(&self.library.novels_dir())),
            Node::Book { book } => {
                if !self.library.is_book(book) {
                    return Err(libc::ENOENT);
                }
                dir(self.dir_mtime(&self.library.book_dir(book)))
            }
            Node::BookAlias { name, target } => {
                if self.book_alias_target(name)? != *target {
                    return Err(libc::ENOENT);
                }
                link(target, self.dir_mtime(&self.library.book_dir(target)))
            }
            Node::Chapter { book, file } => dir(mtime_of(&self.chapter_source(book, file)?.2)),
            Node::ChapterAlias { book, name, target } => {
                if self.alias_target(book, name)? != *target {
                    return Err(libc::ENOENT);
                }
                link(target, self.dir_mtime(&self.library.book_dir(book).join(target)))
            }
            Node::Ambiguous { book, name } | Node::AmbiguousError { book, name } => {
                let error = self.ambiguity(book, name)?;
                let mtime = self.dir_mtime(&self.library.book_dir(book));
                if matches!(node, Node::Ambiguous { .. }) { dir(mtime) } else { file(error.error_line().len(), mtime) }
            }
            Node::ChapterError { book, file: f } => {
                let (_, loaded, mtime) = self.chapter(book, f)?;
                match loaded {
                    Err(e) => file(e.error_line().len(), mtime),
                    Ok(_) => return Err(libc::ENOENT),
                }
            }
            Node::Page { book, file: f, page, version } => {
                let current = self.page_size(book, f, *page);
                match current {
                    Ok((size, mtime, stamp)) if stamp == *version => file(size as usize, mtime),
                    // An older version: still open somewhere, so keep its attributes.
                    _ => return self.last_attr(ino).filter(|_| ino != 0).ok_or(libc::ENOENT),
                }
            }
        })
    }

    fn root_error(&self) -> Result<String> {
        if self.enabled() { Err(libc::ENOENT) } else { Ok(NovelError::Disabled.error_line()) }
    }

    /// Switched off, only the root and its `ERROR` remain reachable.
    fn check_switch(&self, node: &Node) -> Result<()> {
        if matches!(node, Node::Root | Node::RootError) || self.enabled() { Ok(()) } else { Err(libc::EACCES) }
    }

    pub fn getattr(&self, ino: u64) -> Result<Attr> {
        let node = self.node(ino)?;
        self.check_switch(&node)?;
        self.attr_of(ino, &node)
    }

    pub fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr> {
        let parent = self.node(parent)?;
        if !self.enabled() {
            return match parent {
                Node::Root if name == ERROR_FILE => self.found(Node::RootError),
                _ => Err(libc::EACCES),
            };
        }
        let node = match parent {
            Node::Root => {
                if self.library.is_book(name) {
                    Node::Book { book: name.to_os_string() }
                } else {
                    Node::BookAlias { target: self.book_alias_target(name)?, name: name.to_os_string() }
                }
            }
            Node::Book { book } => {
                let index = self.book_index(&book)?;
                if let Some(i) = index.exact(name.as_bytes()) {
                    Node::Chapter { file: index.chapters[i].os_name.clone(), book }
                } else {
                    match index.find(&name.to_string_lossy()) {
                        Lookup::Found(i) => Node::ChapterAlias {
                            target: index.chapters[i].os_name.clone(),
                            name: name.to_os_string(),
                            book,
                        },
                        Lookup::Ambiguous { .. } => Node::Ambiguous { book, name: name.to_os_string() },
                        Lookup::NotFound => return Err(libc::ENOENT),
                    }
                }
            }
            Node::Chapter { book, file } => {
                if name == ERROR_FILE {
                    Node::ChapterError { book, file }
                } else {
                    let page = PageName::parse(name.as_bytes()).ok_or(libc::ENOENT)?;
                    let (_, _, version) = self.page_size(&book, &file, page)?;
                    Node::Page { book, file, page, version }
                }
            }
            Node::Ambiguous { book, name: alias } if name == ERROR_FILE => Node::AmbiguousError { book, name: alias },
            Node::Ambiguous { .. } => return Err(libc::ENOENT),
            Node::RootError
            | Node::AmbiguousError { .. }
            | Node::ChapterError { .. }
            | Node::Page { .. }
            | Node::BookAlias { .. }
            | Node::ChapterAlias { .. } => return Err(libc::ENOTDIR),
        };
        self.found(node)
    }

    fn found(&self, node: Node) -> Result<Attr> {
        // Validate before interning, so a name that does not exist leaves no inode behind.
        let attr = self.attr_of(0, &node)?;
        Ok(Attr { ino: self.intern(node, true, Some(attr)), ..attr })
    }

    pub fn readlink(&self, ino: u64) -> Result<OsString> {
        let node = self.node(ino)?;
        self.check_switch(&node)?;
        match &node {
            Node::BookAlias { target, .. } | Node::ChapterAlias { target, .. } => {
                self.attr_of(ino, &node)?;
                Ok(target.clone())
            }
            _ => Err(libc::EINVAL),
        }
    }

    /// Opens a directory for listing; its handle keeps a listing.
    ///
    /// `keep_cache` tells the kernel it may list the directory from its
    /// own cache: true only when what the listing depends on (the source
    /// of a chapter, the book directory, `novels/` and the switch) has the
    /// same stamp as at the previous opendir of this inode.
    pub fn opendir(&self, ino: u64) -> Result<Opened> {
        if self.getattr(ino)?.kind != Kind::Directory {
            return Err(libc::ENOTDIR);
        }
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let keep_cache = match self.listing_version(&self.node(ino)?) {
            Some(version) => lock(&self.last_open).insert(ino, version) == Some(version),
            None => {
                lock(&self.last_open).remove(&ino);
                false
            }
        };
        Ok(Opened { fh, keep_cache })
    }

    fn listing_version(&self, node: &Node) -> Option<u64> {
        let stamp = |p: &std::path::Path| lstat(p).ok().map(|m| Stamp::of(&m));
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        match node {
            Node::Root => (self.enabled(), stamp(&self.library.novels_dir())?).hash(&mut hasher),
            Node::Book { book } | Node::Ambiguous { book, .. } => stamp(&self.library.book_dir(book))?.hash(&mut hasher),
            Node::Chapter { book, file } => Stamp::of(&self.chapter_source(book, file).ok()?.2).hash(&mut hasher),
            _ => return None,
        }
        Some(hasher.finish())
    }

    pub fn releasedir(&self, fh: u64) {
        lock(&self.dirs).remove(&fh);
    }

    /// The listing an open directory handle reads: taken when the handle
    /// reads from offset 0 (its first read, or after a rewind) and kept for
    /// the reads that continue it. Listing a directory costs one pass
    /// however many requests the kernel splits it into, and the pieces
    /// agree with each other even if the directory changes meanwhile.
    pub fn listing(&self, fh: u64, ino: u64, offset: u64) -> Result<Arc<Vec<Listed>>> {
        if offset > 0
            && let Some(l) = lock(&self.dirs).get(&fh)
        {
            return Ok(l.clone());
        }
        let l = Arc::new(self.list(ino)?);
        lock(&self.dirs).insert(fh, l.clone());
        Ok(l)
    }

    /// The inode of a listed entry, for readdir (the kernel keeps no
    /// reference to it, so no lookup is counted).
    pub fn listed_ino(&self, e: &Listed) -> u64 {
        self.intern(e.node.clone(), false, None)
    }

    /// The attributes of a listed entry, for readdirplus: the entry now
    /// counts as a lookup (undo with `forget` if it is not sent). `None`
    /// when it vanished since the listing was taken.
    pub fn listed_plus(&self, e: &Listed) -> Option<Attr> {
        let attr = match e.attr {
            Some(a) => a,
            None => self.attr_of(0, &e.node).ok()?,
        };
        let ino = self.intern(e.node.clone(), true, Some(attr));
        Some(Attr { ino, ..attr })
    }

    /// The entries of a directory. The pages of a chapter carry their
    /// attributes, taken from the same version of the chapter as their
    /// names, so a listing taken while the chapter changes is whole.
    fn list(&self, ino: u64) -> Result<Vec<Listed>> {
        let node = self.node(ino)?;
        self.check_switch(&node)?;
        let entry = |node: Node, kind: Kind, name: OsString| Listed { node, kind, name, attr: None };
        Ok(match node {
            Node::Root if !self.enabled() => vec![entry(Node::RootError, Kind::File, ERROR_FILE.into())],
            Node::Root => {
                let mut books: Vec<OsString> = std::fs::read_dir(self.library.novels_dir())
                    .map_err(|_| libc::EIO)?
                    .filter_map(|e| e.ok())
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.file_name())
                    .collect();
                books.sort_by(|a, b| library::scan::locale_compare(&a.to_string_lossy(), &b.to_string_lossy()).then(a.cmp(b)));
                books.into_iter().map(|b| entry(Node::Book { book: b.clone() }, Kind::Directory, b)).collect()
            }
            Node::Book { book } => {
                let index = self.book_index(&book)?;
                index
                    .chapters
                    .iter()
                    .map(|c| entry(Node::Chapter { book: book.clone(), file: c.os_name.clone() }, Kind::Directory, c.os_name.clone()))
                    .collect()
            }
            Node::Chapter { book, file } => match self.outline(&book, &file)? {
                (_, None, _) => vec![entry(Node::ChapterError { book, file }, Kind::File, ERROR_FILE.into())],
                (version, Some(outline), mtime) => outline
                    .pages
                    .iter()
                    .flat_map(|&(offset, text, json)| {
                        [(Format::Text, text), (Format::Json, json)].map(|(format, size)| (PageName { offset, limit: None, format }, size))
                    })
                    .map(|(page, size)| {
                        Listed {
                            name: OsString::from(page.to_name()),
                            node: Node::Page { book: book.clone(), file: file.clone(), page, version },
                            kind: Kind::File,
                            attr: Some(Attr { ino: 0, kind: Kind::File, size, mtime }),
                        }
                    })
                    .collect(),
            },
            Node::Ambiguous { book, name } => {
                self.ambiguity(&book, &name)?;
                vec![entry(Node::AmbiguousError { book, name }, Kind::File, ERROR_FILE.into())]
            }
            _ => return Err(libc::ENOTDIR),
        })
    }

    fn content(&self, node: &Node) -> Result<Arc<Vec<u8>>> {
        match node {
            Node::RootError => Ok(Arc::new(self.root_error()?.into_bytes())),
            Node::AmbiguousError { book, name } => Ok(error_bytes(&self.ambiguity(book, name)?)),
            Node::ChapterError { book, file } => match self.chapter(book, file)?.1 {
                Err(e) => Ok(error_bytes(&e)),
                Ok(_) => Err(libc::ENOENT),
            },
            Node::Page { book, file, page, version } => match self.page_bytes(book, file, *page)? {
                (bytes, _, stamp) if stamp == *version => Ok(bytes),
                // The name now holds a newer version: ESTALE makes the
                // kernel look the path up again and open that instead.
                _ => Err(libc::ESTALE),
            },
            _ => Err(libc::EISDIR),
        }
    }

    /// Opens a file for reading: its bytes are fixed now, for this handle.
    pub fn open(&self, ino: u64, write: bool) -> Result<Opened> {
        let node = self.node(ino)?;
        self.check_switch(&node)?;
        if write {
            return Err(libc::EROFS);
        }
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        if let Node::Page { book, file, version, .. } = &node
            && lock(&self.inodes).entries.get(&ino).is_some_and(|e| e.fully_read)
        {
            // Only the version check: an edit since makes ESTALE, as below.
            let (_, _, meta) = self.chapter_source(book, file)?;
            if Stamp::of(&meta) != *version {
                return Err(libc::ESTALE);
            }
            lock(&self.handles).insert(fh, Handle::Deferred(node.clone()));
            return Ok(Opened { fh, keep_cache: true });
        }
        let bytes = self.content(&node)?;
        // A page inode's bytes never change (a new version is a new inode);
        // other files keep the cache only while their bytes are the same.
        let keep_cache = matches!(node, Node::Page { .. }) || {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            bytes.hash(&mut hasher);
            let digest = hasher.finish();
            lock(&self.last_open).insert(ino, digest) == Some(digest)
        };
        lock(&self.handles).insert(fh, Handle::Snapshot(bytes, 0));
        Ok(Opened { fh, keep_cache })
    }

    pub fn read(&self, ino: u64, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>> {
        let handle = lock(&self.handles).get(&fh).cloned().ok_or(libc::EBADF)?;
        let (bytes, covered) = match handle {
            Handle::Snapshot(bytes, covered) => (bytes, covered),
            Handle::Deferred(node) => {
                // The kernel dropped its copy; the version can only be
                // rebuilt while the source is unchanged.
                let bytes = self.content(&node).map_err(|e| {
                    log::warn!("page {node:?} changed on disk after it was opened and left the page cache");
                    if e == libc::ESTALE { libc::EIO } else { e }
                })?;
                (bytes, 0)
            }
        };
        let start = (offset.min(bytes.len() as u64)) as usize;
        let end = start.saturating_add(size as usize).min(bytes.len());
        let covered = if offset <= covered { covered.max(end as u64) } else { covered };
        if covered == bytes.len() as u64
            && let Some(entry) = lock(&self.inodes).entries.get_mut(&ino)
            && matches!(entry.node, Node::Page { .. })
        {
            entry.fully_read = true;
        }
        let out = bytes[start..end].to_vec();
        lock(&self.handles).insert(fh, Handle::Snapshot(bytes, covered));
        Ok(out)
    }

    pub fn release(&self, fh: u64) {
        lock(&self.handles).remove(&fh);
    }

    /// Bytes held by the caches (for benchmarks and tests).
    pub fn cache_bytes(&self) -> usize {
        lock(&self.chapters).used_bytes() + lock(&self.pages).used_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixture {
        _dir: tempfile::TempDir,
        book_dir: PathBuf,
        fs: NovelFs,
    }

    fn fixture(files: &[(&str, &str)]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let book_dir = dir.path().join("novels/书");
        std::fs::create_dir_all(&book_dir).unwrap();
        for (name, body) in files {
            std::fs::write(book_dir.join(name), body).unwrap();
        }
        let config = FsConfig { state_file: Some(dir.path().join("no-state.json")), ..FsConfig::default() };
        let fs = NovelFs::new(Library::open(dir.path()).unwrap(), config);
        Fixture { _dir: dir, book_dir, fs }
    }

    fn walk(fs: &NovelFs, path: &str) -> Result<Attr> {
        let mut attr = fs.getattr(ROOT_INO)?;
        for part in path.split('/').filter(|p| !p.is_empty()) {
            let node = fs.node(attr.ino)?;
            attr = fs.lookup(attr.ino, OsStr::new(part))?;
            // Follow aliases the way the kernel would.
            if attr.kind == Kind::Symlink {
                let target = fs.readlink(attr.ino)?;
                let parent = fs.intern(node, false, None);
                attr = fs.lookup(parent, &target)?;
            }
        }
        Ok(attr)
    }

    fn read_all(fs: &NovelFs, ino: u64) -> Vec<u8> {
        let opened = fs.open(ino, false).unwrap();
        let bytes = fs.read(ino, opened.fh, 0, u32::MAX).unwrap();
        fs.release(opened.fh);
        bytes
    }

    #[test]
    fn tree_shape_without_a_mount() {
        let f = fixture(&[("第1章 起.md", "一\n二"), ("第2章 承.md", "x"), ("第02章 另.md", "y")]);
        let book = walk(&f.fs, "书").unwrap();
        assert_eq!(book.kind, Kind::Directory);
        let names: Vec<_> = f.fs.list(book.ino).unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["第1章 起.md", "第02章 另.md", "第2章 承.md"]);
        let alias = f.fs.lookup(book.ino, OsStr::new("1")).unwrap();
        assert_eq!(alias.kind, Kind::Symlink);
        assert_eq!(f.fs.readlink(alias.ino).unwrap(), "第1章 起.md");
        let page = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        let bytes = read_all(&f.fs, page.ino);
        assert_eq!(bytes.len() as u64, page.size);
        assert!(String::from_utf8(bytes).unwrap().contains("1: 一\n2: 二\n"));
        let ambiguous = f.fs.lookup(book.ino, OsStr::new("2")).unwrap();
        assert_eq!(ambiguous.kind, Kind::Directory);
        let listed: Vec<_> = f.fs.list(ambiguous.ino).unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(listed, ["ERROR"]);
        assert_eq!(f.fs.lookup(ambiguous.ino, OsStr::new("offset-1.txt")), Err(libc::ENOENT));
        assert_eq!(walk(&f.fs, "书/1/offset-3.txt"), Err(libc::ENOENT));
        assert_eq!(walk(&f.fs, "书/1/offset-01.txt"), Err(libc::ENOENT));
        assert_eq!(walk(&f.fs, "书/99"), Err(libc::ENOENT));
    }

    #[test]
    fn a_new_version_is_a_new_inode_and_old_handles_keep_their_bytes() {
        let f = fixture(&[("第1章 起.md", "旧")]);
        let old = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        let handle = f.fs.open(old.ino, false).unwrap();
        assert!(handle.keep_cache, "a page version never changes");
        std::fs::write(f.book_dir.join("第1章 起.md"), "新的内容").unwrap();
        let new = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        assert_ne!(new.ino, old.ino);
        assert_eq!(f.fs.open(old.ino, false).unwrap_err(), libc::ESTALE, "the kernel re-walks and finds the new inode");
        assert_eq!(f.fs.getattr(old.ino).unwrap().size, old.size, "an open old version keeps its size");
        let kept = String::from_utf8(f.fs.read(old.ino, handle.fh, 0, u32::MAX).unwrap()).unwrap();
        assert!(kept.contains("1: 旧\n"));
        assert!(String::from_utf8(read_all(&f.fs, new.ino)).unwrap().contains("1: 新的内容\n"));
    }

    #[test]
    fn reopening_a_fully_read_page_defers_rendering_to_the_kernel_cache() {
        let f = fixture(&[("第1章 起.md", "一\n二")]);
        let page = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        let first = read_all(&f.fs, page.ino);
        let again = f.fs.open(page.ino, false).unwrap();
        assert!(again.keep_cache);
        assert!(matches!(lock(&f.fs.handles).get(&again.fh), Some(Handle::Deferred(_))), "nothing rendered at open");
        assert_eq!(f.fs.read(page.ino, again.fh, 0, u32::MAX).unwrap(), first, "rendered on demand, same bytes");
        let third = f.fs.open(page.ino, false).unwrap();
        std::fs::write(f.book_dir.join("第1章 起.md"), "改过了").unwrap();
        assert_eq!(f.fs.read(page.ino, third.fh, 0, u32::MAX), Err(libc::EIO), "an old version cannot be rebuilt");
        assert_eq!(f.fs.open(page.ino, false).unwrap_err(), libc::ESTALE);
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

    #[test]
    fn undecodable_chapter_shows_only_error() {
        let f = fixture(&[("第1章 坏.txt", "")]);
        std::fs::write(f.book_dir.join("第1章 坏.txt"), [0x81u8, 0x20, 0xfe, 0x7f].repeat(10)).unwrap();
        let dir = walk(&f.fs, "书/1").unwrap();
        let names: Vec<_> = f.fs.list(dir.ino).unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["ERROR"]);
        assert_eq!(f.fs.lookup(dir.ino, OsStr::new("offset-1.txt")), Err(libc::EIO));
        let error = f.fs.lookup(dir.ino, OsStr::new("ERROR")).unwrap();
        let text = String::from_utf8(read_all(&f.fs, error.ino)).unwrap();
        assert!(text.starts_with("错误：cannot detect text encoding of \""), "{text}");
        assert_eq!(text.len() as u64, error.size);
    }

    #[test]
    fn writes_are_refused() {
        let f = fixture(&[("第1章 起.md", "a")]);
        let page = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        assert_eq!(f.fs.open(page.ino, true).unwrap_err(), libc::EROFS);
    }
}
