//! The library's filesystem as far as freshness depends on it, worked out
//! once when the tree is built (`SourceFs::of`) and handed to what needs
//! it: the watch (whether `novels/` can be watched), the racy rules (the
//! granularity of its times, whether they move at all) and the persistent
//! index (when its entries are trusted).

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use super::racy::{self, COARSE_GRANULARITY, FINE_GRANULARITY, NETWORK_CACHES};
use crate::cache::Stamp;
use novelfs_storage::access;

/// Filesystems whose changes may come from elsewhere than this kernel.
const REMOTE: [i64; 12] = [
    0x6969,     // NFS
    0x517b,     // SMB
    0xff534d42, // CIFS
    0xfe534d42, // SMB2
    0x65735546, // FUSE
    0x01021997, // 9P
    0x00c36400, // Ceph
    0x5346414f, // AFS
    0x73757245, // Coda
    0x01161970, // GFS2
    0x7461636f, // OCFS2
    0x0bd00bd0, // Lustre
];

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

/// Mount types that serve object storage: a directory there is a prefix of
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

/// The profile of the filesystem `novels/` lies on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceFs {
    /// Its changes may come from elsewhere than this kernel (a network
    /// filesystem, or one `statfs` cannot tell): inotify would not see
    /// them, and its clients cache names and attributes.
    pub(crate) remote: bool,
    /// How long after its last change a stamp there proves nothing: the
    /// granularity of its times (fine only for a local filesystem known to
    /// keep nanoseconds and a `novels/` whose ctime has them: an ext3 inode
    /// of 128 bytes keeps whole seconds), plus, on a network filesystem,
    /// its client's caches.
    pub(crate) granularity: Duration,
    /// Why a change is taken to leave directories' times where they are:
    /// object storage (s3fs gives every directory the mtime -1, rclone the
    /// moment it first listed it), or `novels/`'s own times at 0 or before.
    /// `None`: times move.
    pub(crate) times_still: Option<String>,
}

impl SourceFs {
    /// A library in a bucket: its changes come from elsewhere, and a
    /// file's stamp is its version (ETag), which proves its bytes at once.
    pub(crate) fn in_bucket() -> SourceFs {
        SourceFs {
            remote: true,
            granularity: Duration::ZERO,
            times_still: None,
        }
    }

    /// The profile of `novels_dir`, on a mount of type `fs_type` (from
    /// mountinfo, when known).
    pub(crate) fn of(novels_dir: &Path, fs_type: Option<&str>) -> SourceFs {
        let magic = access::one(|| nix::sys::statfs::statfs(novels_dir))
            .ok()
            .map(|st| st.filesystem_type().0);
        let remote = magic.is_none_or(|m| REMOTE.contains(&m));
        let meta = access::one(|| std::fs::symlink_metadata(novels_dir)).ok();
        let fine = magic.is_some_and(|m| FINE.contains(&m))
            && meta.as_ref().is_some_and(|m| m.ctime_nsec() != 0);
        let granularity = if remote {
            COARSE_GRANULARITY + NETWORK_CACHES
        } else if fine {
            FINE_GRANULARITY
        } else {
            COARSE_GRANULARITY
        };
        let object_storage = fs_type.filter(|t| OBJECT_STORAGE.contains(t));
        let stamp = meta
            .as_ref()
            .and_then(novelfs_library::backing::Meta::from_std)
            .map(|m| Stamp::of(&m));
        let times_still = match (object_storage, stamp) {
            (Some(t), _) => Some(format!("{} is on {t}", novels_dir.display())),
            (None, Some(s)) if racy::times_still(&s) => Some(format!(
                "{} has the mtime {}",
                novels_dir.display(),
                s.mtime.0
            )),
            _ => None,
        };
        SourceFs {
            remote,
            granularity,
            times_still,
        }
    }

    /// Whether `novels/` can be watched: inotify sees only this kernel's
    /// changes.
    pub(crate) fn watchable(&self) -> bool {
        !self.remote
    }
}

/// Whether `dir` lies on a filesystem whose changes may come from
/// elsewhere: asked of each book directory as it is watched, since a book
/// may be a mount of its own inside `novels/`.
pub(crate) fn remote(dir: &Path) -> bool {
    match access::one(|| nix::sys::statfs::statfs(dir)) {
        Ok(st) => REMOTE.contains(&st.filesystem_type().0),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_storage_and_times_at_the_epoch_stay_still() {
        let dir = tempfile::tempdir().unwrap();
        let local = SourceFs::of(dir.path(), None);
        assert!(local.times_still.is_none(), "a local directory: times move");
        let s3 = SourceFs::of(dir.path(), Some("fuse.s3fs"));
        assert!(s3.times_still.is_some_and(|why| why.contains("fuse.s3fs")));
        let gone = SourceFs::of(&dir.path().join("gone"), None);
        assert!(gone.remote && !gone.watchable(), "statfs cannot tell");
        assert_eq!(gone.granularity, COARSE_GRANULARITY + NETWORK_CACHES);
    }
}
