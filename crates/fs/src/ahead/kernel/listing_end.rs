//! The stores sent on a listing's thread: at the end of a chapter
//! directory's listing, the pages of that chapter a reader's plan wants.

use std::sync::Mutex;

use super::super::track::Tracks;
use super::plan::Place;
use super::{Parts, Store, StoreAhead};
use crate::lock;
use crate::names::PageName;
use crate::node::{ChapterRef, Node};
use novelfs_library::PageFormat;

/// Bytes stored at the end of one chapter directory's listing, at most
/// (`StoreAhead::at_listing_end`): the answer to the reader's last READDIR
/// waits for them, so a chapter of many pages leaves the rest to the store
/// thread. A few typical pages.
const LISTING_END_BYTES: u64 = 256 << 10;

impl StoreAhead {
    /// The stores to send before answering a READDIR past the first reply
    /// of `chapter`'s listing: the reader has taken that reply in, so the
    /// kernel holds the inodes it named, and the reader reads the pages
    /// next. The pages of the chapter that a reader's plan wants (up to
    /// `LISTING_END_BYTES`) are stored then, on the request's thread: the
    /// store thread, woken by the same listing, races the reader's open and
    /// READ, and under io_uring it loses most races. Each store is claimed
    /// (`claim`: the store thread skips it); say how it went with `finished`.
    pub(crate) fn at_listing_end(
        &self,
        parts: &Parts,
        tracks: &Mutex<Tracks<Place>>,
        chapter: &ChapterRef,
    ) -> Vec<Store> {
        let mut out = Vec::new();
        let formats: Vec<PageFormat>;
        let wanted: Vec<(PageName, u64, u64)> = {
            let tracks = lock(tracks);
            let mut state = lock(&self.state);
            state.open_listings.retain(|c| c != chapter);
            // Stores of this chapter the kernel refused (sent before it had
            // made the inodes) go now: it has made them by this READDIR.
            let (mine, others): (Vec<Store>, Vec<Store>) = std::mem::take(&mut state.retries)
                .into_iter()
                .partition(|s| s.chapter() == Some(chapter));
            state.retries = others;
            out.extend(mine);
            let mut wanted = Vec::new();
            // The pages read in its book, the most recent first.
            let mut read: Vec<_> = tracks
                .iter()
                .filter(|t| *t.book == *chapter.book)
                .flat_map(|t| &t.pages)
                .collect();
            read.sort_by_key(|p| std::cmp::Reverse(p.read_at));
            formats = read.iter().map(|r| r.format).collect();
            for r in &read {
                let Some(plan) = &r.plan else { continue };
                let Some((ahead, version)) = plan.find(chapter) else {
                    continue;
                };
                let page = |offset| PageName {
                    offset,
                    limit: None,
                    format: r.format,
                };
                wanted.extend(
                    plan.wanted
                        .iter()
                        .filter(|w| w.ahead == ahead)
                        .map(|w| (page(w.offset), version, w.bytes)),
                );
            }
            wanted
        };
        let wanted = match wanted.is_empty() && out.is_empty() {
            true => Self::whole_chapter(parts, chapter, &formats),
            false => wanted,
        };
        let mut total: u64 = out.iter().map(|s| s.bytes.len() as u64).sum();
        for (page, version, bytes) in wanted {
            if total + bytes > LISTING_END_BYTES {
                break;
            }
            let node = Node::Page {
                chapter: chapter.clone(),
                page,
                version,
            };
            let Some(ino) = parts.inodes.held_page(&node) else {
                continue;
            };
            if !self.not_given(ino) {
                continue;
            }
            let Ok(bytes) = parts.pages.for_kernel(parts.source, chapter, page, version) else {
                continue;
            };
            let len = bytes.len() as u64;
            if let Some(store) = self.claim(ino, node, bytes) {
                total += len;
                out.push(store);
            }
        }
        out
    }

    /// The pages of `chapter` in each of `formats` (those read in its
    /// book), its reading chain in order: what a reader in the book that no
    /// plan foresaw reads after listing the chapter. Plans look forward from
    /// the page read, and a walker may go any way: ripgrep's workers take
    /// a book's chapters last first, each listing a chapter and then
    /// reading its pages. Its outline is cached (the listing just used it).
    fn whole_chapter(
        parts: &Parts,
        chapter: &ChapterRef,
        formats: &[PageFormat],
    ) -> Vec<(PageName, u64, u64)> {
        if formats.is_empty() {
            return Vec::new();
        }
        let Ok(now) = parts.outlines.outline(parts.source, chapter) else {
            return Vec::new();
        };
        let Ok(outline) = &now.outline else {
            return Vec::new();
        };
        let formats: Vec<PageFormat> = [PageFormat::Text, PageFormat::Json]
            .into_iter()
            .filter(|f| formats.contains(f))
            .collect();
        let mut wanted = Vec::new();
        for p in &outline.pages {
            for &format in &formats {
                let bytes = p.bytes(format);
                let page = PageName {
                    offset: p.offset,
                    limit: None,
                    format,
                };
                wanted.push((page, now.version, bytes));
            }
        }
        wanted
    }
}
