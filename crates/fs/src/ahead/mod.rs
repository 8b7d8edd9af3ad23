//! What is done ahead of a reader, so that what it asks for next is
//! already where it is served from. Each member fills one cache, on a
//! thread of its own, and never makes a request wait:
//!
//! - `disk`: the disk's page cache (the chapters' files), ahead of the
//!   chapters being decoded (thread `novelfs-readahead`);
//! - `outlines`: the outlines' cache, ahead of a walk listing chapter
//!   directories (thread `novelfs-outline`);
//! - `kernel`: the kernel's page cache (the pages it would READ), ahead of
//!   a reader reading pages (thread `novelfs-store`, run by
//!   `crate::mount::pusher`).
//!
//! `disk` and `outlines` keep, per book, a `window` of the chapters after
//! the reader's and top it up by halves.
//!
//! `NOVELFS_AHEAD_OFF=disk,outlines,kernel` (any of them) in the daemon's
//! environment switches members off, to measure what each one pays for.

use std::sync::OnceLock;

mod disk;
mod kernel;
mod outlines;
mod window;

pub(crate) use disk::{Prefetcher, in_page_cache};
pub(crate) use kernel::{Parts, StoreAhead};
pub use kernel::{Store, StoreOutcome};
pub(crate) use outlines::Outliner;

#[cfg(test)]
pub(crate) use kernel::{AHEAD_BYTES, AHEAD_CHAPTERS};
#[cfg(test)]
pub(crate) use outlines::{OUTLINE_GUESS, WINDOW};

/// The environment variable naming the members switched off.
pub(crate) const AHEAD_OFF_ENV: &str = "NOVELFS_AHEAD_OFF";

/// Whether `member` (`disk`, `outlines` or `kernel`) is switched off by
/// `NOVELFS_AHEAD_OFF`, read once.
pub(crate) fn switched_off(member: &str) -> bool {
    static OFF: OnceLock<Vec<String>> = OnceLock::new();
    OFF.get_or_init(|| {
        std::env::var(AHEAD_OFF_ENV)
            .unwrap_or_default()
            .split(',')
            .map(|m| m.trim().to_owned())
            .filter(|m| !m.is_empty())
            .collect()
    })
    .iter()
    .any(|m| m == member)
}
