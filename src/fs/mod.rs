//! The FUSE adapter: the tree of §2 (docs/contract.md) over the library layer.

pub mod access;
pub mod attach;
pub mod cache;
pub mod fuse;
pub mod model;
pub mod mount;
pub mod names;
pub mod watch;

pub use model::{FsConfig, NovelFs};
