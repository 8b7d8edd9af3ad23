//! A chapter read from disk and decoded: room made for its text, its
//! version taken from the file it is read through, and the load told to
//! the source's observer (what is done ahead of a reader).

use std::ffi::OsStr;
use std::sync::{Arc, Weak};
use std::time::SystemTime;

use novelfs_library::{BookIndex, Library, NovelError};

use super::stamps::{mtime_of, version_of};
use super::{BIG_CHAPTER_BYTES, ChapterFile, KeepText, Loaded, LoadedChapter, Source};
use crate::cache::{MIN_TEXTS_BUDGET, Stamp, allocated};
use crate::error::{Error, Result};
use crate::lock;
use crate::node::{ChapterRef, Node};

/// A chapter just read from disk, as `Source` tells its observer: where it
/// lies in its book, and whether its bytes were in the page cache before.
pub(crate) struct ChapterLoad<'a> {
    pub book: &'a Arc<OsStr>,
    /// The book's chapters, and the chapter's place among them.
    pub index: &'a Arc<BookIndex>,
    pub position: usize,
    /// Whether its bytes were at hand (in the page cache, or fetched ahead).
    pub was_cached: bool,
    /// The library it was read from.
    pub library: &'a Library,
}

/// Who is told of every chapter read from disk: `Source` reads what its
/// callers ask for and leaves what follows from a read to its observer.
pub(crate) trait LoadObserver: Send + Sync {
    fn chapter_loaded(&self, load: &ChapterLoad<'_>);
    /// A walk reads the chapters of `book` (its chapters `index`) from
    /// `position` on, now.
    fn walk_reads(
        &self,
        library: &Library,
        book: &Arc<OsStr>,
        index: &Arc<BookIndex>,
        position: usize,
    );
    /// A walk reads all of `book` now, in no set order (a book's own
    /// index, on both CPUs): its loads are its, not a reader's.
    fn walk_begins(&self, book: &OsStr);
}

impl Source {
    /// Tells `observer` of every chapter read from now on. Held weakly: the
    /// observer may hold the source, and ends with its own owner.
    pub(crate) fn observe(&self, observer: Weak<dyn LoadObserver>) {
        if self.observer.set(observer).is_err() {
            log::warn!("a second observer of chapter loads is ignored");
        }
    }

    /// A walk reads the chapters of `book` (`index`, of the look it took)
    /// from `position` on, now: its observer is told, so that their files
    /// are asked for before the walk comes to each.
    pub(crate) fn walk_reads(&self, book: &Arc<OsStr>, index: &Arc<BookIndex>, position: usize) {
        if let Some(observer) = self.observer.get().and_then(Weak::upgrade) {
            observer.walk_reads(&self.library, book, index, position);
        }
    }

    /// A walk reads all of `book` now, in no set order: its observer is
    /// told, so that its loads are fetched ahead as a walk's.
    pub(crate) fn walk_begins(&self, book: &OsStr) {
        if let Some(observer) = self.observer.get().and_then(Weak::upgrade) {
            observer.walk_begins(book);
        }
    }

    /// Reads and decodes the chapter, and caches it under the version of
    /// the file read (unless `keep` is `No`).
    pub(super) fn load(
        &self,
        c: &ChapterRef,
        source: ChapterFile,
        keep: KeepText,
    ) -> Result<LoadedChapter> {
        // A big chapter's bytes and text are both in memory while it is
        // read and decoded: a budget, not a lock, bounds how many are at
        // once, so one slow read does not hold up every other big chapter.
        // A streamed chapter holds only its line index and a read buffer.
        let streamed = self.library.streams(source.meta.len());
        let admitted = (source.meta.len() > BIG_CHAPTER_BYTES && !streamed)
            .then(|| self.big_loads.admit(source.meta.len()));
        // The text will take about the file's size (exactly, for UTF-8):
        // room for it is made before it is read, not after, and for the
        // other big texts under way too, which are not in the cache yet.
        // The texts give way to the inode table (see `cache::Charge`).
        let coming = match &admitted {
            Some(_) => self.big_loads.in_use(),
            // About 10 bytes of index per line of 100 bytes or more.
            None if streamed => source.meta.len() / 10,
            None => source.meta.len(),
        };
        if keep == KeepText::Yes {
            let mut texts = lock(&self.texts);
            let table = self.table_bytes.load(std::sync::atomic::Ordering::Relaxed);
            texts.set_budget(
                self.texts_budget
                    .saturating_sub(table)
                    .max(MIN_TEXTS_BUDGET),
            );
            texts.make_room(coming as usize);
        }
        #[cfg(test)]
        self.at(|s| &s.loading, c);
        if source.meta.len() > BIG_CHAPTER_BYTES {
            crate::hold::big_load();
        }
        let chapter = &source.index.chapters[source.position];
        let mut was_cached = false;
        let at = self.freshness.now();
        let g = self.freshness.granularity();
        // Bytes the stamp does not prove are digested as they are read, so
        // that the next look can tell them from an edit made under the same
        // stamp.
        let read = self
            .library
            .read_chapter(&c.book, &c.file, chapter, |meta| {
                self.versions.must_digest(c, &Stamp::of(meta), at, g)
            });
        let (version, mtime, loaded): (u64, SystemTime, Loaded) = match read {
            Ok(None) => return Err(Error::NotFound),
            Ok(Some(read)) => {
                self.decodes
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                log::debug!(
                    "{} path={}",
                    crate::events::DECODED,
                    Node::Chapter { chapter: c.clone() }.path()
                );
                was_cached = read.at_hand;
                let stamp = Stamp::of(&read.meta);
                let version = match read.digest {
                    Some(d) => self.versions.looked(c, &stamp, d, at, g),
                    None => version_of(&stamp),
                };
                (version, mtime_of(&read.meta), read.text.map(Arc::new))
            }
            // Opening failed for another reason: an error to show, under
            // the version of the name.
            Err(e @ NovelError::Unavailable { .. }) => return Err(e.into()),
            Err(e) => (source.version(), source.mtime(), Err(e)),
        };
        // The storage failing while the chapter was read (a bucket's part
        // timed out, or was replaced under the read) says nothing of the
        // chapter: it is kept nowhere, and the next read asks again.
        if let Err(e @ NovelError::Unavailable { .. }) = &loaded {
            return Err(e.clone().into());
        }
        if let Err(e) = &loaded {
            let path = Node::Chapter { chapter: c.clone() }.path();
            log::info!("gave up on {path}: {}", novelfs_kit::cause::Chain(e));
        }
        if let Some(observer) = self.observer.get().and_then(Weak::upgrade) {
            observer.chapter_loaded(&ChapterLoad {
                book: &c.book,
                index: &source.index,
                position: source.position,
                was_cached,
                library: &self.library,
            });
        }
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
        if keep == KeepText::Yes {
            lock(&self.texts).insert((c.clone(), version), loaded.clone(), weight);
        }
        Ok(LoadedChapter {
            version,
            loaded,
            mtime,
        })
    }
}
