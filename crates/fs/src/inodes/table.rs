//! The table: which number the kernel was given for which node, the
//! lookups it holds on each and the attributes last reported, behind the
//! lock every request takes (`InodeTable`; what the lock guards is in
//! `entries`).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock};

use super::blocks::UNKNOWN_SIZE;
use super::entries::{LastAttr, Table};
use super::hash::FxMap;
use super::index::Index;
use super::journal::{self, JournalSink, Record, ReplayError};
use super::numbering::{page_ino, page_of_slot, page_slot, split_page_ino};
use super::slab::Slab;
use super::snapshot;
use crate::cache::Charge;
use crate::error::{Error, Result};
use crate::lock;
use crate::node::{Attr, Node, ROOT_INO};

pub(crate) struct InodeTable {
    table: Mutex<Table>,
    /// What the table takes, as of its last change (counted in the cache
    /// budget, see `cache::Charge`).
    bytes: Charge,
    /// Where each change is recorded, for a server taking over the
    /// connection (see `journal`); unset unless the mount asks.
    journal: OnceLock<Box<dyn JournalSink>>,
}

/// Records in the journal below which it is never compacted.
const MIN_COMPACTED: u64 = 1024;

impl Default for InodeTable {
    fn default() -> Self {
        let mut table = Table {
            entries: Slab::new(ROOT_INO),
            by_node: Index::new(),
            last_attrs: FxMap::default(),
            blocks: Slab::new(0),
            block_of: Index::new(),
            owned_heap: 0,
            journal_records: 0,
            journal_bytes: 0,
        };
        table.own_entry(Node::Root);
        table.entries.get_mut(ROOT_INO).expect("root").lookups = 1;
        let bytes = Charge::new(table.bytes().into());
        InodeTable {
            table: Mutex::new(table),
            bytes,
            journal: OnceLock::new(),
        }
    }
}

impl InodeTable {
    /// The inode of `node`, created if new; `counted` when the kernel
    /// will hold a lookup reference for it (lookup, readdirplus).
    pub(crate) fn intern(&self, node: Node, counted: bool, attr: Option<&Attr>) -> u64 {
        let mut table = lock(&self.table);
        if self.journal.get().is_none() {
            return self.intern_locked(&mut table, node, counted, attr);
        }
        // Recorded under the lock, so that the records are in the order
        // the numbers were given.
        let ino = self.intern_locked(&mut table, node.clone(), counted, attr);
        self.record(
            &mut table,
            &journal::intern_record(ino, &node, counted, attr),
        );
        ino
    }

    /// Appends a change (made already) to the journal, and replaces the
    /// journal with a snapshot of the table once its dead records
    /// outnumber the live ones (and it holds `MIN_COMPACTED`).
    fn record(&self, table: &mut Table, record: &[u8]) {
        let Some(sink) = self.journal.get() else {
            return;
        };
        sink.append(record);
        table.journal_records += 1;
        table.journal_bytes += record.len() as u64;
        if table.journal_records >= MIN_COMPACTED
            && table.journal_records > 2 * (table.live_records() + 1)
        {
            self.compact_locked(table, sink.as_ref());
        }
        self.bytes.store(table.bytes(), Ordering::Relaxed);
    }

    fn compact_locked(&self, table: &mut Table, sink: &dyn JournalSink) {
        // Written in parts: a snapshot of a big table is never whole in
        // memory.
        const PART: usize = 64 << 10;
        let mut part = Vec::with_capacity(PART);
        let mut bytes = 0;
        let records = snapshot::write(table, &mut |frame| {
            part.extend_from_slice(frame);
            bytes += frame.len() as u64;
            if part.len() >= PART {
                sink.snapshot_part(&part);
                part.clear();
            }
        });
        sink.snapshot_part(&part);
        // Not made the journal (the sink says why): tried again once as
        // many records came again.
        table.journal_records = records;
        if sink.end_snapshot(true) {
            table.journal_bytes = bytes;
        }
        self.bytes.store(table.bytes(), Ordering::Relaxed);
    }

    /// Replaces the journal with a snapshot of the table now (a journal
    /// written by an older build, converted).
    pub(crate) fn compact(&self) {
        let mut table = lock(&self.table);
        if let Some(sink) = self.journal.get() {
            self.compact_locked(&mut table, sink.as_ref());
        }
    }

    fn intern_locked(
        &self,
        table: &mut Table,
        node: Node,
        counted: bool,
        attr: Option<&Attr>,
    ) -> u64 {
        if let Node::Page {
            chapter,
            page,
            version,
        } = &node
            && let Some(slot) = page_slot(page)
            && let Some(ino) = table.intern_page(chapter, *version, slot, counted, attr)
        {
            self.bytes.store(table.bytes(), Ordering::Relaxed);
            return ino;
        }
        let is_file = !node.is_directory()
            && !matches!(node, Node::BookAlias { .. } | Node::ChapterAlias { .. });
        let ino = table.own_entry(node);
        table.entries.get_mut(ino).expect("interned").lookups += u64::from(counted);
        if let Some(a) = attr
            && is_file
        {
            table.last_attrs.insert(
                ino,
                LastAttr {
                    size: a.size,
                    mtime: a.mtime,
                },
            );
        }
        self.bytes.store(table.bytes(), Ordering::Relaxed);
        ino
    }

    /// What the table takes, kept up to date (shared with the texts cache,
    /// which gives way to it).
    pub(crate) fn bytes(&self) -> Charge {
        self.bytes.clone()
    }

    pub(crate) fn node(&self, ino: u64) -> Result<Node> {
        let table = lock(&self.table);
        if split_page_ino(ino).is_some() {
            return table.page_node(ino).ok_or(Error::NotFound);
        }
        table
            .entries
            .get(ino)
            .map(|e| e.node.clone())
            .ok_or(Error::NotFound)
    }

    /// The path of `ino` for log lines (never fails).
    pub(crate) fn describe(&self, ino: u64) -> String {
        self.node(ino)
            .map_or_else(|_| format!("inode {ino}"), |n| n.path())
    }

    /// The kernel dropped `n` lookups of `ino`; true when that freed an
    /// entry (for a page: the last counted page of its block).
    pub(crate) fn forget(&self, ino: u64, n: u64) -> bool {
        if ino == ROOT_INO {
            return false;
        }
        let mut table = lock(&self.table);
        let freed = match split_page_ino(ino) {
            Some((block, _)) => table.forget_page(u64::from(block), n),
            None => table.forget_own(ino, n),
        };
        // After the change: a snapshot this record brings on holds it.
        self.record(&mut table, &journal::forget_record(ino, n));
        if freed {
            self.bytes.store(table.bytes(), Ordering::Relaxed);
        }
        freed
    }

    /// The number of a page the kernel holds now (given in a lookup or a
    /// READDIRPLUS entry, not yet forgotten): `None` when it holds none,
    /// also when it holds another version of that page.
    pub(crate) fn held_page(&self, node: &Node) -> Option<u64> {
        let Node::Page {
            chapter,
            page,
            version,
        } = node
        else {
            return None;
        };
        let table = lock(&self.table);
        let ino = match page_slot(page) {
            Some(slot) => page_ino(table.find_block(chapter, *version)?, slot),
            None => table.find_own(node)?,
        };
        table.held(ino).then_some(ino)
    }

    /// Whether the kernel holds `ino` (looked up and not forgotten).
    pub(crate) fn held(&self, ino: u64) -> bool {
        lock(&self.table).held(ino)
    }

    /// Entries held: one per node with a number of its own, one per block
    /// of pages.
    pub(crate) fn len(&self) -> usize {
        let table = lock(&self.table);
        table.by_node.ids.len() + table.block_of.ids.len()
    }

    /// The size and mtime last reported for `ino`.
    pub(crate) fn last_attr(&self, ino: u64) -> Result<LastAttr> {
        let table = lock(&self.table);
        if let Some((block, slot)) = split_page_ino(ino) {
            let b = table.blocks.get(u64::from(block)).ok_or(Error::NotFound)?;
            return b
                .pages()
                .find(|(s, size)| *s == slot && *size != UNKNOWN_SIZE)
                .map(|&(_, size)| LastAttr {
                    size: u64::from(size),
                    mtime: b.mtime(),
                })
                .ok_or(Error::NotFound);
        }
        table.last_attrs.get(&ino).copied().ok_or(Error::NotFound)
    }

    /// Every node the kernel was given, by inode, as the table is now: a
    /// copy, so that what is done with it (asking the disk) runs without
    /// the lock every lookup needs. (Pages have no entries: their nodes are
    /// made here, from the blocks.)
    pub(crate) fn known(&self) -> HashMap<Node, u64> {
        let table = lock(&self.table);
        let mut known: HashMap<Node, u64> = table
            .entries
            .iter()
            .map(|(ino, e)| (e.node.clone(), ino))
            .collect();
        for (block, b) in table.blocks.iter() {
            for &(slot, _) in b.pages() {
                known.insert(
                    Node::Page {
                        chapter: b.chapter.clone(),
                        page: page_of_slot(slot),
                        version: b.version,
                    },
                    page_ino(block, slot),
                );
            }
        }
        known
    }

    /// Replays a journal (see `journal`) into this table, which must be
    /// fresh: returns the records replayed and the bytes they take (a
    /// record cut short at the end is left out). Fails if a number comes
    /// out other than the one recorded.
    pub(crate) fn replay(&self, bytes: &[u8]) -> std::result::Result<(usize, usize), ReplayError> {
        let (records, len) = journal::records(bytes)?;
        let count = records.len();
        for (i, r) in records.into_iter().enumerate() {
            match r {
                Record::Intern {
                    ino,
                    node,
                    counted,
                    attr,
                } => {
                    let attr = journal::attr_of(ino, attr);
                    let got = self.intern(node.clone(), counted, attr.as_ref());
                    if got != ino {
                        return Err(ReplayError::Renumbered {
                            record: i,
                            path: node.path(),
                            got,
                            recorded: ino,
                        });
                    }
                }
                Record::Forget { ino, n } => {
                    self.forget(ino, n);
                }
                snapshot_record => {
                    let mut table = lock(&self.table);
                    snapshot::restore(&mut table, snapshot_record, i)?;
                }
            }
        }
        let mut table = lock(&self.table);
        table.journal_records = count as u64;
        table.journal_bytes = len as u64;
        self.bytes.store(table.bytes(), Ordering::Relaxed);
        Ok((count, len))
    }

    /// Records every change from now on with `sink`.
    pub(crate) fn journal_to(&self, sink: Box<dyn JournalSink>) {
        let _ = self.journal.set(sink);
    }

    /// The snapshot the table would write now.
    #[cfg(test)]
    pub(crate) fn snapshot_for_test(&self) -> Vec<u8> {
        let mut out = Vec::new();
        snapshot::write(&lock(&self.table), &mut |f| out.extend_from_slice(f));
        out
    }

    /// The lookups the kernel holds on `ino` (a page's: its block's).
    #[cfg(test)]
    pub(crate) fn lookups_for_test(&self, ino: u64) -> Option<u64> {
        let table = lock(&self.table);
        match split_page_ino(ino) {
            Some((block, _)) => table
                .blocks
                .get(u64::from(block))
                .map(|b| u64::from(b.lookups)),
            None => table.entries.get(ino).map(|e| e.lookups),
        }
    }

    /// The numbers the next entry and block get.
    #[cfg(test)]
    pub(crate) fn next_numbers_for_test(&self) -> (u64, u64) {
        let table = lock(&self.table);
        (table.entries.next_id(), table.blocks.next_id())
    }

    /// Whether no one holds the table's lock (for tests of what runs
    /// without it).
    #[cfg(test)]
    pub(crate) fn is_free(&self) -> bool {
        self.table.try_lock().is_ok()
    }
}

#[cfg(test)]
mod tests;
