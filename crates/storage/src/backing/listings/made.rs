//! The listings kept, by directory, within a bound in bytes: those past
//! use go first, then the least recently made.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Entry;

/// Listings kept before those past use are dropped.
const PRUNE_LISTINGS_AT: usize = 1024;

/// What a listing's entry holds besides its name and version's words.
const ENTRY_BYTES: u64 = std::mem::size_of::<Entry>() as u64;

/// The bytes a listing of `entries` holds.
pub(super) fn listing_bytes(entries: &[Entry]) -> u64 {
    entries
        .iter()
        .map(|e| {
            let etag = match &e.version {
                crate::Version::ETag { etag, .. } => etag.len() as u64,
                _ => 0,
            };
            ENTRY_BYTES + e.name.len() as u64 + etag
        })
        .sum()
}

/// A directory's listing as last made.
pub(super) struct Listed {
    /// When the LIST that made it began: what it shows is at least as new.
    pub(super) at: Instant,
    /// When it was made: for a grace after, it is served however long its
    /// LIST took (past the TTL, while it is made again), so readers that
    /// come one after another share it even when LISTs outlast the TTL.
    pub(super) landed: Instant,
    pub(super) entries: Arc<Vec<Entry>>,
    /// What `entries` holds, counted in the listings' bound.
    pub(super) bytes: u64,
}

/// The listings kept, by directory, within a bound in bytes.
pub(super) struct Made {
    pub(super) by_dir: HashMap<PathBuf, Listed>,
    pub(super) bytes: u64,
    pub(super) limit: u64,
}

impl Made {
    /// Keeps `listed` as `dir`'s listing. Past many listings, those past
    /// `served` (their TTL and grace: they serve nothing) go; past the
    /// bound in bytes, the least recently made go too, but never the one
    /// just kept.
    pub(super) fn keep(&mut self, dir: &Path, listed: Listed, served: Duration) {
        self.bytes += listed.bytes;
        if let Some(old) = self.by_dir.insert(dir.to_path_buf(), listed) {
            self.bytes -= old.bytes;
        }
        if self.by_dir.len() >= PRUNE_LISTINGS_AT || self.bytes > self.limit {
            let bytes = &mut self.bytes;
            self.by_dir.retain(|_, l| {
                let keep = l.at.elapsed() < served;
                if !keep {
                    *bytes -= l.bytes;
                }
                keep
            });
        }
        while self.bytes > self.limit && self.by_dir.len() > 1 {
            let oldest = self
                .by_dir
                .iter()
                .filter(|(d, _)| d.as_path() != dir)
                .min_by_key(|(_, l)| l.landed)
                .map(|(d, _)| d.clone());
            match oldest {
                Some(d) => self.remove(&d),
                None => break,
            }
        }
    }

    pub(super) fn remove(&mut self, dir: &Path) {
        if let Some(l) = self.by_dir.remove(dir) {
            self.bytes -= l.bytes;
        }
    }
}
