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
