use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::snapshot;
use super::{Follower, Said};
use crate::Storage;
use crate::memory::MemoryStorage;

/// A bucket published with a cadence of 2 s, and a mount following it
/// that checks the head every 200 ms (a tenth of the cadence).
fn followed() -> (Arc<MemoryStorage>, Arc<Follower>) {
    let storage = Arc::new(MemoryStorage::new());
    storage.insert("novels/书/第1章.md", b"text");
    publish(&storage);
    let head = snapshot::published_head(&*storage).unwrap().unwrap();
    let dyn_storage: Arc<dyn Storage> = storage.clone();
    let f = Follower::start(dyn_storage, Duration::from_millis(30), Duration::ZERO, head);
    (storage, Arc::new(f.unwrap()))
}

fn publish(storage: &MemoryStorage) {
    let before = snapshot::published_head(storage).unwrap();
    let listing = snapshot::walk(storage).unwrap();
    snapshot::publish(
        storage,
        listing,
        &|_, _| snapshot::Beside::default(),
        before.as_ref(),
        Some(2),
    )
    .unwrap();
}

fn following(f: &Arc<Follower>) -> bool {
    matches!(f.dir(Path::new("novels")), Some(Said::Entries(_)))
}

/// Reads the mount for `d`; whether it followed the snapshot throughout.
fn read_for(f: &Arc<Follower>, d: Duration) -> bool {
    let until = Instant::now() + d;
    let mut all = true;
    while Instant::now() < until {
        all &= following(f);
        std::thread::sleep(Duration::from_millis(20));
    }
    all
}

/// An outage longer than twice the publisher's cadence: the snapshot
/// lapses while the bucket does not answer. Back from it, the mount
/// follows the snapshot a cadence longer (no LIST) rather than list at
/// once, and goes on following it once the publisher confirms it.
#[test]
fn after_an_outage_a_lapsed_snapshot_is_followed_until_its_publisher_confirms() {
    let (storage, f) = followed();
    storage.set_failing(true);
    assert!(
        read_for(&f, Duration::from_millis(4500)),
        "served through the outage"
    );
    storage.set_failing(false);
    assert!(
        read_for(&f, Duration::from_millis(1200)),
        "back from the outage: followed, not listed, while its publisher may confirm"
    );
    publish(&storage);
    assert!(
        read_for(&f, Duration::from_millis(3000)),
        "confirmed: followed"
    );
}

/// The same outage, and no publisher after it: the dead-publisher rule
/// still holds, a cadence and its jitter later.
#[test]
fn after_an_outage_a_snapshot_nobody_confirms_is_left() {
    let (storage, f) = followed();
    storage.set_failing(true);
    assert!(read_for(&f, Duration::from_millis(4500)));
    storage.set_failing(false);
    let back = Instant::now();
    assert!(read_for(&f, Duration::from_millis(1200)));
    let until = Instant::now() + Duration::from_secs(10);
    while following(&f) {
        assert!(Instant::now() < until, "followed for good");
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = back.elapsed();
    assert!(left >= Duration::from_secs(2), "left after {left:?}");
}
