//! A listing sent to the kernel in pieces: the dot entries, each entry's
//! offset, entries that vanished since the listing was taken, and what an
//! entry that did not fit leaves behind. The kernel side hands in only a
//! `DirReply` that takes one entry at a time.

use std::ffi::OsStr;
use std::time::{Duration, UNIX_EPOCH};

use super::NovelFs;
use crate::listing::Listing;
use crate::node::{Attr, Kind};

/// Where the entries of one READDIR or READDIRPLUS reply go.
pub trait DirReply {
    /// Adds an entry that the next READDIR continues after at `offset`;
    /// `true` when the reply is full and the entry was not added.
    fn add(&mut self, offset: u64, name: &OsStr, attr: &Attr) -> bool;
}

/// What a listing's piece carries for each entry.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// READDIR: a name, an inode and a kind; the kernel keeps no reference.
    Names,
    /// READDIRPLUS: attributes too; each entry sent counts as a lookup.
    Attributes,
}

impl NovelFs {
    /// Sends `listing` (of directory `ino`) from where it continues until
    /// `reply` is full.
    pub fn send_listing(
        &self,
        ino: u64,
        listing: &Listing,
        detail: Detail,
        reply: &mut impl DirReply,
    ) {
        // The kernel skips the attributes of "." and ".." in a READDIRPLUS
        // reply (`fuse_direntplus_link`), and only their inode number
        // reaches the caller: none are looked up for them (a `getattr` per
        // piece would be a noticeable part of a cold listing).
        let dot = Attr {
            ino,
            kind: Kind::Directory,
            size: 0,
            mtime: UNIX_EPOCH,
            ttl: Duration::ZERO,
        };
        let entries = &listing.entries;
        for i in listing.start..entries.len() + 2 {
            let (name, attr) = if i < 2 {
                (OsStr::new([".", ".."][i]), dot)
            } else {
                let e = &entries[i - 2];
                let attr = match detail {
                    Detail::Names => Attr {
                        ino: self.listed_ino(e),
                        kind: e.kind,
                        ..dot
                    },
                    // Vanished since the listing: skipped (offsets stay
                    // those of the listing).
                    Detail::Attributes => match self.listed_plus(e) {
                        Some(a) => a,
                        None => continue,
                    },
                };
                (e.name.as_os_str(), attr)
            };
            if reply.add(listing.offset_after(i), name, &attr) {
                // Not sent: the kernel will not forget what it never got.
                if i >= 2 && detail == Detail::Attributes {
                    self.forget(attr.ino, 1);
                }
                break;
            }
        }
    }
}
