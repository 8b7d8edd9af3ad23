//! The requests read and not yet answered, by `unique` (patch: crash
//! failover on kernels without `FUSE_NOTIFY_RESEND`). When the caller gives
//! a table (memory shared with the process that keeps the connection, which
//! outlives this one), every `/dev/fuse` reader puts the `unique` of each
//! request it reads that needs an answer in a slot, and the reply takes it
//! out; slot 0 holds the highest `unique` read. A next server on the same
//! descriptor answers what is left with an error (`fuse_dev_do_write`
//! finds a request in the descriptor's processing list by `unique`, whoever
//! read it), so that those readers get an error rather than wait for ever.
//!
//! Without a table (the default) this costs one look at a `OnceLock` per
//! request and per reply.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

static TABLE: OnceLock<&'static [AtomicU64]> = OnceLock::new();

/// Opcodes that get no answer: FORGET, INTERRUPT, NOTIFY_REPLY,
/// BATCH_FORGET.
const UNANSWERED_OPCODES: [u32; 4] = [2, 36, 41, 42];
/// The bit `FUSE_NOTIFY_RESEND` sets in a resent request's `unique`.
const RESENT: u64 = 1 << 63;

/// Keeps the `unique` of each request read and not yet answered in
/// `table` (slot 0: the highest read), from now on. `false` if a table was
/// given already, or `table` has fewer than two slots.
pub fn track_unanswered(table: &'static [AtomicU64]) -> bool {
    table.len() >= 2 && TABLE.set(table).is_ok()
}

fn start(table: &[AtomicU64], unique: u64) -> usize {
    // Uniques go up by 2: consecutive requests take consecutive slots.
    1 + ((unique >> 1) as usize) % (table.len() - 1)
}

/// A request was read (its header: `opcode` and `unique`).
pub(crate) fn read(opcode: u32, unique: u64) {
    let Some(table) = TABLE.get() else {
        return;
    };
    if unique == 0 || UNANSWERED_OPCODES.contains(&opcode) {
        return;
    }
    table[0].fetch_max(unique & !RESENT, Ordering::SeqCst);
    let first = start(table, unique);
    let slots = table.len() - 1;
    for i in 0..slots {
        let at = 1 + (first - 1 + i) % slots;
        if table[at]
            .compare_exchange(0, unique, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
    // Full: this one is not kept (a next server answers only the rest).
}

/// The request `unique` was answered (or its answer failed).
pub(crate) fn answered(unique: u64) {
    let Some(table) = TABLE.get() else {
        return;
    };
    let first = start(table, unique);
    let slots = table.len() - 1;
    for i in 0..slots {
        let at = 1 + (first - 1 + i) % slots;
        if table[at]
            .compare_exchange(unique, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_request_stays_until_answered() {
        let table: &'static [AtomicU64] = Box::leak((0..5).map(|_| AtomicU64::new(0)).collect());
        assert!(track_unanswered(table));
        assert!(!track_unanswered(table), "one table");
        for u in [2, 4, 6, 8, 10] {
            read(15, u);
        }
        read(2, 12); // a FORGET: no answer comes
        let held = |t: &[AtomicU64]| {
            let mut v: Vec<u64> = t[1..].iter().map(|s| s.load(Ordering::SeqCst)).collect();
            v.retain(|&u| u != 0);
            v.sort();
            v
        };
        // Four slots: the fifth is not kept.
        assert_eq!(held(table), vec![2, 4, 6, 8]);
        assert_eq!(table[0].load(Ordering::SeqCst), 10);
        answered(4);
        answered(10);
        assert_eq!(held(table), vec![2, 6, 8]);
        read(15, 14 | RESENT);
        assert_eq!(table[0].load(Ordering::SeqCst), 14);
        answered(14 | RESENT);
        assert_eq!(held(table), vec![2, 6, 8]);
    }
}
