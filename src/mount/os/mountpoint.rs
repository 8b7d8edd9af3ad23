//! The mount point: how it looks to the kernel, and unmounting it.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::fusermount::fusermount;
use super::mountinfo::mount_type;
use super::process::euid_egid;

/// How a mountpoint looks right now.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum MountpointState {
    Missing,
    NotADirectory,
    /// A FUSE daemon died and left the mount behind (ENOTCONN).
    Stale,
    AlreadyMounted,
    Ready,
}

/// `path` made absolute and written the way the kernel writes mount points in
/// mountinfo: no trailing slash, no `.` and no doubled `/`. Lexical only, so it
/// never stats a mount whose daemon may be hung.
pub(crate) fn absolute(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    joined.components().collect()
}

/// Decided from mountinfo and the FUSE connection, not from what `stat`
/// returns: after a daemon is killed, the kernel may still answer `stat`
/// of the mountpoint from attributes it holds, while the mount is dead.
pub(crate) fn mountpoint_state(path: &Path) -> MountpointState {
    // A mount at the path as given is judged without a stat.
    let lexical = absolute(path);
    if let Some(fs_type) = mount_type(&lexical) {
        return mounted_state(&lexical, &fs_type);
    }
    match std::fs::metadata(path) {
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => MountpointState::Stale,
        Err(_) => MountpointState::Missing,
        Ok(m) if !m.is_dir() => MountpointState::NotADirectory,
        // The stat above has already been answered, so resolving symlinks and
        // `..` cannot hang; mountinfo holds the resolved path.
        Ok(_) => {
            let resolved = std::fs::canonicalize(path).unwrap_or(lexical);
            match mount_type(&resolved) {
                Some(fs_type) => mounted_state(&resolved, &fs_type),
                None => MountpointState::Ready,
            }
        }
    }
}

/// A mount of type `fs_type` at `path`: stale when it is FUSE and its
/// connection is gone.
fn mounted_state(path: &Path, fs_type: &str) -> MountpointState {
    let fuse = fs_type == "fuse" || fs_type == "fuseblk" || fs_type.starts_with("fuse.");
    if fuse && fuse_connection_lost(path) {
        MountpointState::Stale
    } else {
        MountpointState::AlreadyMounted
    }
}

/// Whether the FUSE mount at `path` has lost its daemon. The kernel never
/// caches statfs: it asks the daemon each time and answers ENOTCONN once
/// the connection is gone (the daemon died, or it was aborted).
fn fuse_connection_lost(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs is plain data, for which all zeroes is a valid value.
    let mut buf: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid NUL-terminated path and a buffer of the right type.
    let r = unsafe { libc::statfs(c.as_ptr(), &mut buf) };
    r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOTCONN)
}

/// The one mount type `novelfs unmount` takes down. A mount whose daemon
/// died keeps its type in mountinfo, so a stale novelfs mount is cleared too.
const NOVELFS_TYPE: &str = "fuse.novelfs";

/// Why `unmount` did not unmount: what its callers tell apart (a mount
/// that is busy, or refused otherwise, may still be detached lazily; where
/// nothing of novelfs is mounted, there is nothing to detach). Its text is
/// the one line the user is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UnmountError {
    /// Nothing is mounted there, or something other than novelfs is: left
    /// untouched.
    NotOurs(String),
    /// A file or directory in the mount at this path is open.
    Busy(PathBuf),
    /// Anything else, in the words of its cause.
    Failed(String),
}

impl std::fmt::Display for UnmountError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnmountError::NotOurs(why) | UnmountError::Failed(why) => f.write_str(why),
            UnmountError::Busy(path) => write!(
                f,
                "cannot unmount {}: it is busy (a file or directory in it is open); close it, or use `novelfs unmount --lazy`",
                path.display()
            ),
        }
    }
}

/// Unmounts the novelfs mount at `path`; `lazy` detaches even while files
/// are open. Anything else mounted there, or nothing, is refused untouched.
pub(crate) fn unmount(path: &Path, lazy: bool) -> Result<(), UnmountError> {
    let path = novelfs_mount_at(path).map_err(UnmountError::NotOurs)?;
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| UnmountError::Failed("path contains NUL".to_string()))?;
    let flags = if lazy { libc::MNT_DETACH } else { 0 };
    // SAFETY: c is a valid NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), flags) } == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EPERM) => unmount_with_helper(&path, lazy),
        Some(libc::EBUSY) => Err(UnmountError::Busy(path)),
        Some(libc::EINVAL) => Err(UnmountError::NotOurs(format!(
            "{} is not a mount point",
            path.display()
        ))),
        _ => Err(UnmountError::Failed(format!(
            "cannot unmount {}: {err}",
            path.display()
        ))),
    }
}

/// Unmounts the novelfs mount at `path`, detaching it lazily when it
/// cannot be unmounted now (busy, or refused): the kernel finishes once
/// its open files close. Where nothing of novelfs is mounted, nothing is
/// tried again.
pub(crate) fn unmount_or_detach(path: &Path) {
    match unmount(path, false) {
        Ok(()) | Err(UnmountError::NotOurs(_)) => {}
        Err(UnmountError::Busy(_) | UnmountError::Failed(_)) => {
            let _ = unmount(path, true);
        }
    }
}

/// The mount point `path` names, when the topmost mount there is novelfs.
/// The lexical form is looked up first, so the mount of a hung or dead
/// daemon is never stat'ed; only a path mountinfo lacks is resolved
/// (through symlinks and `..`).
fn novelfs_mount_at(path: &Path) -> Result<PathBuf, String> {
    let lexical = absolute(path);
    let found = match mount_type(&lexical) {
        Some(fstype) => Some((lexical.clone(), fstype)),
        None => std::fs::canonicalize(&lexical)
            .ok()
            .and_then(|resolved| mount_type(&resolved).map(|fstype| (resolved, fstype))),
    };
    let Some((at, fstype)) = found else {
        return Err(format!(
            "{} is not a mount point; nothing was unmounted",
            lexical.display()
        ));
    };
    if fstype == NOVELFS_TYPE {
        return Ok(at);
    }
    // `-o subtype=NAME` makes a novelfs mount `fuse.NAME`, which this
    // command cannot tell from another FUSE filesystem.
    let subtype_hint = if fstype.starts_with("fuse") {
        " (a novelfs mount made with -o subtype=NAME has the type fuse.NAME: unmount that one with umount or fusermount3 -u)"
    } else {
        ""
    };
    Err(format!(
        "{} is {} {fstype} mount, not novelfs; nothing was unmounted{subtype_hint}",
        at.display(),
        article(&fstype)
    ))
}

/// "an ext4 mount", "a tmpfs mount": by the sound of the type's name, which
/// is a word or read letter by letter (nfs, xfs, sshfs).
fn article(fstype: &str) -> &'static str {
    let spelled = ["nfs", "xfs", "sshfs", "smb", "f2fs", "lxcfs", "rbd", "hfs"];
    if fstype.starts_with(['a', 'e', 'i', 'o', 'u'])
        || spelled.iter().any(|s| fstype.starts_with(s))
    {
        "an"
    } else {
        "a"
    }
}

/// A user who is not root unmounts through fusermount3, which checks that
/// the mount is theirs. Its refusals are passed on in its own words, after
/// the cause this side can name itself.
/// Detaches the mount at `mountpoint` if it is still the one made as
/// `mount_id` (not one mounted over it since).
pub(crate) fn detach_if_ours(mountpoint: &Path, mount_id: Option<u64>) {
    if mount_id.is_some() && super::mountinfo::mount_id(mountpoint) == mount_id {
        let _ = unmount(mountpoint, true);
    }
}

fn unmount_with_helper(path: &Path, lazy: bool) -> Result<(), UnmountError> {
    let (uid, _) = euid_egid();
    let Some(helper) = fusermount() else {
        return Err(UnmountError::Failed(format!(
            "cannot unmount {} as uid {uid}: only root may call umount(2), and fusermount3 (which unmounts a user's own FUSE mounts) is not installed: install the package fuse3, or run as root",
            path.display()
        )));
    };
    let out = std::process::Command::new(&helper)
        .arg(if lazy { "-uz" } else { "-u" })
        .arg("--")
        .arg(path)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| UnmountError::Failed(format!("cannot run {}: {e}", helper.display())))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if said.contains("busy") {
        return Err(UnmountError::Busy(path.to_path_buf()));
    }
    Err(UnmountError::Failed(format!(
        "cannot unmount {}: {said}",
        path.display()
    )))
}

pub(crate) fn stale_message(mnt: &Path) -> String {
    format!(
        "{0} is a stale mount left by a daemon that died (\"Transport endpoint is not connected\"); clear it with `novelfs unmount {0}` (or `umount -l {0}`), or mount again with --force",
        mnt.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_article_follows_the_sound_of_the_type() {
        for (fstype, want) in [
            ("ext4", "an"),
            ("tmpfs", "a"),
            ("nfs4", "an"),
            ("overlay", "an"),
            ("fuse.sshfs", "a"),
            ("xfs", "an"),
        ] {
            assert_eq!(article(fstype), want, "{fstype}");
        }
    }

    #[test]
    fn mount_points_are_written_as_mountinfo_writes_them() {
        assert_eq!(
            absolute(Path::new("/mnt/novels/")),
            Path::new("/mnt/novels")
        );
        assert_eq!(
            absolute(Path::new("/mnt//./novels/.")),
            Path::new("/mnt/novels")
        );
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(absolute(Path::new("mnt/")), cwd.join("mnt"));
    }

    /// Where nothing is mounted, unmounting is refused as not ours, in the
    /// line the user is told, and nothing is tried again.
    #[test]
    fn nothing_mounted_is_not_ours() {
        let dir = tempfile::tempdir().unwrap();
        let e = unmount(dir.path(), false).unwrap_err();
        let said = format!(
            "{} is not a mount point; nothing was unmounted",
            dir.path().display()
        );
        assert_eq!(e, UnmountError::NotOurs(said.clone()));
        assert_eq!(e.to_string(), said);
        unmount_or_detach(dir.path());
    }

    #[test]
    fn busy_says_how_to_detach() {
        assert_eq!(
            UnmountError::Busy("/mnt/novels".into()).to_string(),
            "cannot unmount /mnt/novels: it is busy (a file or directory in it is open); close it, or use `novelfs unmount --lazy`"
        );
    }
}
