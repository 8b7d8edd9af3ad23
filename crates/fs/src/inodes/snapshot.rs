//! The inode journal's snapshot (see `journal`): the table as it is, one
//! record per entry and per block of pages under the number it has, after
//! a first record giving the numbers the next entry and block get. A
//! journal whose dead records outnumber the live ones is replaced by one
//! (`InodeTable::compact`), so that it stays about the size of the table
//! however long the mount lives. Replayed into a fresh table, it gives the
//! very table it was made of.

use std::time::SystemTime;

use super::entries::Table;
use super::journal::{
    BLOCK, ENTRY, Record, ReplayError, SNAPSHOT, encode_node, frame, put_chapter,
};
use crate::node::ROOT_INO;

/// The table as records, each given to `emit` (the root, in every table,
/// left out); how many.
pub(super) fn write(table: &Table, emit: &mut dyn FnMut(&[u8])) -> u64 {
    let mut b = vec![SNAPSHOT];
    b.extend_from_slice(&table.entries.next_id().to_le_bytes());
    b.extend_from_slice(&table.blocks.next_id().to_le_bytes());
    emit(&frame(b));
    let mut records = 1;
    for (ino, e) in table.entries.iter() {
        if ino == ROOT_INO {
            continue;
        }
        let mut b = vec![ENTRY];
        b.extend_from_slice(&ino.to_le_bytes());
        b.extend_from_slice(&e.lookups.to_le_bytes());
        match table.last_attrs.get(&ino) {
            Some(a) => {
                b.push(1);
                b.extend_from_slice(&a.size.to_le_bytes());
                b.extend_from_slice(&nanos_of(a.mtime).to_le_bytes());
            }
            None => b.push(0),
        }
        encode_node(&mut b, &e.node);
        emit(&frame(b));
        records += 1;
    }
    for (id, block) in table.blocks.iter() {
        let mut b = vec![BLOCK];
        b.extend_from_slice(&id.to_le_bytes());
        b.extend_from_slice(&block.lookups.to_le_bytes());
        b.extend_from_slice(&block.version.to_le_bytes());
        b.extend_from_slice(&block.mtime_nanos.to_le_bytes());
        put_chapter(&mut b, &block.chapter);
        let pages: Vec<&(u32, u32)> = block.pages().collect();
        b.extend_from_slice(&(pages.len() as u32).to_le_bytes());
        for &&(slot, size) in &pages {
            b.extend_from_slice(&slot.to_le_bytes());
            b.extend_from_slice(&size.to_le_bytes());
        }
        emit(&frame(b));
        records += 1;
    }
    records
}

/// An mtime as signed nanoseconds from the epoch (as blocks keep theirs).
fn nanos_of(mtime: SystemTime) -> i64 {
    match mtime.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_nanos()).map_or(i64::MIN, |n| -n),
    }
}

/// Replays a snapshot's record, the journal's `i`th, into `table` (fresh,
/// bar this snapshot's records before it).
pub(super) fn restore(table: &mut Table, record: Record, i: usize) -> Result<(), ReplayError> {
    match record {
        Record::Snapshot {
            entries_next,
            blocks_next,
        } => {
            table.entries.set_next(entries_next);
            table.blocks.set_next(blocks_next);
        }
        Record::Entry {
            ino,
            lookups,
            attr,
            node,
        } => {
            if ino >= table.entries.next_id() || table.entries.get(ino).is_some() {
                return Err(ReplayError::Misplaced {
                    record: i,
                    block: false,
                    id: ino,
                });
            }
            table.place_entry(ino, node, lookups, attr);
        }
        Record::Block { id, block } => {
            if id >= table.blocks.next_id() || table.blocks.get(id).is_some() {
                return Err(ReplayError::Misplaced {
                    record: i,
                    block: true,
                    id,
                });
            }
            table.place_block(id, *block);
        }
        _ => return Err(ReplayError::NotSnapshot { record: i }),
    }
    Ok(())
}
