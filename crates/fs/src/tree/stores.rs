//! The store-ahead front end: what the mount asks the kernel member of `ahead` for
//! (pages to store into the kernel's page cache ahead of their readers)
//! and what the tree tells it of the reads and listings it serves.

use std::time::Duration;

use crate::ahead::{Parts, Store, StoreOutcome};
use crate::node::Node;

use super::NovelFs;

impl NovelFs {
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
    /// readers (`Ahead::stores`), with the inodes the kernel holds for them:
    /// waits until there are some to send, or at most `wait`.
    pub fn stores_ahead(&self, wait: Option<Duration>) -> Vec<Store> {
        self.ahead.stores(&self.parts(), wait)
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
        if !self.ahead.not_given(ino) {
            return None;
        }
        self.check_switch(&node).ok()?;
        let bytes = self.content(&node).ok()?;
        self.ahead.page_read(chapter, *page, *version, None);
        self.ahead.claim(ino, node.clone(), bytes)
    }

    /// The pages to store before answering a READDIR of `ino` at
    /// `offset`: past the first reply of a chapter directory's listing, the
    /// kernel holds its pages' inodes, and a reader followed there reads
    /// them next (see `StoreAhead::at_listing_end`).
    pub fn stores_at_listing(&self, ino: u64, offset: u64) -> Vec<Store> {
        if offset == 0 || !self.ahead.following() {
            return Vec::new();
        }
        let Ok(Node::Chapter { chapter }) = self.node(ino) else {
            return Vec::new();
        };
        self.ahead.stores_at_listing_end(&self.parts(), &chapter)
    }

    /// What the kernel said to a store from `stores_ahead` or
    /// `stores_at_listing`.
    pub fn store_finished(&self, store: Store, outcome: StoreOutcome) {
        self.ahead.store_finished(store, outcome);
    }

    /// A READ of `ino` (`node`) was served: a page's reader is followed
    /// from there, and the kernel holds the page's bytes.
    pub(super) fn follow_read(&self, ino: u64, node: &Node) {
        if let Node::Page {
            chapter,
            page,
            version,
        } = node
        {
            self.ahead.page_read(chapter, *page, *version, Some(ino));
        }
    }

    /// A READDIR of `ino` at `offset` is about to be served: a followed
    /// reader listing a chapter directory goes on there.
    pub(super) fn follow_listing(&self, ino: u64, offset: u64) {
        if self.ahead.following()
            && let Ok(Node::Chapter { chapter }) = self.node(ino)
        {
            self.ahead.chapter_readdir(&chapter, offset == 0);
        }
    }
}

#[cfg(test)]
mod tests;
