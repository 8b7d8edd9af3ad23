//! The system calls the holder is made of: its signals as a descriptor,
//! pidfds of the server (of one of its threads, or of the whole process),
//! the memfds that outlive a server, and one buffer mapped for a request.

use fuser::abi::fuse_opcode::{FUSE_BATCH_FORGET, FUSE_FORGET, FUSE_INTERRUPT};
use fuser::abi::{fuse_in_header, fuse_notify_code, fuse_out_header};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use zerocopy::{FromBytes, IntoBytes};

pub(super) fn pollin(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// The next signal of the holder's signalfd (0 if none could be read).
pub(super) fn read_signal(signals: &OwnedFd) -> u32 {
    // SAFETY: an all-zero siginfo is a valid buffer.
    let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::signalfd_siginfo>();
    // SAFETY: reading one siginfo into a buffer of its size.
    let n = unsafe {
        libc::read(
            signals.as_raw_fd(),
            (&mut info as *mut libc::signalfd_siginfo).cast(),
            size,
        )
    };
    if n as usize == size {
        info.ssi_signo
    } else {
        0
    }
}

/// A pidfd of the thread `tid` (the server's sentinel thread), readable
/// once that thread ends, whatever the server's other threads do
/// (`PIDFD_THREAD`, Linux 6.9+). Not of the main thread: the kernel tells
/// a main thread's end only once every thread of the process has ended.
pub(super) fn thread_pidfd(tid: u32) -> Option<OwnedFd> {
    const PIDFD_THREAD: libc::c_long = libc::O_EXCL as libc::c_long;
    pidfd(tid, PIDFD_THREAD)
}

/// A pidfd of the process `pid`: readable once all of it has ended.
pub(super) fn process_pidfd(pid: u32) -> Option<OwnedFd> {
    pidfd(pid, 0)
}

pub(super) fn pidfd(pid: u32, flags: libc::c_long) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_long, flags) };
    // SAFETY: a descriptor just made, owned here.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Enough for any request the kernel may send (it refuses to read into
/// less than `max_write` and a header; fuser asks for 16 MiB writes). An
/// anonymous mapping: only the pages a request touches cost memory.
pub(super) const BUFFER_BYTES: usize = (16 << 20) + (64 << 10);

pub(super) struct Buffer {
    pub(super) ptr: *mut u8,
    pub(super) len: usize,
}

impl Buffer {
    pub(super) fn new(len: usize) -> Option<Buffer> {
        // SAFETY: a private anonymous mapping, unmapped on drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        (p != libc::MAP_FAILED).then_some(Buffer { ptr: p.cast(), len })
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Blocks the signals the holder answers and returns a signalfd for them:
/// SIGTERM, SIGINT, SIGHUP (unmount) and SIGCHLD (the server died).
pub(super) fn block_signals() -> std::io::Result<OwnedFd> {
    // SAFETY: plain libc signal-set manipulation on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

pub(super) fn memfd(name: &std::ffi::CStr) -> std::io::Result<OwnedFd> {
    // SAFETY: a valid NUL-terminated name.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor just made, owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Answers the request of `n` bytes read into `buf` from the connection
/// `fuse` with EIO (FORGET, INTERRUPT and BATCH_FORGET take no answer).
pub(super) fn fail_request(fuse: RawFd, buf: &Buffer, n: usize) {
    // SAFETY: the kernel wrote `n` bytes into the buffer.
    let req = unsafe { std::slice::from_raw_parts(buf.ptr, n) };
    let Ok((head, _)) = fuse_in_header::read_from_prefix(req) else {
        return;
    };
    let no_answer = [FUSE_FORGET, FUSE_INTERRUPT, FUSE_BATCH_FORGET];
    if no_answer.into_iter().any(|op| head.opcode == op as u32) {
        return;
    }
    write_header(fuse, -libc::EIO, head.unique);
}

/// Writes a reply or notification that is a bare `fuse_out_header`:
/// `error` an answer's negated errno, or a notification's code.
fn write_header(fuse: RawFd, error: i32, unique: u64) {
    let out = fuse_out_header {
        len: std::mem::size_of::<fuse_out_header>() as u32,
        error,
        unique,
    };
    let bytes = out.as_bytes();
    // SAFETY: writing a whole fuse_out_header.
    unsafe { libc::write(fuse, bytes.as_ptr().cast(), bytes.len()) };
}

/// Asks the kernel to queue again what the dead server read and never
/// answered (`FUSE_NOTIFY_RESEND`, Linux 6.9+).
pub(super) fn notify_resend(fuse: RawFd) {
    write_header(fuse, fuse_notify_code::FUSE_NOTIFY_RESEND as i32, 0);
}

/// Whether the kernel still has the connection (not unmounted, not
/// aborted): `/dev/fuse` polls with POLLERR once it is gone.
pub(super) fn connected(fuse: RawFd) -> bool {
    let mut p = pollin(fuse);
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    !(n > 0 && p.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0)
}

/// Lets go of the pages of code and read-only data the holder has mapped
/// (of this binary and its shared libraries): the kernel maps a file's
/// pages around each one touched (fault-around), so a few hundred KiB of
/// code run once (starting a server, logging) stay mapped as MiBs. Only
/// mappings that cannot be written and hold no private copy of a page
/// (`Anonymous: 0`, which leaves out the relocated read-only data) are
/// dropped: their pages stay in the page cache and come back on the next
/// touch, so nothing is lost.
pub(super) fn drop_mapped_code() {
    if crate::mount::failover::handoff::switched_off("drop_code") {
        return;
    }
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return;
    };
    let mut candidate: Option<(usize, usize)> = None;
    let mut drop = Vec::new();
    for line in smaps.lines() {
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or("");
        if let Some((start, end)) = first.split_once('-')
            && let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            )
        {
            let perms = words.next().unwrap_or("");
            let path = words.nth(3).unwrap_or("");
            candidate = (!perms.contains('w') && perms.ends_with('p') && path.starts_with('/'))
                .then_some((start, end));
        } else if first == "Anonymous:"
            && let Some(range) = candidate.take()
            && words.next() == Some("0")
        {
            drop.push(range);
        }
    }
    for (start, end) in drop {
        // SAFETY: a read-only private file mapping with no private page:
        // dropping its page-table entries loses nothing.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
    }
}
