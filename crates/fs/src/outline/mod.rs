//! What listings and `stat` need of a chapter, kept apart from its text:
//! small enough to stay cached when the texts do not fit, so listing a
//! chapter or stat-ing a page of its chain needs no decode.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use novelfs_library::index::ChapterStats;
use novelfs_library::lookup::BookIndex;
use novelfs_library::{ChapterText, NovelError};

use super::cache::Lru;
use super::cache::Stamp;
use super::chapter_shape::{Outline, page_len};
use super::error::{Error, Result};
use super::lock;
use super::names::PageName;
use super::node::{ChapterId, ChapterRef};
use super::persist::MountIndex;
use super::source::{ChapterFile, KeepText, LoadedChapter, Source, VersionKey, version_of};

/// Chapters whose source is bigger are never outlined on a guess (ahead of
/// a walk or of a reader): the outline costs a pass over the whole file,
/// seconds for hundreds of MB, which a reader who stops before that
/// chapter never pays back; a typical chapter is a few KiB.
pub(crate) const GUESS_MAX_BYTES: u64 = 1 << 20;

/// A chapter's outline as the source is now, or the error that stops the
/// chapter from being read (its listing is `ERROR`).
pub(crate) struct ChapterOutline {
    pub version: u64,
    pub outline: std::result::Result<Arc<Outline>, NovelError>,
    pub mtime: SystemTime,
    /// The book's chapters the chapter was found in, and its place there.
    pub index: Arc<BookIndex>,
    pub position: usize,
}

/// What counting a chapter (`novel_books`) needs of it as the source is
/// now: its figures, or the error that stops it from being read.
pub(crate) struct ChapterCount {
    pub version: u64,
    pub stats: std::result::Result<ChapterStats, NovelError>,
    pub mtime: SystemTime,
}

impl ChapterCount {
    pub(crate) fn of(outline: ChapterOutline) -> ChapterCount {
        ChapterCount {
            version: outline.version,
            stats: outline.outline.map(|o| o.stats),
            mtime: outline.mtime,
        }
    }
}

/// The size of a page as the source is now.
pub(crate) struct PageSize {
    pub size: u64,
    pub mtime: SystemTime,
    pub version: u64,
}

type Outlined = std::result::Result<Arc<Outline>, NovelError>;

pub(crate) struct Outlines {
    cache: Mutex<Lru<VersionKey, Outlined>>,
    /// Outlines kept across mounts (`None`: no persistent index).
    stored: Option<MountIndex>,
}

/// The byte size of a page — computed from line sizes, never by rendering
/// it. `page.offset` must be in range.
fn size_of_page(source: &Source, c: &ChapterId, page: PageName, text: &ChapterText) -> u64 {
    page_len(source.library(), &c.book, &c.file, page, text)
}

impl Outlines {
    pub(crate) fn new(budget: usize) -> Outlines {
        Outlines {
            cache: Mutex::new(crate::cache::lru(budget)),
            stored: None,
        }
    }

    /// The mount ends: the persistent index writes what is queued.
    pub(crate) fn finish(&self) {
        if let Some(stored) = &self.stored {
            stored.finish();
        }
    }

    /// Looks outlines up in `stored` before decoding, and records there
    /// the ones it computes.
    pub(crate) fn with_stored(mut self, stored: Option<MountIndex>) -> Outlines {
        self.stored = stored;
        self
    }

    /// The stored outline of the chapter as `now` looked at it, cached
    /// under `now`'s version.
    fn stored_outline(&self, c: &ChapterRef, now: &ChapterFile) -> Option<Arc<Outline>> {
        let outline = Arc::new(self.stored.as_ref()?.lookup(&c.book, &c.file, &now.meta)?);
        let weight = 128 + outline.pages.capacity() * 24;
        let key = (c.clone(), now.version());
        lock(&self.cache).insert(key, Ok(outline.clone()), weight);
        Some(outline)
    }

    /// Computes the outline of `now` (reading the chapter) and records it
    /// in the persistent index when the bytes read are those `now` looked
    /// at, under a version of their stamp alone.
    fn outline_read(
        &self,
        source: &Source,
        c: &ChapterRef,
        now: ChapterFile,
        keep: KeepText,
    ) -> Result<(LoadedChapter, Outlined)> {
        let plain = now.version() == version_of(&Stamp::of(&now.meta));
        let reading = self.stored.as_ref().and_then(|s| s.reading(&now.meta));
        let version = now.version();
        let loaded = source.chapter_keeping(c, now, keep)?;
        let outline = self.outline_of(source, c, &loaded);
        if let (Some(stored), Some(reading), Ok(o)) = (&self.stored, reading, &outline)
            && plain
            && loaded.version == version
        {
            stored.record(&c.book, &c.file, reading, o.clone());
        }
        Ok((loaded, outline))
    }

    /// The chapter's outline as the source is now (decoding it only when
    /// the outline is not cached for the source's current version).
    ///
    /// Each answer comes from one look at the source: the outline, its
    /// version and its mtime are of the same `lstat` (or, when the file
    /// had to be read, of the file read), never of two.
    pub(crate) fn outline(&self, source: &Source, c: &ChapterRef) -> Result<ChapterOutline> {
        self.outline_at(source, c, source.chapter_file(c)?)
    }

    /// The chapter's outline as of `now`, a look at its source just taken.
    pub(crate) fn outline_at(
        &self,
        source: &Source,
        c: &ChapterRef,
        now: ChapterFile,
    ) -> Result<ChapterOutline> {
        self.outline_keeping(source, c, now, KeepText::Yes)
    }

    /// `outline_at`, keeping a text it has to load in the cache only when
    /// `keep` says so.
    pub(crate) fn outline_keeping(
        &self,
        source: &Source,
        c: &ChapterRef,
        now: ChapterFile,
        keep: KeepText,
    ) -> Result<ChapterOutline> {
        let version = now.version();
        let (index, position) = (now.index.clone(), now.position);
        if let Some(outline) = lock(&self.cache).get(&(c.clone(), version)) {
            return Ok(ChapterOutline {
                version,
                outline,
                mtime: now.mtime(),
                index,
                position,
            });
        }
        if let Some(outline) = self.stored_outline(c, &now) {
            return Ok(ChapterOutline {
                version,
                outline: Ok(outline),
                mtime: now.mtime(),
                index,
                position,
            });
        }
        let (loaded, outline) = self.outline_read(source, c, now, keep)?;
        Ok(ChapterOutline {
            version: loaded.version,
            outline,
            mtime: loaded.mtime,
            index,
            position,
        })
    }

    /// `outline_at`, for what counts the chapter only (`novel_books`
    /// counts every chapter of the library): its stored figures are taken
    /// as they are, without decoding its pages or caching an outline
    /// nobody may list, and a text it has to read is not kept (it is
    /// needed once). `to_read` is called before a chapter is read.
    pub(crate) fn count(
        &self,
        source: &Source,
        c: &ChapterRef,
        now: ChapterFile,
        to_read: impl FnOnce(),
    ) -> Result<ChapterCount> {
        let version = now.version();
        let cached = lock(&self.cache).get(&(c.clone(), version));
        let stats = match cached {
            Some(outline) => Some(outline.map(|o| o.stats)),
            None => self
                .stored
                .as_ref()
                .and_then(|stored| stored.lookup_stats(&c.book, &c.file, &now.meta))
                .map(Ok),
        };
        if let Some(stats) = stats {
            return Ok(ChapterCount {
                version,
                stats,
                mtime: now.mtime(),
            });
        }
        to_read();
        let (loaded, outline) = self.outline_read(source, c, now, KeepText::No)?;
        Ok(ChapterCount {
            version: loaded.version,
            stats: outline.map(|o| o.stats),
            mtime: loaded.mtime,
        })
    }

    /// Computes and caches the chapter's outline unless it is cached or
    /// its source is over `max_bytes` (for outlines made ahead of a walk).
    pub(crate) fn outline_small(
        &self,
        source: &Source,
        c: &ChapterRef,
        max_bytes: u64,
    ) -> Result<()> {
        let now = source.chapter_file(c)?;
        if now.meta.len() > max_bytes
            || lock(&self.cache).contains(&(c.clone(), now.version()))
            || self.stored_outline(c, &now).is_some()
        {
            return Ok(());
        }
        // An error is cached as the outline too.
        let _ = self.outline_read(source, c, now, KeepText::Yes)?;
        Ok(())
    }

    /// Whether the outline of `version` of the chapter is cached.
    pub(crate) fn holds(&self, c: &ChapterRef, version: u64) -> bool {
        lock(&self.cache).contains(&(c.clone(), version))
    }

    /// Whether the outline of the chapter's current version is cached.
    #[cfg(test)]
    pub(crate) fn is_cached(&self, source: &Source, c: &ChapterRef) -> bool {
        let Ok(now) = source.chapter_file(c) else {
            return false;
        };
        lock(&self.cache).contains(&(c.clone(), now.version()))
    }

    /// The outline of a loaded version, cached under that version.
    fn outline_of(&self, source: &Source, c: &ChapterRef, loaded: &LoadedChapter) -> Outlined {
        let key = (c.clone(), loaded.version);
        if let Some(outline) = lock(&self.cache).get(&key) {
            return outline;
        }
        let outline = match &loaded.loaded {
            Err(e) => Err(e.clone()),
            Ok(text) => Ok(Arc::new(Outline::compute(
                source.library(),
                &c.book,
                &c.file,
                text,
            ))),
        };
        let weight = 128
            + match &outline {
                Ok(o) => o.pages.capacity() * 24,
                Err(e) => e.error_line().len(),
            };
        lock(&self.cache).insert(key, outline.clone(), weight);
        outline
    }

    /// The byte size of a page as the source is now, with the version of
    /// that source: from one look at it (a page off the reading chain is
    /// measured on the text of the version looked at, not of a second look).
    pub(crate) fn page_size(
        &self,
        source: &Source,
        c: &ChapterRef,
        page: PageName,
    ) -> Result<PageSize> {
        let now = source.chapter_file(c)?;
        let version = now.version();
        let cached = lock(&self.cache).get(&(c.clone(), version));
        let cached = cached.or_else(|| self.stored_outline(c, &now).map(Ok));
        match &cached {
            Some(Err(e)) => return Err(e.clone().into()),
            Some(Ok(o)) => {
                if let Some(size) = o.size(page) {
                    return Ok(PageSize {
                        size,
                        mtime: now.mtime(),
                        version,
                    });
                }
            }
            None => {}
        }
        let loaded = source.chapter_from(c, now)?;
        let outline = match cached {
            Some(outline) if loaded.version == version => outline,
            _ => self.outline_of(source, c, &loaded),
        };
        let text = loaded.loaded?;
        let size = match outline.ok().and_then(|o| o.size(page)) {
            Some(size) => size,
            None if text.offset_in_range(page.offset) => size_of_page(source, c, page, &text),
            None => return Err(Error::NotFound),
        };
        Ok(PageSize {
            size,
            mtime: loaded.mtime,
            version: loaded.version,
        })
    }
}
