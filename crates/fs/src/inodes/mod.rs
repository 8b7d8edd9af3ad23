//! The inode table: which number the kernel was given for which node.
//! Numbers are never reused; an entry goes when the kernel forgets its
//! last lookup.
//!
//! Pages are most of what the kernel holds (two or more per chapter), so
//! they have no entry of their own: the pages of one version of a chapter
//! share one `PageBlock`, and a page's number is the block's number with
//! the page's offset and format in its low bits. At hundreds of thousands
//! of chapters an entry per page in two maps would be most of the daemon's
//! memory; a block costs about a fifth of that.
//!
//! `table` holds the entries and the numbers behind its lock, `entries`
//! what the lock guards; `numbering` packs page numbers, `blocks` holds
//! the pages of a block, `slab` and `index` store and find entries and
//! blocks, `hash` hashes their keys.

mod blocks;
mod entries;
mod hash;
mod index;
pub(crate) mod journal;
pub(crate) mod journal_file;
mod numbering;
pub use numbering::OUTSIDE_INO;
mod slab;
mod snapshot;
mod table;

pub(crate) use table::InodeTable;
