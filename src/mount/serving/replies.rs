//! How the tree's plain values become fuser's replies: a node's
//! attributes as the mounting user's, and a listing's entries added to a
//! READDIR or READDIRPLUS reply.

use std::ffi::OsStr;

use fuser::{FileAttr, FileType, Generation, INodeNo, ReplyDirectory, ReplyDirectoryPlus};

use super::runner::Fails;
use crate::mount::os::process::euid_egid;
use novelfs_fs::{Attr, Detail, DirReply, Kind};

/// Whose the nodes are and which of their mode bits they keep.
#[derive(Clone, Copy)]
pub(crate) struct Owner {
    uid: u32,
    gid: u32,
    /// Mode bits every node keeps (owner-only for `allow_root`; see `access`).
    pub(crate) mode_mask: u16,
}

impl Owner {
    /// The mount's owner is the effective user (mount(2) and fusermount3
    /// both record it as user_id); the modes are judged against it.
    pub(crate) fn mounting_user() -> Owner {
        let (uid, gid) = euid_egid();
        Owner {
            uid,
            gid,
            mode_mask: 0o777,
        }
    }

    pub(crate) fn attr(&self, a: &Attr) -> FileAttr {
        FileAttr {
            ino: INodeNo(a.ino),
            size: a.size,
            blocks: a.blocks(),
            atime: a.mtime,
            mtime: a.mtime,
            ctime: a.mtime,
            crtime: a.mtime,
            kind: kind(a.kind),
            perm: a.perm() & self.mode_mask,
            nlink: if a.kind == Kind::Directory { 2 } else { 1 },
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    /// The attributes sent with a negative entry (the kernel reads only
    /// its node id, 0).
    pub(crate) fn missing_attr(&self) -> FileAttr {
        self.attr(&Attr {
            ino: 0,
            kind: Kind::File,
            size: 0,
            mtime: std::time::UNIX_EPOCH,
            ttl: std::time::Duration::ZERO,
        })
    }
}

fn kind(k: Kind) -> FileType {
    match k {
        Kind::Directory => FileType::Directory,
        Kind::File => FileType::RegularFile,
        Kind::Symlink => FileType::Symlink,
    }
}

/// A READDIR or READDIRPLUS reply, filled by the tree (`send_listing`).
pub(crate) trait ListingReply: Fails {
    const DETAIL: Detail;
    fn add_entry(&mut self, owner: &Owner, offset: u64, name: &OsStr, attr: &Attr) -> bool;
    fn done(self);
}

impl ListingReply for ReplyDirectory {
    const DETAIL: Detail = Detail::Names;
    fn add_entry(&mut self, _: &Owner, offset: u64, name: &OsStr, attr: &Attr) -> bool {
        self.add(INodeNo(attr.ino), offset, kind(attr.kind), name)
    }
    fn done(self) {
        self.ok()
    }
}

impl ListingReply for ReplyDirectoryPlus {
    const DETAIL: Detail = Detail::Attributes;
    fn add_entry(&mut self, owner: &Owner, offset: u64, name: &OsStr, attr: &Attr) -> bool {
        let a = owner.attr(attr);
        self.add(a.ino, offset, name, &attr.ttl, &a, Generation(0))
    }
    fn done(self) {
        self.ok()
    }
}

/// A fuser reply being filled, and whose its entries are.
pub(crate) struct Filling<R> {
    pub(crate) reply: R,
    pub(crate) owner: Owner,
}

impl<R: ListingReply> DirReply for Filling<R> {
    fn add(&mut self, offset: u64, name: &OsStr, attr: &Attr) -> bool {
        self.reply.add_entry(&self.owner, offset, name, attr)
    }
}
