//! Requests a dead server read and never answered, where the kernel cannot
//! resend them (`FUSE_NOTIFY_RESEND` needs Linux 6.9: INIT offers
//! `FUSE_HAS_RESEND`). Every server of a holder keeps the `unique` of each
//! request it has read and not answered in a table in the holder's INIT
//! memfd (`fuser::track_unanswered`), past the INIT line. A next server on
//! a kernel without resend answers each of them EIO before it reads a
//! request: the kernel finds a request by `unique` in the processing list
//! of the descriptor it was read through, which is the holder's for every
//! server, and a `unique` it no longer holds gets ENOENT, harmless. So is
//! each of the `FORWARD` uniques past the highest read, answered too: a
//! server thread killed as its `read` returned took one it could not keep.
//! Their readers get EIO, never a hang.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::AtomicU64;

/// Where the table starts in the INIT memfd (its first page holds the INIT
/// line, `handoff::keep_negotiated`).
const TABLE_AT: i64 = 4096;
/// Slot 0 is the highest `unique` read; the others hold one request each:
/// far more than the threads and the kernel's background requests keep in
/// flight. 8 KiB, shared with the holder.
const SLOTS: usize = 1024;
const TABLE_BYTES: usize = SLOTS * 8;
// The storage's counters (`counted`) follow the table in the same memfd.
const _: () =
    assert!(TABLE_AT as usize + TABLE_BYTES <= crate::mount::counted::COUNTERS_AT as usize);
/// Uniques past the highest read that are answered too (they go up by 2).
const FORWARD: u64 = 64;
/// The INIT flag of a kernel that resends (`FUSE_HAS_RESEND`).
pub(crate) const HAS_RESEND: u64 = 1 << 39;

/// Maps the table of the INIT memfd `state` and has fuser keep it.
fn track(state: &std::fs::File) -> std::io::Result<()> {
    let len = state.metadata()?.len();
    let need = TABLE_AT as u64 + TABLE_BYTES as u64;
    if len < need {
        state.set_len(need)?;
    }
    // SAFETY: a shared mapping of a range of the memfd that now exists
    // (it never shrinks: `keep_negotiated` writes in place); never unmapped,
    // so the slice below lives as long as the process.
    let at = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            TABLE_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            state.as_raw_fd(),
            TABLE_AT,
        )
    };
    if at == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: SLOTS aligned u64s, zero-filled or written only as atomics.
    let table: &'static [AtomicU64] =
        unsafe { std::slice::from_raw_parts(at.cast::<AtomicU64>(), SLOTS) };
    fuser::track_unanswered(table);
    Ok(())
}

/// The uniques left in the table by the servers before this one: those
/// kept, then the `FORWARD` past the highest read. Empties the table.
fn left(state: &std::fs::File) -> Vec<u64> {
    let mut bytes = vec![0u8; TABLE_BYTES];
    // SAFETY: reading into a buffer of its length.
    let n = unsafe {
        libc::pread(
            state.as_raw_fd(),
            bytes.as_mut_ptr().cast(),
            TABLE_BYTES,
            TABLE_AT,
        )
    };
    if n != TABLE_BYTES as isize {
        return Vec::new();
    }
    let slot = |i: usize| u64::from_ne_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8"));
    let highest = slot(0);
    let mut uniques: Vec<u64> = (1..SLOTS).map(slot).filter(|&u| u != 0).collect();
    if highest != 0 {
        uniques.extend((1..=FORWARD).map(|k| highest + 2 * k));
    }
    let zeros = vec![0u8; TABLE_BYTES - 8];
    // SAFETY: writing a buffer of its length; slot 0 stays.
    unsafe {
        libc::pwrite(
            state.as_raw_fd(),
            zeros.as_ptr().cast(),
            zeros.len(),
            TABLE_AT + 8,
        )
    };
    uniques
}

/// Forgets what the servers before left (the kernel resends it, with
/// new uniques).
pub(crate) fn forget_left(state: &std::fs::File) {
    left(state);
}

/// Answers EIO to every request the servers before this one read and did
/// not answer; how many the kernel still held. Called before this server
/// reads a request.
pub(crate) fn fail_left(fuse: RawFd, state: &std::fs::File) -> usize {
    left(state)
        .into_iter()
        .filter(|&unique| answer_eio(fuse, unique))
        .count()
}

/// Writes an error answer to request `unique`; whether the kernel held it.
pub(crate) fn answer_eio(fuse: RawFd, unique: u64) -> bool {
    let mut out = [0u8; 16];
    out[0..4].copy_from_slice(&16u32.to_ne_bytes());
    out[4..8].copy_from_slice(&(-libc::EIO).to_ne_bytes());
    out[8..16].copy_from_slice(&unique.to_ne_bytes());
    // SAFETY: writing a buffer of its length.
    unsafe { libc::write(fuse, out.as_ptr().cast(), out.len()) == out.len() as isize }
}

/// What a server taking over does with the requests the one before left:
/// asks the kernel to resend them where it can (INIT offered
/// `FUSE_HAS_RESEND`), else answers them EIO; then keeps its own. Says
/// what it did, for the log. `NOVELFS_TEST_FAILOVER_OFF=has_resend` acts
/// as if INIT had not offered it, `=fail_left` leaves them unanswered.
pub(crate) fn take_over(
    fuse: RawFd,
    state: &std::fs::File,
    offered: u64,
    notifier: &fuser::Notifier,
) -> String {
    use super::handoff::switched_off;
    let can_resend = offered & HAS_RESEND != 0 && !switched_off("has_resend");
    let said = if switched_off("resend") {
        "not asked (switched off)".to_string()
    } else if can_resend {
        forget_left(state);
        match notifier.resend() {
            Ok(()) => "asked".to_string(),
            Err(e) => format!("refused ({e}): requests the dead server had read stay unanswered"),
        }
    } else if switched_off("fail_left") {
        "not offered by the kernel; left unanswered (switched off)".to_string()
    } else {
        let failed = fail_left(fuse, state);
        format!("not offered by the kernel: {failed} answered EIO")
    };
    keep(state);
    said
}

/// Has this server keep the requests it reads and has not answered in the
/// holder's table (see above), or says why not.
pub(crate) fn keep(state: &std::fs::File) {
    if let Err(e) = track(state) {
        log::warn!(
            "cannot keep the requests in flight in the holder's memory ({e}): on a kernel without \
             FUSE_NOTIFY_RESEND a next server cannot answer what this one leaves"
        );
    }
}
