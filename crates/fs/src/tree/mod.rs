//! The request handlers, free of FUSE types: which names exist, what they
//! are, what bytes they hold. `fuse.rs` only translates requests to these.
//!
//! `NovelFs` holds the mount's state and its entry points. Each entry
//! point dispatches once over `Node` to the module of the node's family
//! (in `families/`): `root`, `book`, `chapter`, `ambiguous`, `page`,
//! `index_files`. This file holds the struct and the dispatch of lookups,
//! attributes and listings; `build` makes a `NovelFs` for a mount, `attrs`
//! holds the attribute rules, `opendir` what the kernel may keep of a
//! listing, `read` the bytes of files and links, `stores` what is told to
//! `ahead`.
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

mod attrs;
mod build;
mod dir_pages;
mod families;
mod invalidations;
mod opendir;
mod read;
mod stores;

#[cfg(test)]
mod test_fixture;

use std::ffi::{OsStr, OsString};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use novelfs_kit::cause::Chain;
use novelfs_library::NovelError;

use super::ahead::Ahead;
use super::cache::HeapTrim;
use super::error::{Error, Result};
use super::freshness::{Freshness, Negatives, WATCHED_TTL};
use super::indexes::IndexFiles;
use super::inodes::InodeTable;
use super::inodes::journal::ReplayError;
use super::listing::{Listed, Listing, Listings};
use super::names::ERROR_FILE;
use super::node::{Attr, Kind, Node};
use super::outline::Outlines;
use super::pages::Pages;
use super::source::Source;
use super::switch::Switch;
use super::unreadable_dirs::UnreadableDirs;
use attrs::{Found, Stat};
pub use build::FsConfig;
pub use dir_pages::{Detail, DirReply};
use families::{ambiguous, book, chapter, index_files, page, root};
pub use opendir::DirCache;
use opendir::digest;
use read::error_bytes;

pub struct NovelFs {
    source: Arc<Source>,
    freshness: Arc<Freshness>,
    inodes: InodeTable,
    /// Names answered missing that the kernel may keep for long.
    negatives: Negatives,
    outlines: Arc<Outlines>,
    pages: Pages,
    listings: Listings,
    index_files: Arc<IndexFiles>,
    switch: Arc<Switch>,
    heap_trim: HeapTrim,
    unreadable: UnreadableDirs,
    /// What is done ahead of readers: the disk's read-ahead, the
    /// outliner and the kernel's stores.
    ahead: Arc<Ahead>,
    /// Compiles the file-name patterns while the mount is being attached.
    preparing: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The page formats chapter directories list.
    formats: crate::Formats,
}

/// What a lookup answers the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Found(Attr),
    /// No such name; the kernel may keep that for this long (0: it asks
    /// again every time).
    Missing(Duration),
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

impl NovelFs {
    /// The path of `ino` for log lines (never fails).
    pub fn describe(&self, ino: u64) -> String {
        self.inodes.describe(ino)
    }

    pub fn node(&self, ino: u64) -> Result<Node> {
        self.inodes.node(ino)
    }

    /// The kernel dropped `n` lookups of `ino`.
    /// Replays the inode journal a server that served this connection
    /// before left (crash failover): the kernel's numbers mean the same
    /// nodes here. Returns the records replayed and the bytes they take.
    pub fn resume_inodes(
        &self,
        journal: &[u8],
    ) -> std::result::Result<(usize, usize), ReplayError> {
        self.inodes.replay(journal)
    }

    /// Records every change of the inode table with `sink` from now on,
    /// for a server that may take over (see `resume_inodes`).
    pub fn journal_inodes(&self, sink: Box<dyn crate::JournalSink>) {
        self.inodes.journal_to(sink);
    }

    /// Replaces the inode journal with a snapshot of the table now (see
    /// `JournalFile`: one written by an older build, converted).
    pub fn compact_inodes(&self) {
        self.inodes.compact();
    }

    pub fn forget(&self, ino: u64, n: u64) {
        self.ahead.forgotten(ino);
        if self.inodes.forget(ino, n) {
            self.listings.forget(ino);
            self.negatives.forget(ino);
            self.heap_trim.freed();
        }
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

    /// Logs (once) that a directory cannot be served, and why: the error
    /// that said so with its causes.
    fn log_unreadable(&self, e: &NovelError) {
        match e {
            NovelError::Io {
                path,
                cause: Some(cause),
                ..
            } => self.unreadable.cannot_read(path, &Chain(cause.get())),
            NovelError::Io { path, reason, .. } => self.unreadable.cannot_read(path, reason),
            other => self
                .unreadable
                .cannot_read(&other.to_string(), &"cannot be read"),
        }
    }

    /// Switched off, only the root and its `ERROR` remain reachable (the
    /// index files too follow `novel_read`'s switch, and their own tool's).
    fn check_switch(&self, node: &Node) -> Result<()> {
        if matches!(node, Node::Root | Node::RootError) || self.switched_on() {
            Ok(())
        } else {
            Err(Error::SwitchedOff)
        }
    }

    /// `e` as the kernel gets it: a name not found while `novels/`
    /// itself cannot be listed (a network filesystem gone, a server that
    /// died) is EIO, never ENOENT: the library is not known to lack it.
    /// Asked of the one shared listing of the books, which a look at
    /// `novels/`'s stamp keeps: every missing name a walker probes comes
    /// here, and a listing of `novels/` each would cost as much as the
    /// library has books.
    fn unless_source_dead(&self, e: Error) -> Error {
        if e == Error::NotFound && self.source.book_names().is_err() {
            Error::SourceDown
        } else {
            e
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

    /// The answer to a lookup that needs nothing but the inode table: a
    /// name no change can make resolve in its directory (a chapter
    /// directory holds only its pages and `ERROR`), missing for as long
    /// as the directory's own entry is kept. `None` when the lookup needs
    /// the tree (`lookup_entry`). ripgrep asks four such names in every
    /// directory it enters; answered here, they skip the request's
    /// deadline and hand-off machinery, which costs more than the answer.
    pub fn missing_by_construction(&self, parent: u64, name: &OsStr) -> Option<Entry> {
        if !self.switched_on() {
            return None;
        }
        let directory = self.node(parent).ok()?;
        (!chapter::can_ever_hold(&directory, name)).then_some(Entry::Missing(WATCHED_TTL))
    }

    /// `lookup`, with a missing name answered as a negative entry: kept
    /// for long when no change can make it resolve, or when the directory
    /// is watched and the name could be recorded for invalidation
    /// (`Negatives`); not kept otherwise.
    pub fn lookup_entry(&self, parent: u64, name: &OsStr) -> Result<Entry> {
        let directory = self.node(parent)?;
        let since = self.negatives.epoch();
        match self.lookup_in(directory.clone(), name) {
            Err(Error::NotFound) => {
                let ttl = if !chapter::can_ever_hold(&directory, name) {
                    // Nothing to invalidate later: no change on disk makes
                    // such a name resolve (ripgrep's `.gitignore` probe in
                    // every chapter directory is one).
                    WATCHED_TTL
                } else if self.freshness.covers_names_in(&directory)
                    && self.negatives.record(parent, name, since)
                {
                    WATCHED_TTL
                } else {
                    // Unwatched (a bucket, a network filesystem), nothing
                    // pushes the change that adds the name: kept missing
                    // by the kernel, it would outlive that change while
                    // the index files, asked of the daemon, list it.
                    Duration::ZERO
                };
                Ok(Entry::Missing(ttl))
            }
            found => found.map(Entry::Found),
        }
    }

    fn lookup_in(&self, parent: Node, name: &OsStr) -> Result<Attr> {
        if !self.switched_on() {
            return match parent {
                Node::Root if name == ERROR_FILE => self.found(Node::RootError),
                _ => Err(Error::SwitchedOff),
            };
        }
        if !chapter::can_ever_hold(&parent, name) {
            // No change can make such a name resolve: answered without
            // the chapter, its outline or a look at the library.
            return Err(Error::NotFound);
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
            | Node::ChaptersIndex { .. } => return Err(Error::NotADirectory),
        };
        let found = found.map_err(|e| self.unless_source_dead(e))?;
        Ok(self.intern(found))
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
            _ => Err(Error::NotADirectory),
        }
    }
}

#[cfg(test)]
mod tests;
