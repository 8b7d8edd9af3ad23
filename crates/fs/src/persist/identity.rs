//! The trust rule: the identity an entry stands for (dev, ino, size,
//! mtime and ctime in nanoseconds) and when an entry recorded for it
//! proves the bytes a file has now.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::cache::Stamp;
use crate::freshness::racy;

/// The identity an entry stands for, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Identity {
    pub(super) dev: i64,
    pub(super) ino: i64,
    pub(super) size: i64,
    pub(super) mtime_ns: i64,
    pub(super) ctime_ns: i64,
}

fn nanos((secs, nanos): (i64, i64)) -> Option<i64> {
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

impl Identity {
    pub(super) fn of(stamp: &Stamp) -> Option<Identity> {
        Some(Identity {
            dev: stamp.dev as i64,
            ino: stamp.ino as i64,
            size: i64::try_from(stamp.size).ok()?,
            mtime_ns: nanos(stamp.mtime)?,
            ctime_ns: nanos(stamp.ctime)?,
        })
    }
}

pub(super) fn unix_nanos(t: SystemTime) -> Option<i64> {
    let d = t.duration_since(UNIX_EPOCH).ok()?;
    i64::try_from(d.as_nanos()).ok()
}

/// Whether an entry recorded at `recorded` for `stamp` proves the bytes
/// the file has now: its last change lies a whole granularity before the
/// moment the bytes were read (any later change moves a time past it).
pub(super) fn trusted(stamp: &Stamp, recorded_ns: i64, granularity: Duration) -> bool {
    let Ok(recorded) = u64::try_from(recorded_ns) else {
        return false;
    };
    racy::settled(
        stamp,
        UNIX_EPOCH + Duration::from_nanos(recorded),
        granularity,
    )
}
