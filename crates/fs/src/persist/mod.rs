//! The persistent index: what each chapter file's text is — its reading
//! chain with the pages' sizes and its figures, never the text — kept in
//! SQLite across mounts, so that a fresh mount of a known library lists
//! chapters, sizes pages and makes the index files without decoding.
//!
//! An entry stands for the bytes of one file identity (dev, ino, size,
//! mtime and ctime in nanoseconds) and is trusted only when all of it
//! matches and it was recorded outside the racy window of the file's last
//! change (`freshness::racy`: git's rule for its index). What an outline
//! depends on besides the bytes (this build's decoding, paging and
//! rendering) is its `profile`. Rows hold nothing of the mount's options:
//! page sizes are kept without what the names add (`bare`), and a row's
//! size is its chapter's, judged against the mount's size limit at lookup,
//! so one index (a published one) serves every `--path-root` and
//! `--max-chapter-bytes`.
//!
//! `figures` are a book's totals in a published snapshot's root.
//! `identity` holds that rule, `pages` the codec of a chapter's pages,
//! `profile` what an outline depends on, `rows` the SQL of the chapters'
//! rows, `index` an index file open for lookups, `mount` a mount's use of
//! it; `store` opens the file, `recorder` writes on its own thread,
//! `refresh` is `novelfs index`.

mod bare;
mod figures;
mod identity;
mod index;
mod mount;
mod pages;
mod profile;
mod recorder;
mod refresh;
#[cfg(test)]
mod roots_tests;
mod rows;
mod shared;
mod store;
#[cfg(test)]
mod tests;

pub use figures::book_figures;
pub(crate) use figures::published_totals;
pub(crate) use mount::MountIndex;
pub(crate) use profile::profile_of;
pub(crate) use recorder::Recorder;
pub use refresh::{RefreshError, RefreshSummary, Step, refresh};
pub use shared::{PUBLISHED, import, index_file, rows_by_book};
pub use store::Refused;
pub use store::default_dir;
