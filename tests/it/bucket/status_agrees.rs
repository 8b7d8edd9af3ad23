//! `novelfs status` agrees with the bucket where `status_counters` does
//! not look: the mount command's own check (a daemonized mount's CLI
//! checks the bucket while its daemon starts) is counted; attempts that
//! got no answer (the connection closed before a response) are counted
//! apart from the requests the bucket answered, kind by kind; the
//! snapshot's state says whether one is followed, none is published, or
//! none is looked for, its time a date; `--prometheus` gives the holder's
//! figures and the snapshot's time as a gauge's value under the
//! mountpoint's label alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::bucket::native::{library, publish};
use crate::common::bucket::Bucket;
use crate::common::eventually_within;

const BIN: &str = env!("CARGO_BIN_EXE_novelfs");

fn status(mnt: &Path, flag: &str) -> String {
    let out = Command::new(BIN)
        .args(["status", flag])
        .arg(mnt)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn status_json(mnt: &Path) -> serde_json::Map<String, Value> {
    let v: Value = serde_json::from_str(&status(mnt, "--json")).unwrap();
    v.as_object().unwrap().clone()
}

/// By kind (the status's words): (answered, unanswered).
type ByKind = BTreeMap<String, (u64, u64)>;

const KINDS: [(&str, &str); 6] = [
    ("LIST", "list"),
    ("GET", "get"),
    ("RANGED_GET", "ranged_get"),
    ("HEAD", "head"),
    ("PUT", "put"),
    ("OTHER", "other"),
];

/// By kind (the status's words): the requests the proxy answered and the
/// ones it closed unanswered, as its log has them; and the status's.
fn both(bucket: &Bucket, mnt: &Path) -> (ByKind, ByKind) {
    let log = bucket.server.log();
    let s = status_json(mnt);
    let n = |k: &str| s.get(k).and_then(Value::as_u64).unwrap_or(u64::MAX);
    let mut proxy = BTreeMap::new();
    let mut said = BTreeMap::new();
    for (theirs, ours) in KINDS {
        let of = log.iter().filter(|r| r.kind == theirs);
        let answered = of.clone().filter(|r| r.end.is_some()).count() as u64;
        let unanswered = of.filter(|r| r.end.is_none()).count() as u64;
        proxy.insert(ours.to_string(), (answered, unanswered));
        said.insert(
            ours.to_string(),
            (
                n(&format!("{ours}_requests")),
                n(&format!("{ours}_unanswered")),
            ),
        );
    }
    (proxy, said)
}

/// Waits until the status agrees with the proxy (work ahead may still be
/// on the wire), up to 20 s; both, as last read.
fn agreeing(bucket: &Bucket, mnt: &Path) -> (ByKind, ByKind) {
    let mut last = both(bucket, mnt);
    for _ in 0..100 {
        if last.0 == last.1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
        last = both(bucket, mnt);
    }
    last
}

/// A daemonized mount (`novelfs mount` returns once it is ready), and
/// its unmount when dropped.
struct Daemonized {
    mnt: tempfile::TempDir,
}

impl Daemonized {
    fn mount(bucket: &Bucket, extra: &[&str]) -> Daemonized {
        let mnt = tempfile::tempdir().unwrap();
        let endpoint = bucket.server.endpoint();
        let out = Command::new(BIN)
            .arg("mount")
            .arg(bucket.url())
            .arg(mnt.path())
            .args(bucket.args(&endpoint, extra))
            .args(["--io-uring", "off", "--no-index"])
            .envs(bucket.env())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        Daemonized { mnt }
    }

    fn path(&self) -> PathBuf {
        self.mnt.path().to_path_buf()
    }
}

impl Drop for Daemonized {
    fn drop(&mut self) {
        let _ = Command::new(BIN)
            .arg("unmount")
            .arg(self.mnt.path())
            .status();
    }
}

fn page(mnt: &Path, book: usize, chapter: usize) -> PathBuf {
    mnt.join(format!("书{book:02}"))
        .join(format!("第{chapter:04}章.md"))
        .join("offset-1.txt")
}

/// The CLI's check of a daemonized mount is counted: from its first
/// request, the status says what the proxy saw. None published: the
/// status says so, and says otherwise with `--freshness listing`; the
/// holder's figures are metrics.
#[test]
fn a_daemonized_mount_counts_its_check_and_says_why_no_snapshot() {
    require_fuse!();
    let (_dir, root) = library(2, 5);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let m = Daemonized::mount(&bucket, &["--ttl", "60"]);
    std::fs::read(m.path().join("novel_books.txt")).unwrap();
    let (proxy, said) = agreeing(&bucket, &m.path());
    assert_eq!(said, proxy, "status (left) against the proxy (right)");
    assert!(proxy["list"].0 >= 2, "{proxy:?}");
    let none_published = status_json(&m.path())["snapshot"].clone();

    let p = status(&m.path(), "--prometheus");
    let at = format!("mountpoint=\"{}\"", m.path().display());
    for sample in [
        format!("novelfs_servers_started_total{{{at}}} 1"),
        format!("novelfs_servers_died_total{{{at}}} 0"),
        format!("novelfs_upgrades_total{{{at}}} 0"),
        format!("novelfs_gave_up{{{at}}} 0"),
        format!("novelfs_snapshot_followed{{{at}}} 0"),
    ] {
        assert!(p.lines().any(|l| l == sample), "{sample} not in:\n{p}");
    }

    let listing = bucket.mount(&["--ttl", "60", "--freshness", "listing"]);
    std::fs::read(listing.path().join("novel_books.txt")).unwrap();
    let not_asked = status_json(listing.path())["snapshot"].clone();
    eprintln!("snapshot: {none_published} / {not_asked}");
    assert_ne!(none_published, not_asked, "two reasons, one answer");
}

/// With the bucket closing every connection unanswered for a while, the
/// attempts are counted apart from the requests it answered, kind by
/// kind; the snapshot followed has its time as a date, and as a gauge's
/// value in `--prometheus`.
#[test]
fn attempts_unanswered_are_counted_apart_and_the_snapshot_has_a_date() {
    require_fuse!();
    let (dir, root) = library(2, 30);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    publish(&bucket, &dir.path().join("built-here"));
    bucket.server.reset_counts();
    let m = bucket.mount(&["--ttl", "1", "--source-timeout", "2"]);
    let mnt = m.path().to_path_buf();
    std::fs::read(page(&mnt, 0, 1)).unwrap();

    bucket.server.set("drop=-1");
    for chapter in 2..12 {
        let _ = std::fs::read(page(&mnt, 1, chapter));
        std::thread::sleep(Duration::from_millis(200));
    }
    bucket.server.set("drop=0");
    eventually_within("the bucket serves again", Duration::from_secs(20), || {
        std::fs::read(page(&mnt, 1, 30)).ok()
    });
    let (proxy, said) = agreeing(&bucket, &mnt);
    eprintln!("by kind, (answered, unanswered): {proxy:?}");
    assert_eq!(said, proxy, "status (left) against the proxy (right)");
    assert!(proxy.values().map(|k| k.1).sum::<u64>() > 0, "none dropped");

    let s = status_json(&mnt);
    let made = s["snapshot_made"].as_str().unwrap_or_default().to_string();
    let date = made.len() == 20
        && made.char_indices().all(|(i, c)| match i {
            4 | 7 => c == '-',
            10 => c == 'T',
            13 | 16 => c == ':',
            19 => c == 'Z',
            _ => c.is_ascii_digit(),
        });
    assert!(date, "snapshot made {made:?}: not an RFC 3339 date");
    let p = status(&mnt, "--prometheus");
    let at = format!("mountpoint=\"{}\"", mnt.display());
    let made_at = p
        .lines()
        .find_map(|l| l.strip_prefix(&format!("novelfs_snapshot_made_seconds{{{at}}} ")))
        .and_then(|v| v.parse::<u64>().ok());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        made_at.is_some_and(|t| t <= now && now - t < 600),
        "no gauge of the snapshot's time under the mountpoint alone:\n{p}"
    );
    assert!(
        p.contains(&format!("novelfs_snapshot_followed{{{at}}} 1")),
        "{p}"
    );
}
