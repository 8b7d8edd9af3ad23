//! The tree the holder shows once it gave up on servers: the root with
//! only `ERROR`, which says why, and its answers to the kernel (fuser's
//! ABI structures, written on the stack: no allocation per request).
//!
//! It answers on the raw `/dev/fuse` descriptor, not through fuser's reply
//! types: no fuser session exists in the holder. The servers' sessions died
//! with them, and the holder is the lean process (`lean`) that never runs
//! one. fuser's replies are made only inside its session loop (their
//! constructors are the crate's own), so answering through them means a
//! session: a `Filesystem`, a loop that owns the descriptor's reads and
//! allocates as it answers (a listing's buffer), while the holder must
//! wait in one `poll` on the connection, its signals and its control
//! socket, and stay small while it waits. The bytes themselves are
//! fuser's (`fuser::abi`): only the choice among sixteen opcodes for two
//! inodes is written here, and every other request is EIO.

use std::os::fd::RawFd;

use crate::mount::os::process::euid_egid;
use novelfs_fs::{OUTSIDE_INO, ROOT_INO};

use fuser::abi::fuse_opcode::{
    FUSE_ACCESS, FUSE_BATCH_FORGET, FUSE_FORGET, FUSE_GETATTR, FUSE_GETXATTR, FUSE_INTERRUPT,
    FUSE_LISTXATTR, FUSE_LOOKUP, FUSE_NOTIFY_REPLY, FUSE_OPEN, FUSE_OPENDIR, FUSE_READ,
    FUSE_READDIR, FUSE_READDIRPLUS, FUSE_RELEASE, FUSE_RELEASEDIR,
};
use fuser::abi::{
    fuse_access_in, fuse_attr, fuse_attr_out, fuse_dirent, fuse_entry_out, fuse_in_header,
    fuse_open_out, fuse_out_header, fuse_read_in,
};
use zerocopy::{FromBytes, IntoBytes};

pub(super) const OUT_HEADER: usize = std::mem::size_of::<fuse_out_header>();
/// The longest `ERROR` (a longer reason is cut at a character).
const MAX_ERROR: usize = 2048;
pub(super) const ERROR_NAME: &[u8] = b"ERROR";

/// The tree the holder shows once it gave up: the root and its `ERROR`.
pub(super) struct ErrorTree {
    error: Vec<u8>,
    uid: u32,
    gid: u32,
    dir_mode: u32,
    file_mode: u32,
    /// The attributes' times: when the holder gave up.
    secs: u64,
    nsecs: u32,
}

impl ErrorTree {
    /// `mode_mask` as the servers apply it (`Access::mode_mask`).
    pub(super) fn new(reason: &str, mode_mask: u16) -> ErrorTree {
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
        ErrorTree {
            error: error.into_bytes(),
            uid,
            gid,
            dir_mode: libc::S_IFDIR | (0o555 & mask),
            file_mode: libc::S_IFREG | (0o444 & mask),
            secs: now.as_secs(),
            nsecs: now.subsec_nanos(),
        }
    }

    fn attr(&self, ino: u64) -> fuse_attr {
        let (size, mode, nlink) = if ino == ROOT_INO {
            (0, self.dir_mode, 2)
        } else {
            (self.error.len() as u64, self.file_mode, 1)
        };
        let secs = self.secs as i64;
        fuse_attr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: secs,
            mtime: secs,
            ctime: secs,
            atimensec: self.nsecs,
            mtimensec: self.nsecs,
            ctimensec: self.nsecs,
            mode,
            nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 4096,
            padding: 0,
        }
    }

    /// An entry, kept for no time: the kernel asks again, and the holder
    /// answers the same.
    fn entry(&self, ino: u64) -> fuse_entry_out {
        fuse_entry_out {
            nodeid: ino,
            generation: 0,
            entry_valid: 0,
            attr_valid: 0,
            entry_valid_nsec: 0,
            attr_valid_nsec: 0,
            attr: self.attr(ino),
        }
    }

    /// Answers the request `req` (as read from the connection `fuse`).
    pub(super) fn answer(&self, fuse: RawFd, req: &[u8]) {
        let Ok((head, body)) = fuse_in_header::read_from_prefix(req) else {
            return;
        };
        let node = head.nodeid;
        let is = |op: fuser::abi::fuse_opcode| head.opcode == op as u32;
        let ours = node == ROOT_INO || node == OUTSIDE_INO;
        let mut out = Writer::new(head.unique);
        let errno = if is(FUSE_FORGET)
            || is(FUSE_BATCH_FORGET)
            || is(FUSE_INTERRUPT)
            || is(FUSE_NOTIFY_REPLY)
        {
            return;
        } else if is(FUSE_LOOKUP) && node == ROOT_INO && name_of(body) == ERROR_NAME {
            out.bytes(self.entry(OUTSIDE_INO).as_bytes());
            0
        } else if is(FUSE_GETATTR) && ours {
            let reply = fuse_attr_out {
                attr_valid: 0,
                attr_valid_nsec: 0,
                dummy: 0,
                attr: self.attr(node),
            };
            out.bytes(reply.as_bytes());
            0
        } else if (is(FUSE_OPENDIR) && node == ROOT_INO) || (is(FUSE_OPEN) && node == OUTSIDE_INO) {
            // No handle, and nothing for the kernel to keep.
            let reply = fuse_open_out {
                fh: 0,
                open_flags: 0,
                backing_id: 0,
            };
            out.bytes(reply.as_bytes());
            0
        } else if is(FUSE_RELEASE) || is(FUSE_RELEASEDIR) || (is(FUSE_ACCESS) && node == ROOT_INO) {
            0
        } else if is(FUSE_ACCESS) && node == OUTSIDE_INO {
            match fuse_access_in::read_from_prefix(body) {
                Ok((access, _)) if access.mask & libc::X_OK == 0 => 0,
                _ => libc::EACCES,
            }
        } else if (is(FUSE_GETXATTR) || is(FUSE_LISTXATTR)) && ours {
            // As the servers: the kernel stops asking.
            libc::ENOSYS
        } else if let (true, Ok((read, _))) = (
            is(FUSE_READ) && node == OUTSIDE_INO,
            fuse_read_in::read_from_prefix(body),
        ) {
            let start = (read.offset as usize).min(self.error.len());
            let end = start
                .saturating_add(read.size as usize)
                .min(self.error.len());
            out.bytes(&self.error[start..end]);
            0
        } else if let (true, Ok((read, _))) = (
            (is(FUSE_READDIR) || is(FUSE_READDIRPLUS)) && node == ROOT_INO,
            fuse_read_in::read_from_prefix(body),
        ) {
            self.list_root(
                &mut out,
                read.offset,
                read.size as usize,
                is(FUSE_READDIRPLUS),
            );
            0
        } else {
            libc::EIO
        };
        out.send(fuse, errno);
    }

    /// The root's entries from `offset`, within `size` bytes; with `plus`,
    /// each with its entry (READDIRPLUS).
    fn list_root(&self, out: &mut Writer, offset: u64, size: usize, plus: bool) {
        let entries: [(&[u8], u64, u32); 3] = [
            (b".", ROOT_INO, libc::DT_DIR.into()),
            (b"..", ROOT_INO, libc::DT_DIR.into()),
            (ERROR_NAME, OUTSIDE_INO, libc::DT_REG.into()),
        ];
        for (i, (name, ino, kind)) in entries.into_iter().enumerate().skip(offset as usize) {
            let before = out.len;
            if plus {
                if ino == OUTSIDE_INO {
                    out.bytes(self.entry(ino).as_bytes());
                } else {
                    // The kernel looks up neither `.` nor `..`.
                    out.zeros(std::mem::size_of::<fuse_entry_out>());
                }
            }
            let dirent = fuse_dirent {
                ino,
                off: i as u64 + 1,
                namelen: name.len() as u32,
                typ: kind,
            };
            out.bytes(dirent.as_bytes());
            out.bytes(name);
            out.zeros((8 - name.len() % 8) % 8);
            if out.len - OUT_HEADER > size {
                out.len = before;
                break;
            }
        }
    }
}

/// A reply built on the stack.
struct Writer {
    buf: [u8; 4096],
    len: usize,
    unique: u64,
}

impl Writer {
    fn new(unique: u64) -> Writer {
        Writer {
            buf: [0; 4096],
            len: OUT_HEADER,
            unique,
        }
    }
    fn bytes(&mut self, b: &[u8]) {
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }
    fn zeros(&mut self, n: usize) {
        self.buf[self.len..self.len + n].fill(0);
        self.len += n;
    }
    /// Sends the reply: its body, or only the header with `errno`.
    fn send(mut self, fuse: RawFd, errno: i32) {
        if errno != 0 {
            self.len = OUT_HEADER;
        }
        let head = fuse_out_header {
            len: self.len as u32,
            error: -errno,
            unique: self.unique,
        };
        self.buf[..OUT_HEADER].copy_from_slice(head.as_bytes());
        // SAFETY: writing `len` initialized bytes of the buffer.
        unsafe { libc::write(fuse, self.buf.as_ptr().cast(), self.len) };
    }
}

/// A LOOKUP's name: the body up to its NUL.
fn name_of(body: &[u8]) -> &[u8] {
    body.split(|&b| b == 0).next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_holds_the_reason_whole_or_cut_at_a_character() {
        let t = ErrorTree::new("3 servers died", 0o777);
        assert_eq!(t.error, "错误：3 servers died\n".as_bytes());
        assert_eq!(t.dir_mode & 0o777, 0o555);
        let long = ErrorTree::new(&"死".repeat(2000), 0o500);
        assert!(long.error.len() <= MAX_ERROR);
        assert!(std::str::from_utf8(&long.error).unwrap().ends_with("死\n"));
        assert_eq!(long.file_mode & 0o777, 0o400);
    }
}
