//! Outlines ahead: when a book is listed, the outlines of its chapters are
//! computed on a thread of their own, so that the listings of its chapter
//! directories, which `find`, `ls -R` and agents walking the tree ask for
//! next, are answered from memory instead of decoding on the request
//! thread. The work runs on the other core when there is one (at the
//! requests' priority: a request may wait for the chapter this thread is
//! loading, see `Source::chapter_from`), never blocks a request (a full
//! queue drops the book), and stops where the outlines' cache would start
//! evicting: what is computed ahead must still be there when it is asked
//! for.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use super::lock;
use super::node::ChapterRef;
use super::outline::Outlines;
use super::source::Source;

/// Books waiting for the thread; a listing that finds the queue full is
/// not outlined ahead (its chapters are outlined when listed).
const QUEUE_BOOKS: usize = 64;

/// Chapters whose source is bigger are not outlined ahead (a typical
/// chapter is a few KiB).
pub(crate) const AHEAD_MAX_BYTES: u64 = 1 << 20;

/// What an outline of a small chapter weighs in the cache (its fixed part
/// and a few pages): room for this many bytes per chapter is needed to
/// queue a book.
pub(crate) const OUTLINE_GUESS: usize = 256;

struct Shared {
    /// Chapters queued and not yet taken by the thread.
    pending: AtomicUsize,
    /// Set when the tree is dropped: the thread stops mid-book.
    stopped: AtomicBool,
}

pub(crate) struct Outliner {
    queue: Option<Mutex<SyncSender<Vec<ChapterRef>>>>,
    /// Per book, the version of it whose chapters were queued: a book
    /// listed again unchanged is not queued again.
    queued: Mutex<HashMap<Arc<OsStr>, u64>>,
    outlines: Arc<Outlines>,
    shared: Arc<Shared>,
}

impl Outliner {
    /// Starts the thread; it ends with the `Outliner`. Without a thread,
    /// nothing is outlined ahead.
    pub(crate) fn start(source: Arc<Source>, outlines: Arc<Outlines>) -> Outliner {
        let shared = Arc::new(Shared {
            pending: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
        });
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<ChapterRef>>(QUEUE_BOOKS);
        let spawned = {
            let (outlines, shared) = (outlines.clone(), shared.clone());
            std::thread::Builder::new()
                .name("novelfs-outline".into())
                .spawn(move || {
                    for batch in rx {
                        let n = batch.len();
                        for (done, c) in batch.into_iter().enumerate() {
                            if shared.stopped.load(Ordering::Relaxed)
                                || outlines.room() < OUTLINE_GUESS
                            {
                                shared.pending.fetch_sub(n - done, Ordering::Relaxed);
                                break;
                            }
                            // An unreadable chapter is cached as its error,
                            // or answered when it is listed.
                            let _ = outlines.outline(&source, &c);
                            shared.pending.fetch_sub(1, Ordering::Relaxed);
                        }
                    }
                })
        };
        let queue = match spawned {
            Ok(_) => Some(Mutex::new(tx)),
            Err(e) => {
                log::warn!("no thread to outline chapters ahead: {e}");
                None
            }
        };
        Outliner {
            queue,
            queued: Mutex::new(HashMap::new()),
            outlines,
            shared,
        }
    }

    /// `book` (at `version`) was listed with these chapters: queues their
    /// outlines, unless this version was queued already, the queue is
    /// full, or their outlines would not fit in the cache beside those
    /// already there and queued. True when queued.
    pub(crate) fn book_listed(
        &self,
        book: &Arc<OsStr>,
        version: u64,
        chapters: Vec<ChapterRef>,
    ) -> bool {
        let Some(queue) = &self.queue else {
            return false;
        };
        if chapters.is_empty() {
            return false;
        }
        {
            let mut queued = lock(&self.queued);
            if queued.get(book) == Some(&version) {
                return false;
            }
            let pending = self.shared.pending.load(Ordering::Relaxed);
            let wanted = (pending + chapters.len()).saturating_mul(OUTLINE_GUESS);
            if wanted > self.outlines.room() {
                return false;
            }
            queued.insert(book.clone(), version);
        }
        let n = chapters.len();
        self.shared.pending.fetch_add(n, Ordering::Relaxed);
        match lock(queue).try_send(chapters) {
            Ok(()) => true,
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.shared.pending.fetch_sub(n, Ordering::Relaxed);
                lock(&self.queued).remove(book);
                false
            }
        }
    }
}

impl Drop for Outliner {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::Relaxed);
    }
}
