//! The FUSE adapter: the tree of SPEC §2 over the library layer.

pub mod cache;
pub mod fuse;
pub mod model;
pub mod mount;
pub mod names;
pub mod watch;

pub use model::{FsConfig, NovelFs};
