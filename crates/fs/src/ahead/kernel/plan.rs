//! What to store ahead of each reader (the page it read, its track's
//! `Place`): its plan (the pages after the one
//! it read, up to `AHEAD_CHAPTERS` chapters and `AHEAD_BYTES` on), made
//! from the chapters' outlines, and the batches of those pages the store
//! thread renders and sends.

use std::sync::{Arc, Mutex};

use super::super::track::{PagePlace, Tracks};
use super::{Parts, Store, StoreAhead};
use crate::lock;
use crate::names::PageName;
use crate::node::{ChapterRef, Node};
use crate::outline::{ChapterOutline, GUESS_MAX_BYTES};
use novelfs_library::{BookIndex, PageFormat};

/// Chapters after the one being read whose pages are pushed. A chapter's
/// pages become storable only once the reader lists it, so the store thread
/// renders a few chapters before that and is ready when the listing comes;
/// a reader who stops or jumps away leaves at most this many chapters
/// decoded and rendered for nothing.
pub(crate) const AHEAD_CHAPTERS: usize = 4;

/// Bytes of pages pushed ahead of one reader position, at most, counted
/// from the page read: they take the kernel's memory and the other core's
/// time whether the reader comes or not. 2 MiB holds the next 4 chapters of
/// a typical novel (10–60 KB of text a chapter) and stops a few dozen pages
/// into a chapter of thousands.
pub(crate) const AHEAD_BYTES: u64 = 2 << 20;

/// Bytes rendered for one plan and not yet stored (their inodes not held
/// yet, or a store refused and waiting for its retry), at most: what the
/// store thread renders before the reader catches up. Several chapters of
/// typical pages (up to 60 KB of text each) fit.
const IN_FLIGHT_BYTES: u64 = 1 << 20;

/// The kernel member's part of a reader's track: the page it read last
/// in one format, of which version, and what to push ahead of it.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub(crate) chapter: ChapterRef,
    /// Of `chapter` in its track's index.
    pub(crate) position: usize,
    /// The offset read (0: none of this chapter yet, every page wanted) and
    /// the format read.
    pub(super) offset: u64,
    pub(super) format: PageFormat,
    pub(super) version: u64,
    /// When it was read, among every page read (the most recent highest):
    /// the plans are made and served in that order.
    pub(super) read_at: u64,
    /// Its reader goes through the book last chapter first: the chapters
    /// "after" it are those before it in the book.
    pub(super) backward: bool,
    /// What to push ahead of it, made once per place (`None`: not yet).
    pub(super) plan: Option<Arc<Planned>>,
}

impl Place {
    /// The position of the chapter `ahead` chapters on from its own, the
    /// way its reader goes (`None`: before the book's first).
    pub(super) fn ahead(&self, ahead: usize) -> Option<usize> {
        match self.backward {
            true => self.position.checked_sub(ahead),
            false => Some(self.position + ahead),
        }
    }

    pub(super) fn at(&self, other: &Place) -> bool {
        self.format == other.format && self.is_at(&other.chapter, other.offset, other.version)
    }

    /// Whether it is the page at `offset` of `version` of `chapter` (in
    /// its format).
    pub(super) fn is_at(&self, chapter: &ChapterRef, offset: u64, version: u64) -> bool {
        self.chapter == *chapter && self.offset == offset && self.version == version
    }
}

impl PagePlace for Place {
    fn file(&self) -> &std::ffi::OsStr {
        &self.chapter.file
    }
    fn placed_at(&mut self, position: usize) {
        self.position = position;
    }
}

/// A page read as the store thread plans ahead of it: its place and its
/// book's chapters (from the track, as they were when it looked).
#[derive(Clone)]
pub(super) struct Reader {
    pub(super) index: Arc<BookIndex>,
    pub(super) place: Place,
    /// Chapters after its own the plan reaches: `AHEAD_CHAPTERS`, or in a
    /// bucket no more than the reader's reach (each chapter rendered
    /// ahead is fetched first).
    pub(super) chapters: usize,
}

/// A reader's plan with the chapters it reaches.
#[derive(Debug)]
pub(super) struct Planned {
    /// By distance from the reader's chapter (0: that one), as far as the
    /// plan looked: the chapter, the version planned and its reading chain
    /// (offset, size in the format read); `None` for one that cannot be
    /// read.
    chapters: Vec<Option<PlannedChapter>>,
    pub(super) wanted: Vec<Wanted>,
    /// False for the part of an earlier plan that is still ahead of a
    /// reader who moved on: it serves at once, and is made whole (looking
    /// only at the chapters it does not know yet) before anything is
    /// rendered ahead.
    whole: bool,
}

#[derive(Debug, Clone)]
struct PlannedChapter {
    chapter: ChapterRef,
    version: u64,
    chain: Arc<[(u64, u64)]>,
}

impl Planned {
    /// A plan that reaches `chapters` (the reader's first), each at
    /// version 1 with nothing wanted: what a test places a reader with.
    #[cfg(test)]
    pub(super) fn reaching(chapters: &[ChapterRef]) -> Planned {
        Planned {
            chapters: chapters
                .iter()
                .map(|c| {
                    Some(PlannedChapter {
                        chapter: c.clone(),
                        version: 1,
                        chain: Arc::from(Vec::new()),
                    })
                })
                .collect(),
            wanted: Vec::new(),
            whole: true,
        }
    }

    /// The chapter `ahead` chapters on, with its version, if planned.
    fn chapter(&self, ahead: usize) -> Option<(&ChapterRef, u64)> {
        let c = self.chapters.get(ahead)?.as_ref()?;
        Some((&c.chapter, c.version))
    }

    /// How many chapters on `chapter` is planned, with the version planned.
    pub(super) fn find(&self, chapter: &ChapterRef) -> Option<(usize, u64)> {
        (0..self.chapters.len()).find_map(|i| {
            self.chapter(i)
                .filter(|(c, _)| *c == chapter)
                .map(|(_, v)| (i, v))
        })
    }

    /// How many chapters after the reader's the plan reaches.
    pub(super) fn chapters_ahead(&self) -> usize {
        self.chapters.len().saturating_sub(1)
    }

    /// What is left of this plan for a reader `ahead` chapters further on,
    /// past page `offset` of that chapter.
    pub(super) fn shifted(&self, ahead: usize, offset: u64) -> Planned {
        Planned {
            chapters: self.chapters[ahead.min(self.chapters.len())..].to_vec(),
            wanted: self
                .wanted
                .iter()
                .filter(|w| w.ahead > ahead || (w.ahead == ahead && w.offset > offset))
                .map(|w| Wanted {
                    ahead: w.ahead - ahead,
                    ..*w
                })
                .collect(),
            whole: false,
        }
    }
}

/// One page of a plan: in the chapter `ahead` chapters after the one read
/// (0: that chapter), at `offset`, of `bytes` bytes in the format read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Wanted {
    pub ahead: usize,
    pub offset: u64,
    pub bytes: u64,
}

/// The pages to push ahead of a reader who read page `offset` of a
/// chapter, in reading order: the pages of that chapter after it, then
/// those of the next `chapters` chapters (`AHEAD_CHAPTERS` at most),
/// until the next page would pass `AHEAD_BYTES`. `chain(i)` gives the reading chain (offset, size in
/// the format read) of the chapter `i` after the one read (0: that one),
/// `None` past the book's end; a chapter that cannot be read has none.
fn plan(
    offset: u64,
    chapters: usize,
    mut chain: impl FnMut(usize) -> Option<Vec<(u64, u64)>>,
) -> Vec<Wanted> {
    let mut wanted = Vec::new();
    let mut total = 0u64;
    for ahead in 0..=chapters.min(AHEAD_CHAPTERS) {
        let Some(pages) = chain(ahead) else { break };
        for (page_offset, bytes) in pages {
            if ahead == 0 && page_offset <= offset {
                continue;
            }
            if total + bytes > AHEAD_BYTES {
                return wanted;
            }
            total += bytes;
            wanted.push(Wanted {
                ahead,
                offset: page_offset,
                bytes,
            });
        }
    }
    wanted
}

impl StoreAhead {
    /// Makes the plan of each reader that has none (and, with `whole`,
    /// completes each part of a plan), and keeps it with its place in the
    /// track (unless the reader moved meanwhile).
    pub(super) fn make_plans(
        &self,
        parts: &Parts,
        tracks: &Mutex<Tracks<Place>>,
        readers: &mut [Reader],
        whole: bool,
    ) {
        let mut made = false;
        for r in readers.iter_mut() {
            let part = match &r.place.plan {
                None => None,
                Some(p) if whole && !p.whole => Some(p.clone()),
                Some(_) => continue,
            };
            r.place.plan = Some(Arc::new(Self::plan_of(parts, r, part.as_deref())));
            made = true;
        }
        if made {
            let mut tracks = lock(tracks);
            for r in readers.iter() {
                let Some(track) = tracks.iter_mut().find(|t| *t.book == *r.place.chapter.book)
                else {
                    continue;
                };
                if let Some(now) = track.pages.iter_mut().find(|p| p.at(&r.place)) {
                    now.plan = r.place.plan.clone();
                }
            }
        }
    }

    /// The plan of a reader, with the chapters as they are now, or as
    /// `known` (a part of a plan for this place) has them.
    fn plan_of(parts: &Parts, r: &Reader, known: Option<&Planned>) -> Planned {
        let mut chapters: Vec<Option<PlannedChapter>> = Vec::new();
        let book_index = &r.index;
        let place = &r.place;
        let wanted = plan(place.offset, r.chapters, |ahead| {
            if let Some(c) = known.and_then(|k| k.chapters.get(ahead)) {
                chapters.push(c.clone());
                return Some(c.as_ref().map_or_else(Vec::new, |c| c.chain.to_vec()));
            }
            // A chapter over GUESS_MAX_BYTES ends the plan: its reader's
            // READ there starts a plan of its own.
            let (c, outline) = if ahead == 0 {
                // A chapter gone from its book ends the plan before it
                // starts: the reader's next READ says where it is.
                let c = place.chapter.clone();
                let file = parts.source.chapter_file(&c).ok()?;
                let outline = parts.outlines.outline_at(parts.source, &c, file).ok();
                (c, outline)
            } else {
                let entry = book_index.chapters.get(place.ahead(ahead)?)?;
                let c = crate::node::chapter_ref(&place.chapter.book, &entry.os_name);
                let file = parts.source.chapter_file(&c).ok()?;
                if file.meta.len() > GUESS_MAX_BYTES {
                    return None;
                }
                let outline = parts.outlines.outline_at(parts.source, &c, file).ok();
                (c, outline)
            };
            // Past the page read, only the version read: pages of another
            // version are other inodes, which the reader has not reached.
            let current =
                |o: &ChapterOutline| ahead > 0 || place.offset == 0 || o.version == place.version;
            let planned = match outline {
                Some(o) if current(&o) => o.outline.ok().map(|outline| PlannedChapter {
                    chapter: c,
                    version: o.version,
                    chain: outline
                        .pages
                        .iter()
                        .map(|p| (p.offset, p.bytes(place.format)))
                        .collect(),
                }),
                _ => None,
            };
            let chain = planned.as_ref().map_or_else(Vec::new, |c| c.chain.to_vec());
            chapters.push(planned);
            Some(chain)
        });
        Planned {
            chapters,
            wanted,
            whole: true,
        }
    }

    /// With `out`: adds to it the stores of `r`'s plan that the kernel can
    /// take now. Without: renders the pages of the plan whose inodes the
    /// kernel does not hold yet, until `stop` says so. Either way, until
    /// `in_flight` reaches `IN_FLIGHT_BYTES`.
    pub(super) fn batch(
        &self,
        parts: &Parts,
        r: &Place,
        mut out: Option<&mut Vec<Store>>,
        in_flight: &mut u64,
        stop: &dyn Fn() -> bool,
    ) {
        let Some(plan) = &r.plan else { return };
        for w in &plan.wanted {
            if *in_flight >= IN_FLIGHT_BYTES || stop() {
                return;
            }
            let Some((chapter, version)) = plan.chapter(w.ahead) else {
                continue;
            };
            let version = &version;
            let page = PageName {
                offset: w.offset,
                limit: None,
                format: r.format,
            };
            let node = Node::Page {
                chapter: chapter.clone(),
                page,
                version: *version,
            };
            let held = parts.inodes.held_page(&node);
            let wanted_now = match (&out, held) {
                (Some(out), Some(ino)) => {
                    // Once per inode: not stored yet, nor waiting for a
                    // retry; and not while its chapter's listing goes on,
                    // whose end stores it.
                    let state = lock(&self.state);
                    !state.has(ino)
                        && !out.iter().any(|s| s.ino == ino)
                        && !state.open_listings.contains(chapter)
                }
                (None, None) => true,
                _ => false,
            };
            if !wanted_now {
                continue;
            }
            if let (Some(out), Some(ino)) = (out.as_mut(), held) {
                let Ok(bytes) = parts
                    .pages
                    .for_kernel(parts.source, chapter, page, *version)
                else {
                    continue;
                };
                let len = bytes.len() as u64;
                // Claimed now, not when the kernel has taken it: the end of
                // the chapter's listing and the reader's open store pages
                // too, on their own threads, and one of them may have
                // claimed this page while it was rendered here.
                if let Some(store) = self.claim(ino, node, bytes) {
                    *in_flight += len;
                    out.push(store);
                    return;
                }
                continue;
            }
            // Kept until the kernel is given it (`Pages::for_kernel`).
            if let Ok(bytes) = parts.pages.bytes(parts.source, chapter, page, *version) {
                *in_flight += bytes.len() as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chains(chapters: &[&[(u64, u64)]]) -> impl FnMut(usize) -> Option<Vec<(u64, u64)>> {
        let chapters: Vec<Vec<(u64, u64)>> = chapters.iter().map(|c| c.to_vec()).collect();
        move |i| chapters.get(i).cloned()
    }

    #[test]
    fn a_plan_takes_the_rest_of_the_chapter_then_the_next_ones() {
        let wanted = plan(
            401,
            AHEAD_CHAPTERS,
            chains(&[
                &[(1, 10), (401, 10), (801, 10)],
                &[(1, 20), (401, 5)],
                &[],
                &[(1, 30)],
            ]),
        );
        let got: Vec<(usize, u64)> = wanted.iter().map(|w| (w.ahead, w.offset)).collect();
        assert_eq!(got, [(0, 801), (1, 1), (1, 401), (3, 1)]);
    }

    #[test]
    fn a_plan_reaches_at_most_the_chapters_ahead() {
        let one: &[(u64, u64)] = &[(1, 100)];
        let book = vec![one; 3 * AHEAD_CHAPTERS];
        let wanted = plan(1, AHEAD_CHAPTERS, chains(&book));
        assert_eq!(wanted.len(), AHEAD_CHAPTERS, "only the chapters after");
        assert_eq!(wanted.last().unwrap().ahead, AHEAD_CHAPTERS);
        assert!(wanted.iter().all(|w| w.ahead > 0), "page 1 was read");
        let from_start = plan(0, AHEAD_CHAPTERS, chains(&book));
        assert_eq!(from_start.len(), AHEAD_CHAPTERS + 1, "offset 0: all of it");
    }

    #[test]
    fn a_plan_reaches_no_further_than_it_is_told() {
        let one: &[(u64, u64)] = &[(1, 100), (401, 100)];
        let book = vec![one; 3 * AHEAD_CHAPTERS];
        let alone = plan(1, 0, chains(&book));
        let got: Vec<(usize, u64)> = alone.iter().map(|w| (w.ahead, w.offset)).collect();
        assert_eq!(got, [(0, 401)], "a lone read: the rest of its chapter");
        assert_eq!(plan(1, 2, chains(&book)).last().unwrap().ahead, 2);
        let wide = plan(1, 10 * AHEAD_CHAPTERS, chains(&book));
        assert_eq!(wide.last().unwrap().ahead, AHEAD_CHAPTERS, "at most");
    }

    #[test]
    fn a_plan_stops_before_its_bytes() {
        let page = 300 << 10;
        let big: Vec<(u64, u64)> = (0..20).map(|i| (1 + 400 * i, page)).collect();
        let wanted = plan(1, AHEAD_CHAPTERS, chains(&[&big, &big]));
        let total: u64 = wanted.iter().map(|w| w.bytes).sum();
        assert!(total <= AHEAD_BYTES, "{total}");
        assert_eq!(wanted.len() as u64, AHEAD_BYTES / page);
        assert!(wanted.iter().all(|w| w.ahead == 0));
        let huge = plan(
            0,
            AHEAD_CHAPTERS,
            chains(&[&[(1, AHEAD_BYTES + 1)], &[(1, 1)]]),
        );
        assert!(
            huge.is_empty(),
            "a page over the bound is not pushed: {huge:?}"
        );
    }
}
