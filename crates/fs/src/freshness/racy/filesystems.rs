//! How the stamps of a library's filesystem are trusted: the granularity
//! of its times, and whether a change moves a directory's times at all.
//!
//! Some sources never move a directory's times at all: object storage
//! mounted as a filesystem (s3fs gives every directory the mtime -1, rclone
//! the moment it first listed it). No stamp proves anything there: each
//! directory is listed again once its names are a TTL old, and its names
//! compared (`Rule::TimesStill`).

use std::path::Path;
use std::time::Duration;

use crate::cache::Stamp;
use crate::freshness::watch::remote_filesystem;

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
    if let Some(stamp) = std::fs::symlink_metadata(dir).ok().and_then(|m| novelfs_library::backing::Meta::from_std(&m)).map(|m| Stamp::of(&m))
        && times_still(&stamp)
    {
        return Rule::TimesStill(format!("{} has the mtime {}", dir.display(), stamp.mtime.0));
    }
    Rule::TimesMove {
        granularity: granularity_of(dir),
        network: remote_filesystem(dir),
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
    if remote_filesystem(dir) {
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
