//! Stamps that do not prove anything yet (git calls such entries "racily
//! clean").
//!
//! A stamp (dev, ino, size, mtime, ctime) tells two versions of a file
//! apart only when a change between them moves a time. Times have a
//! granularity — whole seconds on sshfs, 2 s on FAT, a clock tick on a
//! local disk — and a directory's size on many network filesystems never
//! changes: two changes within one tick, with a read between them, leave
//! the same stamp on different contents. So what was read at a moment
//! `at` is proven to be what the stamp stands for only once the stamp's
//! last change lies at least one granularity before `at`: any change after
//! `at` then moves a time past it. Until then the names or bytes are looked
//! at again and compared, not the stamp.
//!
//! Some sources never move a directory's times at all: object storage
//! mounted as a filesystem (s3fs gives every directory the mtime -1, rclone
//! the moment it first listed it). No stamp proves anything there: each
//! directory is listed again once its names are a TTL old, and its names
//! compared (`Rule::TimesStill`).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::cache::Stamp;
use crate::lock;

/// On local filesystems with nanosecond times: a clock tick (times are
/// taken from the kernel's coarse clock, at most 10 ms behind at HZ=100),
/// twice over.
pub(crate) const FINE_GRANULARITY: Duration = Duration::from_millis(20);

/// Elsewhere: whole seconds (sshfs, NFSv2, ext3 with small inodes) or 2 s
/// (FAT). Clocks of the hosts sharing a library are taken to agree within
/// the part of a second this leaves (NTP keeps them within milliseconds).
pub(crate) const COARSE_GRANULARITY: Duration = Duration::from_secs(2);

/// How long a network filesystem's client may show old names and
/// attributes after a change made elsewhere: sshfs keeps them 20 s by
/// default, NFS up to 60 s (`acdirmax`). Names listed and bytes read within
/// that time of a change may be older than the stamp they came with (sshfs
/// caches a directory's attributes and its names apart), so a stamp there
/// proves nothing for this long on top of its granularity.
pub(crate) const NETWORK_CACHES: Duration = Duration::from_secs(60);

/// Local filesystems that keep times in nanoseconds.
const FINE: [i64; 9] = [
    0xef53,     // ext2/3/4 (ext4's default inodes hold nanoseconds)
    0x58465342, // XFS
    0x9123683e, // Btrfs
    0x01021994, // tmpfs
    0x858458f6, // ramfs
    0xf2f52010, // F2FS
    0x2fc12fc1, // ZFS
    0x794c7630, // overlayfs
    0xca451a4e, // bcachefs
];

/// Filesystems that serve object storage: a directory there is a prefix of
/// keys, with no time of its own that a new key would move.
const OBJECT_STORAGE: [&str; 7] = [
    "fuse.s3fs",
    "fuse.rclone",
    "fuse.mountpoint-s3",
    "fuse.gcsfuse",
    "fuse.goofys",
    "fuse.blobfuse2",
    "fuse.geesefs",
];

/// How the stamps of a library's directories are trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rule {
    /// A change moves a directory's times, in ticks of `granularity`
    /// (which includes a network filesystem's caches, when `network`).
    TimesMove {
        granularity: Duration,
        network: bool,
    },
    /// A change leaves a directory's times where they are (why, for the
    /// log): names are trusted for a TTL, then listed again and compared.
    TimesStill(String),
}

/// The rule for the library in `dir`, on a mount of type `fs_type`: times
/// still on object storage and where `dir`'s own times are 0 or before
/// (s3fs: -1), else they move.
pub(crate) fn rule_of(dir: &Path, fs_type: Option<&str>) -> Rule {
    if let Some(fstype) = fs_type
        && OBJECT_STORAGE.contains(&fstype)
    {
        return Rule::TimesStill(format!("{} is on {fstype}", dir.display()));
    }
    if let Some(stamp) = std::fs::symlink_metadata(dir).ok().map(|m| Stamp::of(&m))
        && times_still(&stamp)
    {
        return Rule::TimesStill(format!("{} has the mtime {}", dir.display(), stamp.mtime.0));
    }
    Rule::TimesMove {
        granularity: granularity_of(dir),
        network: super::watch::remote_filesystem(dir),
    }
}

/// Whether a stamp's times are no times at all (0 or before the epoch, as
/// object storage gives a directory): no change will move them.
pub(crate) fn times_still(stamp: &Stamp) -> bool {
    stamp.mtime.0 <= 0 && stamp.ctime.0 <= 0
}

/// How long after its last change a stamp of the filesystem `dir` lies on
/// proves nothing: the granularity of its times (fine only for a local
/// filesystem known to keep nanoseconds and a directory whose ctime has
/// them: an ext3 inode of 128 bytes keeps whole seconds), plus, on a
/// network filesystem, its client's caches.
pub(crate) fn granularity_of(dir: &Path) -> Duration {
    if super::watch::remote_filesystem(dir) {
        return COARSE_GRANULARITY + NETWORK_CACHES;
    }
    use std::os::unix::fs::MetadataExt;
    let Ok(st) = nix::sys::statfs::statfs(dir) else {
        return COARSE_GRANULARITY;
    };
    let nanoseconds = std::fs::symlink_metadata(dir).is_ok_and(|m| m.ctime_nsec() != 0);
    if FINE.contains(&st.filesystem_type().0) && nanoseconds {
        FINE_GRANULARITY
    } else {
        COARSE_GRANULARITY
    }
}

fn time_of((secs, nanos): (i64, i64)) -> SystemTime {
    let nanos = Duration::from_nanos(nanos.clamp(0, 999_999_999) as u64);
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs as u64) + nanos
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + nanos
    }
}

/// The last change a stamp records: the later of mtime and ctime (a
/// restored mtime still moves ctime; an mtime in the future counts too).
pub(crate) fn changed(stamp: &Stamp) -> SystemTime {
    time_of(stamp.mtime).max(time_of(stamp.ctime))
}

/// Whether what was read of a source at `at` is proven to be what `stamp`
/// stands for: its last change lies a whole granularity before `at`.
pub(crate) fn settled(stamp: &Stamp, at: SystemTime, granularity: Duration) -> bool {
    changed(stamp)
        .checked_add(granularity)
        .is_some_and(|proven_from| proven_from <= at)
}

/// A 64-bit digest of a file's bytes, read through `f` from the start
/// without moving its position (64 KiB at a time: any size fits).
pub(crate) fn digest_file(f: &std::fs::File) -> std::io::Result<u64> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut at = 0u64;
    loop {
        let n = match f.read_at(&mut buf, at) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.write(&buf[..n]);
        at += n as u64;
    }
    hasher.write_u64(at);
    Ok(hasher.finish())
}

/// A version for contents that differ from those of `previous` under the
/// same stamp.
pub(crate) fn mix(previous: u64, digest: u64) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (previous, digest).hash(&mut hasher);
    hasher.finish()
}

/// What is known of a source's version from its stamp alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Known {
    /// The version: no need to read the source.
    Version(u64),
    /// The stamp proves nothing yet: the bytes must be read and compared
    /// (`Settling::looked`). The version of the last bytes read, for when
    /// they cannot be.
    Look(u64),
}

#[derive(Debug, Clone, Copy)]
struct Unsettled {
    stamp: Stamp,
    digest: u64,
    version: u64,
    /// When the bytes of `digest` were last read.
    checked: SystemTime,
}

/// The versions of sources read while their stamps were not settled, by
/// key: a version is the stamp's own (`plain`) until bytes read under the
/// same stamp differ from the bytes read before, then a new one. An entry
/// goes once its stamp is settled and its version is the stamp's own, or
/// once the source has another stamp.
pub(crate) struct Settling<K> {
    entries: Mutex<HashMap<K, Unsettled>>,
    /// Whether `entries` may hold anything: most of the time it holds
    /// nothing, and a look at a whole book's chapters then takes no lock.
    any: std::sync::atomic::AtomicBool,
    plain: fn(&Stamp) -> u64,
}

/// Entries kept before the ones that prove nothing more are swept.
const SWEEP_ABOVE: usize = 1024;

impl<K: Hash + Eq + Clone> Settling<K> {
    pub(crate) fn new(plain: fn(&Stamp) -> u64) -> Settling<K> {
        Settling {
            entries: Mutex::new(HashMap::new()),
            any: std::sync::atomic::AtomicBool::new(false),
            plain,
        }
    }

    /// The version of the source of `key` with `stamp`. No entry: the
    /// stamp's own version (bytes read under a stamp that was not settled
    /// leave an entry, so a cached text under the stamp's own version came
    /// from bytes the stamp proves).
    pub(crate) fn known(&self, key: &K, stamp: &Stamp, granularity: Duration) -> Known {
        let plain = (self.plain)(stamp);
        let mut entries = lock(&self.entries);
        let Some(u) = entries.get(key).copied() else {
            return Known::Version(plain);
        };
        if u.stamp != *stamp {
            entries.remove(key);
            return Known::Version(plain);
        }
        if !settled(stamp, u.checked, granularity) {
            return Known::Look(u.version);
        }
        if u.version == plain {
            entries.remove(key);
        }
        Known::Version(u.version)
    }

    /// Whether bytes about to be read under `stamp` at `now` must be
    /// digested (and given to `looked`).
    pub(crate) fn must_digest(&self, key: &K, stamp: &Stamp, now: SystemTime, g: Duration) -> bool {
        !settled(stamp, now, g)
            || lock(&self.entries)
                .get(key)
                .is_some_and(|u| u.stamp == *stamp)
    }

    /// The version of the bytes with `digest`, read under `stamp` from `at`
    /// on.
    pub(crate) fn looked(
        &self,
        key: &K,
        stamp: &Stamp,
        digest: u64,
        at: SystemTime,
        granularity: Duration,
    ) -> u64 {
        let plain_of = self.plain;
        let plain = plain_of(stamp);
        let mut entries = lock(&self.entries);
        if let Some(u) = entries.get_mut(key)
            && u.stamp == *stamp
        {
            if u.digest != digest {
                u.version = mix(u.version, digest);
                u.digest = digest;
                u.checked = at;
            } else if at > u.checked {
                u.checked = at;
            }
            return u.version;
        }
        if settled(stamp, at, granularity) {
            entries.remove(key);
            return plain;
        }
        if entries.len() >= SWEEP_ABOVE {
            entries.retain(|_, u| {
                !(settled(&u.stamp, u.checked, granularity) && u.version == plain_of(&u.stamp))
            });
        }
        self.any.store(true, std::sync::atomic::Ordering::Relaxed);
        entries.insert(
            key.clone(),
            Unsettled {
                stamp: *stamp,
                digest,
                version: plain,
                checked: at,
            },
        );
        plain
    }

    /// True when no source is remembered: every version is its stamp's.
    pub(crate) fn is_empty(&self) -> bool {
        if !self.any.load(std::sync::atomic::Ordering::Relaxed) {
            return true;
        }
        let empty = lock(&self.entries).is_empty();
        if empty {
            self.any.store(false, std::sync::atomic::Ordering::Relaxed);
        }
        empty
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.entries).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(matches!(rule_of(dir.path(), None), Rule::TimesMove { .. }));
        let epoch = std::fs::File::open(dir.path()).unwrap();
        epoch
            .set_modified(UNIX_EPOCH)
            .expect("a directory's mtime can be set");
        // Its ctime moved with the mtime: only both at 0 stay still.
        assert!(matches!(rule_of(dir.path(), None), Rule::TimesMove { .. }));
    }

    #[test]
    fn a_file_digest_covers_every_byte_and_the_length() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let digest = |bytes: &[u8]| {
            std::fs::write(&p, bytes).unwrap();
            digest_file(&std::fs::File::open(&p).unwrap()).unwrap()
        };
        let big = vec![7u8; 200_000];
        let mut other = big.clone();
        other[150_000] = 8;
        assert_ne!(digest(&big), digest(&other), "a byte past the first buffer");
        assert_eq!(digest(&big), digest(&big.clone()));
        assert_ne!(digest(b""), digest(b"\0"));
    }
}
