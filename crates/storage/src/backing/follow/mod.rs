//! A mount that follows its bucket's published snapshot: names, sizes and
//! versions come from the snapshot, and no LIST is made while it is
//! followed. Once per TTL, on a thread of its own and only when the
//! library is being read, the head is asked for with `If-None-Match` (a
//! 304 while nothing was published); a new head brings the new listing.
//! A directory found behind the snapshot (a GET pinned to its version
//! failed) is listed as a mount without a snapshot lists it, until the
//! next snapshot. A head whose publisher stopped confirming it (twice its
//! cadence), or that was withdrawn, is not followed: the mount lists, and
//! follows again once a confirmed head is published.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use novelfs_library::backing::{PublishedFigures, PublishedIndex, SourceKind};

use crate::counters::SnapshotState;
use crate::{Entry, Storage, StorageError};

use novelfs_kit::lock;

mod drift;
mod pending;

use super::snapshot::{self, Head, Snapshot, unix_now};
use drift::Drift;
pub use pending::PendingHead;

pub(super) struct Follower {
    storage: Arc<dyn Storage>,
    ttl: Duration,
    /// How often a directory being read is listed and compared with the
    /// snapshot (zero: never): a change made in the bucket and never
    /// published shows within it.
    drift: Duration,
    /// What takes the rows published beside a directory, once the mount
    /// has an index to put them in (shared with the listings).
    index: Arc<OnceLock<PublishedIndex>>,
    state: Mutex<State>,
}

struct State {
    /// The snapshot served; `None` while it is not followed.
    snapshot: Option<Arc<Snapshot>>,
    /// The head last read: its ETag is the next check's `If-None-Match`.
    head: Head,
    checked: Instant,
    checking: bool,
    /// Directories found behind the snapshot: listed until the next one.
    behind: HashSet<PathBuf>,
    /// Why the snapshot is not followed, as last logged.
    not_followed: Option<String>,
    /// Whether the last check failed (the bucket did not answer).
    failing: bool,
    drift: Drift,
    /// When the bucket answered the head's check again after an outage,
    /// while the publisher has not confirmed since.
    back_at: Option<Instant>,
    /// Whether a lapsed snapshot is followed past its lapse (`lapsed`).
    holding: bool,
}

/// What the snapshot says of a directory.
pub(super) enum Said {
    /// Its entries.
    Entries(Arc<Vec<Entry>>),
    /// No such directory in the snapshot.
    Absent,
    /// Its piece could not be fetched: the bucket's answer.
    Unanswered(StorageError),
}

impl Follower {
    /// Follows the snapshot `head` names, fetching its listing now (one
    /// GET); an error when it cannot be fetched or its publisher stopped.
    pub(super) fn start(
        storage: Arc<dyn Storage>,
        ttl: Duration,
        drift: Duration,
        head: Head,
    ) -> Result<Follower, StorageError> {
        if let Some(why) = head.lapsed(unix_now()) {
            return Err(StorageError::other(why));
        }
        let snapshot = Snapshot::fetch(&*storage, head.clone())?;
        shown(&*storage, &snapshot.head);
        Ok(Follower {
            storage,
            ttl,
            drift,
            index: Arc::new(OnceLock::new()),
            state: Mutex::new(State {
                snapshot: Some(Arc::new(snapshot)),
                head,
                checked: Instant::now(),
                checking: false,
                behind: HashSet::new(),
                not_followed: None,
                failing: false,
                back_at: None,
                holding: false,
                drift: Drift {
                    checked: Instant::now(),
                    checking: false,
                    read: Vec::new(),
                },
            }),
        })
    }

    /// Hands what the publisher recorded beside each directory to what
    /// `index` holds, once it holds something.
    pub(super) fn published_to(mut self, index: Arc<OnceLock<PublishedIndex>>) -> Follower {
        self.index = index;
        self
    }

    /// What the snapshot says of `dir`; `None` when it is not followed
    /// or `dir` was found behind it (then the directory is listed).
    /// Starts the head's check when one is due.
    pub(super) fn dir(self: &Arc<Self>, dir: &Path) -> Option<Said> {
        let (snapshot, failing) = self.followed(dir)?;
        // Its head could not be checked: served as last read, counted.
        if failing && let Some(c) = self.storage.counters() {
            c.count(crate::Counter::StaleServes);
        }
        match snapshot.dir(&*self.storage, dir, self.index.get()) {
            Ok(Some(entries)) => {
                self.read(dir, &snapshot);
                Some(Said::Entries(entries))
            }
            // Under a directory found drifted: what its listing holds.
            Ok(None) if self.under_behind(dir) => None,
            Ok(None) => Some(Said::Absent),
            // A piece removed since its root was read (a newer snapshot
            // names others): the directory is listed until the next one.
            Err(e) if e.is_not_found() => {
                self.behind(dir);
                None
            }
            // Not fetched now: the bucket does not answer, and a LIST
            // would wait for it as long again.
            Err(e) => Some(Said::Unanswered(e)),
        }
    }

    /// What the snapshot says of the directory `dir` without its piece:
    /// a digest of what it holds (its piece's and its sub-directories'
    /// names) and its newest file's time; `None` when it has no such
    /// directory, or is not followed there.
    pub(super) fn shape(self: &Arc<Self>, dir: &Path) -> Option<(u64, SystemTime)> {
        self.followed(dir)?.0.shape(dir)
    }

    /// What the publisher recorded of `dir` in the root of the snapshot
    /// that answers for it (`Snapshot::published_figures`).
    pub(super) fn published_figures(self: &Arc<Self>, dir: &Path) -> Option<PublishedFigures> {
        self.followed(dir)?.0.published_figures(dir)
    }

    /// The snapshot that answers for `dir`, when one does, and whether
    /// its head's last check failed; starts the head's check when one is
    /// due.
    fn followed(self: &Arc<Self>, dir: &Path) -> Option<(Arc<Snapshot>, bool)> {
        let mut state = lock(&self.state);
        if !state.checking && state.checked.elapsed() >= self.period(&state.head) {
            state.checking = true;
            let me = self.clone();
            let spawned =
                novelfs_kit::thread::spawn("novelfs-snapshot", Some(256 << 10), move || me.check());
            if spawned.is_err() {
                state.checking = false;
                state.checked = Instant::now();
            }
        }
        let snapshot = state.snapshot.clone()?;
        (!state.behind.contains(dir)).then_some((snapshot, state.failing))
    }

    /// How often the head is asked for while the mount is read: once per
    /// TTL, and no more often than a tenth of the publisher's cadence,
    /// which cannot publish faster than that.
    fn period(&self, head: &Head) -> Duration {
        let cadence = head
            .every
            .map_or(Duration::ZERO, |s| Duration::from_secs(s) / 10);
        self.ttl.max(cadence)
    }

    /// An object of `dir` was not in the version the snapshot gives: the
    /// directory is listed until the next snapshot.
    pub(super) fn behind(&self, dir: &Path) {
        let mut state = lock(&self.state);
        if state.snapshot.is_some() && state.behind.insert(dir.to_path_buf()) {
            log::info!(
                "the published snapshot is behind in {}: it is listed until the next snapshot",
                dir.display()
            );
        }
    }

    /// The freshness rule in force, for the mounted line and the status.
    pub(super) fn describe(&self) -> String {
        let state = lock(&self.state);
        match (&state.snapshot, &state.not_followed) {
            (Some(s), _) => format!(
                "the published snapshot ({} files, made {} s ago, its head {}), checked every TTL",
                s.head.files,
                s.head.age().as_secs(),
                s.head.etag
            ),
            (None, Some(why)) => {
                format!("listings (the published snapshot is not followed: {why})")
            }
            (None, None) => "listings".to_string(),
        }
    }

    /// One check of the head, and what follows from it.
    fn check(&self) {
        let known = lock(&self.state).head.etag.clone();
        let answer = snapshot::read_head(&*self.storage, Some(&known));
        let fetched = match answer {
            Ok(Some(head)) if head.lapsed(unix_now()).is_none() => {
                let held = lock(&self.state).snapshot.clone();
                if held.as_ref().is_some_and(|s| s.head.root == head.root) {
                    Ok(Some(Ok(head)))
                } else {
                    match Snapshot::fetch(&*self.storage, head) {
                        Ok(s) => Ok(Some(Err(match &held {
                            Some(before) => s.keeping(before),
                            None => s,
                        }))),
                        // Its root not written yet: the next check.
                        Err(e) if e.is_not_found() => Ok(None),
                        Err(e) => Err(e),
                    }
                }
            }
            Ok(Some(head)) => {
                let why = head.lapsed(unix_now()).unwrap_or_default();
                let mut state = lock(&self.state);
                state.head = head;
                self.lapsed(&mut state, why);
                Ok(None)
            }
            Ok(None) => {
                let mut state = lock(&self.state);
                if let Some(why) = state.head.lapsed(unix_now()) {
                    self.lapsed(&mut state, why);
                }
                Ok(None)
            }
            Err(e) if e.is_not_found() => {
                let mut state = lock(&self.state);
                self.stop(&mut state, "it was withdrawn".into());
                Ok(None)
            }
            Err(e) => Err(e),
        };
        let mut state = lock(&self.state);
        if fetched.is_ok() && state.failing {
            state.failing = false;
            // The publisher may not have had a round since: see `lapsed`.
            state.back_at = Some(Instant::now());
            log::info!("the bucket answers the snapshot's check again");
        }
        match fetched {
            Ok(Some(Ok(head))) => {
                state.head = head;
                state.back_at = None;
            }
            Ok(Some(Err(snapshot))) => {
                state.back_at = None;
                log::info!(
                    "following a new published snapshot: {} files",
                    snapshot.files()
                );
                state.head = snapshot.head.clone();
                shown(&*self.storage, &snapshot.head);
                state.snapshot = Some(Arc::new(snapshot));
                state.behind.clear();
                state.not_followed = None;
            }
            Ok(None) => {}
            Err(e) => {
                // The bucket not answering at all is said once by its
                // outage (`crate::outage`); a check refused is news.
                let level = match e.source_kind() {
                    SourceKind::Transient => log::Level::Info,
                    _ => log::Level::Warn,
                };
                if !state.failing {
                    log::log!(
                        level,
                        "the bucket does not answer the snapshot's check ({e}): the snapshot \
                         as last read is served until it answers"
                    );
                }
                state.failing = true;
            }
        }
        state.checked = Instant::now();
        state.checking = false;
    }

    /// The head lapsed (its publisher has not confirmed for twice its
    /// cadence). Where this mount's checks found the bucket not answering
    /// just before, the publisher could not confirm either: the snapshot
    /// is followed for one more cadence, and a jitter of up to half of it,
    /// from when the bucket answered again, so that a publisher that is
    /// alive confirms first and a fleet coming back from an outage does
    /// not list all at once. A publisher that stopped while the bucket
    /// answered is not followed (the dead-publisher rule).
    fn lapsed(&self, state: &mut State, why: String) {
        if state.failing && state.back_at.is_none() {
            state.back_at = Some(Instant::now());
        }
        if let Some(back) = state.back_at {
            let every = Duration::from_secs(state.head.every.unwrap_or(0));
            if back.elapsed() < every + jitter(every / 2) {
                if !state.holding {
                    state.holding = true;
                    log::info!(
                        "the published snapshot lapsed while the bucket did not answer: it is \
                         followed a cadence longer for its publisher to confirm it"
                    );
                }
                return;
            }
        }
        state.holding = false;
        self.stop(state, why);
    }

    fn stop(&self, state: &mut State, why: String) {
        show(&*self.storage, SnapshotState::NotFollowed, &why, 0);
        if state.snapshot.take().is_some() || state.not_followed.is_none() {
            log::warn!("the published snapshot is no longer followed ({why}): the mount lists");
        }
        state.behind.clear();
        state.not_followed = Some(why);
    }
}

/// A share of `up_to` that differs from mount to mount (the process and
/// the moment): mounts that saw one outage end do not act together.
fn jitter(up_to: Duration) -> Duration {
    let seed = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64)
        ^ (u64::from(std::process::id()) << 32);
    let fraction = novelfs_library::stable_hash::stable_hash_bytes(&seed.to_le_bytes()) % 1024;
    up_to.mul_f64(fraction as f64 / 1024.0)
}

/// Names the snapshot in use in the storage's counters (`novelfs status`):
/// its head's ETag and when it was made.
fn shown(storage: &dyn Storage, head: &Head) {
    show(storage, SnapshotState::Followed, &head.etag, head.published);
}

/// Says in the storage's counters whether a snapshot is followed, and
/// the words for it (`SnapshotState`).
pub(in crate::backing) fn show(storage: &dyn Storage, state: SnapshotState, text: &str, made: u64) {
    if let Some(counters) = storage.counters() {
        counters.set_snapshot(state, text, made);
    }
}

#[cfg(test)]
mod tests;
