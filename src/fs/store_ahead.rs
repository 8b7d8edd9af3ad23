//! Pages pushed into the kernel's page cache ahead of a reader (contract
//! §2.4a; the kernel is told by `crate::mount::pusher` with
//! FUSE_NOTIFY_STORE). Once a reader has read a page (a READ of it reached
//! the daemon), the rest of that chapter and the chapters after it in the
//! book, in the format it read, are rendered on the store thread and stored
//! into the inodes the kernel holds for them: its reads of those pages then
//! send no READ.
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

use std::collections::{HashSet, VecDeque};
use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::inodes::InodeTable;
use super::lock;
use super::names::PageName;
use super::node::{ChapterRef, Node};
use super::outline::{ChapterOutline, GUESS_MAX_BYTES, Outlines};
use super::pages::Pages;
use super::source::Source;
use crate::library::{BookIndex, PageFormat};

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
pub(crate) const IN_FLIGHT_BYTES: u64 = 1 << 20;

/// Bytes stored at the end of one chapter directory's listing, at most
/// (`StoreAhead::at_listing_end`): the answer to the reader's last READDIR
/// waits for them, so a chapter of many pages leaves the rest to the store
/// thread. A few typical pages.
pub(crate) const LISTING_END_BYTES: u64 = 256 << 10;

/// Reader positions followed at once, one per book and format, the most
/// recent first: `grep -r` reads both formats, a few agents a few books.
const READERS: usize = 4;

/// When a store the kernel refused with ENOENT is sent again, after each
/// refusal. The kernel makes a page's inode while the reader parses the
/// reply that named it, microseconds to a few milliseconds after the daemon
/// sent it; the reader's next request in the book (its next listing) is a
/// sign it has, and retries every refused store at once. After the last
/// refusal the store is dropped: the reader's READ serves the page.
pub(crate) const RETRY_AFTER: [Duration; 5] = [
    Duration::from_micros(100),
    Duration::from_micros(500),
    Duration::from_millis(2),
    Duration::from_millis(10),
    Duration::from_millis(50),
];

/// Where a reader is: the page it read last, of which version.
#[derive(Debug, Clone)]
struct Reader {
    chapter: ChapterRef,
    /// The offset read (0: none of this chapter yet, every page wanted) and
    /// the format read.
    offset: u64,
    format: PageFormat,
    version: u64,
    /// What to push ahead of it, made once per position (`None`: not yet).
    plan: Option<Arc<Planned>>,
}

impl Reader {
    fn book(&self) -> &OsStr {
        &self.chapter.book
    }

    fn at(&self, other: &Reader) -> bool {
        self.chapter == other.chapter
            && self.offset == other.offset
            && self.format == other.format
            && self.version == other.version
    }
}

/// A reader's plan with the chapters it reaches.
#[derive(Debug)]
struct Planned {
    /// By distance from the reader's chapter (0: that one), as far as the
    /// plan looked: the chapter, the version planned and its reading chain
    /// (offset, size in the format read); `None` for one that cannot be
    /// read.
    chapters: Vec<Option<PlannedChapter>>,
    /// The book's chapters and the reader's chapter's place among them.
    index: Option<(Arc<BookIndex>, usize)>,
    wanted: Vec<Wanted>,
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
    /// The chapter `ahead` chapters on, with its version, if planned.
    fn chapter(&self, ahead: usize) -> Option<(&ChapterRef, u64)> {
        let c = self.chapters.get(ahead)?.as_ref()?;
        Some((&c.chapter, c.version))
    }

    /// How many chapters on `chapter` is planned, with the version planned.
    fn find(&self, chapter: &ChapterRef) -> Option<(usize, u64)> {
        (0..self.chapters.len()).find_map(|i| {
            self.chapter(i)
                .filter(|(c, _)| *c == chapter)
                .map(|(_, v)| (i, v))
        })
    }

    /// What is left of this plan for a reader `ahead` chapters further on,
    /// past page `offset` of that chapter.
    fn shifted(&self, ahead: usize, offset: u64) -> Planned {
        Planned {
            chapters: self.chapters[ahead.min(self.chapters.len())..].to_vec(),
            index: self.index.clone().map(|(i, at)| (i, at + ahead)),
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

/// One page of a plan: in the chapter `ahead` chapters after the one read
/// (0: that chapter), at `offset`, of `bytes` bytes in the format read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wanted {
    pub ahead: usize,
    pub offset: u64,
    pub bytes: u64,
}

/// The pages to push ahead of a reader who read page `offset` of a
/// chapter, in reading order: the pages of that chapter after it, then
/// those of the next `AHEAD_CHAPTERS` chapters, until the next page would
/// pass `AHEAD_BYTES`. `chain(i)` gives the reading chain (offset, size in
/// the format read) of the chapter `i` after the one read (0: that one),
/// `None` past the book's end; a chapter that cannot be read has none.
pub(crate) fn plan(
    offset: u64,
    mut chain: impl FnMut(usize) -> Option<Vec<(u64, u64)>>,
) -> Vec<Wanted> {
    let mut wanted = Vec::new();
    let mut total = 0u64;
    for ahead in 0..=AHEAD_CHAPTERS {
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

#[derive(Default)]
struct State {
    /// The most recent first.
    readers: VecDeque<Reader>,
    /// Bumped by each read at a new place and each listing in a reader's
    /// book; the store thread plans again when it moves.
    events: u64,
    planned: u64,
    /// The plan has more to do (its stores were sent first).
    again: bool,
    /// Stores the kernel refused with ENOENT, to send again.
    retries: Vec<Store>,
    /// Inodes the kernel was given the bytes of (stored or read), or that
    /// were given up on, while it holds them: an inode's bytes never
    /// change, so once is enough. A FORGET takes the inode out (the kernel
    /// dropped it with its pages, and its number may come back for another
    /// page), so this holds at most what the kernel holds.
    done: HashSet<u64>,
}

impl State {
    /// Whether the kernel was given `ino` (or it was given up on), or a
    /// store of it waits for its retry: not to be stored now.
    fn has(&self, ino: u64) -> bool {
        self.done.contains(&ino) || self.retries.iter().any(|s| s.ino == ino)
    }
}

pub(crate) struct StoreAhead {
    state: Mutex<State>,
    wake: Condvar,
    /// Whether any reader is followed: listings skip the lock while none is.
    any_reader: AtomicBool,
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
        }
    }

    /// A READ of `page` (of `version`) reached the daemon: its reader is
    /// there now.
    pub(crate) fn read(&self, chapter: &ChapterRef, page: PageName, version: u64) {
        // A page with a limit is off the reading chain: it says nothing of
        // where a reader of the chain is.
        if page.limit.is_some() {
            return;
        }
        let mut reader = Reader {
            chapter: chapter.clone(),
            offset: page.offset,
            format: page.format,
            version,
            plan: None,
        };
        let mut state = lock(&self.state);
        let same = |r: &Reader| r.format == page.format && *r.book() == *chapter.book;
        if let Some(i) = state.readers.iter().position(same) {
            let was = state.readers.remove(i).expect("found");
            if was.at(&reader) {
                state.readers.insert(i, was);
                return;
            }
            // Further on in its plan: what the plan knows serves at once.
            if let Some(plan) = &was.plan
                && let Some((ahead, planned)) = plan.find(chapter)
                && planned == version
            {
                reader.plan = Some(Arc::new(plan.shifted(ahead, page.offset)));
            }
        }
        state.readers.push_front(reader);
        state.readers.truncate(READERS);
        state.events += 1;
        self.any_reader.store(true, Ordering::Relaxed);
        drop(state);
        self.wake.notify_one();
    }

    /// Whether a listing may concern a reader (cheap: no lock).
    pub(crate) fn following(&self) -> bool {
        self.any_reader.load(Ordering::Relaxed)
    }

    /// The chapter directory `chapter` is being listed. If it is one of the
    /// chapters ahead of a reader, its pages become storable once the
    /// kernel has the reply, and the reader is taken to be there: a reader
    /// lists the chapter it reads next, and its reads there may all be
    /// served from stored pages (no READ would move it on).
    pub(crate) fn listed(&self, chapter: &ChapterRef) {
        let mut state = lock(&self.state);
        let mut moved = false;
        for r in state.readers.iter_mut() {
            if *r.book() != *chapter.book {
                continue;
            }
            let Some(plan) = &r.plan else {
                // Not planned yet: the plan will see what is held by then.
                moved = true;
                continue;
            };
            let Some((ahead, version)) = plan.find(chapter) else {
                continue;
            };
            moved = true;
            // Its own chapter: still there, with more pages held now.
            if ahead == 0 {
                continue;
            }
            // What the plan already knows of the chapters it reaches serves
            // without looking at the disk again.
            let shifted = Some(Arc::new(plan.shifted(ahead, 0)));
            *r = Reader {
                chapter: chapter.clone(),
                offset: 0,
                format: r.format,
                version,
                plan: shifted,
            };
        }
        if moved {
            state.events += 1;
            drop(state);
            self.wake.notify_one();
        }
    }

    /// The store of a page the kernel was not given yet (neither stored
    /// nor read), claimed: the store thread skips it. `None` once it was.
    pub(crate) fn claim(&self, ino: u64, node: Node, bytes: Arc<Vec<u8>>) -> Option<Store> {
        let mut state = lock(&self.state);
        if state.has(ino) {
            return None;
        }
        state.done.insert(ino);
        Some(Store::new(ino, bytes, node))
    }

    /// Whether the kernel may not have the page `ino` yet: it was neither
    /// stored nor read since the kernel made the inode.
    pub(crate) fn not_given(&self, ino: u64) -> bool {
        let state = lock(&self.state);
        !state.has(ino)
    }

    /// A READ of `ino` reached the daemon: the kernel has its bytes now.
    pub(crate) fn given(&self, ino: u64) {
        lock(&self.state).done.insert(ino);
    }

    /// The kernel forgot `ino`: whatever it was given there went with it.
    pub(crate) fn forgotten(&self, ino: u64) {
        if !self.following() {
            return;
        }
        let mut state = lock(&self.state);
        state.done.remove(&ino);
        state.retries.retain(|s| s.ino != ino);
    }

    /// The stores to send before answering a READDIR past the first reply
    /// of `chapter`'s listing: the reader has taken that reply in, so the
    /// kernel holds the inodes it named, and the reader reads the pages
    /// next. The pages of the chapter that a reader's plan wants (up to
    /// `LISTING_END_BYTES`) are stored then, on the request's thread: the
    /// store thread, woken by the same listing, races the reader's open and
    /// READ, and under io_uring it lost most races. Each store is claimed
    /// (`claim`: the store thread skips it); say how it went with `finished`.
    pub(crate) fn at_listing_end(&self, parts: &Parts, chapter: &ChapterRef) -> Vec<Store> {
        let wanted: Vec<(PageName, u64, u64)> = {
            let state = lock(&self.state);
            let mut wanted = Vec::new();
            for r in &state.readers {
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
        let mut out = Vec::new();
        let mut total = 0;
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
            let Ok(bytes) = parts.pages.bytes(parts.source, chapter, page, version) else {
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

    /// The next stores to send: waits until a reader moves, a listing comes
    /// in a reader's book or a refused store is due again (at most `wait`,
    /// when given; then nothing may be returned).
    pub(crate) fn next(&self, parts: &Parts, wait: Option<Duration>) -> Vec<Store> {
        let give_up_at = wait.map(|w| Instant::now() + w);
        let (mut readers, retries, events) = {
            let mut state = lock(&self.state);
            loop {
                let now = Instant::now();
                if state.events != state.planned || state.again {
                    break;
                }
                let due = state.retries.iter().map(|s| s.due).min();
                if due.is_some_and(|d| d <= now) {
                    break;
                }
                if give_up_at.is_some_and(|g| g <= now) {
                    return Vec::new();
                }
                let until = match (due, give_up_at) {
                    (Some(d), Some(g)) => Some(d.min(g)),
                    (d, g) => d.or(g),
                };
                state = match until {
                    Some(t) => {
                        self.wake
                            .wait_timeout(state, t.saturating_duration_since(now))
                            .unwrap_or_else(|e| e.into_inner())
                            .0
                    }
                    None => self.wake.wait(state).unwrap_or_else(|e| e.into_inner()),
                };
            }
            // A new event means the kernel went on with the reader's
            // requests, so it parsed the replies before: every refused store
            // is tried again now, not only those due.
            let now = Instant::now();
            let fresh = state.events != state.planned;
            state.planned = state.events;
            state.again = false;
            let (retries, later): (Vec<Store>, Vec<Store>) = std::mem::take(&mut state.retries)
                .into_iter()
                .partition(|s| fresh || s.due <= now);
            state.retries = later;
            (state.readers.clone(), retries, state.planned)
        };
        // Refused stores first, before any planning: the kernel most likely
        // has their inodes now, and their reader is about to read them.
        let retried: Vec<Store> = retries
            .into_iter()
            .filter(|s| parts.inodes.held(s.ino))
            .collect();
        if !retried.is_empty() {
            lock(&self.state).again = true;
            return retried;
        }
        self.make_plans(parts, &mut readers, false);
        let mut out = Vec::new();
        let mut in_flight = 0;
        // Then what the kernel can take now, one page at a time, each sent
        // before the next is rendered: the reader may be about to read it,
        // and where it is by the next call decides what comes next.
        for r in &readers {
            if out.is_empty() {
                self.batch(parts, r, Some(&mut out), &mut in_flight, &|| false);
            }
        }
        if !out.is_empty() {
            // Then the rest of the plan, on the next call.
            lock(&self.state).again = true;
            return out;
        }
        // Then the pages whose inodes the kernel does not hold yet, rendered
        // so that they are ready when the reader lists their chapter; given
        // up as soon as anything happens, which may have made some storable.
        let moved = || lock(&self.state).events != events;
        self.make_plans(parts, &mut readers, true);
        for r in &readers {
            self.batch(parts, r, None, &mut in_flight, &moved);
        }
        out
    }

    /// Makes the plan of each reader that has none (and, with `whole`,
    /// completes each part of a plan), and keeps it with the reader (unless
    /// it moved meanwhile).
    fn make_plans(&self, parts: &Parts, readers: &mut VecDeque<Reader>, whole: bool) {
        let mut made = false;
        for r in readers.iter_mut() {
            let part = match &r.plan {
                None => None,
                Some(p) if whole && !p.whole => Some(p.clone()),
                Some(_) => continue,
            };
            r.plan = Some(Arc::new(Self::plan_of(parts, r, part.as_deref())));
            made = true;
        }
        if made {
            let mut state = lock(&self.state);
            for r in readers.iter() {
                if let Some(now) = state.readers.iter_mut().find(|s| s.at(r)) {
                    now.plan = r.plan.clone();
                }
            }
        }
    }

    /// The plan of a reader, with the chapters as they are now, or as
    /// `known` (a part of a plan for this position) has them.
    fn plan_of(parts: &Parts, r: &Reader, known: Option<&Planned>) -> Planned {
        let mut chapters: Vec<Option<PlannedChapter>> = Vec::new();
        let index = match known.and_then(|k| k.index.clone()) {
            Some(index) => index,
            None => match parts.source.chapter_file(&r.chapter) {
                Ok(at) => (at.index, at.position),
                Err(_) => {
                    return Planned {
                        chapters,
                        index: None,
                        wanted: Vec::new(),
                        whole: true,
                    };
                }
            },
        };
        let (book_index, position) = (&index.0, index.1);
        let wanted = plan(r.offset, |ahead| {
            if let Some(c) = known.and_then(|k| k.chapters.get(ahead)) {
                chapters.push(c.clone());
                return Some(c.as_ref().map_or_else(Vec::new, |c| c.chain.to_vec()));
            }
            // A chapter over GUESS_MAX_BYTES ends the plan: its reader's
            // READ there starts a plan of its own.
            let (c, outline) = if ahead == 0 {
                let c = r.chapter.clone();
                let outline = parts.outlines.outline(parts.source, &c).ok();
                (c, outline)
            } else {
                let entry = book_index.chapters.get(position + ahead)?;
                let c = super::node::chapter_ref(&r.chapter.book, &entry.os_name);
                let file = parts.source.chapter_file(&c).ok()?;
                if file.meta.len() > GUESS_MAX_BYTES {
                    return None;
                }
                let outline = parts.outlines.outline_at(parts.source, &c, file).ok();
                (c, outline)
            };
            // Past the page read, only the version read: pages of another
            // version are other inodes, which the reader has not reached.
            let current = |o: &ChapterOutline| ahead > 0 || r.offset == 0 || o.version == r.version;
            let planned = match outline {
                Some(o) if current(&o) => o.outline.ok().map(|outline| PlannedChapter {
                    chapter: c,
                    version: o.version,
                    chain: outline
                        .pages
                        .iter()
                        .map(|p| match r.format {
                            PageFormat::Text => (p.offset, p.text_bytes),
                            PageFormat::Json => (p.offset, p.json_bytes),
                        })
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
            index: Some(index),
            wanted,
            whole: true,
        }
    }

    /// With `out`: adds to it the stores of `r`'s plan that the kernel can
    /// take now. Without: renders the pages of the plan whose inodes the
    /// kernel does not hold yet, until `stop` says so. Either way, until
    /// `in_flight` reaches `IN_FLIGHT_BYTES`.
    fn batch(
        &self,
        parts: &Parts,
        r: &Reader,
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
                    // Once per inode: not stored yet, nor waiting for a retry.
                    let state = lock(&self.state);
                    !state.has(ino) && !out.iter().any(|s| s.ino == ino)
                }
                (None, None) => true,
                _ => false,
            };
            if !wanted_now {
                continue;
            }
            let Ok(bytes) = parts.pages.bytes(parts.source, chapter, page, *version) else {
                continue;
            };
            *in_flight += bytes.len() as u64;
            if let (Some(out), Some(ino)) = (out.as_mut(), held) {
                out.push(Store::new(ino, bytes, node));
                return;
            }
        }
    }

    /// What the kernel said to `store`: a refused one is sent again later
    /// (`RETRY_AFTER`), up to a point.
    pub(crate) fn finished(&self, mut store: Store, outcome: StoreOutcome) {
        let mut state = lock(&self.state);
        match outcome {
            StoreOutcome::NotHeld if store.refused < RETRY_AFTER.len() => {
                store.due = Instant::now() + RETRY_AFTER[store.refused];
                store.refused += 1;
                state.retries.push(store);
            }
            StoreOutcome::NotHeld => {
                log::debug!(
                    "not stored ahead (the kernel does not hold it): {}",
                    store.path()
                );
                state.done.insert(store.ino);
            }
            StoreOutcome::Stored | StoreOutcome::Failed => {
                state.done.insert(store.ino);
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
        let wanted = plan(1, chains(&book));
        assert_eq!(wanted.len(), AHEAD_CHAPTERS, "only the chapters after");
        assert_eq!(wanted.last().unwrap().ahead, AHEAD_CHAPTERS);
        assert!(wanted.iter().all(|w| w.ahead > 0), "page 1 was read");
        let from_start = plan(0, chains(&book));
        assert_eq!(from_start.len(), AHEAD_CHAPTERS + 1, "offset 0: all of it");
    }

    #[test]
    fn a_plan_stops_before_its_bytes() {
        let page = 300 << 10;
        let big: Vec<(u64, u64)> = (0..20).map(|i| (1 + 400 * i, page)).collect();
        let wanted = plan(1, chains(&[&big, &big]));
        let total: u64 = wanted.iter().map(|w| w.bytes).sum();
        assert!(total <= AHEAD_BYTES, "{total}");
        assert_eq!(wanted.len() as u64, AHEAD_BYTES / page);
        assert!(wanted.iter().all(|w| w.ahead == 0));
        let huge = plan(0, chains(&[&[(1, AHEAD_BYTES + 1)], &[(1, 1)]]));
        assert!(
            huge.is_empty(),
            "a page over the bound is not pushed: {huge:?}"
        );
    }

    #[test]
    fn a_refused_store_is_retried_a_bounded_number_of_times() {
        let ahead = StoreAhead::new();
        let store = || Store {
            ino: 7,
            bytes: Arc::new(vec![1]),
            node: Node::Root,
            refused: 0,
            due: Instant::now(),
        };
        let mut s = store();
        for i in 0..RETRY_AFTER.len() {
            ahead.finished(s, StoreOutcome::NotHeld);
            let mut state = lock(&ahead.state);
            assert_eq!(state.retries.len(), 1, "refusal {i} is retried");
            s = state.retries.pop().unwrap();
            assert_eq!(s.refused, i + 1);
        }
        ahead.finished(s, StoreOutcome::NotHeld);
        let state = lock(&ahead.state);
        assert!(state.retries.is_empty(), "dropped after the last retry");
        assert!(state.done.contains(&7), "and not planned again");
    }

    #[test]
    fn a_forgotten_inode_is_no_longer_given() {
        let ahead = StoreAhead::new();
        let chapter =
            crate::fs::node::chapter_ref(&Arc::from(OsStr::new("书")), OsStr::new("第1章.md"));
        let page = PageName {
            offset: 1,
            limit: None,
            format: PageFormat::Text,
        };
        ahead.read(&chapter, page, 1);
        ahead.given(7);
        assert!(!ahead.not_given(7));
        ahead.forgotten(7);
        assert!(ahead.not_given(7), "the kernel dropped it with its pages");
    }
}
