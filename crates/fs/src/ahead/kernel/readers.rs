//! How the kernel member follows readers on their tracks: the page each
//! read last (one per book and format: its track's `Place`), moved on by
//! its READs and by its listings of the chapters its plan reaches.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::super::track::{Track, Tracks};
use super::StoreAhead;
use super::plan::{AHEAD_CHAPTERS, Place};
use crate::lock;
use crate::names::PageName;
use crate::node::ChapterRef;
use novelfs_library::BookIndex;

/// Pages read followed at once, one per book and format, the most recent
/// first: `grep -r` reads both formats, a few agents a few books.
const READERS: usize = 4;

/// A listing wakes the store thread once a reader's plan reaches fewer
/// chapters than this past the one listed: it then plans and renders
/// `AHEAD_CHAPTERS` on again, every third chapter of a walk.
const WAKE_BELOW_AHEAD: usize = AHEAD_CHAPTERS / 2;

/// Chapter listings under way at once that the store thread leaves to
/// their end (`State::open_listings`): one per reader walking, a few more
/// for listings never finished (`ls | head`), which only lose their stores.
const OPEN_LISTINGS: usize = 8;

impl StoreAhead {
    /// A READ of `page` (of `version`) of the chapter at `position` of
    /// `track`'s book reached the daemon: its reader is there now. The
    /// track (in `tracks`, moved to the front) is the reader's.
    pub(crate) fn read(
        &self,
        tracks: &mut Tracks<Place>,
        chapter: &ChapterRef,
        position: usize,
        page: PageName,
        version: u64,
    ) {
        let Some(track) = tracks.find(&chapter.book) else {
            return;
        };
        let same = track.pages.iter().position(|p| p.format == page.format);
        // Pieces of one page: the reader has not moved.
        if let Some(i) = same
            && track.pages[i].is_at(chapter, page.offset, version)
        {
            return;
        }
        let mut place = Place {
            chapter: chapter.clone(),
            position,
            offset: page.offset,
            format: page.format,
            version,
            read_at: self.reads.fetch_add(1, Ordering::Relaxed) + 1,
            backward: track.backward(),
            plan: None,
        };
        if let Some(i) = same {
            let was = track.pages.remove(i);
            // Further on in its plan: what the plan knows serves at once.
            if let Some(plan) = &was.plan
                && let Some((ahead, planned)) = plan.find(chapter)
                && planned == version
            {
                place.plan = Some(Arc::new(plan.shifted(ahead, page.offset)));
            }
        }
        track.pages.push(place);
        Self::bound(tracks);
        let mut state = lock(&self.state);
        state.events += 1;
        self.any_reader.store(true, Ordering::Relaxed);
        self.wake(state);
    }

    /// Wakes the store thread for the event just added under `state`, if
    /// it waits: a notify is a system call whether or not a thread waits,
    /// and a busy store thread sees the event before it waits again.
    fn wake(&self, state: std::sync::MutexGuard<'_, super::State>) {
        let waiting = state.waiting;
        drop(state);
        if waiting {
            self.wake.notify_one();
        } else {
            #[cfg(test)]
            self.wakes_spared.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Drops the least recent pages read past `READERS`.
    fn bound(tracks: &mut Tracks<Place>) {
        fn read(tracks: &Tracks<Place>) -> impl Iterator<Item = u64> + '_ {
            tracks
                .iter()
                .flat_map(|t| t.pages.iter().map(|p| p.read_at))
        }
        while read(tracks).count() > READERS {
            let Some(oldest) = read(tracks).min() else {
                return;
            };
            for t in tracks.iter_mut() {
                t.pages.retain(|p| p.read_at != oldest);
            }
        }
    }

    /// A reader whose track turned (it goes through the book the other way
    /// than its pages read say, known only once it listed two chapters):
    /// its places are put on `chapter`, the one it lists, with no plan, so
    /// that the store thread plans again the way it goes.
    fn turned(track: &mut Track<Place>, chapter: &ChapterRef) {
        let backward = track.backward();
        if track.pages.iter().all(|p| p.backward == backward) {
            return;
        }
        for p in track.pages.iter_mut().filter(|p| p.backward != backward) {
            if let Some(place) = Self::placed_anew(&track.index, p, chapter) {
                *p = Place { backward, ..place };
            }
        }
    }

    /// `place`'s reader put on `chapter` (its position in `index`), with
    /// no plan: the store thread plans it again. `None` when the book's
    /// index does not hold the chapter.
    fn placed_anew(index: &BookIndex, place: &Place, chapter: &ChapterRef) -> Option<Place> {
        use std::os::unix::ffi::OsStrExt;
        let position = index.exact(chapter.file.as_bytes())?;
        Some(Place {
            chapter: chapter.clone(),
            position,
            offset: 0,
            format: place.format,
            version: 0,
            read_at: place.read_at,
            backward: place.backward,
            plan: None,
        })
    }

    /// Whether a listing may concern a reader (cheap: no lock).
    pub(crate) fn following(&self) -> bool {
        self.any_reader.load(Ordering::Relaxed)
    }

    /// The chapter directory `chapter` is being listed (`first`: from
    /// offset 0) on `track` (its book's, if one is kept). If it is one of
    /// the chapters ahead of a reader, its pages become storable once the
    /// kernel has the first reply, and the reader is taken to be there: a
    /// reader lists the chapter it reads next, and its reads there may all
    /// be served from stored pages (no READ would move it on). Those pages
    /// are stored at the listing's end, on its own thread
    /// (`at_listing_end`): the store thread, woken by the first READDIR,
    /// renders the chapters after it meanwhile and stores none of this
    /// one's. A store thread that sent them as soon as the kernel held them
    /// would race the reader: claimed by it and not sent yet (preempted on
    /// busy CPUs), a page would be skipped at the listing's end and READ as
    /// well, paid twice.
    pub(crate) fn listed(
        &self,
        track: Option<&mut Track<Place>>,
        chapter: &ChapterRef,
        first: bool,
    ) {
        let Some(track) = track.filter(|t| !t.pages.is_empty()) else {
            return;
        };
        Self::turned(track, chapter);
        let mut moved = false;
        let mut short = false;
        for p in track.pages.iter_mut() {
            let Some(plan) = &p.plan else {
                // Not planned yet: the plan will see what is held by then.
                moved = true;
                short = true;
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
            // A plan whose chain does not fit the place's position (made
            // while the book's chapters were another list) tells no place:
            // the reader is put on the chapter listed, to be planned again.
            let Some(position) = p.ahead(ahead) else {
                short = true;
                if let Some(place) = Self::placed_anew(&track.index, p, chapter) {
                    *p = place;
                }
                continue;
            };
            // What the plan already knows of the chapters it reaches serves
            // without looking at the disk again.
            let shifted = plan.shifted(ahead, 0);
            short |= shifted.chapters_ahead() < WAKE_BELOW_AHEAD;
            *p = Place {
                chapter: chapter.clone(),
                position,
                offset: 0,
                format: p.format,
                version,
                read_at: p.read_at,
                backward: p.backward,
                plan: Some(Arc::new(shifted)),
            };
        }
        let mut state = lock(&self.state);
        if first {
            state.open_listings.retain(|c| c != chapter);
            if state.open_listings.len() == OPEN_LISTINGS {
                state.open_listings.pop_front();
            }
            state.open_listings.push_back(chapter.clone());
        }
        if moved {
            state.events += 1;
            // The listing's end has nothing for the store thread, nor has a
            // listing while the plan still reaches a few chapters further
            // (their pages are rendered already): the event waits for its
            // next wake-up, since a wake-up per chapter listed would cost a cold
            // `grep -r` the futex calls on either side and the store
            // thread's context switches for every chapter.
            if first && short {
                #[cfg(test)]
                self.woken_by_listings.fetch_add(1, Ordering::Relaxed);
                self.wake(state);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::plan::Planned;
    use super::*;
    use novelfs_library::{Chapter, PageFormat};
    use std::ffi::OsStr;

    /// A backward reader whose plan reaches the chapter listed further
    /// than its place's position allows (the plan made while the book's
    /// chapters were another list): the listing puts the reader on that
    /// chapter, to be planned again, and serves on.
    #[test]
    fn a_plan_that_does_not_fit_its_place_puts_the_reader_on_the_chapter_listed() {
        let ahead = StoreAhead::new();
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let names: Vec<String> = (1..=5).map(|i| format!("第{i}章.md")).collect();
        let index = Arc::new(BookIndex::new(
            names
                .iter()
                .map(|n| Chapter::new(n.as_str().into()))
                .collect(),
        ));
        let chapters: Vec<ChapterRef> = names
            .iter()
            .map(|n| crate::node::chapter_ref(&book, OsStr::new(n)))
            .collect();
        let mut track = Track::new(&book, &index);
        track.listed_on(1);
        track.listed_on(0);
        assert!(track.backward());
        track.pages.push(Place {
            chapter: chapters[0].clone(),
            position: 0,
            offset: 1,
            format: PageFormat::Text,
            version: 1,
            read_at: 1,
            backward: true,
            plan: Some(Arc::new(Planned::reaching(&chapters[0..3]))),
        });
        ahead.listed(Some(&mut track), &chapters[2], true);
        let place = &track.pages[0];
        assert_eq!(place.chapter, chapters[2]);
        assert_eq!(place.position, 2);
        assert!(place.plan.is_none(), "planned again");
    }
}
