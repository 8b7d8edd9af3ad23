//! The racy rules on made-up stamps and small files: when a stamp
//! settles, what settling remembers, which times stay still, digests.

use super::*;
use crate::cache::Stamp;
use crate::freshness::source_fs::SourceFs;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn stamp(secs: i64, size: u64) -> Stamp {
    Stamp {
        dev: 1,
        ino: 2,
        size,
        mtime: (secs, 0),
        ctime: (secs, 0),
    }
}

fn at(secs: u64, millis: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis)
}

fn plain(s: &Stamp) -> u64 {
    s.size * 1000 + s.mtime.0 as u64
}

const G: Duration = COARSE_GRANULARITY;

#[test]
fn a_stamp_settles_one_granularity_after_its_last_change() {
    let s = stamp(100, 8);
    assert!(
        !settled(&s, at(100, 0), G),
        "read in the second of the change"
    );
    assert!(!settled(&s, at(101, 999), G));
    assert!(settled(&s, at(102, 0), G));
    let restored = Stamp {
        ctime: (105, 0),
        ..s
    };
    assert!(
        !settled(&restored, at(106, 0), G),
        "a restored mtime: the ctime counts"
    );
    let future = stamp(4_000_000_000, 8);
    assert!(
        !settled(&future, at(200, 0), G),
        "a time ahead of the clock"
    );
}

#[test]
fn bytes_read_under_an_unsettled_stamp_are_looked_at_until_it_settles() {
    let s = stamp(100, 8);
    let key = "第1章";
    let v = Settling::new(plain);
    // A read in the second of the change: digest the bytes.
    assert!(v.must_digest(&key, &s, at(100, 100), G));
    let first = v.looked(&key, &s, 0xaaaa, at(100, 100), G);
    assert_eq!(first, plain(&s));
    // The same stamp a moment later: look again.
    assert_eq!(v.known(&key, &s, G), Known::Look(first));
    assert_eq!(
        v.looked(&key, &s, 0xaaaa, at(100, 500), G),
        first,
        "the same bytes: the same version"
    );
    // Edited within the same second, same size: the same stamp, new bytes.
    let second = v.looked(&key, &s, 0xbbbb, at(100, 900), G);
    assert_ne!(
        second, first,
        "new bytes under the same stamp: a new version"
    );
    assert_eq!(v.known(&key, &s, G), Known::Look(second));
    // Read again after the stamp settled: proven, no more reads.
    assert_eq!(v.looked(&key, &s, 0xbbbb, at(102, 100), G), second);
    assert_eq!(v.known(&key, &s, G), Known::Version(second));
    assert!(!v.must_digest(&key, &stamp(50, 8), at(103, 0), G));
    // A new stamp: its own version, and the old entry goes.
    let later = stamp(200, 8);
    assert_eq!(v.known(&key, &later, G), Known::Version(plain(&later)));
    assert_eq!(v.len(), 0);
}

#[test]
fn a_settled_read_needs_no_entry() {
    let v = Settling::new(plain);
    let s = stamp(100, 8);
    assert!(!v.must_digest(&"k", &s, at(102, 0), G));
    assert_eq!(v.known(&"k", &s, G), Known::Version(plain(&s)));
    // Read at a time the stamp proved, with an unsettled entry's key
    // gone: nothing is remembered.
    assert_eq!(v.looked(&"k", &s, 1, at(102, 0), G), plain(&s));
    assert_eq!(v.len(), 0);
    // The same bytes read before and after settling: the entry goes
    // once it proves nothing more.
    v.looked(&"k", &s, 1, at(100, 0), G);
    assert_eq!(v.len(), 1);
    v.looked(&"k", &s, 1, at(102, 0), G);
    assert_eq!(v.known(&"k", &s, G), Known::Version(plain(&s)));
    assert_eq!(v.len(), 0);
}

#[test]
fn times_at_or_before_the_epoch_stay_still() {
    assert!(times_still(&stamp(-1, 0)));
    assert!(times_still(&stamp(0, 0)));
    assert!(!times_still(&stamp(100, 0)));
    let dir = tempfile::tempdir().unwrap();
    assert!(SourceFs::of(dir.path(), None).times_still.is_none());
    let epoch = std::fs::File::open(dir.path()).unwrap();
    epoch
        .set_modified(UNIX_EPOCH)
        .expect("a directory's mtime can be set");
    // Its ctime moved with the mtime: only both at 0 stay still.
    assert!(SourceFs::of(dir.path(), None).times_still.is_none());
}

#[test]
fn a_file_digest_covers_every_byte_and_the_length() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    let digest = |bytes: &[u8]| {
        std::fs::write(&p, bytes).unwrap();
        novelfs_library::backing::digest(
            &*novelfs_storage::backing::opened_file(std::fs::File::open(&p).unwrap()).unwrap(),
        )
        .unwrap()
    };
    let big = vec![7u8; 200_000];
    let mut other = big.clone();
    other[150_000] = 8;
    assert_ne!(digest(&big), digest(&other), "a byte past the first buffer");
    assert_eq!(digest(&big), digest(&big.clone()));
    assert_ne!(digest(b""), digest(b"\0"));
}
