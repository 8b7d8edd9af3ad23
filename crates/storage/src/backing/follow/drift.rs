//! The drift checks of a mount that follows a published snapshot: once
//! per drift period, one directory it reads (the one compared least
//! lately) is listed and compared with the snapshot; where they differ the
//! bucket changed and was not published again, and the directory is
//! listed until a newer snapshot covers it. So a library is never frozen
//! by a snapshot published once, at one LIST per mount per period.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::super::snapshot::{OWN_FOLDER, Snapshot};
use super::Follower;
use crate::Entry;
use novelfs_kit::lock;

/// The drift checks: which directories were read, and when each was last
/// compared with a LIST.
pub(super) struct Drift {
    pub(super) checked: Instant,
    pub(super) checking: bool,
    /// The directories served from the snapshot lately, the most recent
    /// last, each with when it was last listed and compared.
    pub(super) read: Vec<(PathBuf, Option<Instant>)>,
}

/// Directories remembered for the drift checks.
const DRIFT_READ: usize = 32;

impl Follower {
    /// Whether a directory above `dir` is listed rather than served
    /// from the snapshot.
    pub(super) fn under_behind(&self, dir: &Path) -> bool {
        let state = lock(&self.state);
        dir.ancestors().skip(1).any(|d| state.behind.contains(d))
    }

    /// `dir` was served from `snapshot`: remembered for the drift checks,
    /// and one is started when due (on the directory read that was
    /// compared least lately).
    pub(super) fn read(self: &Arc<Self>, dir: &Path, snapshot: &Arc<Snapshot>) {
        if self.drift.is_zero() {
            return;
        }
        let mut state = lock(&self.state);
        let drift = &mut state.drift;
        let last = match drift.read.iter().position(|(d, _)| d == dir) {
            Some(i) => drift.read.remove(i).1,
            None => None,
        };
        drift.read.push((dir.to_path_buf(), last));
        if drift.read.len() > DRIFT_READ {
            drift.read.remove(0);
        }
        if drift.checking || drift.checked.elapsed() < self.drift {
            return;
        }
        let Some(oldest) = drift
            .read
            .iter()
            .min_by_key(|(_, at)| *at)
            .map(|(d, _)| d.clone())
        else {
            return;
        };
        drift.checking = true;
        let (me, snapshot) = (self.clone(), snapshot.clone());
        let spawned = novelfs_kit::thread::spawn("novelfs-drift", Some(256 << 10), move || {
            me.compare(&oldest, &snapshot)
        });
        if spawned.is_err() {
            drift.checking = false;
            drift.checked = Instant::now();
        }
    }

    /// Lists `dir` and compares it with what `snapshot` says of it: where
    /// they differ the bucket changed since it was published, and the
    /// directory is listed until a newer snapshot covers it.
    fn compare(&self, dir: &Path, snapshot: &Snapshot) {
        let listed = crate::RelPath::new(dir.as_os_str()).and_then(|rel| self.storage.list(&rel));
        let served = snapshot.dir(&*self.storage, dir, self.index.get());
        if let (Ok(mut listed), Ok(Some(served))) = (listed, served) {
            if dir.as_os_str().is_empty() {
                listed.retain(|e| e.name != OWN_FOLDER);
            }
            let seen =
                |entries: &[Entry]| -> Vec<(std::ffi::OsString, crate::EntryKind, crate::Version)> {
                    entries
                        .iter()
                        .map(|e| (e.name.clone(), e.kind, e.version.clone()))
                        .collect()
                };
            if seen(&listed) != seen(&served) {
                let mut state = lock(&self.state);
                // Against the snapshot still followed, not one replaced meanwhile.
                let same = state
                    .snapshot
                    .as_ref()
                    .is_some_and(|s| s.head.root == snapshot.head.root);
                if same && state.behind.insert(dir.to_path_buf()) {
                    log::warn!(
                        "the bucket drifted from its published snapshot in {}: it is listed until \
                         a newer snapshot covers it (publish again, or mount with --freshness \
                         listing)",
                        if dir.as_os_str().is_empty() {
                            Path::new("/")
                        } else {
                            dir
                        }
                        .display()
                    );
                }
            }
        }
        let mut state = lock(&self.state);
        let now = Instant::now();
        if let Some(r) = state.drift.read.iter_mut().find(|(d, _)| d == dir) {
            r.1 = Some(now);
        }
        state.drift.checked = now;
        state.drift.checking = false;
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::super::super::snapshot;
    use super::super::{Follower, Said};
    use crate::Storage;
    use crate::memory::MemoryStorage;

    fn follower(drift: Duration) -> (Arc<MemoryStorage>, Arc<Follower>) {
        let storage = Arc::new(MemoryStorage::new());
        for b in 0..3 {
            for c in 0..4 {
                storage.insert(&format!("novels/书{b}/第{c}章.md"), b"text");
            }
        }
        let listing = snapshot::walk(&*storage).unwrap();
        snapshot::publish(
            &*storage,
            listing,
            &|_, _| snapshot::Beside::default(),
            None,
            None,
        )
        .unwrap();
        let head = snapshot::published_head(&*storage).unwrap().unwrap();
        let dyn_storage: Arc<dyn Storage> = storage.clone();
        let f = Follower::start(dyn_storage, Duration::from_secs(3600), drift, head).unwrap();
        (storage, Arc::new(f))
    }

    fn served(f: &Arc<Follower>, dir: &str) -> Option<usize> {
        match f.dir(Path::new(dir))? {
            Said::Entries(e) => Some(e.len()),
            Said::Absent => Some(0),
            Said::Unanswered(e) => panic!("{e}"),
        }
    }

    /// Reads `dirs` until the drift checks are idle again.
    fn read_until_checked(f: &Arc<Follower>, dirs: &[&str]) {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            for d in dirs {
                served(f, d);
            }
            std::thread::sleep(Duration::from_millis(20));
            let state = super::lock(&f.state);
            if !state.drift.checking && state.drift.read.iter().all(|(_, at)| at.is_some()) {
                return;
            }
            assert!(Instant::now() < until, "the drift checks never ran");
        }
    }

    /// A chapter replaced and a book added in the bucket, never published:
    /// a mount that reads the books and that book lists each once per
    /// drift period, finds them drifted, and lists them from then on; a
    /// directory that did not drift stays served from the snapshot.
    #[test]
    fn a_change_never_published_shows_within_the_drift_period() {
        let (storage, f) = follower(Duration::from_millis(50));
        assert_eq!(served(&f, "novels"), Some(3));
        assert_eq!(served(&f, "novels/书1"), Some(4));
        assert_eq!(served(&f, "novels/书2"), Some(4));
        storage.insert("novels/书1/第0章.md", b"replaced");
        storage.insert("novels/新书/第0章.md", b"new");
        let lists = storage.asked().lists;
        let began = Instant::now();
        read_until_checked(&f, &["novels", "novels/书1", "novels/书2"]);
        let elapsed = began.elapsed();
        let listed = storage.asked().lists - lists;
        assert!(served(&f, "novels").is_none(), "the books drifted: listed");
        assert!(
            served(&f, "novels/书1").is_none(),
            "the book drifted: listed"
        );
        assert_eq!(served(&f, "novels/书2"), Some(4), "no drift: the snapshot");
        assert!(
            served(&f, "novels/新书").is_none(),
            "a book the snapshot lacks under a drifted directory is listed"
        );
        let periods = elapsed.as_millis() / 50 + 1;
        assert!(
            u128::from(listed) <= periods,
            "{listed} LISTs in {elapsed:?}: at most one a period"
        );
    }

    #[test]
    fn without_a_drift_period_nothing_is_listed() {
        let (storage, f) = follower(Duration::ZERO);
        storage.insert("novels/书1/第0章.md", b"replaced");
        let lists = storage.asked().lists;
        for _ in 0..20 {
            assert_eq!(served(&f, "novels/书1"), Some(4));
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(storage.asked().lists, lists);
    }
}
