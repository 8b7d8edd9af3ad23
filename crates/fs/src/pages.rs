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

    /// The bytes of a page version.
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
        let bytes = Arc::new(rendered);
        lock(&self.cache).insert(key, bytes.clone(), allocated(bytes.len()) + 128);
        Ok(bytes)
    }
}
