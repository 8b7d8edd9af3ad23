//! The bytes of files and the targets of links: READ and READLINK, each
//! file's bytes from its family, never changing for one inode.

use std::ffi::OsString;
use std::sync::Arc;

use novelfs_library::NovelError;

use super::{NovelFs, ambiguous, book, chapter, index_files, page, root};
use crate::error::{Error, Result};
use crate::node::Node;

/// The bytes of an `ERROR` file: its reader's error line.
pub(super) fn error_bytes(e: &NovelError) -> Arc<Vec<u8>> {
    Arc::new(e.error_line().into_bytes())
}

impl NovelFs {
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
            _ => Err(Error::NotALink),
        }
    }

    /// The bytes of a file inode. They never change: an inode of a version
    /// that is gone is served from the cache, or not at all (EIO).
    pub(super) fn content(&self, node: &Node) -> Result<Arc<Vec<u8>>> {
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
            _ => Err(Error::IsADirectory),
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
