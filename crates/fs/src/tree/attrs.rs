//! The attribute rules: what a family tells of a node (`Stat`), the
//! attributes made of it, and a name found with its attributes (`Found`),
//! validated before it is interned.

use std::ffi::OsStr;
use std::time::SystemTime;

use novelfs_library::NovelError;

use super::NovelFs;
use crate::error::Result;
use crate::listing::Listed;
use crate::names::ERROR_FILE;
use crate::node::{Attr, Kind, Node};

/// A name resolved with its attributes, both of the same look at its source.
pub(super) struct Found {
    pub(super) node: Node,
    pub(super) attr: Attr,
}

impl Found {
    /// As the one entry of a directory that holds only its `ERROR`.
    pub(super) fn listed_as_error(self) -> Listed {
        Listed {
            node: self.node,
            kind: Kind::File,
            name: ERROR_FILE.into(),
            attr: Some(self.attr),
        }
    }
}

/// What a family tells of a node's attributes; `attr_of` adds the inode
/// and the TTL.
pub(super) struct Stat {
    pub(super) kind: Kind,
    pub(super) size: u64,
    pub(super) mtime: SystemTime,
}

impl Stat {
    pub(super) fn dir(mtime: SystemTime) -> Stat {
        Stat {
            kind: Kind::Directory,
            size: 0,
            mtime,
        }
    }

    pub(super) fn file(size: u64, mtime: SystemTime) -> Stat {
        Stat {
            kind: Kind::File,
            size,
            mtime,
        }
    }

    pub(super) fn link(target: &OsStr, mtime: SystemTime) -> Stat {
        Stat {
            kind: Kind::Symlink,
            size: target.len() as u64,
            mtime,
        }
    }
}

impl NovelFs {
    /// The attributes of a file version that is no longer the current
    /// one (it may still be open): those it was last given.
    pub(super) fn older(&self, ino: u64) -> Result<Stat> {
        self.inodes
            .last_attr(ino)
            .map(|last| Stat::file(last.size, last.mtime))
    }

    /// The attributes of a file whose size and mtime are known (its inode
    /// is set when it is interned).
    pub(super) fn file_attr(&self, node: &Node, size: u64, mtime: SystemTime) -> Attr {
        Attr {
            ino: 0,
            kind: Kind::File,
            size,
            mtime,
            ttl: self.freshness.ttl_for(node),
        }
    }

    /// An `ERROR` file with its attributes, sized from the error its
    /// reader gets and dated by the same look at the source as `node`'s
    /// version.
    pub(super) fn error_file(&self, node: Node, error: &NovelError, mtime: SystemTime) -> Found {
        let attr = self.file_attr(&node, error.error_line().len() as u64, mtime);
        Found { node, attr }
    }

    /// `node` with its current attributes; ENOENT when it does not exist.
    pub(super) fn checked(&self, node: Node) -> Result<Found> {
        let attr = self.attr_of(0, &node)?;
        Ok(Found { node, attr })
    }

    /// The inode of a name found by a lookup (the kernel now holds it).
    pub(super) fn intern(&self, found: Found) -> Attr {
        Attr {
            ino: self.inodes.intern(found.node, true, Some(&found.attr)),
            ..found.attr
        }
    }

    pub(super) fn found(&self, node: Node) -> Result<Attr> {
        // Validated before interning, so a name that does not exist leaves no inode behind.
        Ok(self.intern(self.checked(node)?))
    }
}
