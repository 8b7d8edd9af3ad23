//! How the stamps of a library's filesystem are trusted: the granularities
//! its times may have (`SourceFs` says which one a library's has), and
//! which times are no times at all.
//!
//! Some sources never move a directory's times: object storage mounted as
//! a filesystem. No stamp proves anything there: each directory is listed
//! again once its names are a TTL old, and its names compared.

use std::time::Duration;

use crate::cache::Stamp;

/// On local filesystems with nanosecond times: a clock tick (times are
/// taken from the kernel's coarse clock, at most 10 ms behind at HZ=100),
/// twice over.
pub(crate) const FINE_GRANULARITY: Duration = Duration::from_millis(20);

/// Elsewhere: whole seconds (sshfs, NFSv2, ext3 with small inodes) or 2 s
/// (FAT). Clocks of the hosts sharing a library are taken to agree within
/// the part of a second this leaves (NTP keeps them within milliseconds).
pub(crate) const COARSE_GRANULARITY: Duration = Duration::from_secs(2);

/// How long a network filesystem's client may show old names and
/// attributes after a change made elsewhere: sshfs keeps them 20 s by
/// default, NFS up to 60 s (`acdirmax`). Names listed and bytes read within
/// that time of a change may be older than the stamp they came with (sshfs
/// caches a directory's attributes and its names apart), so a stamp there
/// proves nothing for this long on top of its granularity.
pub(crate) const NETWORK_CACHES: Duration = Duration::from_secs(60);

/// Whether a stamp's times are no times at all (0 or before the epoch, as
/// object storage gives a directory): no change will move them.
pub(crate) fn times_still(stamp: &Stamp) -> bool {
    stamp.mtime.0 <= 0 && stamp.ctime.0 <= 0
}
