//! Page numbers: how a page's inode number packs its block and its place
//! in the block, and how a number is taken apart again.

use crate::names::PageName;
use novelfs_library::PageFormat;

/// Page numbers: this bit set, the block in the 26 bits below it, and
/// `offset << 1 | format` in the 26 bits below those. Every number stays
/// under 2^53, so that a reader whose numbers are doubles (JavaScript's
/// `fs.stat`, as agents' tools use) tells every inode apart. Own entries
/// count up from 2 and never get near it.
const PAGE_BIT: u64 = 1 << 52;
const SLOT_BITS: u32 = 26;
pub(super) const MAX_BLOCK: u64 = (1 << 26) - 1;
const MAX_PAGED_OFFSET: u64 = (1 << (SLOT_BITS - 1)) - 1;

/// A number no node of the tree ever gets: a page's, of block 0 and slot
/// 0, which would be offset 0, and offsets start at 1. For a node outside
/// the tree: the `ERROR` a holder shows once it has given up.
pub const OUTSIDE_INO: u64 = PAGE_BIT;

pub(super) fn page_ino(block: u64, slot: u32) -> u64 {
    PAGE_BIT | (block << SLOT_BITS) | u64::from(slot)
}

/// The low bits of a page's number, for a page that has a derived number
/// (the listed spelling: no limit, and an offset that fits).
pub(super) fn page_slot(page: &PageName) -> Option<u32> {
    if page.limit.is_some() || page.offset > MAX_PAGED_OFFSET {
        return None;
    }
    let format = match page.format {
        PageFormat::Text => 0,
        PageFormat::Json => 1,
    };
    Some(((page.offset as u32) << 1) | format)
}

pub(super) fn page_of_slot(slot: u32) -> PageName {
    PageName {
        offset: u64::from(slot >> 1),
        limit: None,
        format: if slot & 1 == 0 {
            PageFormat::Text
        } else {
            PageFormat::Json
        },
    }
}

/// What a page number stands for: (block, low bits).
pub(super) fn split_page_ino(ino: u64) -> Option<(u32, u32)> {
    (ino & PAGE_BIT != 0 && ino < PAGE_BIT << 1).then_some((
        ((ino & !PAGE_BIT) >> SLOT_BITS) as u32,
        (ino & ((1 << SLOT_BITS) - 1)) as u32,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_page_gets_the_outside_number() {
        assert!(PageName::parse(b"offset-0.txt").is_none());
        for name in ["offset-1.txt", "offset-1.json", "offset-33554431.json"] {
            let slot = page_slot(&PageName::parse(name.as_bytes()).unwrap()).unwrap();
            assert_ne!(slot, 0, "{name}");
            assert_ne!(page_ino(0, slot), OUTSIDE_INO);
        }
        const { assert!(OUTSIDE_INO < 1 << 53) };
    }
}
