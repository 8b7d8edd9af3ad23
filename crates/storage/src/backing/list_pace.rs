//! How far ahead of a walker a bucket's directories are listed: a walk of
//! the books (`novel_books.*`, `novelfs index`, a `grep -r`) names the
//! directories it comes to next, and they are listed before it gets
//! there, each about when it will want it and as many at once as it uses
//! within a share of the TTL. A listing made further ahead would be past
//! its TTL before the walker was done with it and be made again: one LIST
//! paid twice.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// LISTs under way at once for a walker: each doubling up to here takes
/// a large part off a walk at 20 ms a request, past it the server's own
/// pace is what bounds the walk, and twice the threads buy little (the
/// figures: performance.md, "Figures behind the code").
pub(super) const LISTS_IN_FLIGHT: usize = 16;

/// The walker's uses that tell its pace: until then nothing is listed
/// ahead (walkers come in pairs, one per CPU, so two uses say little).
const PACE_FROM: usize = 4;

/// The walker's pace is measured over this many of its last uses.
const PACE_OVER: usize = 8;

/// The share of the TTL a listing made ahead may wait for its walker: the
/// rest is for the walker's time in the directory.
const TTL_SHARE: u32 = 3;

/// The directories a walker comes to next and when to list them.
#[derive(Default)]
pub(super) struct Pace {
    /// The directories the walker comes to next, in its order.
    queue: VecDeque<PathBuf>,
    /// Those of them it has not come to yet.
    wanted: HashSet<PathBuf>,
    /// Listings under way for it (or waiting for their moment).
    running: usize,
    /// Listings made for it that it has not used yet, with when each was
    /// begun.
    unused: HashMap<PathBuf, Instant>,
    /// When the walker came to its last few directories: its pace.
    uses: VecDeque<Instant>,
}

impl Pace {
    /// A walker comes to `dirs` next, in that order: they replace what an
    /// earlier walker wanted, and its pace is measured again.
    pub(super) fn want(&mut self, dirs: Vec<PathBuf>) {
        self.wanted = dirs.iter().cloned().collect();
        self.queue = dirs.into();
        self.uses.clear();
    }

    /// The walker's time between two directories, over its last few;
    /// `None` before it has come to `PACE_FROM`.
    fn gap(&self) -> Option<Duration> {
        if self.uses.len() < PACE_FROM {
            return None;
        }
        let (first, last) = (self.uses.front()?, self.uses.back()?);
        Some((*last - *first) / (self.uses.len() as u32 - 1))
    }

    /// How many listings may be under way or unused at once: as many as
    /// the walker comes to within its share of `ttl`; none for a walker
    /// that spends more than two `lead`s in a directory (its LIST is a
    /// small part of its time there, and one made ahead of it would pass
    /// its TTL the sooner while the walker is still in the directory).
    fn window(&self, ttl: Duration, lead: Duration) -> usize {
        let Some(gap) = self.gap() else {
            return 0;
        };
        if gap > lead * 2 {
            return 0;
        }
        let share = (ttl / TTL_SHARE).as_secs_f64();
        let n = share / gap.as_secs_f64().max(1e-6);
        (n as usize).clamp(1, LISTS_IN_FLIGHT)
    }

    /// The next directory to list ahead, when there is room for one, and
    /// how long to wait before its LIST so that it is made `lead` before
    /// the walker comes to it; those `needless` says are fresh or under
    /// way already are passed.
    pub(super) fn next(
        &mut self,
        ttl: Duration,
        lead: Duration,
        needless: impl Fn(&Path) -> bool,
    ) -> Option<(PathBuf, Duration)> {
        // A listing its walker did not come to within the TTL serves
        // nothing more.
        self.unused.retain(|_, begun| begun.elapsed() < ttl);
        let window = self.window(ttl, lead);
        while self.running < LISTS_IN_FLIGHT && self.running + self.unused.len() < window {
            let dir = self.queue.pop_front()?;
            if !self.wanted.contains(&dir) || needless(&dir) {
                continue;
            }
            let ahead = (self.running + self.unused.len() + 1) as u32;
            // A walker that comes to a directory every `lead` or sooner
            // waits on its listings: they go out at once, and it speeds
            // up. A slower one gets each about when it comes to it.
            let wait = match (self.uses.back(), self.gap()) {
                (Some(last), Some(gap)) if gap > lead => (*last + gap * ahead)
                    .checked_duration_since(Instant::now() + lead)
                    .unwrap_or_default(),
                _ => Duration::ZERO,
            };
            self.running += 1;
            return Some((dir, wait));
        }
        None
    }

    /// A listing ahead ended: made (begun at `begun`), or failed or not
    /// needed.
    pub(super) fn listed(&mut self, dir: &Path, begun: Option<Instant>) {
        self.running = self.running.saturating_sub(1);
        if let Some(begun) = begun
            && self.wanted.contains(dir)
        {
            self.unused.insert(dir.to_path_buf(), begun);
        }
    }

    /// A reader used the listing of `dir`: whether it is the walker
    /// coming to one of its directories (then its pace is measured, and
    /// there may be room for the next).
    pub(super) fn used(&mut self, dir: &Path) -> bool {
        if !self.wanted.remove(dir) {
            return false;
        }
        self.unused.remove(dir);
        if self.uses.len() == PACE_OVER {
            self.uses.pop_front();
        }
        self.uses.push_back(Instant::now());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(n: usize) -> Vec<PathBuf> {
        (0..n)
            .map(|i| PathBuf::from(format!("novels/{i}")))
            .collect()
    }

    /// The walker comes to its next `n` directories, `every` apart.
    fn walk(pace: &mut Pace, n: usize, every: Duration) {
        for _ in 0..n {
            let dir = pace
                .queue
                .iter()
                .find(|d| pace.wanted.contains(*d))
                .unwrap()
                .clone();
            std::thread::sleep(every);
            assert!(pace.used(&dir));
        }
    }

    #[test]
    fn nothing_is_listed_ahead_before_the_walkers_pace_is_known() {
        let ttl = Duration::from_secs(1);
        let mut pace = Pace::default();
        pace.want(dirs(100));
        assert!(pace.next(ttl, Duration::ZERO, |_| false).is_none());
        walk(&mut pace, PACE_FROM - 1, Duration::ZERO);
        assert!(pace.next(ttl, Duration::ZERO, |_| false).is_none());
    }

    #[test]
    fn a_fast_walker_gets_every_listing_in_flight_and_a_slow_one_one_just_in_time() {
        let ttl = Duration::from_secs(1);
        let lead = Duration::from_millis(10);
        let mut fast = Pace::default();
        fast.want(dirs(100));
        walk(&mut fast, PACE_FROM, Duration::from_millis(1));
        let ahead: Vec<_> = std::iter::from_fn(|| fast.next(ttl, lead, |_| false)).collect();
        assert_eq!(ahead.len(), LISTS_IN_FLIGHT);
        assert_eq!(ahead[0].0, PathBuf::from(format!("novels/{PACE_FROM}")));
        assert!(ahead.iter().all(|(_, wait)| wait.is_zero()), "at once");

        // One directory every 200 ms, a LIST's lead 150 ms: a third of the
        // TTL's worth is one ahead, begun 150 ms before the walker comes.
        let mut slow = Pace::default();
        slow.want(dirs(100));
        walk(&mut slow, PACE_FROM, Duration::from_millis(200));
        let lead = Duration::from_millis(150);
        let (_, wait) = slow.next(ttl, lead, |_| false).unwrap();
        assert!(
            wait > Duration::ZERO && wait < Duration::from_millis(70),
            "{wait:?}"
        );
        assert!(slow.next(ttl, lead, |_| false).is_none(), "one at a time");

        // With a lead of 50 ms its LISTs are a small part of its time:
        // none ahead.
        let mut slower = Pace::default();
        slower.want(dirs(100));
        walk(&mut slower, PACE_FROM, Duration::from_millis(200));
        assert!(
            slower
                .next(ttl, Duration::from_millis(50), |_| false)
                .is_none()
        );
    }

    #[test]
    fn needless_and_unused_past_the_ttl_take_no_room() {
        let ttl = Duration::from_millis(300);
        let mut pace = Pace::default();
        pace.want(dirs(40));
        walk(&mut pace, PACE_FROM, Duration::from_millis(10));
        // Within a third of the TTL, 10 ms apart: ten at once (fewer on
        // a slow machine). The odd ones are fresh already.
        let listed: Vec<_> = std::iter::from_fn(|| {
            pace.next(ttl, Duration::from_millis(50), |d| {
                d.to_string_lossy().ends_with(['1', '3', '5', '7', '9'])
            })
        })
        .map(|(d, _)| d)
        .collect();
        assert!(
            listed.len() >= 5 && listed.len() == pace.window(ttl, Duration::from_millis(50)),
            "{listed:?}"
        );
        assert!(
            listed
                .iter()
                .all(|d| d.to_string_lossy().ends_with(['0', '2', '4', '6', '8']))
        );
        for d in &listed {
            pace.listed(d, Some(Instant::now()));
        }
        assert!(
            pace.next(ttl, Duration::from_millis(50), |_| false)
                .is_none(),
            "the window is full"
        );
        std::thread::sleep(ttl);
        // Never used within the TTL: room again.
        assert!(
            pace.next(ttl, Duration::from_millis(50), |_| false)
                .is_some()
        );
    }
}
