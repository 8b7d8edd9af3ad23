//! What listings and `stat` need of a chapter, kept apart from its text:
//! small enough to stay cached when the texts do not fit, so listing a
//! chapter or stat-ing a page of its chain needs no decode.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::library::ChapterText;

use super::cache::Lru;
use super::lock;
use super::names::{Format, PageName};
use super::node::{ChapterId, ChapterRef, Result};
use super::source::{Source, VersionKey};

/// One page of a chapter's reading chain and its sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutlinePage {
    pub offset: u64,
    pub text_bytes: u64,
    pub json_bytes: u64,
}

#[derive(Debug)]
pub struct Outline {
    pub pages: Vec<OutlinePage>,
}

impl Outline {
    fn size(&self, page: PageName) -> Option<u64> {
        if page.limit.is_some() {
            return None;
        }
        let i = self
            .pages
            .binary_search_by_key(&page.offset, |p| p.offset)
            .ok()?;
        Some(match page.format {
            Format::Text => self.pages[i].text_bytes,
            Format::Json => self.pages[i].json_bytes,
        })
    }
}

/// A chapter's outline as the source is now: `None` for a chapter that
/// cannot be read (its listing is `ERROR`).
pub struct ChapterOutline {
    pub version: u64,
    pub outline: Option<Arc<Outline>>,
    pub mtime: SystemTime,
}

/// The size of a page as the source is now.
pub struct PageSize {
    pub size: u64,
    pub mtime: SystemTime,
    pub version: u64,
}

pub struct Outlines {
    cache: Mutex<Lru<VersionKey, Option<Arc<Outline>>>>,
}

/// The byte size of a page — computed from line sizes, never by rendering
/// it. `page.offset` must be in range.
fn size_of_page(source: &Source, c: &ChapterId, page: PageName, text: &ChapterText) -> u64 {
    source.library().page_len(
        &c.book,
        &c.file,
        text,
        page.offset,
        page.limit_or_default(),
        page.format,
    )
}

impl Outlines {
    pub fn new(budget: usize) -> Outlines {
        Outlines {
            cache: Mutex::new(Lru::new(budget)),
        }
    }

    pub fn cached_bytes(&self) -> usize {
        lock(&self.cache).used_bytes()
    }

    /// The chapter's outline as the source is now (decoding it only when
    /// the outline is not cached for the source's current version).
    pub fn outline(&self, source: &Source, c: &ChapterRef) -> Result<ChapterOutline> {
        let now = source.chapter_source(c)?;
        let version = now.version();
        if let Some(outline) = lock(&self.cache).get(&(c.clone(), version)) {
            return Ok(ChapterOutline {
                version,
                outline,
                mtime: now.mtime(),
            });
        }
        let loaded = source.chapter_from(c, now)?;
        let outline = loaded.loaded.ok().map(|text| {
            let pages = text
                .chain()
                .into_iter()
                .map(|offset| {
                    let size = |format| {
                        let page = PageName {
                            offset,
                            limit: None,
                            format,
                        };
                        size_of_page(source, c, page, &text)
                    };
                    OutlinePage {
                        offset,
                        text_bytes: size(Format::Text),
                        json_bytes: size(Format::Json),
                    }
                })
                .collect::<Vec<_>>();
            Arc::new(Outline { pages })
        });
        let weight = 128 + outline.as_ref().map_or(0, |o| o.pages.capacity() * 24);
        lock(&self.cache).insert((c.clone(), loaded.version), outline.clone(), weight);
        Ok(ChapterOutline {
            version: loaded.version,
            outline,
            mtime: loaded.mtime,
        })
    }

    /// The byte size of a page as the source is now, with the version of
    /// that source.
    pub fn page_size(&self, source: &Source, c: &ChapterRef, page: PageName) -> Result<PageSize> {
        let now = self.outline(source, c)?;
        match now.outline {
            None => return Err(libc::EIO),
            Some(o) => {
                if let Some(size) = o.size(page) {
                    return Ok(PageSize {
                        size,
                        mtime: now.mtime,
                        version: now.version,
                    });
                }
            }
        }
        let loaded = source.chapter(c)?;
        let text = loaded.loaded.map_err(|_| libc::EIO)?;
        if !text.offset_in_range(page.offset) {
            return Err(libc::ENOENT);
        }
        Ok(PageSize {
            size: size_of_page(source, c, page, &text),
            mtime: loaded.mtime,
            version: loaded.version,
        })
    }
}
