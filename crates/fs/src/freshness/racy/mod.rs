//! Stamps that do not prove anything yet (git calls such entries "racily
//! clean").
//!
//! A stamp (dev, ino, size, mtime, ctime) tells two versions of a file
//! apart only when a change between them moves a time. Times have a
//! granularity — whole seconds on sshfs, 2 s on FAT, a clock tick on a
//! local disk — and a directory's size on many network filesystems never
//! changes: two changes within one tick, with a read between them, leave
//! the same stamp on different contents. So what was read at a moment
//! `at` is proven to be what the stamp stands for only once the stamp's
//! last change lies at least one granularity before `at`: any change after
//! `at` then moves a time past it. Until then the names or bytes are looked
//! at again and compared, not the stamp.
//!
//! `filesystems` says how a library's filesystem is trusted (the
//! granularities its times may have, times that are none; which one a
//! library gets is `SourceFs`'s), `settling` what was read under stamps
//! that prove nothing yet; the rule itself, when a stamp is settled, is
//! here.

mod filesystems;
mod settling;
#[cfg(test)]
mod tests;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::cache::Stamp;

pub(crate) use filesystems::{COARSE_GRANULARITY, FINE_GRANULARITY, NETWORK_CACHES, times_still};
pub(crate) use settling::{Known, Settling};

fn time_of((secs, nanos): (i64, i64)) -> SystemTime {
    let nanos = Duration::from_nanos(nanos.clamp(0, 999_999_999) as u64);
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs as u64) + nanos
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + nanos
    }
}

/// The last change a stamp records: the later of mtime and ctime (a
/// restored mtime still moves ctime; an mtime in the future counts too).
pub(crate) fn changed(stamp: &Stamp) -> SystemTime {
    time_of(stamp.mtime).max(time_of(stamp.ctime))
}

/// Whether what was read of a source at `at` is proven to be what `stamp`
/// stands for: its last change lies a whole granularity before `at`.
pub(crate) fn settled(stamp: &Stamp, at: SystemTime, granularity: Duration) -> bool {
    changed(stamp)
        .checked_add(granularity)
        .is_some_and(|proven_from| proven_from <= at)
}
