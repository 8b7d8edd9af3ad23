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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use novelfs_library::backing::SourceKind;

use crate::counters::SnapshotState;
use crate::{Entry, Storage, StorageError};

use super::bodies::lock;
use super::snapshot::{self, Head, Snapshot, unix_now};

pub(super) struct Follower {
    storage: Arc<dyn Storage>,
    ttl: Duration,
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
}

/// What the snapshot says of a directory.
pub(super) enum Said {
    /// Its entries.
    Entries(Arc<Vec<Entry>>),
    /// No such directory in the snapshot.
    Absent,
}

impl Follower {
    /// Follows the snapshot `head` names, fetching its listing now (one
    /// GET); an error when it cannot be fetched or its publisher stopped.
    pub(super) fn start(
        storage: Arc<dyn Storage>,
        ttl: Duration,
        head: Head,
    ) -> Result<Follower, StorageError> {
        if let Some(why) = head.lapsed(unix_now()) {
            return Err(StorageError::Other(why));
        }
        let snapshot = snapshot::read_snapshot(&*storage, head.clone())?;
        shown(&*storage, &snapshot.head);
        Ok(Follower {
            storage,
            ttl,
            state: Mutex::new(State {
                snapshot: Some(Arc::new(snapshot)),
                head,
                checked: Instant::now(),
                checking: false,
                behind: HashSet::new(),
                not_followed: None,
                failing: false,
            }),
        })
    }

    /// What the snapshot says of `dir`; `None` when it is not followed
    /// or `dir` was found behind it (then the directory is listed).
    /// Starts the head's check when one is due.
    pub(super) fn dir(self: &Arc<Self>, dir: &Path) -> Option<Said> {
        let mut state = lock(&self.state);
        if !state.checking && state.checked.elapsed() >= self.ttl {
            state.checking = true;
            let me = self.clone();
            let spawned =
                novelfs_kit::thread::spawn("novelfs-snapshot", Some(256 << 10), move || me.check());
            if spawned.is_err() {
                state.checking = false;
                state.checked = Instant::now();
            }
        }
        let snapshot = state.snapshot.as_ref()?;
        if state.behind.contains(dir) {
            return None;
        }
        // Its head could not be checked: served as last read, counted.
        if state.failing
            && let Some(c) = self.storage.counters()
        {
            c.count(crate::Counter::StaleServes);
        }
        Some(match snapshot.dir(dir) {
            Some(entries) => Said::Entries(entries.clone()),
            None => Said::Absent,
        })
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
                let same = lock(&self.state)
                    .snapshot
                    .as_ref()
                    .is_some_and(|s| s.head.listing == head.listing);
                if same {
                    Ok(Some(Ok(head)))
                } else {
                    match snapshot::read_snapshot(&*self.storage, head) {
                        Ok(s) => Ok(Some(Err(s))),
                        // Published between its two objects: the next check.
                        Err(StorageError::Changed { .. }) => Ok(None),
                        Err(e) => Err(e),
                    }
                }
            }
            Ok(Some(head)) => {
                let why = head.lapsed(unix_now()).unwrap_or_default();
                let mut state = lock(&self.state);
                state.head = head;
                self.stop(&mut state, why);
                Ok(None)
            }
            Ok(None) => {
                let mut state = lock(&self.state);
                if let Some(why) = state.head.lapsed(unix_now()) {
                    self.stop(&mut state, why);
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
            log::info!("the bucket answers the snapshot's check again");
        }
        match fetched {
            Ok(Some(Ok(head))) => state.head = head,
            Ok(Some(Err(snapshot))) => {
                log::info!(
                    "following a new published snapshot: {} files",
                    snapshot.head.files
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

    fn stop(&self, state: &mut State, why: String) {
        show(&*self.storage, SnapshotState::NotFollowed, &why, 0);
        if state.snapshot.take().is_some() || state.not_followed.is_none() {
            log::warn!("the published snapshot is no longer followed ({why}): the mount lists");
        }
        state.behind.clear();
        state.not_followed = Some(why);
    }
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

/// The head of a published snapshot, asked for on a thread of its own
/// beside the mount's check, so that the mount is ready without waiting
/// for it: whoever needs it first (a listing, the published index) waits
/// for what is left of its round trip.
pub struct PendingHead {
    state: Mutex<Pending>,
}

enum Pending {
    Asking(std::thread::JoinHandle<Result<Option<Head>, StorageError>>),
    Answered(Result<Option<Head>, String>),
}

impl PendingHead {
    /// Asks `storage` for the head now; `None` when no thread could.
    pub fn ask(storage: Arc<dyn Storage>) -> Option<Arc<PendingHead>> {
        let thread = novelfs_kit::thread::spawn("novelfs-head", Some(256 << 10), move || {
            snapshot::published_head(&*storage)
        })
        .ok()?;
        Some(Arc::new(PendingHead {
            state: Mutex::new(Pending::Asking(thread)),
        }))
    }

    /// The head, once answered (`None`: none published, or the question
    /// failed, which is logged).
    pub fn get(&self) -> Option<Head> {
        self.asked().ok().flatten()
    }

    /// The head, once answered: `None` when none is published, an error
    /// (logged, once) when the question failed.
    pub fn asked(&self) -> Result<Option<Head>, String> {
        let mut state = lock(&self.state);
        let head = match std::mem::replace(&mut *state, Pending::Answered(Ok(None))) {
            Pending::Answered(head) => head,
            Pending::Asking(thread) => match thread.join() {
                Ok(Ok(head)) => Ok(head),
                Ok(Err(e)) => {
                    log::warn!("no published snapshot followed: {e}");
                    Err(e.to_string())
                }
                Err(_) => Err("the question for the head panicked".into()),
            },
        };
        *state = Pending::Answered(head.clone());
        head
    }
}
