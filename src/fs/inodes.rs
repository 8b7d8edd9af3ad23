//! The inode table: which number the kernel was given for which node.
//! Numbers are never reused; an entry goes when the kernel forgets its
//! last lookup.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use super::lock;
use super::node::{Attr, Node, ROOT_INO, Result};

/// The size and mtime last reported for an inode, kept for a version that
/// is gone from disk but may still be open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastAttr {
    pub size: u64,
    pub mtime: SystemTime,
}

struct Entry {
    node: Node,
    /// Lookups the kernel holds (entries returned by lookup and readdirplus).
    lookups: u64,
    last_attr: Option<LastAttr>,
}

struct Table {
    by_node: HashMap<Node, u64>,
    entries: HashMap<u64, Entry>,
    next: u64,
}

pub struct InodeTable {
    table: Mutex<Table>,
}

impl Default for InodeTable {
    fn default() -> Self {
        let mut table = Table {
            by_node: HashMap::from([(Node::Root, ROOT_INO)]),
            entries: HashMap::new(),
            next: ROOT_INO + 1,
        };
        table.entries.insert(
            ROOT_INO,
            Entry {
                node: Node::Root,
                lookups: 1,
                last_attr: None,
            },
        );
        InodeTable {
            table: Mutex::new(table),
        }
    }
}

impl InodeTable {
    /// The inode of `node`, created if new; `counted` when the kernel
    /// will hold a lookup reference for it (lookup, readdirplus).
    pub fn intern(&self, node: Node, counted: bool, attr: Option<&Attr>) -> u64 {
        let mut table = lock(&self.table);
        let ino = match table.by_node.get(&node) {
            Some(&ino) => ino,
            None => {
                let ino = table.next;
                table.next += 1;
                table.by_node.insert(node.clone(), ino);
                table.entries.insert(
                    ino,
                    Entry {
                        node,
                        lookups: 0,
                        last_attr: None,
                    },
                );
                ino
            }
        };
        let entry = table.entries.get_mut(&ino).expect("interned");
        entry.lookups += u64::from(counted);
        if let Some(a) = attr {
            entry.last_attr = Some(LastAttr {
                size: a.size,
                mtime: a.mtime,
            });
        }
        ino
    }

    pub fn node(&self, ino: u64) -> Result<Node> {
        lock(&self.table)
            .entries
            .get(&ino)
            .map(|e| e.node.clone())
            .ok_or(libc::ENOENT)
    }

    /// The path of `ino` for log lines (never fails).
    pub fn describe(&self, ino: u64) -> String {
        self.node(ino)
            .map_or_else(|_| format!("inode {ino}"), |n| n.path())
    }

    /// The kernel dropped `n` lookups of `ino`; true when that was its last.
    pub fn forget(&self, ino: u64, n: u64) -> bool {
        if ino == ROOT_INO {
            return false;
        }
        let mut table = lock(&self.table);
        let Some(entry) = table.entries.get_mut(&ino) else {
            return false;
        };
        entry.lookups = entry.lookups.saturating_sub(n);
        if entry.lookups > 0 {
            return false;
        }
        let node = table.entries.remove(&ino).expect("present").node;
        table.by_node.remove(&node);
        true
    }

    pub fn len(&self) -> usize {
        lock(&self.table).entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The size and mtime last reported for `ino`.
    pub fn last_attr(&self, ino: u64) -> Result<LastAttr> {
        lock(&self.table)
            .entries
            .get(&ino)
            .and_then(|e| e.last_attr)
            .ok_or(libc::ENOENT)
    }

    /// Every node the kernel was given, by inode, as the table is now: a
    /// copy, so that what is done with it (asking the disk) runs without
    /// the lock every lookup needs.
    pub fn known(&self) -> HashMap<Node, u64> {
        lock(&self.table).by_node.clone()
    }

    /// Whether no one holds the table's lock (for tests of what runs
    /// without it).
    #[cfg(test)]
    pub fn is_free(&self) -> bool {
        self.table.try_lock().is_ok()
    }
}
