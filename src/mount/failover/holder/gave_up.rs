//! What the holder answers once it has given up on servers, until the
//! mount goes: the root lists only `ERROR`, which says why
//! (`错误：{reason}\n`, as a root whose library cannot be read does), and
//! every other request is EIO. The answers are made from bytes fixed when
//! it gives up: no library, and no allocation per request.

use std::os::fd::{AsRawFd, RawFd};

use super::Holder;
use super::error_tree::{ERROR_NAME, ErrorTree, OUT_HEADER};
use super::syscalls::{BUFFER_BYTES, Buffer, fail_request, pollin, read_signal};
use crate::mount::failover::handoff;
use novelfs_fs::ROOT_INO;

use fuser::abi::{
    fuse_notify_code, fuse_notify_inval_entry_out, fuse_notify_inval_inode_out, fuse_out_header,
};
use zerocopy::IntoBytes;
/// Tells the kernel to drop what it keeps of the root: its listing, and a
/// name `ERROR` it may keep as missing. The entry is dropped on a thread
/// of its own: it waits for the root's lock, which a reader may hold while
/// its lookup waits for the holder's answer.
fn forget_the_old_root(fuse: RawFd) {
    let inode_out = fuse_notify_inval_inode_out {
        ino: ROOT_INO,
        off: 0,
        len: 0,
    };
    let inode = notification(
        fuse_notify_code::FUSE_NOTIFY_INVAL_INODE,
        &[inode_out.as_bytes()],
    );
    // SAFETY: writing a whole notification.
    unsafe { libc::write(fuse, inode.as_ptr().cast(), inode.len()) };
    let entry_out = fuse_notify_inval_entry_out {
        parent: ROOT_INO,
        namelen: ERROR_NAME.len() as u32,
        padding: 0,
    };
    let entry = notification(
        fuse_notify_code::FUSE_NOTIFY_INVAL_ENTRY,
        &[entry_out.as_bytes(), ERROR_NAME, &[0]],
    );
    // SAFETY: writing a whole notification; the descriptor outlives the
    // holder's threads (it is closed only as the holder exits).
    let spawned =
        novelfs_kit::thread::spawn("novelfs-holder-inval", Some(64 << 10), move || unsafe {
            libc::write(fuse, entry.as_ptr().cast(), entry.len())
        });
    if let Err(e) = spawned {
        log::warn!("holder: cannot drop a missing ERROR the kernel may keep: {e}");
    }
}

/// A notification of `code` with `parts` as its body: its header's
/// `error` is the code, its `unique` 0.
fn notification(code: fuse_notify_code, parts: &[&[u8]]) -> Vec<u8> {
    let len = OUT_HEADER + parts.iter().map(|p| p.len()).sum::<usize>();
    let head = fuse_out_header {
        len: len as u32,
        error: code as i32,
        unique: 0,
    };
    let mut out = head.as_bytes().to_vec();
    for p in parts {
        out.extend_from_slice(p);
    }
    out
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
            ErrorTree::new(
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
            crate::mount::failover::left_unanswered::fail_left(fuse, &std::fs::File::from(state));
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
