//! What the holder answers once it has given up on servers, until the
//! mount goes: the root lists only `ERROR`, which says why
//! (`错误：{reason}\n`, as a root whose library cannot be read does), and
//! every other request is EIO. The answers are made from bytes fixed when
//! it gives up: no library, and no allocation per request.

use std::os::fd::{AsRawFd, RawFd};

use super::Holder;
use crate::mount::failover::holder_os::{BUFFER_BYTES, Buffer, fail_request, pollin, read_signal};
use crate::mount::handoff;
use crate::mount::os::process::euid_egid;
use novelfs_fs::{OUTSIDE_INO, ROOT_INO};

const LOOKUP: u32 = 1;
const FORGET: u32 = 2;
const GETATTR: u32 = 3;
const OPEN: u32 = 14;
const READ: u32 = 15;
const RELEASE: u32 = 18;
const GETXATTR: u32 = 22;
const LISTXATTR: u32 = 23;
const OPENDIR: u32 = 27;
const READDIR: u32 = 28;
const RELEASEDIR: u32 = 29;
const ACCESS: u32 = 34;
const INTERRUPT: u32 = 36;
const NOTIFY_REPLY: u32 = 41;
const BATCH_FORGET: u32 = 42;
const READDIRPLUS: u32 = 44;

const NOTIFY_INVAL_INODE: i32 = 2;
const NOTIFY_INVAL_ENTRY: i32 = 3;

const HEADER: usize = 40;
const OUT_HEADER: usize = 16;
const ATTR: usize = 88;
const ENTRY_OUT: usize = 40 + ATTR;
/// The longest `ERROR` (a longer reason is cut at a character).
const MAX_ERROR: usize = 2048;
const ERROR_NAME: &[u8] = b"ERROR";

/// The tree the holder shows once it gave up: the root and its `ERROR`.
pub(super) struct GaveUpTree {
    error: Vec<u8>,
    uid: u32,
    gid: u32,
    dir_mode: u32,
    file_mode: u32,
    /// The attributes' times: when the holder gave up.
    secs: u64,
    nsecs: u32,
}

impl GaveUpTree {
    /// `mode_mask` as the servers apply it (`Access::mode_mask`).
    pub(super) fn new(reason: &str, mode_mask: u16) -> GaveUpTree {
        let mut error = format!("错误：{reason}");
        if error.len() > MAX_ERROR - 1 {
            let mut end = MAX_ERROR - 1;
            while !error.is_char_boundary(end) {
                end -= 1;
            }
            error.truncate(end);
        }
        error.push('\n');
        let (uid, gid) = euid_egid();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let mask = u32::from(mode_mask);
        GaveUpTree {
            error: error.into_bytes(),
            uid,
            gid,
            dir_mode: libc::S_IFDIR | (0o555 & mask),
            file_mode: libc::S_IFREG | (0o444 & mask),
            secs: now.as_secs(),
            nsecs: now.subsec_nanos(),
        }
    }

    fn attr(&self, out: &mut Writer, ino: u64) {
        let (size, mode, nlink) = if ino == ROOT_INO {
            (0, self.dir_mode, 2)
        } else {
            (self.error.len() as u64, self.file_mode, 1)
        };
        out.u64(ino);
        out.u64(size);
        out.u64(size.div_ceil(512));
        for _ in 0..3 {
            out.u64(self.secs);
        }
        for _ in 0..3 {
            out.u32(self.nsecs);
        }
        for v in [mode, nlink, self.uid, self.gid, 0, 4096, 0] {
            out.u32(v);
        }
    }

    /// An entry (`fuse_entry_out`), kept for no time: the kernel asks
    /// again, and the holder answers the same.
    fn entry(&self, out: &mut Writer, ino: u64) {
        out.u64(ino);
        out.u64(0);
        out.zeros(24);
        self.attr(out, ino);
    }

    /// Answers the request `req` (as read from the connection `fuse`).
    pub(super) fn answer(&self, fuse: RawFd, req: &[u8]) {
        if req.len() < HEADER {
            return;
        }
        let opcode = u32_at(req, 4);
        let unique = u64_at(req, 8);
        let node = u64_at(req, 16);
        let body = &req[HEADER..];
        let mut out = Writer::new(unique);
        let errno = match (opcode, node) {
            (FORGET | BATCH_FORGET | INTERRUPT | NOTIFY_REPLY, _) => return,
            (LOOKUP, ROOT_INO) if name_of(body) == ERROR_NAME => {
                self.entry(&mut out, OUTSIDE_INO);
                0
            }
            (GETATTR, ROOT_INO | OUTSIDE_INO) => {
                out.zeros(16);
                self.attr(&mut out, node);
                0
            }
            (OPENDIR, ROOT_INO) | (OPEN, OUTSIDE_INO) => {
                // No handle, and nothing for the kernel to keep.
                out.zeros(16);
                0
            }
            (RELEASE | RELEASEDIR, _) => 0,
            (ACCESS, ROOT_INO) => 0,
            (ACCESS, OUTSIDE_INO) if u32_at(body, 0) & libc::X_OK as u32 == 0 => 0,
            (ACCESS, OUTSIDE_INO) => libc::EACCES,
            // As the servers: the kernel stops asking.
            (GETXATTR | LISTXATTR, ROOT_INO | OUTSIDE_INO) => libc::ENOSYS,
            (READ, OUTSIDE_INO) if body.len() >= 20 => {
                let (offset, size) = (u64_at(body, 8), u32_at(body, 16) as usize);
                let start = (offset as usize).min(self.error.len());
                let end = start.saturating_add(size).min(self.error.len());
                out.bytes(&self.error[start..end]);
                0
            }
            (READDIR | READDIRPLUS, ROOT_INO) if body.len() >= 20 => {
                let (offset, size) = (u64_at(body, 8), u32_at(body, 16) as usize);
                let entries: [(&[u8], u64, u32); 3] = [
                    (b".", ROOT_INO, libc::DT_DIR.into()),
                    (b"..", ROOT_INO, libc::DT_DIR.into()),
                    (ERROR_NAME, OUTSIDE_INO, libc::DT_REG.into()),
                ];
                for (i, (name, ino, kind)) in entries.into_iter().enumerate().skip(offset as usize)
                {
                    let before = out.len;
                    if opcode == READDIRPLUS {
                        if ino == OUTSIDE_INO {
                            self.entry(&mut out, ino);
                        } else {
                            // The kernel looks up neither `.` nor `..`.
                            out.zeros(ENTRY_OUT);
                        }
                    }
                    out.u64(ino);
                    out.u64(i as u64 + 1);
                    out.u32(name.len() as u32);
                    out.u32(kind);
                    out.bytes(name);
                    out.zeros((8 - name.len() % 8) % 8);
                    if out.len - OUT_HEADER > size {
                        out.len = before;
                        break;
                    }
                }
                0
            }
            _ => libc::EIO,
        };
        out.send(fuse, errno);
    }
}

/// A reply built on the stack.
struct Writer {
    buf: [u8; 4096],
    len: usize,
}

impl Writer {
    fn new(unique: u64) -> Writer {
        let mut w = Writer {
            buf: [0; 4096],
            len: OUT_HEADER,
        };
        w.buf[8..16].copy_from_slice(&unique.to_le_bytes());
        w
    }
    fn bytes(&mut self, b: &[u8]) {
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }
    fn zeros(&mut self, n: usize) {
        self.len += n;
    }
    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    /// Sends the reply: its body, or only the header with `errno`.
    fn send(mut self, fuse: RawFd, errno: i32) {
        if errno != 0 {
            self.len = OUT_HEADER;
        }
        self.buf[0..4].copy_from_slice(&(self.len as u32).to_le_bytes());
        self.buf[4..8].copy_from_slice(&(-errno).to_le_bytes());
        // SAFETY: writing `len` initialized bytes of the buffer.
        unsafe { libc::write(fuse, self.buf.as_ptr().cast(), self.len) };
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
}

/// A LOOKUP's name: the body up to its NUL.
fn name_of(body: &[u8]) -> &[u8] {
    body.split(|&b| b == 0).next().unwrap_or_default()
}

/// Tells the kernel to drop what it keeps of the root: its listing, and a
/// name `ERROR` it may keep as missing. The entry is dropped on a thread
/// of its own: it waits for the root's lock, which a reader may hold while
/// its lookup waits for the holder's answer.
fn forget_the_old_root(fuse: RawFd) {
    let mut inode = [0u8; OUT_HEADER + 24];
    let len = inode.len() as u32;
    inode[0..4].copy_from_slice(&len.to_le_bytes());
    inode[4..8].copy_from_slice(&NOTIFY_INVAL_INODE.to_le_bytes());
    inode[16..24].copy_from_slice(&ROOT_INO.to_le_bytes());
    // SAFETY: writing a whole notification.
    unsafe { libc::write(fuse, inode.as_ptr().cast(), inode.len()) };
    let mut entry = [0u8; OUT_HEADER + 16 + ERROR_NAME.len() + 1];
    let len = entry.len() as u32;
    entry[0..4].copy_from_slice(&len.to_le_bytes());
    entry[4..8].copy_from_slice(&NOTIFY_INVAL_ENTRY.to_le_bytes());
    entry[16..24].copy_from_slice(&ROOT_INO.to_le_bytes());
    entry[24..28].copy_from_slice(&(ERROR_NAME.len() as u32).to_le_bytes());
    entry[32..32 + ERROR_NAME.len()].copy_from_slice(ERROR_NAME);
    let spawned = std::thread::Builder::new()
        .name("novelfs-holder-inval".into())
        .stack_size(64 << 10)
        // SAFETY: writing a whole notification; the descriptor outlives
        // the holder's threads (it is closed only as the holder exits).
        .spawn(move || unsafe { libc::write(fuse, entry.as_ptr().cast(), entry.len()) });
    if let Err(e) = spawned {
        log::warn!("holder: cannot drop a missing ERROR the kernel may keep: {e}");
    }
}

impl Holder<'_> {
    /// No more servers: the holder answers alone (see above) until the
    /// mount goes. Returns the exit code.
    pub(super) fn give_up(&mut self, why: &str) -> i32 {
        log::error!(
            "holder: giving up on {}: {why}; its root shows only ERROR saying so, every other request is answered EIO until it is unmounted",
            self.mountpoint.display()
        );
        if let Some(c) = self.server.take() {
            self.dying.push(c);
        }
        // No server to hand the connection to: `novelfs upgrade` is
        // refused, `novelfs status` says why.
        self.tally.gave_up = Some(why.to_string());
        let fuse = self.fuse.as_raw_fd();
        let tree = (!handoff::switched_off("error_file")).then(|| {
            GaveUpTree::new(
                &format!("novelfs gave up serving this mount: {why} (see its log; unmount it and mount again)"),
                self.mode_mask,
            )
        });
        if tree.is_some() {
            forget_the_old_root(fuse);
        }
        // What the last server read and never answered is queued again,
        // to be answered below rather than left waiting for ever; where
        // the kernel cannot resend, it is answered EIO now (where it did,
        // these answers find nothing: harmless).
        if !handoff::switched_off("has_resend") {
            self.resend();
        }
        if handoff::switched_off("fail_left") {
            // The test switch: what the kernel did not resend waits.
        } else if let Ok(state) = self.state.try_clone() {
            crate::mount::unanswered::fail_left(fuse, &std::fs::File::from(state));
        }
        let Some(buf) = Buffer::new(BUFFER_BYTES) else {
            log::error!("holder: no buffer to answer requests with; unmounting");
            self.unmount();
            return 1;
        };
        loop {
            let mut fds = [
                pollin(fuse),
                pollin(self.signals.as_raw_fd()),
                pollin(self.control.as_ref().map_or(-1, |c| c.as_raw_fd())),
            ];
            // SAFETY: three pollfds (a negative fd is skipped).
            if unsafe { libc::poll(fds.as_mut_ptr(), 3, -1) } < 0 {
                continue;
            }
            if fds[2].revents != 0 {
                // Nothing is started now: only an answer.
                let _ = self.control_asked();
            }
            if fds[1].revents != 0 {
                let sig = read_signal(&self.signals);
                if sig == libc::SIGCHLD as u32 {
                    self.dying
                        .retain_mut(|c| !matches!(c.try_wait(), Ok(Some(_))));
                }
                if sig != 0 && sig != libc::SIGCHLD as u32 {
                    log::info!(
                        "holder: signal {sig}: unmounting {}",
                        self.mountpoint.display()
                    );
                    self.unmount();
                }
            }
            if fds[0].revents == 0 {
                continue;
            }
            // SAFETY: reading into the buffer's mapping, of its size.
            let n = unsafe { libc::read(fuse, buf.ptr.cast(), buf.len) };
            if n < 0 {
                match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::ENODEV) => return 1,
                    Some(libc::EINTR | libc::EAGAIN | libc::ENOENT) => continue,
                    _ => {
                        if !self.connected() {
                            return 1;
                        }
                        continue;
                    }
                }
            }
            match &tree {
                // SAFETY: the kernel wrote `n` bytes into the mapping.
                Some(t) => t.answer(fuse, unsafe {
                    std::slice::from_raw_parts(buf.ptr, n as usize)
                }),
                None => fail_request(fuse, &buf, n as usize),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_holds_the_reason_whole_or_cut_at_a_character() {
        let t = GaveUpTree::new("3 servers died", 0o777);
        assert_eq!(t.error, "错误：3 servers died\n".as_bytes());
        assert_eq!(t.dir_mode & 0o777, 0o555);
        let long = GaveUpTree::new(&"死".repeat(2000), 0o500);
        assert!(long.error.len() <= MAX_ERROR);
        assert!(std::str::from_utf8(&long.error).unwrap().ends_with("死\n"));
        assert_eq!(long.file_mode & 0o777, 0o400);
    }
}
