//! Rendered pages, kept for the kernel's reads of one page in pieces.

use std::sync::{Arc, Mutex};

use super::cache::{Lru, allocated};
use super::error::{Error, Result};
use super::lock;
use super::names::PageName;
use super::node::ChapterRef;
use super::source::Source;

/// A rendered page of one source version.
type PageKey = (ChapterRef, u64, PageName);

pub(crate) struct Pages {
    cache: Mutex<Lru<PageKey, Arc<Vec<u8>>>>,
}

impl Pages {
    pub(crate) fn new(budget: usize) -> Pages {
        Pages {
            cache: Mutex::new(crate::cache::lru(budget)),
        }
    }

    /// The bytes of a page version, kept for the reads after (a page
    /// rendered ahead of its reader, until the kernel is given it).
    pub(crate) fn bytes(
        &self,
        source: &Source,
        c: &ChapterRef,
        page: PageName,
        version: u64,
    ) -> Result<Arc<Vec<u8>>> {
        let key = (c.clone(), version, page);
        if let Some(bytes) = lock(&self.cache).get(&key) {
            return Ok(bytes);
        }
        let bytes = render(source, c, page, version)?;
        lock(&self.cache).insert(key, bytes.clone(), allocated(bytes.len()) + 128);
        Ok(bytes)
    }

    /// The bytes of a page version the kernel is given now: the kernel's
    /// page cache holds them from then on, so they leave this cache (a
    /// page rendered ahead) or never enter it. Kept, they would be evicted
    /// later among thousands of others, each freed far from where the next
    /// page is made, a cost the store thread would pay on every page of a
    /// cold `grep -r`.
    pub(crate) fn for_kernel(
        &self,
        source: &Source,
        c: &ChapterRef,
        page: PageName,
        version: u64,
    ) -> Result<Arc<Vec<u8>>> {
        let key = (c.clone(), version, page);
        if let Some(bytes) = lock(&self.cache).take(&key) {
            return Ok(bytes);
        }
        render(source, c, page, version)
    }

    /// How many pages are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.cache).len()
    }
}

/// Renders a page version.
fn render(source: &Source, c: &ChapterRef, page: PageName, version: u64) -> Result<Arc<Vec<u8>>> {
    let text = source.chapter_version(c, version)??;
    if !text.offset_in_range(page.offset) {
        return Err(Error::NotFound);
    }
    let rendered = source
        .library()
        .render_page(
            &c.book,
            &c.file,
            &text,
            page.offset,
            page.limit_or_default(),
            page.format,
        )
        .map_err(|e| {
            // A streamed chapter's file could not be read again.
            log::warn!("{e}");
            Error::from(e)
        })?;
    Ok(Arc::new(rendered))
}
