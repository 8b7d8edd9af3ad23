//! The library's bytes read through the seam the semantics define
//! (`novelfs_library::backing`): `local` a directory, with the kernel's page
//! cache, `lstat` stamps and read-ahead by `fadvise`; `bucket` an object
//! store through `Storage` (LIST for names and versions, GET for bytes),
//! with `listings` kept for the TTL, `bodies` fetched ahead into a bounded
//! store, `ranged` a big chapter read in parts and `list_pace` how far ahead
//! of a walker its directories are listed.
//!
//! Paths here are relative to the library root (`novels/书/第1章.md`).

mod bodies;
mod bucket;
mod follow;
mod list_pace;
mod listings;
mod local;
mod ranged;
pub mod snapshot;

use novelfs_library::backing::{Backing, EntryKind, Meta, Opened};

use crate::access;

pub use bucket::{BucketBacking, listed_meta};
pub use follow::PendingHead;
pub use local::{LocalBacking, in_page_cache, opened_file};
