//! What a mount's storage costs, for `novelfs status`: the library's
//! counters (`novelfs_storage::Counters`) live in the holder's INIT memfd,
//! past the table of `left_unanswered`, where every server of the holder maps
//! them. The holder reads them at `status` without asking its server,
//! which may be dying or starting, and they go on across servers: a new
//! server counts on from what the one before left.

use std::os::fd::AsRawFd;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

use novelfs_storage::counters::{BYTES, Counter, Counters, Reading, Remote, SLOTS, SnapshotState};

/// Where the counters start in the INIT memfd: past its INIT line's page
/// and the table of `left_unanswered`, on a page of their own (an offset to map
/// at is a page's; `left_unanswered` checks that its table ends before).
pub(super) const COUNTERS_AT: i64 = 4 * 4096;
const _: () = assert!(BYTES <= 4096);

/// This server's counters, in the holder's memory.
static SHARED: OnceLock<Arc<Counters>> = OnceLock::new();

/// Maps the counters of the INIT memfd `state`, for the library this
/// server opens; without them (the log says why) it counts on its own,
/// and `novelfs status` shows what the servers before counted.
pub(crate) fn attach(state: &std::fs::File) {
    if let Err(e) = map(state) {
        log::warn!("cannot keep the storage's counters in the holder's memory ({e})");
    }
}

fn map(state: &std::fs::File) -> std::io::Result<()> {
    let need = COUNTERS_AT as u64 + 4096;
    if state.metadata()?.len() < need {
        state.set_len(need)?;
    }
    // SAFETY: a shared mapping of a range of the memfd that now exists
    // (it never shrinks); never unmapped, so the words live as long as the
    // process.
    let at = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            state.as_raw_fd(),
            COUNTERS_AT,
        )
    };
    if at == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: SLOTS aligned u64s (a page's start), zero-filled or written
    // only as atomics, by this process and the other servers.
    let cells: &'static [AtomicU64; SLOTS] = unsafe { &*at.cast::<[AtomicU64; SLOTS]>() };
    let _ = SHARED.set(Counters::in_shared(cells));
    Ok(())
}

/// The counters the library of this server counts into, when they are
/// kept in a holder's memory.
pub(crate) fn shared() -> Option<Arc<Counters>> {
    SHARED.get().cloned()
}

/// The counters in the INIT memfd `state`, read by the holder.
pub(crate) fn read(state: &impl AsRawFd) -> Option<Reading> {
    let mut bytes = [0u8; BYTES];
    // SAFETY: reading into a buffer of its length.
    let n = unsafe {
        libc::pread(
            state.as_raw_fd(),
            bytes.as_mut_ptr().cast(),
            BYTES,
            COUNTERS_AT,
        )
    };
    if n != BYTES as isize {
        return None;
    }
    Reading::from_bytes(&bytes)
}

/// `novelfs status`'s lines of them, `name: value` each.
pub(crate) fn said(reading: Option<&Reading>) -> String {
    let Some(r) = reading.filter(|r| r.remote != Remote::Unknown) else {
        return "storage: not opened yet".into();
    };
    if r.remote == Remote::Local {
        return "storage: local directory (no remote storage, nothing counted)".into();
    }
    let mut lines =
        vec!["storage: bucket (counted since the mount, across its servers)".to_string()];
    lines.extend(
        Counter::ALL
            .iter()
            .map(|&c| format!("{}: {}", c.name(), r.get(c))),
    );
    lines.push(match r.snapshot_state {
        SnapshotState::Followed => format!(
            "snapshot: {}\nsnapshot made: {}",
            r.snapshot,
            super::utc::format(r.snapshot_made)
        ),
        SnapshotState::NonePublished => "snapshot: none published (the mount lists)".into(),
        SnapshotState::NotFollowed => format!(
            "snapshot: not followed (the mount lists): {}",
            r.snapshot.replace('\n', " ")
        ),
        SnapshotState::NotAskedFor => "snapshot: not looked for (--freshness listing)".into(),
        SnapshotState::NotLookedFor => "snapshot: not looked for yet (at the first listing)".into(),
    });
    lines.join("\n")
}
