//! Attaching the FUSE connection to the mountpoint ourselves, instead of
//! through fuser's mount code, for three reasons (fuser 0.18, checked in its
//! `mnt/fuse_pure.rs`):
//!
//! - fuser's mount(2) always uses the type `fuse` and ignores the subtype,
//!   so a root mount would not show as `fuse.novelfs`. The kernel accepts
//!   `fuse.SUBTYPE` as the type (the `fuse` filesystem has FS_HAS_SUBTYPE).
//! - fuser opens /dev/fuse before trying fusermount3 and gives up when it
//!   cannot (the device is often 0600 root), so a user with fusermount3
//!   installed could not mount at all through it.
//! - fuser's `AutoUnmount` goes through fusermount3 and needs an ACL other
//!   than Owner, which adds `allow_other`: auto_unmount would widen access.
//!   Here auto_unmount is a watchdog process (see `Watchdog`) and access is
//!   whatever the access options say.

use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};

use super::fusermount::{escape_option_value, fusermount};
use super::process::euid_egid;
use crate::mount::config::KernelMount;

/// The kernel mount to make: `source` is the source column of mountinfo,
/// `mountpoint` canonical (mountinfo and fusermount3 compare resolved paths).
struct MountSpec<'a> {
    kernel: &'a KernelMount,
    source: &'a str,
    mountpoint: &'a Path,
}

/// A mounted FUSE connection.
#[derive(Debug)]
pub(crate) struct Attached {
    pub fd: OwnedFd,
    /// Whether this process may open /dev/fuse itself, which cloning the
    /// connection per worker thread (FUSE_DEV_IOC_CLONE) needs.
    pub can_clone: bool,
}

const DEV_FUSE: &str = "/dev/fuse";

/// Mounts a FUSE connection at `spec.mountpoint`: with mount(2) when this
/// process may, else through the setuid helper fusermount3.
pub(crate) fn attach(
    kernel: &KernelMount,
    source: &str,
    mountpoint: &Path,
) -> Result<Attached, String> {
    let spec = MountSpec {
        kernel,
        source,
        mountpoint,
    };
    let spec = &spec;
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

pub(crate) fn missing_dev_fuse() -> String {
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
    if spec.kernel.allow_other {
        data.push_str(",allow_other");
    }
    if spec.kernel.default_permissions {
        data.push_str(",default_permissions");
    }
    let cstr =
        |s: &[u8]| CString::new(s).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL));
    let source = cstr(spec.source.as_bytes())?;
    let target = cstr(spec.mountpoint.as_os_str().as_bytes())?;
    let fstype = cstr(format!("fuse.{}", spec.kernel.subtype).as_bytes())?;
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

fn mount_with_helper(helper: &Path, spec: &MountSpec) -> Result<OwnedFd, String> {
    let mut options = format!(
        "ro,nosuid,nodev,noatime,fsname={},subtype={}",
        escape_option_value(spec.source),
        escape_option_value(&spec.kernel.subtype)
    );
    if spec.kernel.allow_other {
        options.push_str(",allow_other");
    }
    if spec.kernel.default_permissions {
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
    // The helper's end of the socket.
    super::process::inherit(&mut cmd, vec![theirs_fd]);
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
