//! The outlines' cache, filled ahead of a walk: when a book or one of its
//! chapter directories is listed, the outlines of the next few chapters in
//! listing order are computed on a thread of their own, so that the
//! listings of those chapter directories, which `find`, `ls -R` and agents
//! walking the tree ask for next, are answered from memory instead of
//! decoding on the request thread.
//!
//! What is done ahead is bounded by the walk, not by the library: at most
//! `WINDOW` chapters past the last chapter directory listed (or past the
//! start of the book just listed), only chapters the outlines' cache keeps
//! until they are asked for (the window's outlines are its newest entries,
//! and the window takes at most a quarter of its share), and never a big
//! chapter. The thread runs at the requests' priority (a request may wait
//! for the chapter this thread is loading, see `Source::chapter_from`) and
//! never blocks a request: a full queue drops the work.
//!
//! A reader's walk that reaches the end of a book goes on to its index
//! files (`grep -r` lists them after the chapters): once the last window's
//! outlines are made, the book's index is made too (`IndexAhead`), from
//! those outlines, so that the lookup of `novel_chapters.txt` finds it
//! made instead of walking the book while its reader waits.

use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use super::track::{PagePlace, Track};
use crate::lock;
use crate::node::{ChapterRef, chapter_ref};
use crate::outline::{GUESS_MAX_BYTES, Outlines};
use crate::source::Source;

/// Chapters outlined ahead of the last one listed: a small chapter
/// outlines in a fraction of the time a walk takes to list a chapter
/// directory, so a few are enough to stay ahead of it.
pub(crate) const WINDOW: usize = 16;

/// The window is topped up when at most half of it is ahead of the walk:
/// by half a window at least (the book's end excepted), one wake-up of the
/// thread per half window, not per chapter directory listed.
const TOP_UP_BELOW: usize = WINDOW / 2 + 1;

/// Batches waiting for the thread (a batch is one window at most; the
/// allowance bounds the chapters they hold).
const QUEUE_BATCHES: usize = 64;

/// What an outline of a small chapter weighs in the cache with its share
/// of the cache's tables: room for this many bytes per chapter ahead is
/// needed.
pub(crate) const OUTLINE_GUESS: usize = 512;

struct Shared {
    /// Chapters (and indexes) queued and not yet done by the thread.
    pending: AtomicUsize,
    /// Set when the tree is dropped: the thread stops mid-batch.
    stopped: AtomicBool,
}

/// Makes a book's index ahead of its reader (the tree's `IndexFiles`).
pub(crate) type IndexAhead = Box<dyn Fn(&Arc<OsStr>) + Send + Sync>;

/// Chapters to outline, then maybe the index of their book.
struct Batch {
    chapters: Vec<ChapterRef>,
    then_index: Option<Arc<OsStr>>,
}

pub(crate) struct Outliner {
    queue: Option<Mutex<SyncSender<Batch>>>,
    /// Bytes of outlines the window may take (a quarter of their share).
    allowance: usize,
    shared: Arc<Shared>,
}

impl Outliner {
    /// Starts the thread; it ends with the `Outliner`. Without a thread,
    /// nothing is outlined ahead.
    pub(crate) fn start(
        source: Arc<Source>,
        outlines: Arc<Outlines>,
        budget: usize,
        index_ahead: Option<IndexAhead>,
    ) -> Outliner {
        let shared = Arc::new(Shared {
            pending: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
        });
        let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(QUEUE_BATCHES);
        let spawned = {
            let shared = shared.clone();
            novelfs_kit::thread::spawn("novelfs-outline", None, move || {
                for batch in rx {
                    for c in batch.chapters {
                        if !shared.stopped.load(Ordering::Relaxed) {
                            // An unreadable chapter is cached as its
                            // error, or answered when it is listed.
                            let _ = outlines.outline_small(&source, &c, GUESS_MAX_BYTES);
                        }
                        shared.pending.fetch_sub(1, Ordering::Relaxed);
                    }
                    if let Some(book) = batch.then_index {
                        if let Some(make) = &index_ahead
                            && !shared.stopped.load(Ordering::Relaxed)
                        {
                            make(&book);
                        }
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
            allowance: budget / 4,
            shared,
        }
    }

    /// The reader on `track` listed its book or a chapter directory
    /// (`Track::at_start`, `Track::on`): queues the outlines of the
    /// chapters up to `WINDOW` ahead of it that are not queued yet (the
    /// track's `outlines` window). Returns how many were queued.
    pub(crate) fn reached<P: PagePlace>(&self, track: &mut Track<P>) -> usize {
        let Some(queue) = &self.queue else {
            return 0;
        };
        if super::switched_off("outlines") {
            return 0;
        }
        let from = track.next;
        if track.backward() {
            return self.reached_backward(queue, track);
        }
        let Some(chapters) = track.top_up(&track.outlines, from, WINDOW, TOP_UP_BELOW) else {
            return 0;
        };
        if chapters.is_empty() {
            return 0;
        }
        let pending = self.shared.pending.load(Ordering::Relaxed);
        if (pending + chapters.len()).saturating_mul(OUTLINE_GUESS) > self.allowance {
            return 0;
        }
        track.outlines.queued(&chapters);
        // The book's last window, for a reader of its pages (a listing
        // alone, `find`, reads no index): its index follows.
        let then_index = (chapters.end >= track.index.chapters.len() && track.reads())
            .then(|| track.book.clone());
        let chapters = &track.index.chapters[chapters];
        let sent = self.send(queue, &track.book, chapters.iter(), then_index);
        if sent.is_none() {
            // What was not queued is queued by the next listing.
            track.outlines.dropped(from);
        }
        sent.unwrap_or(0)
    }

    /// Sends the outlines of `chapters` (of `book`) to the outliner's
    /// thread, then `then_index`'s index: how many chapters went (the
    /// index counts as one more piece of work pending), `None` when the
    /// queue is full.
    fn send<'a>(
        &self,
        queue: &Mutex<SyncSender<Batch>>,
        book: &Arc<OsStr>,
        chapters: impl Iterator<Item = &'a novelfs_library::Chapter>,
        then_index: Option<Arc<OsStr>>,
    ) -> Option<usize> {
        let batch: Vec<ChapterRef> = chapters
            .filter(|c| !novelfs_library::index::is_chapters_file(&c.os_name))
            .map(|c| chapter_ref(book, &c.os_name))
            .collect();
        let n = batch.len();
        if n == 0 {
            return Some(0);
        }
        let work = n + usize::from(then_index.is_some());
        self.shared.pending.fetch_add(work, Ordering::Relaxed);
        let batch = Batch {
            chapters: batch,
            then_index,
        };
        match lock(queue).try_send(batch) {
            Ok(()) => Some(n),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.shared.pending.fetch_sub(work, Ordering::Relaxed);
                None
            }
        }
    }

    /// `reached` for a reader going through the book last chapter first:
    /// the window is the chapters before the one it is on, the nearest
    /// queued first, topped up by halves as the forward one is.
    fn reached_backward<P: PagePlace>(
        &self,
        queue: &Mutex<SyncSender<Batch>>,
        track: &mut Track<P>,
    ) -> usize {
        let on = track.next.saturating_sub(1);
        let down_to = track.outlined_down_to.filter(|&d| d <= on).unwrap_or(on);
        if on - down_to >= TOP_UP_BELOW {
            return 0;
        }
        let start = on.saturating_sub(WINDOW);
        if start >= down_to {
            return 0;
        }
        let pending = self.shared.pending.load(Ordering::Relaxed);
        if (pending + (down_to - start)).saturating_mul(OUTLINE_GUESS) > self.allowance {
            return 0;
        }
        let chapters = track.index.chapters[start..down_to].iter().rev();
        match self.send(queue, &track.book, chapters, None) {
            Some(n) => {
                track.outlined_down_to = Some(start);
                n
            }
            None => 0,
        }
    }

    /// Chapters queued and not yet outlined.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.shared.pending.load(Ordering::Relaxed)
    }
}

impl Drop for Outliner {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::Relaxed);
    }
}
