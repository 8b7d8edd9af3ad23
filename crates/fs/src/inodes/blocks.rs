//! Page blocks: the pages of one version of a chapter that the kernel was
//! given, under one entry.

use std::time::{Duration, SystemTime};

use super::hash::fx_hash;
use crate::node::ChapterRef;

/// The pages of one version of a chapter that the kernel was given: 64
/// bytes, with no allocation of its own for the usual one or two pages.
#[derive(Debug, PartialEq)]
pub(super) struct PageBlock {
    pub(super) chapter: ChapterRef,
    pub(super) version: u64,
    /// The mtime reported with the pages (nanoseconds from the epoch).
    pub(super) mtime_nanos: i64,
    /// Lookups the kernel holds on all these pages together: the block goes
    /// when it forgot the last of them (saturated: it stays).
    pub(super) lookups: u32,
    /// Each page given, by its low bits, with its last reported size
    /// (`UNKNOWN_SIZE`: none reported, or too big to keep here): the first
    /// two inline, any further ones in `more`.
    pub(super) first: [(u32, u32); 2],
    pub(super) first_len: u8,
    pub(super) more: Box<[(u32, u32)]>,
}

impl PageBlock {
    pub(super) fn pages(&self) -> impl Iterator<Item = &(u32, u32)> {
        self.first[..usize::from(self.first_len)]
            .iter()
            .chain(self.more.iter())
    }

    pub(super) fn page_mut(&mut self, slot: u32) -> Option<&mut u32> {
        self.first[..usize::from(self.first_len)]
            .iter_mut()
            .chain(self.more.iter_mut())
            .find(|(s, _)| *s == slot)
            .map(|(_, size)| size)
    }

    pub(super) fn add_page(&mut self, slot: u32, size: u32) {
        if usize::from(self.first_len) < self.first.len() {
            self.first[usize::from(self.first_len)] = (slot, size);
            self.first_len += 1;
        } else {
            let mut more = std::mem::take(&mut self.more).into_vec();
            more.push((slot, size));
            self.more = more.into_boxed_slice();
        }
    }

    pub(super) fn mtime(&self) -> SystemTime {
        let since = Duration::from_nanos(self.mtime_nanos.unsigned_abs());
        if self.mtime_nanos >= 0 {
            SystemTime::UNIX_EPOCH + since
        } else {
            SystemTime::UNIX_EPOCH - since
        }
    }

    pub(super) fn set_mtime(&mut self, mtime: SystemTime) {
        self.mtime_nanos = match mtime.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            Err(e) => i64::try_from(e.duration().as_nanos()).map_or(i64::MIN, |n| -n),
        };
    }
}

pub(super) const UNKNOWN_SIZE: u32 = u32::MAX;

pub(super) fn block_key(chapter: &ChapterRef, version: u64) -> u64 {
    fx_hash(&(&**chapter, version))
}
