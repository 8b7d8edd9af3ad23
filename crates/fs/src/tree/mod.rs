//! The request handlers, free of FUSE types: which names exist, what they
//! are, what bytes they hold. `fuse.rs` only translates requests to these.
//!
//! `NovelFs` holds the mount's state and its entry points. Each entry
//! point dispatches once over `Node` to the module of the node's family:
//! `root`, `book`, `chapter`, `ambiguous`, `page`, `index_files`.
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

mod ambiguous;
mod book;
mod chapter;
mod index_files;
mod invalidations;
mod page;
mod root;
mod stores;

#[cfg(test)]
mod fixture;

use std::ffi::{OsStr, OsString};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use novelfs_library::{Library, NovelError};

use super::ahead::Ahead;
use super::cache::{Budget, HeapTrim, Stamp};
use super::freshness::{Freshness, Negatives, WATCHED_TTL, Watch};
use super::gave_up::GaveUp;
use super::indexes::IndexFiles;
use super::inodes::InodeTable;
use super::listing::{Listed, Listing, Listings};
use super::lock;
use super::names::ERROR_FILE;
use super::node::{Attr, Kind, Node, Result};
use super::outline::Outlines;
use super::pages::Pages;
use super::persist::MountIndex;
use super::source::Source;
use super::switch::Switch;

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
    /// The type of the mount `novels/` lies on (`fuse.s3fs`, …, from
    /// mountinfo): object storage there has directory times that never
    /// move (see `freshness::racy::Rule`).
    pub source_fs_type: Option<String>,
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
            source_fs_type: None,
            index_dir: None,
        }
    }
}

pub struct NovelFs {
    source: Arc<Source>,
    freshness: Arc<Freshness>,
    inodes: InodeTable,
    /// Names answered missing that the kernel may keep for long.
    negatives: Negatives,
    outlines: Arc<Outlines>,
    pages: Pages,
    listings: Listings,
    index_files: IndexFiles,
    switch: Switch,
    heap_trim: HeapTrim,
    gave_up: GaveUp,
    /// What is done ahead of readers: the disk's read-ahead, the
    /// outliner and the kernel's stores.
    ahead: Arc<Ahead>,
    /// Compiles the file-name patterns while the mount is being attached.
    preparing: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// What a lookup answers the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Found(Attr),
    /// No such name; the kernel may keep that for this long (0: it asks
    /// again every time).
    Missing(Duration),
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

/// A directory entry whose attributes are asked for when the kernel
/// wants them (`listed_plus`).
fn listed(node: Node, kind: Kind, name: OsString) -> Listed {
    Listed {
        node,
        kind,
        name,
        attr: None,
    }
}

/// What a family tells of a node's attributes; `attr_of` adds the inode
/// and the TTL.
struct Stat {
    kind: Kind,
    size: u64,
    mtime: SystemTime,
}

impl Stat {
    fn dir(mtime: SystemTime) -> Stat {
        Stat {
            kind: Kind::Directory,
            size: 0,
            mtime,
        }
    }

    fn file(size: u64, mtime: SystemTime) -> Stat {
        Stat {
            kind: Kind::File,
            size,
            mtime,
        }
    }

    fn link(target: &OsStr, mtime: SystemTime) -> Stat {
        Stat {
            kind: Kind::Symlink,
            size: target.len() as u64,
            mtime,
        }
    }
}

fn error_bytes(e: &NovelError) -> Arc<Vec<u8>> {
    Arc::new(e.error_line().into_bytes())
}

/// What the kernel may do with its cache of a directory's listing, at
/// OPENDIR (see `NovelFs::opendir`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirCache {
    /// List it from the cache, as it was filled before.
    Keep,
    /// Drop what the cache holds and fill it from the READDIRs that follow.
    Refill,
    /// Cache nothing: every READDIR comes to the daemon.
    Uncached,
}

/// A digest of what a directory's listing depends on (see `opendir`).
fn digest(of: &impl Hash) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    of.hash(&mut hasher);
    hasher.finish()
}

impl NovelFs {
    pub fn new(library: Library, config: FsConfig) -> Self {
        let budget = Budget::split(config.cache_bytes);
        // On the other core while the mount is attached (see `prepared`).
        let preparing = std::thread::Builder::new()
            .name("novelfs-prepare".into())
            .spawn(novelfs_library::prepare_patterns)
            .ok();
        let freshness = Arc::new(Freshness::new(
            &library.novels_dir(),
            config.ttl,
            config.watch,
            config.source_fs_type.as_deref(),
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
            ahead: Ahead::start(&source, &outlines, budget.outlines),
            source,
            freshness,
            inodes,
            negatives: Negatives::new(budget.negatives),
            outlines,
            pages: Pages::new(budget.pages),
            listings: Listings::new(budget.listings),
            index_files: IndexFiles::new(budget.index_files),
            switch: Switch::new(config.state_file),
            heap_trim: HeapTrim::default(),
            gave_up: GaveUp::default(),
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

    /// The mount ends: what is queued for the persistent index is written.
    pub fn finish(&self) {
        self.outlines.finish();
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
    pub fn unwatched(&self) -> Option<&str> {
        self.freshness.unwatched()
    }

    /// The rule by which unwatched directories are trusted, and the delay
    /// that follows from it (for the log).
    pub fn freshness_rule(&self) -> String {
        self.freshness.rule()
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
        self.ahead.forgotten(ino);
        if self.inodes.forget(ino, n) {
            self.listings.forget(ino);
            self.negatives.forget(ino);
            self.heap_trim.freed();
        }
    }

    /// Bytes the inode table holds (inside the cache budget).
    #[cfg(test)]
    fn inode_table_bytes(&self) -> usize {
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

    /// The node's current attributes; ENOENT when it no longer exists.
    fn attr_of(&self, ino: u64, node: &Node) -> Result<Attr> {
        let ttl = self.freshness.ttl_for(node);
        let stat = match node {
            Node::Root => root::stat(self),
            Node::RootError => root::error_stat(self)?,
            Node::Book { book } => book::stat(self, book)?,
            Node::BookError { book } => book::error_stat(self, book)?,
            Node::BookAlias { name, target } => book::alias_stat(self, name, target)?,
            Node::Chapter { chapter } => chapter::stat(self, chapter)?,
            Node::ChapterAlias { name, target } => chapter::alias_stat(self, name, target)?,
            Node::ChapterError { chapter, version } => {
                chapter::error_stat(self, ino, chapter, *version)?
            }
            Node::Ambiguous { book, name } => ambiguous::stat(self, book, name)?,
            Node::AmbiguousError {
                book,
                name,
                version,
            } => ambiguous::error_stat(self, ino, book, name, *version)?,
            Node::Page {
                chapter,
                page,
                version,
            } => page::stat(self, ino, chapter, *page, *version)?,
            Node::BooksIndex { format, version } => {
                index_files::books_stat(self, ino, *format, *version)?
            }
            Node::ChaptersIndex {
                book,
                format,
                version,
            } => index_files::chapters_stat(self, ino, book, *format, *version)?,
        };
        Ok(Attr {
            ino,
            kind: stat.kind,
            size: stat.size,
            mtime: stat.mtime,
            ttl,
        })
    }

    /// The attributes of a file version that is no longer the current
    /// one (it may still be open): those it was last given.
    fn older(&self, ino: u64) -> Result<Stat> {
        self.inodes
            .last_attr(ino)
            .map(|last| Stat::file(last.size, last.mtime))
    }

    /// Logs (once) that a directory cannot be served, and why.
    fn log_gave_up(&self, e: &NovelError) {
        match e {
            NovelError::Io { path, reason } => self.gave_up.gave_up(path, reason),
            other => self.gave_up.gave_up(&other.to_string(), "cannot be read"),
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

    /// `errno` as the kernel gets it: a name not found while `novels/`
    /// itself cannot be listed (a network filesystem gone, a server that
    /// died) is EIO, never ENOENT: the library is not known to lack it.
    fn unless_source_dead(&self, errno: libc::c_int) -> libc::c_int {
        if errno == libc::ENOENT && self.library().unreadable_dir(None).is_some() {
            libc::EIO
        } else {
            errno
        }
    }

    pub fn getattr(&self, ino: u64) -> Result<Attr> {
        let node = self.node(ino)?;
        self.check_switch(&node)?;
        self.attr_of(ino, &node)
            .map_err(|e| self.unless_source_dead(e))
    }

    pub fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr> {
        self.lookup_in(self.node(parent)?, name)
    }

    /// `lookup`, with a missing name answered as a negative entry: kept
    /// for long when no change can make it resolve, or when the directory
    /// is watched and the name could be recorded for invalidation
    /// (`Negatives`); for the TTL when it is not watched; not kept otherwise.
    pub fn lookup_entry(&self, parent: u64, name: &OsStr) -> Result<Entry> {
        let directory = self.node(parent)?;
        let since = self.negatives.epoch();
        match self.lookup_in(directory.clone(), name) {
            Err(libc::ENOENT) => {
                let ttl = if !chapter::can_ever_hold(&directory, name) {
                    // Nothing to invalidate later: no change on disk makes
                    // such a name resolve (ripgrep's `.gitignore` probe in
                    // every chapter directory is one).
                    WATCHED_TTL
                } else if !self.freshness.covers_names_in(&directory) {
                    self.freshness.ttl()
                } else if self.negatives.record(parent, name, since) {
                    WATCHED_TTL
                } else {
                    Duration::ZERO
                };
                Ok(Entry::Missing(ttl))
            }
            found => found.map(Entry::Found),
        }
    }

    /// Bytes of names recorded as missing (inside the cache budget).
    pub fn negatives_bytes(&self) -> usize {
        self.negatives.bytes()
    }

    fn lookup_in(&self, parent: Node, name: &OsStr) -> Result<Attr> {
        if !self.switched_on() {
            return match parent {
                Node::Root if name == ERROR_FILE => self.found(Node::RootError),
                _ => Err(libc::EACCES),
            };
        }
        let found = match parent {
            Node::Root => root::lookup(self, name),
            Node::Book { book } => book::lookup(self, book, name),
            Node::Chapter { chapter } => chapter::lookup(self, chapter, name),
            Node::Ambiguous { book, name: alias } => ambiguous::lookup(self, book, alias, name),
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
        let found = found.map_err(|e| self.unless_source_dead(e))?;
        Ok(self.intern(found))
    }

    /// The attributes of a file whose size and mtime are known (its inode
    /// is set when it is interned).
    fn file_attr(&self, node: &Node, size: u64, mtime: SystemTime) -> Attr {
        Attr {
            ino: 0,
            kind: Kind::File,
            size,
            mtime,
            ttl: self.freshness.ttl_for(node),
        }
    }

    /// An `ERROR` file with its attributes, sized from the error its
    /// reader gets and dated by the same look at the source as `node`'s
    /// version.
    fn error_file(&self, node: Node, error: &NovelError, mtime: SystemTime) -> Found {
        let attr = self.file_attr(&node, error.error_line().len() as u64, mtime);
        Found { node, attr }
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
    /// `Keep` when the kernel may list the directory from its own cache:
    /// only when what the listing depends on (the source of a chapter, the
    /// book directory, `novels/` and the switch) has the same stamp as at
    /// the previous opendir of this inode, and that stamp was settled then
    /// (`freshness::racy`).
    ///
    /// Under `--ttl 0` the kernel caches no listing at all (`Uncached`): a
    /// listing there is of the source as it is when it is asked, and a
    /// cache the kernel fills is not. The kernel adds a READDIR's entries
    /// to its cache when its reader gets them, which may come after an
    /// OPENDIR that dropped the cache for a newer version; two versions
    /// written within one clock tick share an mtime, so the kernel's own
    /// check of the directory's mtime does not catch it either.
    pub fn opendir(&self, ino: u64) -> Result<DirCache> {
        if self.getattr(ino)?.kind != Kind::Directory {
            return Err(libc::ENOTDIR);
        }
        if self.freshness.ttl().is_zero() {
            return Ok(DirCache::Uncached);
        }
        let now = self.freshness.now();
        let (digest, settled) = match self.listing_digest(&self.node(ino)?, now) {
            Some((digest, settled)) => (Some(digest), settled),
            None => (None, false),
        };
        Ok(match self.listings.opened(ino, digest, settled) {
            true => DirCache::Keep,
            false => DirCache::Refill,
        })
    }

    /// A digest of what a listing of `node` depends on, and whether the
    /// stamps it is of are settled at `now`.
    fn listing_digest(&self, node: &Node, now: SystemTime) -> Option<(u64, bool)> {
        let (digest, stamp): (u64, Stamp) = match node {
            Node::Root => root::listing_digest(self)?,
            // An ambiguity lists what its book directory holds.
            Node::Book { book } | Node::Ambiguous { book, .. } => book::listing_digest(self, book)?,
            Node::Chapter { chapter } => chapter::listing_digest(self, chapter)?,
            _ => return None,
        };
        Some((digest, self.freshness.listing_settled(&stamp, now)))
    }

    /// The listing a READDIR of `ino` at `offset` continues (see
    /// `Listings::continue_or_take`).
    pub fn listing(&self, ino: u64, offset: u64) -> Result<Listing> {
        self.follow_listing(ino, offset);
        let listing = self
            .listings
            .continue_or_take(ino, offset, || self.list(ino))
            .map_err(|e| self.unless_source_dead(e));
        self.heap_trim.evicted();
        listing
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
        let ttl = self.freshness.ttl_for(&node);
        match node {
            Node::Root => root::list(self),
            Node::Book { book } => book::list(self, book),
            Node::Chapter { chapter } => chapter::list(self, chapter, ttl),
            Node::Ambiguous { book, name } => ambiguous::list(self, book, name),
            _ => Err(libc::ENOTDIR),
        }
    }

    /// The bytes of a file inode. They never change: an inode of a version
    /// that is gone is served from the cache, or not at all (EIO).
    fn content(&self, node: &Node) -> Result<Arc<Vec<u8>>> {
        match node {
            Node::RootError => root::error_content(self),
            Node::BookError { book } => book::error_content(self, book),
            Node::AmbiguousError {
                book,
                name,
                version,
            } => ambiguous::error_content(self, book, name, *version),
            Node::ChapterError { chapter, version } => {
                chapter::error_content(self, chapter, *version)
            }
            Node::Page {
                chapter,
                page,
                version,
            } => page::content(self, chapter, *page, *version),
            Node::BooksIndex { format, version } => {
                index_files::books_content(self, *format, *version)
            }
            Node::ChaptersIndex {
                book,
                format,
                version,
            } => index_files::chapters_content(self, book, *format, *version),
            _ => Err(libc::EISDIR),
        }
    }

    /// `size` bytes of the file `ino` from `offset`.
    pub fn read(&self, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>> {
        let node = self.node(ino)?;
        self.check_switch(&node)?;
        let bytes = self
            .content(&node)
            .map_err(|e| self.unless_source_dead(e))?;
        self.follow_read(ino, &node);
        self.heap_trim.evicted();
        let start = (offset.min(bytes.len() as u64)) as usize;
        let end = start.saturating_add(size as usize).min(bytes.len());
        Ok(bytes[start..end].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::*;
    use super::*;
    use crate::freshness::{self, WATCHED_TTL};
    use crate::node::{ROOT_INO, chapter_ref};
    use crate::source::stamp_of;

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
    fn the_kernel_keeps_a_listing_only_under_a_stamp_settled_when_it_was_taken() {
        let f = fixture(&[("第1章 起.md", "甲")]);
        let novels = f.book_dir.parent().unwrap().to_path_buf();
        let changed = freshness::racy::changed(&stamp_of(&novels).unwrap());
        clock_at(&f, changed);
        let kept = |ino| f.fs.opendir(ino).unwrap() == DirCache::Keep;
        assert!(!kept(ROOT_INO), "the first opendir");
        assert!(
            !kept(ROOT_INO),
            "the same stamp, not settled when listed: listed again"
        );
        clock_at(&f, changed + LATER);
        assert!(
            !kept(ROOT_INO),
            "settled now, but not when the kernel listed last"
        );
        assert!(kept(ROOT_INO), "listed under a settled stamp");
        let book = walk(&f.fs, "书").unwrap();
        assert!(!kept(book.ino));
        assert!(kept(book.ino));
    }

    #[test]
    fn under_ttl_0_the_kernel_caches_no_listing() {
        let dir = tempfile::tempdir().unwrap();
        let book_dir = dir.path().join("novels/书");
        std::fs::create_dir_all(&book_dir).unwrap();
        std::fs::write(book_dir.join("第1章 起.md"), "甲").unwrap();
        let strict = NovelFs::new(
            Library::open(dir.path()).unwrap(),
            FsConfig {
                ttl: Duration::ZERO,
                state_file: Some(dir.path().join("no-state.json")),
                ..FsConfig::default()
            },
        );
        let all_settled = std::time::SystemTime::now() + Duration::from_secs(3600);
        *crate::lock(&strict.freshness.fake_now) = Some(all_settled);
        let chapter = walk(&strict, "书/1").unwrap();
        for ino in [ROOT_INO, walk(&strict, "书").unwrap().ino, chapter.ino] {
            for _ in 0..3 {
                assert_eq!(strict.opendir(ino), Ok(DirCache::Uncached));
            }
        }
    }
}
