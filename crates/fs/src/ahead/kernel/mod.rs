//! The kernel's page cache, filled ahead of a reader (contract §2.4a; the
//! kernel is told by `crate::mount::serving::pusher` with FUSE_NOTIFY_STORE). Once a
//! reader has read a page (a READ of it reached the daemon), the rest of
//! that chapter and the chapters after it in the book, in the format it
//! read, are rendered on the store thread and stored into the inodes the
//! kernel holds for them: its reads of those pages then send no READ.
//!
//! Only a READ makes a reader: a listing alone (`find`, `ls`) stores
//! nothing. The kernel takes a store only for an inode it holds (given in a
//! LOOKUP or READDIRPLUS reply, not forgotten since), so the pages of a
//! chapter ahead become storable when the reader lists that chapter; a store
//! sent before the kernel has made the inode (it makes it while the reader
//! parses the reply) is refused with ENOENT and tried again shortly.
//!
//! The bytes stored are what a READ of the inode returns: `Pages::bytes` of
//! the inode's own version (an inode stands for one version of its source,
//! contract §2.3), so a page whose source changed is another inode and
//! never gets the old bytes.
//!
//! Where readers are is their tracks' (`ahead::track`, held by the
//! `Ahead` and lent with each event): `readers` moves the kernel's part of
//! a track (its `Place`: the page read last, per format), `plan` decides
//! what to store ahead of each, `given` keeps what the kernel was given, `worker` serves the
//! store thread and `listing_end` the stores sent on a listing's thread.

mod given;
mod listing_end;
mod plan;
mod readers;
mod worker;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use crate::inodes::InodeTable;
use crate::node::{ChapterRef, Node};
use crate::outline::Outlines;
use crate::pages::Pages;
use crate::source::Source;
pub(crate) use plan::Place;

#[cfg(test)]
pub(crate) use plan::{AHEAD_BYTES, AHEAD_CHAPTERS};

/// A page to store into the kernel's inode `ino`.
pub struct Store {
    pub ino: u64,
    pub bytes: Arc<Vec<u8>>,
    node: Node,
    refused: usize,
    due: Instant,
}

impl Store {
    fn new(ino: u64, bytes: Arc<Vec<u8>>, node: Node) -> Store {
        Store {
            ino,
            bytes,
            node,
            refused: 0,
            due: Instant::now(),
        }
    }

    /// The page's path, for the log.
    pub fn path(&self) -> String {
        self.node.path()
    }

    /// The chapter of its page.
    fn chapter(&self) -> Option<&ChapterRef> {
        match &self.node {
            Node::Page { chapter, .. } => Some(chapter),
            _ => None,
        }
    }

    /// How many times the kernel refused it so far.
    #[cfg(test)]
    pub(crate) fn refused(&self) -> usize {
        self.refused
    }
}

/// What the kernel said to a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOutcome {
    Stored,
    /// ENOENT: it does not hold the inode (not made yet, or forgotten).
    NotHeld,
    /// Any other error: not tried again.
    Failed,
}

#[derive(Default)]
struct State {
    /// Bumped by each read at a new place and each listing in a reader's
    /// book; the store thread plans again when it moves.
    events: u64,
    planned: u64,
    /// The plan has more to do (its stores were sent first).
    again: bool,
    /// Stores the kernel refused with ENOENT, to send again.
    retries: Vec<Store>,
    /// Chapter directories of a reader's book whose listing started (a
    /// READDIR at offset 0) and has not ended, the most recent last,
    /// `OPEN_LISTINGS` at most: the end of each stores its pages on the
    /// listing's thread (`at_listing_end`), so the store thread leaves them
    /// alone meanwhile.
    open_listings: VecDeque<ChapterRef>,
    /// Inodes the kernel was given the bytes of (stored or read), or that
    /// were given up on, while it holds them (see `given`): at most what
    /// the kernel holds.
    given: hashbrown::HashSet<u64>,
    /// The store thread waits for an event (see `StoreAhead::wake`).
    waiting: bool,
}

pub(crate) struct StoreAhead {
    state: Mutex<State>,
    wake: Condvar,
    /// Whether any reader is followed: listings skip the lock while none is.
    any_reader: AtomicBool,
    /// Pages read at a new place so far: the `read_at` of the last (moved
    /// under the tracks' lock).
    reads: AtomicU64,
    /// How many times a listing woke the store thread.
    #[cfg(test)]
    pub(crate) woken_by_listings: std::sync::atomic::AtomicUsize,
    /// How many events found the store thread busy, and woke nothing.
    #[cfg(test)]
    pub(crate) wakes_spared: std::sync::atomic::AtomicUsize,
}

/// What a plan needs of the tree.
pub(crate) struct Parts<'a> {
    pub source: &'a Source,
    pub outlines: &'a Outlines,
    pub pages: &'a Pages,
    pub inodes: &'a InodeTable,
}

impl StoreAhead {
    pub(crate) fn new() -> StoreAhead {
        StoreAhead {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            any_reader: AtomicBool::new(false),
            reads: AtomicU64::new(0),
            #[cfg(test)]
            woken_by_listings: Default::default(),
            #[cfg(test)]
            wakes_spared: Default::default(),
        }
    }

    /// Whether the store thread waits for an event now.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> bool {
        crate::lock(&self.state).waiting
    }
}
