//! What the log says of an outage: with the bucket closing every
//! connection unanswered, or holding every request, for a while, readers
//! of chapters never read before get errors, and the log says once that
//! the bucket stopped answering and once that it answers again, and never
//! that a chapter changed (nothing did). Counted by the machine-readable
//! events of `novelfs::events`. The bucket is published, so that a page
//! of a chapter never read is named and sized without its GET, and only
//! its read needs the bucket.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use novelfs::events::{CHANGED, SOURCE_DOWN, SOURCE_UP};

use crate::bucket::native::library;
use crate::common::bucket::Bucket;
use crate::common::{eventually_within, follow_log};

fn page(mnt: &Path, book: usize, chapter: usize) -> PathBuf {
    mnt.join(format!("书{book:02}"))
        .join(format!("第{chapter:04}章.md"))
        .join("offset-1.txt")
}

/// Sets the proxy's faults back to none when dropped.
struct Healed<'a>(&'a Bucket);

impl Drop for Healed<'_> {
    fn drop(&mut self) {
        self.0.server.set("drop=0&stall=0");
    }
}

/// What was logged while the proxy applies `fault` for `outage` and
/// readers go through the chapters not read before, then after it heals
/// and a chapter reads again: the events (changed, down, up) and the
/// lines at the level an operator's log keeps (warnings).
struct Logged {
    changed: usize,
    down: usize,
    up: usize,
    warnings: usize,
}

fn events_of_an_outage(fault: &str, outage: Duration) -> Option<Logged> {
    let (dir, root) = library(2, 30);
    let bucket = Bucket::with(&root)?;
    // Published, as a fleet's bucket is: a page's name and size come
    // from the index, so a read of a chapter never read reaches its GET.
    crate::bucket::native::publish(&bucket, &dir.path().join("built-here"));
    let filter: OsString = "warn,novelfs_fs::source=debug,novelfs_storage::outage=debug".into();
    let index_dir = dir.path().join("fresh-machine");
    std::fs::create_dir_all(&index_dir).unwrap();
    let index_dir = index_dir.to_str().unwrap();
    let mut m = bucket.mount_with_env(
        &[
            "--ttl",
            "1",
            "--source-timeout",
            "2",
            "--index-dir",
            index_dir,
        ],
        &[("RUST_LOG", filter)],
    );
    let log = follow_log(&mut m);
    let mnt = m.path().to_path_buf();
    std::fs::read(page(&mnt, 0, 1)).unwrap();

    let healed = Healed(&bucket);
    bucket.server.set(fault);
    let start = Instant::now();
    let (mut failed, mut n) = (0, 0);
    while start.elapsed() < outage {
        let (book, chapter) = (n % 2, 2 + n / 2 % 29);
        if std::fs::read(page(&mnt, book, chapter)).is_err() {
            failed += 1;
        }
        n += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("{failed} of {n} reads of chapters never read failed in the outage");
    assert!(failed > 0, "the outage failed no read");
    drop(healed);
    eventually_within("the bucket serves again", Duration::from_secs(20), || {
        std::fs::read(page(&mnt, 1, 30)).ok()
    });
    // The line saying it answers again comes with that answer.
    std::thread::sleep(Duration::from_millis(500));
    let lines = log.lock().unwrap().clone();
    let count = |event: &str| {
        lines
            .iter()
            .filter(|l| l.split(' ').any(|w| w == event))
            .count()
    };
    for l in lines.iter().filter(|l| !l.contains("event=decoded")) {
        eprintln!("daemon: {l}");
    }
    Some(Logged {
        changed: count(CHANGED),
        down: count(SOURCE_DOWN),
        up: count(SOURCE_UP),
        // env_logger's level field, not a message's words.
        warnings: lines.iter().filter(|l| l.contains(" WARN ")).count(),
    })
}

/// 10 s of connections closed unanswered: no chapter changed, one line
/// each way, and no other warning.
#[test]
fn an_outage_of_refused_connections_is_logged_once_each_way() {
    require_fuse!();
    if let Some(logged) = events_of_an_outage("drop=-1", Duration::from_secs(10)) {
        once_each_way(&logged);
    }
}

/// The same with every request held unanswered.
#[test]
fn a_stalled_bucket_is_logged_once_each_way() {
    require_fuse!();
    if let Some(logged) = events_of_an_outage("stall=-1", Duration::from_secs(10)) {
        once_each_way(&logged);
    }
}

fn once_each_way(logged: &Logged) {
    assert_eq!(logged.changed, 0, "a chapter said changed in an outage");
    assert_eq!(
        (logged.down, logged.up),
        (1, 1),
        "stopped answering, answers again"
    );
    assert_eq!(logged.warnings, 2, "warnings besides the two");
}
