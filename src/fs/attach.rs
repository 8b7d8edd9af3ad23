//! Attaching the FUSE connection to the mountpoint ourselves, instead of
//! through fuser's mount code, for three reasons (fuser 0.18, checked in its
//! `mnt/fuse_pure.rs`):
//!
//! - fuser's mount(2) always uses the type `fuse` and ignores the subtype,
//!   so root mounts did not show as `fuse.novelfs`. The kernel accepts
//!   `fuse.SUBTYPE` as the type (the `fuse` filesystem has FS_HAS_SUBTYPE).
//! - fuser opens /dev/fuse before trying fusermount3 and gives up when it
//!   cannot (the device is often 0600 root), so a user with fusermount3
//!   installed could not mount at all.
//! - fuser's `AutoUnmount` goes through fusermount3 and needs an ACL other
//!   than Owner, which adds `allow_other`: auto_unmount widened access.
//!   Here auto_unmount is a watchdog process (see `Watchdog`) and access is
//!   whatever the access options say.

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What the kernel mount should look like.
#[derive(Debug, Clone)]
pub struct MountSpec<'a> {
    /// Canonical: mountinfo and fusermount3 both compare resolved paths.
    pub mountpoint: &'a Path,
    /// The mount's source column (the library root, or `fsname=`).
    pub source: &'a str,
    /// Shown as the type `fuse.{subtype}`.
    pub subtype: &'a str,
    pub allow_other: bool,
    pub default_permissions: bool,
}

/// A mounted FUSE connection.
#[derive(Debug)]
pub struct Attached {
    pub fd: OwnedFd,
    /// Whether this process may open /dev/fuse itself, which cloning the
    /// connection per worker thread (FUSE_DEV_IOC_CLONE) needs.
    pub can_clone: bool,
}

const DEV_FUSE: &str = "/dev/fuse";

fn euid_egid() -> (u32, u32) {
    // SAFETY: geteuid/getegid have no preconditions.
    unsafe { (libc::geteuid(), libc::getegid()) }
}

/// Mounts a FUSE connection at `spec.mountpoint`: with mount(2) when this
/// process may, else through the setuid helper fusermount3.
pub fn attach(spec: &MountSpec) -> Result<Attached, String> {
    let (uid, _) = euid_egid();
    let why_helper = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(DEV_FUSE)
    {
        Ok(dev) => {
            let dev = OwnedFd::from(dev);
            match mount_directly(&dev, spec) {
                Ok(()) => {
                    return Ok(Attached {
                        fd: dev,
                        can_clone: true,
                    });
                }
                Err(e) if e.raw_os_error() == Some(libc::EPERM) && uid != 0 => {
                    format!("uid {uid} may not call mount(2)")
                }
                Err(e) => {
                    return Err(format!(
                        "cannot mount {}: mount(2) failed: {e}",
                        spec.mountpoint.display()
                    ));
                }
            }
        }
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOENT | libc::ENODEV | libc::ENXIO)
            ) =>
        {
            return Err(missing_dev_fuse());
        }
        Err(e) if uid == 0 => return Err(format!("cannot open {DEV_FUSE}: {e}")),
        Err(e) => {
            // fusermount3 opens the device as the calling user too (it drops
            // its privileges for that), so it cannot help here.
            let helper = match fusermount() {
                Some(h) => format!("{} is installed", h.display()),
                None => "fusermount3 (package fuse3) is not installed either".into(),
            };
            return Err(format!(
                "cannot mount {} as uid {uid}: no read/write access to {DEV_FUSE} ({e}; {}). A user who is not root needs {DEV_FUSE} readable and writable (mode 0666, the usual default: as root, chmod 0666 {DEV_FUSE}) and fusermount3; {helper}",
                spec.mountpoint.display(),
                describe_dev_fuse()
            ));
        }
    };
    let Some(helper) = fusermount() else {
        return Err(format!(
            "cannot mount {} as uid {uid}: {why_helper}, and fusermount3 (the setuid helper that mounts for users who are not root) is not installed: install the package fuse3, or run as root",
            spec.mountpoint.display()
        ));
    };
    let fd = mount_with_helper(&helper, spec)?;
    Ok(Attached {
        fd,
        can_clone: false,
    })
}

pub fn missing_dev_fuse() -> String {
    format!(
        "{DEV_FUSE} is missing: load the fuse kernel module (modprobe fuse) or, in a container, pass the device (--device /dev/fuse)"
    )
}

fn describe_dev_fuse() -> String {
    match std::fs::metadata(DEV_FUSE) {
        Ok(m) => format!(
            "it is mode {:04o}, owner uid {}, group gid {}",
            m.mode() & 0o7777,
            m.uid(),
            m.gid()
        ),
        Err(e) => e.to_string(),
    }
}

fn mount_directly(dev: &OwnedFd, spec: &MountSpec) -> std::io::Result<()> {
    let (uid, gid) = euid_egid();
    let root_mode = std::fs::metadata(spec.mountpoint)?.mode() & libc::S_IFMT;
    let mut data = format!(
        "fd={},rootmode={root_mode:o},user_id={uid},group_id={gid}",
        dev.as_raw_fd()
    );
    if spec.allow_other {
        data.push_str(",allow_other");
    }
    if spec.default_permissions {
        data.push_str(",default_permissions");
    }
    let cstr =
        |s: &[u8]| CString::new(s).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL));
    let source = cstr(spec.source.as_bytes())?;
    let target = cstr(spec.mountpoint.as_os_str().as_bytes())?;
    let fstype = cstr(format!("fuse.{}", spec.subtype).as_bytes())?;
    let data = cstr(data.as_bytes())?;
    let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOATIME;
    // SAFETY: all pointers are valid NUL-terminated strings for the call.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// fusermount3 (or the older fusermount) on PATH or in the usual places.
pub fn fusermount() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path)
        .chain(["/usr/bin", "/bin", "/usr/sbin", "/sbin"].map(PathBuf::from));
    let dirs: Vec<PathBuf> = dirs.collect();
    ["fusermount3", "fusermount"]
        .iter()
        .find_map(|name| dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()))
}

/// fusermount3 reads `\` as an escape in option values: a library path
/// with a comma must not split the option list.
fn escape_option_value(v: &str) -> String {
    v.replace('\\', "\\\\").replace(',', "\\,")
}

fn mount_with_helper(helper: &Path, spec: &MountSpec) -> Result<OwnedFd, String> {
    let mut options = format!(
        "ro,nosuid,nodev,noatime,fsname={},subtype={}",
        escape_option_value(spec.source),
        escape_option_value(spec.subtype)
    );
    if spec.allow_other {
        options.push_str(",allow_other");
    }
    if spec.default_permissions {
        options.push_str(",default_permissions");
    }
    let (ours, theirs) = UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
    let theirs_fd = theirs.as_raw_fd();
    let mut cmd = Command::new(helper);
    cmd.arg("-o")
        .arg(&options)
        .arg("--")
        .arg(spec.mountpoint)
        .env("_FUSE_COMMFD", theirs_fd.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: only fcntl (async-signal-safe) runs between fork and exec; it
    // lets the helper inherit its end of the socket.
    unsafe {
        cmd.pre_exec(move || {
            let flags = libc::fcntl(theirs_fd, libc::F_GETFD);
            if flags < 0 || libc::fcntl(theirs_fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", helper.display()))?;
    drop(theirs);
    let received = receive_fd(&ours);
    drop(ours);
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    let _ = child.wait();
    match received {
        Ok(Some(fd)) => Ok(fd),
        Ok(None) | Err(_) => {
            let said = stderr.trim();
            let mut msg = format!(
                "cannot mount {}: {} refused: {}",
                spec.mountpoint.display(),
                helper.display(),
                if said.is_empty() {
                    "no reason given"
                } else {
                    said
                }
            );
            if said.contains("user_allow_other") {
                msg.push_str(" (allow_other and allow_root let other users in; for a user who is not root, FUSE allows that only when /etc/fuse.conf has a line user_allow_other)");
            }
            Err(msg)
        }
    }
}

/// The /dev/fuse descriptor fusermount3 sends back over the socket.
fn receive_fd(sock: &UnixStream) -> std::io::Result<Option<OwnedFd>> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as usize;
    // u64 storage keeps the control buffer aligned for cmsghdr.
    let mut control = vec![0u64; space.div_ceil(8)];
    // SAFETY: an all-zero msghdr is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    loop {
        // SAFETY: msg points at live buffers of the sizes it states.
        let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n > 0 {
            break;
        }
        if n == 0 {
            return Ok(None);
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
    // SAFETY: msg was filled in by recvmsg; the header and data pointers
    // stay inside `control`.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return Ok(None);
        }
        let fd: RawFd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
        Ok((fd >= 0).then(|| OwnedFd::from_raw_fd(fd)))
    }
}

/// The id of the topmost mount at `mountpoint` (canonical), from mountinfo.
pub fn mount_id(mountpoint: &Path) -> Option<u64> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let want = mountpoint.as_os_str().as_bytes();
    info.lines().rev().find_map(|l| {
        let mut fields = l.split(' ');
        let id = fields.next()?.parse::<u64>().ok()?;
        let mp = fields.nth(3)?;
        (super::mountpoint::unescape_mountinfo(mp) == want).then_some(id)
    })
}

/// auto_unmount: a process forked before the mount that outlives the
/// daemon and unmounts the mount if the daemon died without doing so
/// (killed, crashed). It learns the mount's id once mounted, then waits
/// for the pipe to close, which the kernel does when the daemon exits,
/// however it exits. It unmounts only a mount that still has that id at
/// that path, never a later one.
pub struct Watchdog {
    tell: std::fs::File,
}

impl Watchdog {
    /// Must run while the process has a single thread (it forks).
    pub fn start(mountpoint: &Path) -> std::io::Result<Watchdog> {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid 2-element array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both fds were just created and are owned here.
        let (read_end, write_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: the caller guarantees a single thread, so fork is sound.
        match unsafe { libc::fork() } {
            -1 => Err(std::io::Error::last_os_error()),
            0 => {
                drop(write_end);
                watch_and_clean(read_end, mountpoint);
                // SAFETY: leaving the child without running the parent's
                // destructors or atexit handlers.
                unsafe { libc::_exit(0) }
            }
            _ => Ok(Watchdog {
                tell: std::fs::File::from(write_end),
            }),
        }
    }

    /// Tells the watchdog which mount to clean up.
    pub fn arm(&mut self, mount_id: u64) {
        let _ = writeln!(self.tell, "{mount_id}");
    }
}

fn watch_and_clean(read_end: OwnedFd, mountpoint: &Path) {
    let keep = read_end.as_raw_fd();
    // Hold nothing of the daemon's: not its /dev/fuse, not the pipe that
    // tells the CLI the mount is ready, not the caller's terminal, and not
    // the working directory; ignore the signals meant for the daemon, so
    // that only the daemon's end decides when this one acts.
    // SAFETY: plain fd and signal calls in a single-threaded child.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for fd in 0..=2 {
            if null >= 0 {
                libc::dup2(null, fd);
            }
        }
        if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
            let open: Vec<RawFd> = dir
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect();
            for fd in open {
                if fd > 2 && fd != keep {
                    libc::close(fd);
                }
            }
        }
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
            libc::signal(sig, libc::SIG_IGN);
        }
        libc::chdir(c"/".as_ptr());
        libc::prctl(libc::PR_SET_NAME, c"novelfs-autoumnt".as_ptr());
    }
    let mut told = String::new();
    let _ = std::fs::File::from(read_end).read_to_string(&mut told);
    let Some(id) = told
        .lines()
        .next()
        .and_then(|l| l.trim().parse::<u64>().ok())
    else {
        return;
    };
    if mount_id(mountpoint) != Some(id) {
        return;
    }
    let Ok(target) = CString::new(mountpoint.as_os_str().as_bytes()) else {
        return;
    };
    // SAFETY: target is a valid NUL-terminated path.
    if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } == 0 {
        return;
    }
    if let Some(helper) = fusermount() {
        let _ = Command::new(helper)
            .args(["-u", "-z", "--"])
            .arg(mountpoint)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_values_with_commas_stay_one_option() {
        assert_eq!(escape_option_value("/srv/a,b\\c"), "/srv/a\\,b\\\\c");
    }
}
