//! The filesystem's logic, free of FUSE types: which names exist, what
//! they are, what bytes they hold. `fuse.rs` only translates requests.
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

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::hash::{Hash, Hasher};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::library::{self, BookIndex, ChapterText, Library, Lookup, NovelError, PageOutput};

use super::cache::{Lru, Stamp, allocated};
use super::names::{ERROR_FILE, Format, PageName};
use super::watch::{Change, Watch};

pub type Errno = i32;
pub type Result<T> = std::result::Result<T, Errno>;

pub const ROOT_INO: u64 = 1;

/// How long the kernel may keep what a watched directory holds: changes
/// there are pushed to it, so this only bounds a change inotify missed.
pub const WATCHED_TTL: Duration = Duration::from_secs(3600);

/// How many chapters ahead of the one being loaded are read ahead.
const READ_AHEAD: usize = 8;

/// A thread that asks the kernel to read files into its page cache
/// (`POSIX_FADV_WILLNEED` starts the reads and returns); it ends with
/// the `NovelFs` that holds the sender.
fn spawn_prefetcher() -> std::sync::mpsc::Sender<PathBuf> {
    let (tx, rx) = std::sync::mpsc::channel::<PathBuf>();
    let spawned = std::thread::Builder::new()
        .name("novelfs-readahead".into())
        .spawn(move || {
            use std::os::fd::AsRawFd;
            use std::os::unix::fs::OpenOptionsExt;
            for path in rx {
                let opened = std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                    .open(&path);
                if let Ok(f) = opened {
                    // SAFETY: advice on an open descriptor; no memory involved.
                    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_WILLNEED) };
                }
            }
        });
    if let Err(e) = spawned {
        log::warn!("no read-ahead thread: {e}");
    }
    tx
}

/// Chapter files above this size are loaded one at a time.
const BIG_CHAPTER_BYTES: u64 = 4 << 20;

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
}

impl Default for FsConfig {
    fn default() -> Self {
        FsConfig {
            ttl: Duration::from_secs(1),
            state_file: None,
            cache_bytes: 256 << 20,
            watch: true,
        }
    }
}

/// A chapter file of a book: shared by its directory and all its pages, so
/// that a page inode costs a pointer, not two names.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ChapterId {
    pub book: Arc<OsStr>,
    pub file: Box<OsStr>,
}

pub type ChapterRef = Arc<ChapterId>;

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
            Node::BookAlias { name, .. } => format!("/{}", l(name)),
            Node::Chapter { chapter } => c(chapter),
            Node::ChapterAlias { name, target } => format!("/{}/{}", l(&target.book), l(name)),
            Node::Ambiguous { book, name } => format!("/{}/{}", l(book), l(name)),
            Node::AmbiguousError { book, name, .. } => {
                format!("/{}/{}/{ERROR_FILE}", l(book), l(name))
            }
            Node::ChapterError { chapter, .. } => format!("{}/{ERROR_FILE}", c(chapter)),
            Node::Page { chapter, page, .. } => format!("{}/{}", c(chapter), page.to_name()),
        }
    }

    /// The book the node lies in (`None` at the root level).
    fn book(&self) -> Option<&OsStr> {
        match self {
            Node::Root | Node::RootError | Node::Book { .. } | Node::BookAlias { .. } => None,
            Node::Chapter { chapter }
            | Node::ChapterError { chapter, .. }
            | Node::Page { chapter, .. } => Some(&chapter.book),
            Node::ChapterAlias { target, .. } => Some(&target.book),
            Node::Ambiguous { book, .. } | Node::AmbiguousError { book, .. } => Some(book),
        }
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

/// A directory's entries as one listing took them, continued by the
/// READDIRs that follow it: their offsets carry the listing's number.
pub struct Listing {
    pub entries: Arc<Vec<Listed>>,
    number: u32,
    /// The index (`.` = 0, `..` = 1, entries from 2) to continue at.
    pub start: usize,
}

impl Listing {
    /// The READDIR offset of the entry after index `i`.
    pub fn offset_after(&self, i: usize) -> u64 {
        (u64::from(self.number) << 32) | (i as u64 + 1)
    }
}

/// What the kernel must drop after a change on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalidation {
    /// The name in the directory (and everything the kernel holds below it).
    Entry { parent: u64, name: OsString },
    /// The inode's attributes and cached bytes (a directory's listing).
    Inode(u64),
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
        let i = self
            .pages
            .binary_search_by_key(&page.offset, |p| p.0)
            .ok()?;
        Some(match page.format {
            Format::Text => self.pages[i].1,
            Format::Json => self.pages[i].2,
        })
    }
}

/// A version of a chapter's source.
type VersionKey = (ChapterRef, u64);
/// A rendered page of one source version.
type PageKey = (ChapterRef, u64, PageName);
/// A directory listing with the inode of the directory it lists.
type InodeListing = (u64, Arc<Vec<Listed>>);

pub struct NovelFs {
    library: Library,
    config: FsConfig,
    watch: Option<Watch>,
    inodes: Mutex<Inodes>,
    books: Mutex<HashMap<OsString, (Stamp, Arc<BookIndex>)>>,
    /// Decoded texts by source version: an inode of an older version can
    /// still be read while its text is cached.
    texts: Mutex<Lru<VersionKey, Loaded>>,
    /// `None` for a chapter that cannot be read (its listing is `ERROR`).
    outlines: Mutex<Lru<VersionKey, Option<Arc<Outline>>>>,
    /// Rendered pages, for the kernel's reads of one page in pieces.
    pages: Mutex<Lru<PageKey, Arc<Vec<u8>>>>,
    listings: Mutex<Lru<u32, InodeListing>>,
    next_listing: AtomicU32,
    /// Per directory inode, a digest of what its previous opendir listed.
    last_listed: Mutex<HashMap<u64, u64>>,
    switch: Mutex<Option<(Option<Stamp>, bool)>>,
    big_loads: Mutex<()>,
    /// Chapter files to read ahead (see `read_ahead`).
    prefetch: Mutex<std::sync::mpsc::Sender<PathBuf>>,
    /// Per book, the end of the chapters already queued for read-ahead.
    read_ahead_to: Mutex<HashMap<OsString, usize>>,
    /// The switch as last reported by `switch_flipped` (0 = not yet).
    switch_seen: AtomicU8,
}

/// The inode table. Numbers are never reused; an entry goes when the
/// kernel forgets its last lookup.
#[derive(Default)]
struct Inodes {
    by_node: HashMap<Node, u64>,
    entries: HashMap<u64, InodeEntry>,
    next: u64,
}

struct InodeEntry {
    node: Node,
    /// Lookups the kernel holds (entries returned by lookup and readdirplus).
    lookups: u64,
    /// Size and mtime last reported, for a version that is gone from disk
    /// but still open.
    last_attr: Option<(u64, SystemTime)>,
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

/// A version number for a source stamp (a 64-bit digest: two versions of
/// one file colliding is not a practical concern).
fn version_of(stamp: &Stamp) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    stamp.hash(&mut hasher);
    hasher.finish()
}

fn error_bytes(e: &NovelError) -> Arc<Vec<u8>> {
    Arc::new(e.error_line().into_bytes())
}

fn chapter_ref(book: &Arc<OsStr>, file: &OsStr) -> ChapterRef {
    Arc::new(ChapterId {
        book: book.clone(),
        file: file.into(),
    })
}

impl NovelFs {
    pub fn new(library: Library, config: FsConfig) -> Self {
        // The budget is shared: 1/16 each for outlines, rendered pages and
        // listings, the rest for decoded chapters.
        let sixteenth = (config.cache_bytes / 16).max(1 << 20);
        let texts = config
            .cache_bytes
            .saturating_sub(3 * sixteenth)
            .max(1 << 20);
        let mut inodes = Inodes {
            next: ROOT_INO + 1,
            ..Default::default()
        };
        inodes.by_node.insert(Node::Root, ROOT_INO);
        inodes.entries.insert(
            ROOT_INO,
            InodeEntry {
                node: Node::Root,
                lookups: 1,
                last_attr: None,
            },
        );
        let watch = if config.watch && !config.ttl.is_zero() {
            Watch::new(&library.novels_dir())
        } else {
            None
        };
        NovelFs {
            library,
            watch,
            inodes: Mutex::new(inodes),
            books: Mutex::new(HashMap::new()),
            texts: Mutex::new(Lru::new(texts)),
            outlines: Mutex::new(Lru::new(sixteenth)),
            pages: Mutex::new(Lru::new(sixteenth)),
            listings: Mutex::new(Lru::new(sixteenth)),
            next_listing: AtomicU32::new(1),
            last_listed: Mutex::new(HashMap::new()),
            switch: Mutex::new(None),
            big_loads: Mutex::new(()),
            prefetch: Mutex::new(spawn_prefetcher()),
            read_ahead_to: Mutex::new(HashMap::new()),
            switch_seen: AtomicU8::new(0),
            config,
        }
    }

    /// The watch over the library, when changes are pushed to the kernel.
    pub fn watch(&self) -> Option<&Watch> {
        self.watch.as_ref()
    }

    /// Whether the kernel is told of changes (then directories need no
    /// OPENDIR: their cached listings are dropped on change).
    pub fn watching(&self) -> bool {
        self.watch.as_ref().is_some_and(|w| w.covers_root())
    }

    /// How long the kernel may keep `node`'s entry and attributes.
    fn ttl_for(&self, node: &Node) -> Duration {
        let Some(watch) = &self.watch else {
            return self.config.ttl;
        };
        let covered = match node.book() {
            None => watch.covers_root(),
            Some(book) => watch.covers_book(book),
        };
        if covered {
            WATCHED_TTL
        } else {
            self.config.ttl
        }
    }

    /// The configured TTL (what unwatched names get).
    pub fn ttl(&self) -> Duration {
        self.config.ttl
    }

    pub fn library(&self) -> &Library {
        &self.library
    }

    /// The inode of `node`, created if new; `counted` when the kernel
    /// will hold a lookup reference for it (lookup, readdirplus).
    fn intern(&self, node: Node, counted: bool, attr: Option<&Attr>) -> u64 {
        let mut inodes = lock(&self.inodes);
        let ino = match inodes.by_node.get(&node) {
            Some(&ino) => ino,
            None => {
                let ino = inodes.next;
                inodes.next += 1;
                inodes.by_node.insert(node.clone(), ino);
                inodes.entries.insert(
                    ino,
                    InodeEntry {
                        node,
                        lookups: 0,
                        last_attr: None,
                    },
                );
                ino
            }
        };
        let entry = inodes.entries.get_mut(&ino).expect("interned");
        entry.lookups += u64::from(counted);
        if let Some(a) = attr {
            entry.last_attr = Some((a.size, a.mtime));
        }
        ino
    }

    /// The path of `ino` for log lines (never fails).
    pub fn describe(&self, ino: u64) -> String {
        self.node(ino)
            .map_or_else(|_| format!("inode {ino}"), |n| n.path())
    }

    pub fn node(&self, ino: u64) -> Result<Node> {
        lock(&self.inodes)
            .entries
            .get(&ino)
            .map(|e| e.node.clone())
            .ok_or(libc::ENOENT)
    }

    /// The kernel dropped `n` lookups of `ino`.
    pub fn forget(&self, ino: u64, n: u64) {
        if ino == ROOT_INO {
            return;
        }
        let mut inodes = lock(&self.inodes);
        let Some(entry) = inodes.entries.get_mut(&ino) else {
            return;
        };
        entry.lookups = entry.lookups.saturating_sub(n);
        if entry.lookups == 0 {
            let node = inodes.entries.remove(&ino).expect("present").node;
            inodes.by_node.remove(&node);
            drop(inodes);
            lock(&self.last_listed).remove(&ino);
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
        let stamp = path
            .as_deref()
            .and_then(|p| std::fs::metadata(p).ok())
            .map(|m| Stamp::of(&m));
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

    /// Whether the switch flipped since the previous call (the first call
    /// only records it).
    pub fn switch_flipped(&self) -> bool {
        let now = if self.enabled() { 1 } else { 2 };
        let before = self.switch_seen.swap(now, Ordering::Relaxed);
        before != 0 && before != now
    }

    /// The book's chapter index and the version of its directory.
    fn book(&self, book: &OsStr) -> Result<(u64, Arc<BookIndex>)> {
        // Watched before it is read: a change after the scan is reported.
        if let Some(w) = &self.watch {
            w.watch_book(book);
        }
        let meta = self.library.book_metadata(book).ok_or(libc::ENOENT)?;
        let stamp = Stamp::of(&meta);
        if let Some((s, index)) = lock(&self.books).get(book)
            && *s == stamp
        {
            return Ok((version_of(&stamp), index.clone()));
        }
        let chapters =
            library::scan::scan_chapters(&self.library.book_dir(book)).map_err(|_| libc::ENOENT)?;
        let index = Arc::new(BookIndex::new(chapters));
        lock(&self.books).insert(book.to_os_string(), (stamp, index.clone()));
        Ok((version_of(&stamp), index))
    }

    fn book_index(&self, book: &OsStr) -> Result<Arc<BookIndex>> {
        Ok(self.book(book)?.1)
    }

    /// The source file of a chapter, without reading it: a listing of
    /// 10,000 chapter directories must not decode 10,000 files.
    fn chapter_source(&self, c: &ChapterId) -> Result<(Arc<BookIndex>, usize, std::fs::Metadata)> {
        let index = self.book_index(&c.book)?;
        let i = index.exact(c.file.as_bytes()).ok_or(libc::ENOENT)?;
        let meta = lstat(&self.library.book_dir(&c.book).join(&*c.file))?;
        if !meta.is_file() {
            return Err(libc::ENOENT);
        }
        Ok((index, i, meta))
    }

    /// The chapter as it is now: its source version and its decoded text,
    /// or the error that stops it from being read.
    ///
    /// The stamp of a text that is read is taken from the file descriptor
    /// it is read through, never from an earlier `lstat` of the name: the
    /// name may be renamed over, deleted or re-created in between, and the
    /// text must be cached under the version of the file it came from. A
    /// name that no longer holds a file is ENOENT, never a cached error.
    fn chapter(&self, c: &ChapterRef) -> Result<(u64, Loaded, SystemTime)> {
        let source = self.chapter_source(c)?;
        self.chapter_from(c, source)
    }

    /// `chapter`, with the source already looked at.
    fn chapter_from(
        &self,
        c: &ChapterRef,
        source: (Arc<BookIndex>, usize, std::fs::Metadata),
    ) -> Result<(u64, Loaded, SystemTime)> {
        let (index, i, meta) = source;
        let version = version_of(&Stamp::of(&meta));
        if let Some(loaded) = lock(&self.texts).get(&(c.clone(), version)) {
            return Ok((version, loaded, mtime_of(&meta)));
        }
        // One big chapter decodes at a time (its bytes and text are both in
        // memory meanwhile): two readers of the same one wait for one load,
        // and two different ones do not double the daemon's peak.
        let _big = (meta.len() > BIG_CHAPTER_BYTES).then(|| lock(&self.big_loads));
        if _big.is_some()
            && let Some(loaded) = lock(&self.texts).get(&(c.clone(), version))
        {
            return Ok((version, loaded, mtime_of(&meta)));
        }
        // The text will take about the file's size (exactly, for UTF-8):
        // room for it is made before it is read, not after.
        lock(&self.texts).make_room(meta.len() as usize);
        let chapter = &index.chapters[i];
        let (stamp, mtime, loaded): (Stamp, SystemTime, Loaded) =
            match self.library.open_chapter_file(&c.book, &c.file) {
                Ok(None) => return Err(libc::ENOENT),
                Ok(Some((f, meta))) => {
                    let loaded = self
                        .library
                        .read_opened_chapter(&c.book, &c.file, f, &meta)
                        .and_then(|bytes| self.library.decode_chapter(&c.book, chapter, bytes))
                        .map(Arc::new);
                    (Stamp::of(&meta), mtime_of(&meta), loaded)
                }
                // Opening failed for another reason: an error to show, under
                // the stamp of the name.
                Err(e) => (Stamp::of(&meta), mtime_of(&meta), Err(e)),
            };
        self.read_ahead(&c.book, &index, i);
        let weight = match &loaded {
            Ok(text) => {
                text.buffer_bytes()
                    .into_iter()
                    .map(allocated)
                    .sum::<usize>()
                    + 256
            }
            Err(_) => 256,
        };
        let version = version_of(&stamp);
        lock(&self.texts).insert((c.clone(), version), loaded.clone(), weight);
        Ok((version, loaded, mtime))
    }

    /// Asks the disk for the next chapters of the book while this one is
    /// decoded: who reads a chapter (an agent paging through a book, `find`,
    /// `grep -r`) mostly reads the following ones next, and their bytes are
    /// then in the page cache when asked for. A sequential reader queues
    /// one new chapter per load.
    fn read_ahead(&self, book: &OsStr, index: &BookIndex, i: usize) -> std::ops::Range<usize> {
        let end = (i + 1 + READ_AHEAD).min(index.chapters.len());
        let start = {
            let mut queued = lock(&self.read_ahead_to);
            let to = queued.entry(book.to_os_string()).or_insert(0);
            // A reader that jumped back re-queues from where it is.
            let start = if *to > end || *to <= i { i + 1 } else { *to };
            *to = end;
            start
        };
        let dir = self.library.book_dir(book);
        let queue = lock(&self.prefetch);
        let queued = start.min(end)..end;
        for c in &index.chapters[queued.clone()] {
            let _ = queue.send(dir.join(&c.os_name));
        }
        queued
    }

    /// The text (or error) of one version of a chapter: cached, or the
    /// source as it is now if it still is that version. EIO otherwise: the
    /// bytes of an inode never change, so they cannot be made up from a
    /// newer source.
    fn chapter_version(&self, c: &ChapterRef, version: u64) -> Result<Loaded> {
        if let Some(loaded) = lock(&self.texts).get(&(c.clone(), version)) {
            return Ok(loaded);
        }
        match self.chapter(c) {
            Ok((v, loaded, _)) if v == version => Ok(loaded),
            _ => {
                log::warn!(
                    "{}: the version read changed on disk and left the cache",
                    Node::Chapter { chapter: c.clone() }.path()
                );
                Err(libc::EIO)
            }
        }
    }

    /// The chapter's outline as the source is now (decoding it only when
    /// the outline is not cached for the source's current version).
    fn outline(&self, c: &ChapterRef) -> Result<(u64, Option<Arc<Outline>>, SystemTime)> {
        let source = self.chapter_source(c)?;
        let version = version_of(&Stamp::of(&source.2));
        if let Some(outline) = lock(&self.outlines).get(&(c.clone(), version)) {
            return Ok((version, outline, mtime_of(&source.2)));
        }
        let (version, loaded, mtime) = self.chapter_from(c, source)?;
        let outline = loaded.ok().map(|text| {
            let pages = text
                .chain()
                .into_iter()
                .map(|offset| {
                    let size = |format| {
                        self.size_of_page(
                            c,
                            PageName {
                                offset,
                                limit: None,
                                format,
                            },
                            &text,
                        )
                    };
                    (offset, size(Format::Text), size(Format::Json))
                })
                .collect::<Vec<_>>();
            Arc::new(Outline { pages })
        });
        let weight = 128 + outline.as_ref().map_or(0, |o| o.pages.capacity() * 24);
        lock(&self.outlines).insert((c.clone(), version), outline.clone(), weight);
        Ok((version, outline, mtime))
    }

    /// The byte size of a page as the source is now, with the version of
    /// that source — computed from line sizes, never by rendering the page.
    fn page_size(&self, c: &ChapterRef, page: PageName) -> Result<(u64, SystemTime, u64)> {
        let (version, outline, mtime) = self.outline(c)?;
        match outline {
            None => return Err(libc::EIO),
            Some(o) => {
                if let Some(size) = o.size(page) {
                    return Ok((size, mtime, version));
                }
            }
        }
        let (version, loaded, mtime) = self.chapter(c)?;
        let text = loaded.map_err(|_| libc::EIO)?;
        if !text.offset_in_range(page.offset) {
            return Err(libc::ENOENT);
        }
        Ok((self.size_of_page(c, page, &text), mtime, version))
    }

    /// `page.offset` must be in range.
    fn size_of_page(&self, c: &ChapterId, page: PageName, text: &ChapterText) -> u64 {
        let book_name = c.book.to_string_lossy();
        let file_name = c.file.to_string_lossy();
        let path = self.library.display_path(&book_name, &file_name);
        let source = library::PageSource {
            book: &book_name,
            file: &file_name,
            path: &path,
        };
        let layout = text.layout(page.offset, page.limit_or_default());
        let lines = text.line_stats(&layout);
        (match page.format {
            Format::Text => library::render::text_len(&source, text.total_lines(), &layout, lines),
            Format::Json => library::render::json_len(&source, text.total_lines(), &layout, lines),
        }) as u64
    }

    /// The bytes of a page version.
    fn page_bytes(&self, c: &ChapterRef, page: PageName, version: u64) -> Result<Arc<Vec<u8>>> {
        let key = (c.clone(), version, page);
        if let Some(bytes) = lock(&self.pages).get(&key) {
            return Ok(bytes);
        }
        let text = self.chapter_version(c, version)?.map_err(|_| libc::EIO)?;
        if !text.offset_in_range(page.offset) {
            return Err(libc::ENOENT);
        }
        let book_name = c.book.to_string_lossy().into_owned();
        let file_name = c.file.to_string_lossy().into_owned();
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
        lock(&self.pages).insert(key, bytes.clone(), allocated(bytes.len()) + 128);
        Ok(bytes)
    }

    /// §1.3 for a name in a book that is not byte for byte a file name
    /// (such a name is the chapter's own directory, never an alias), with
    /// the version of the book directory it was resolved in.
    fn find_other_name(&self, book: &OsStr, name: &OsStr) -> Result<(u64, Arc<BookIndex>, Lookup)> {
        let (version, index) = self.book(book)?;
        if index.exact(name.as_bytes()).is_some() {
            return Err(libc::ENOENT);
        }
        let found = index.find(&name.to_string_lossy());
        Ok((version, index, found))
    }

    /// The error of an ambiguous name, with the book version it holds for.
    fn ambiguity(&self, book: &OsStr, name: &OsStr) -> Result<(u64, NovelError)> {
        let (version, index, found) = self.find_other_name(book, name)?;
        match found {
            Lookup::Ambiguous { number, indices } => Ok((
                version,
                NovelError::Ambiguous {
                    number,
                    files: indices
                        .iter()
                        .map(|&i| index.chapters[i].file.clone())
                        .collect(),
                },
            )),
            _ => Err(libc::ENOENT),
        }
    }

    fn alias_target(&self, book: &OsStr, name: &OsStr) -> Result<OsString> {
        let (_, index, found) = self.find_other_name(book, name)?;
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

    /// The size and mtime last reported for an inode whose version is no
    /// longer the current one (it may still be open).
    fn last_attr(&self, ino: u64) -> Result<(u64, SystemTime)> {
        lock(&self.inodes)
            .entries
            .get(&ino)
            .and_then(|e| e.last_attr)
            .ok_or(libc::ENOENT)
    }

    /// The node's current attributes; ENOENT when it no longer exists.
    fn attr_of(&self, ino: u64, node: &Node) -> Result<Attr> {
        let ttl = self.ttl_for(node);
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
        let older = || self.last_attr(ino).map(|(size, mtime)| file(size, mtime));
        Ok(match node {
            Node::Root => dir(self.dir_mtime(&self.library.novels_dir())),
            Node::RootError => file(
                self.root_error()?.len() as u64,
                self.dir_mtime(&self.library.novels_dir()),
            ),
            Node::Book { book } => {
                if !self.library.is_book(book) {
                    return Err(libc::ENOENT);
                }
                dir(self.dir_mtime(&self.library.book_dir(book)))
            }
            Node::BookAlias { name, target } => {
                if *self.book_alias_target(name)? != **target {
                    return Err(libc::ENOENT);
                }
                link(target, self.dir_mtime(&self.library.book_dir(target)))
            }
            Node::Chapter { chapter } => dir(mtime_of(&self.chapter_source(chapter)?.2)),
            Node::ChapterAlias { name, target } => {
                if *self.alias_target(&target.book, name)? != *target.file {
                    return Err(libc::ENOENT);
                }
                link(
                    &target.file,
                    self.dir_mtime(&self.library.book_dir(&target.book).join(&*target.file)),
                )
            }
            Node::Ambiguous { book, name } => {
                self.ambiguity(book, name)?;
                dir(self.dir_mtime(&self.library.book_dir(book)))
            }
            Node::AmbiguousError {
                book,
                name,
                version,
            } => match self.ambiguity(book, name) {
                Ok((v, error)) if v == *version => file(
                    error.error_line().len() as u64,
                    self.dir_mtime(&self.library.book_dir(book)),
                ),
                _ => older()?,
            },
            Node::ChapterError { chapter, version } => match self.chapter(chapter) {
                Ok((v, Err(e), mtime)) if v == *version => file(e.error_line().len() as u64, mtime),
                _ => older()?,
            },
            Node::Page {
                chapter,
                page,
                version,
            } => match self.page_size(chapter, *page) {
                Ok((size, mtime, v)) if v == *version => file(size, mtime),
                _ => older()?,
            },
        })
    }

    fn root_error(&self) -> Result<String> {
        if self.enabled() {
            Err(libc::ENOENT)
        } else {
            Ok(NovelError::Disabled.error_line())
        }
    }

    /// Switched off, only the root and its `ERROR` remain reachable.
    fn check_switch(&self, node: &Node) -> Result<()> {
        if matches!(node, Node::Root | Node::RootError) || self.enabled() {
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
        if !self.enabled() {
            return match parent {
                Node::Root if name == ERROR_FILE => self.found(Node::RootError),
                _ => Err(libc::EACCES),
            };
        }
        let node = match parent {
            Node::Root => {
                if self.library.is_book(name) {
                    Node::Book {
                        book: Arc::from(name),
                    }
                } else {
                    Node::BookAlias {
                        target: Arc::from(self.book_alias_target(name)?.as_os_str()),
                        name: name.into(),
                    }
                }
            }
            Node::Book { book } => {
                let index = self.book_index(&book)?;
                if let Some(i) = index.exact(name.as_bytes()) {
                    Node::Chapter {
                        chapter: chapter_ref(&book, &index.chapters[i].os_name),
                    }
                } else {
                    match index.find(&name.to_string_lossy()) {
                        Lookup::Found(i) => Node::ChapterAlias {
                            target: chapter_ref(&book, &index.chapters[i].os_name),
                            name: name.into(),
                        },
                        Lookup::Ambiguous { .. } => Node::Ambiguous {
                            book,
                            name: name.into(),
                        },
                        Lookup::NotFound => return Err(libc::ENOENT),
                    }
                }
            }
            Node::Chapter { chapter } => {
                if name == ERROR_FILE {
                    match self.chapter(&chapter)? {
                        (version, Err(_), _) => Node::ChapterError { chapter, version },
                        _ => return Err(libc::ENOENT),
                    }
                } else {
                    let page = PageName::parse(name.as_bytes()).ok_or(libc::ENOENT)?;
                    let (_, _, version) = self.page_size(&chapter, page)?;
                    Node::Page {
                        chapter,
                        page,
                        version,
                    }
                }
            }
            Node::Ambiguous { book, name: alias } if name == ERROR_FILE => {
                let (version, _) = self.ambiguity(&book, &alias)?;
                Node::AmbiguousError {
                    book,
                    name: alias,
                    version,
                }
            }
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
        Ok(Attr {
            ino: self.intern(node, true, Some(&attr)),
            ..attr
        })
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
    /// the previous opendir of this inode.
    pub fn opendir(&self, ino: u64) -> Result<bool> {
        if self.getattr(ino)?.kind != Kind::Directory {
            return Err(libc::ENOTDIR);
        }
        Ok(match self.listing_version(&self.node(ino)?) {
            Some(version) => lock(&self.last_listed).insert(ino, version) == Some(version),
            None => {
                lock(&self.last_listed).remove(&ino);
                false
            }
        })
    }

    fn listing_version(&self, node: &Node) -> Option<u64> {
        let stamp = |p: &std::path::Path| lstat(p).ok().map(|m| Stamp::of(&m));
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        match node {
            Node::Root => (self.enabled(), stamp(&self.library.novels_dir())?).hash(&mut hasher),
            Node::Book { book } | Node::Ambiguous { book, .. } => {
                stamp(&self.library.book_dir(book))?.hash(&mut hasher)
            }
            Node::Chapter { chapter } => {
                Stamp::of(&self.chapter_source(chapter).ok()?.2).hash(&mut hasher)
            }
            _ => return None,
        }
        Some(hasher.finish())
    }

    /// The listing a READDIR at `offset` continues: a new one at offset 0
    /// (a first read, or a rewind), else the one whose number the offset
    /// carries. Listing a directory costs one pass however many requests
    /// the kernel splits it into, and the pieces agree with each other even
    /// if the directory changes meanwhile. (Should that listing have left
    /// the cache, a new one continues at the same index.)
    pub fn listing(&self, ino: u64, offset: u64) -> Result<Listing> {
        let number = (offset >> 32) as u32;
        let start = (offset & 0xffff_ffff) as usize;
        if offset > 0
            && let Some((listed_ino, entries)) = lock(&self.listings).get(&number)
            && listed_ino == ino
        {
            return Ok(Listing {
                entries,
                number,
                start,
            });
        }
        let entries = Arc::new(self.list(ino)?);
        // Offsets stay below 2^63 (telldir's long).
        let number = self.next_listing.fetch_add(1, Ordering::Relaxed) & 0x7fff_ffff;
        let weight = 64
            + entries
                .iter()
                .map(|e| e.name.len() + std::mem::size_of::<Listed>())
                .sum::<usize>();
        lock(&self.listings).insert(number, (ino, entries.clone()), weight);
        Ok(Listing {
            entries,
            number,
            start,
        })
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
        let ino = self.intern(e.node.clone(), true, Some(&attr));
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
        let ttl = self.ttl_for(&node);
        Ok(match node {
            Node::Root if !self.enabled() => {
                vec![entry(Node::RootError, Kind::File, ERROR_FILE.into())]
            }
            Node::Root => {
                let mut books: Vec<OsString> = std::fs::read_dir(self.library.novels_dir())
                    .map_err(|_| libc::EIO)?
                    .filter_map(|e| e.ok())
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.file_name())
                    .collect();
                books.sort_by(|a, b| {
                    library::scan::locale_compare(&a.to_string_lossy(), &b.to_string_lossy())
                        .then(a.cmp(b))
                });
                books
                    .into_iter()
                    .map(|b| {
                        entry(
                            Node::Book {
                                book: Arc::from(b.as_os_str()),
                            },
                            Kind::Directory,
                            b,
                        )
                    })
                    .collect()
            }
            Node::Book { book } => {
                let index = self.book_index(&book)?;
                index
                    .chapters
                    .iter()
                    .map(|c| {
                        entry(
                            Node::Chapter {
                                chapter: chapter_ref(&book, &c.os_name),
                            },
                            Kind::Directory,
                            c.os_name.clone(),
                        )
                    })
                    .collect()
            }
            Node::Chapter { chapter } => match self.outline(&chapter)? {
                (version, None, _) => vec![entry(
                    Node::ChapterError { chapter, version },
                    Kind::File,
                    ERROR_FILE.into(),
                )],
                (version, Some(outline), mtime) => outline
                    .pages
                    .iter()
                    .flat_map(|&(offset, text, json)| {
                        [(Format::Text, text), (Format::Json, json)].map(|(format, size)| {
                            (
                                PageName {
                                    offset,
                                    limit: None,
                                    format,
                                },
                                size,
                            )
                        })
                    })
                    .map(|(page, size)| Listed {
                        name: OsString::from(page.to_name()),
                        node: Node::Page {
                            chapter: chapter.clone(),
                            page,
                            version,
                        },
                        kind: Kind::File,
                        attr: Some(Attr {
                            ino: 0,
                            kind: Kind::File,
                            size,
                            mtime,
                            ttl,
                        }),
                    })
                    .collect(),
            },
            Node::Ambiguous { book, name } => {
                let (version, _) = self.ambiguity(&book, &name)?;
                vec![entry(
                    Node::AmbiguousError {
                        book,
                        name,
                        version,
                    },
                    Kind::File,
                    ERROR_FILE.into(),
                )]
            }
            _ => return Err(libc::ENOTDIR),
        })
    }

    /// The bytes of a file inode. They never change: an inode of a version
    /// that is gone is served from the cache, or not at all (EIO).
    fn content(&self, node: &Node) -> Result<Arc<Vec<u8>>> {
        match node {
            Node::RootError => Ok(Arc::new(self.root_error()?.into_bytes())),
            Node::AmbiguousError {
                book,
                name,
                version,
            } => match self.ambiguity(book, name)? {
                (v, error) if v == *version => Ok(error_bytes(&error)),
                _ => Err(libc::EIO),
            },
            Node::ChapterError { chapter, version } => {
                match self.chapter_version(chapter, *version)? {
                    Err(e) => Ok(error_bytes(&e)),
                    Ok(_) => Err(libc::EIO),
                }
            }
            Node::Page {
                chapter,
                page,
                version,
            } => self.page_bytes(chapter, *page, *version),
            _ => Err(libc::EISDIR),
        }
    }

    /// `size` bytes of the file `ino` from `offset`.
    pub fn read(&self, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>> {
        let node = self.node(ino)?;
        self.check_switch(&node)?;
        let bytes = self.content(&node)?;
        let start = (offset.min(bytes.len() as u64)) as usize;
        let end = start.saturating_add(size as usize).min(bytes.len());
        Ok(bytes[start..end].to_vec())
    }

    /// What the kernel must drop after `changes`: only names and inodes it
    /// was given (the inode table says which), each by its own name. (Not
    /// by dropping a directory's entry: a directory in use is re-attached
    /// with its cached children at the next lookup.)
    pub fn invalidations(&self, changes: &[Change]) -> Vec<Invalidation> {
        use std::collections::HashSet;
        let all = changes.contains(&Change::All);
        let books = all || changes.contains(&Change::Books);
        let mut sets: HashSet<&OsStr> = changes
            .iter()
            .filter_map(|c| match c {
                Change::Chapters(b) => Some(b.as_os_str()),
                _ => None,
            })
            .collect();
        let files: HashSet<(&OsStr, &OsStr)> = changes
            .iter()
            .filter_map(|c| match c {
                Change::Chapter(b, f) => Some((b.as_os_str(), f.as_os_str())),
                _ => None,
            })
            .collect();
        // A book that went (or was renamed): everything the kernel holds in it.
        let inodes = lock(&self.inodes);
        let gone: Vec<Arc<OsStr>> = if books {
            inodes
                .by_node
                .keys()
                .filter_map(|n| match n {
                    Node::Book { book } if !self.library.is_book(book) => Some(book.clone()),
                    _ => None,
                })
                .collect()
        } else {
            Vec::new()
        };
        sets.extend(gone.iter().map(|b| &**b));
        let mut entries = Vec::new();
        let mut dirs = Vec::new();
        for (node, &ino) in &inodes.by_node {
            let affected = all
                || match node.book() {
                    None => books,
                    Some(book) => match node {
                        // Their bytes depend on one file only.
                        Node::Page { chapter, .. } | Node::ChapterError { chapter, .. } => {
                            files.contains(&(&*chapter.book, &*chapter.file))
                                || gone.iter().any(|b| **b == *book)
                        }
                        Node::Chapter { chapter } => {
                            sets.contains(book) || files.contains(&(&*chapter.book, &*chapter.file))
                        }
                        _ => sets.contains(book),
                    },
                };
            if !affected {
                // A book whose chapters changed keeps its name; only its
                // listing and attributes go.
                if let Node::Book { book } = node
                    && sets.contains(&**book)
                {
                    dirs.push(Invalidation::Inode(ino));
                }
                continue;
            }
            if let Some(entry) = self.entry_of(&inodes, node) {
                entries.push(entry);
            }
            if matches!(
                node,
                Node::Root | Node::Book { .. } | Node::Chapter { .. } | Node::Ambiguous { .. }
            ) {
                dirs.push(Invalidation::Inode(ino));
            }
        }
        entries.sort();
        dirs.sort_by_key(|i| match i {
            Invalidation::Inode(ino) => *ino,
            Invalidation::Entry { .. } => 0,
        });
        entries
            .into_iter()
            .map(|(parent, name)| Invalidation::Entry { parent, name })
            .chain(dirs)
            .collect()
    }

    /// Where the kernel holds `node`: its parent's inode and its name there.
    fn entry_of(&self, inodes: &Inodes, node: &Node) -> Option<(u64, OsString)> {
        let (parent, name): (Node, OsString) = match node {
            Node::Root => return None,
            Node::RootError => (Node::Root, ERROR_FILE.into()),
            Node::Book { book } => (Node::Root, book.to_os_string()),
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
        };
        Some((*inodes.by_node.get(&parent)?, name))
    }

    /// Bytes held by the caches (for benchmarks and tests).
    pub fn cache_bytes(&self) -> usize {
        lock(&self.texts).used_bytes()
            + lock(&self.outlines).used_bytes()
            + lock(&self.pages).used_bytes()
            + lock(&self.listings).used_bytes()
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
        let config = FsConfig {
            state_file: Some(dir.path().join("no-state.json")),
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
                let parent = fs.intern(node, false, None);
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
        lock(&f.fs.texts).remove(&(old_chapter(&f.fs, old.ino), version(&f.fs, old.ino)));
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
        assert_eq!(fresh.entries.len(), 3, "a new listing sees the new chapter");
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
    fn a_sequential_reader_queues_one_chapter_ahead_per_load() {
        let names: Vec<String> = (1..=20).map(|i| format!("第{i}章.md")).collect();
        let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "x")).collect();
        let f = fixture(&files);
        let index = f.fs.book_index(OsStr::new("书")).unwrap();
        let ahead = |i| f.fs.read_ahead(OsStr::new("书"), &index, i);
        assert_eq!(ahead(0), 1..9, "the first load asks for the next 8");
        assert_eq!(ahead(1), 9..10);
        assert_eq!(ahead(2), 10..11);
        assert_eq!(
            ahead(6),
            11..15,
            "a skip asks only for what was not asked yet"
        );
        assert_eq!(ahead(0), 1..9, "a jump back asks again from there");
        assert_eq!(ahead(18), 19..20, "never past the last chapter");
        assert_eq!(ahead(19), 20..20);
        let loaded = walk(&f.fs, "书/5/offset-1.txt").unwrap();
        assert!(read_all(&f.fs, loaded.ino).starts_with(b"<path>"));
        assert_eq!(
            lock(&f.fs.read_ahead_to).get(OsStr::new("书")),
            Some(&13),
            "loading chapter 5 (index 4) queued up to 13"
        );
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
}
