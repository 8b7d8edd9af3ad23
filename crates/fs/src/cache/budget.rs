//! The one cache budget of a mount, split by what each cache holds, and
//! what a buffer really costs the budget.

use std::sync::atomic::AtomicUsize;

/// Buffers at least this big get their own mapping from the allocator
/// (the daemon sets glibc's `M_MMAP_THRESHOLD` to it, see `daemon.rs`).
/// Chapters and pages below it come from the heap and reuse its freed
/// chunks: a fresh mapping for each costs its page faults, zeroed pages
/// and, when freed, a TLB shootdown on the other CPU: with a threshold of
/// a few KiB every chapter and page of a cold pass would pay them
/// (performance.md, "Figures behind the code"). Above it (big chapters,
/// their line indexes) each buffer goes back to the system the moment it
/// is freed.
pub const MMAP_THRESHOLD: usize = 4 << 20;

/// What a buffer of `bytes` really costs: a mapped one takes whole 4 KiB
/// pages (on average 2 KiB more than asked, which over thousands of cached
/// chapters is tens of MiB the budget must count), a small one a header.
pub(crate) fn allocated(bytes: usize) -> usize {
    if bytes >= MMAP_THRESHOLD {
        (bytes + 16).next_multiple_of(4096)
    } else {
        bytes + 16
    }
}

/// Bytes the daemon holds outside its caches that the budget must cover
/// all the same: the inode table, which grows with what the kernel holds
/// (about 250 bytes per chapter it was given) and cannot be evicted. The
/// decoded texts give way to it, so that `--cache-size` bounds the whole.
pub(crate) type Charge = std::sync::Arc<AtomicUsize>;

/// The cache budget of a mount, split by what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    pub texts: usize,
    pub outlines: usize,
    pub pages: usize,
    pub listings: usize,
    /// Book indexes (chapter lists with their lookup maps): at thousands
    /// of books they are as big as the other caches, so they are bounded.
    pub indexes: usize,
    /// The rendered index files (`novel_books.*`, `novel_chapters.*`).
    pub index_files: usize,
    /// The names answered missing that the kernel may keep for long
    /// (`freshness::Negatives`).
    pub negatives: usize,
}

/// The least the decoded texts keep, however big the inode table grows.
pub(crate) const MIN_TEXTS_BUDGET: usize = 1 << 20;

impl Budget {
    /// 1/16 each (at least 1 MiB) for outlines, rendered pages, listings
    /// and book indexes, 1/32 for the index files, 1/64 for names answered
    /// missing, the rest (at least 1 MiB) for decoded chapters: a
    /// text is what costs a decode to get back. (An evicted book index
    /// costs one scan of its directory; whoever walks a library walks it
    /// book by book.)
    pub(crate) fn split(total: usize) -> Budget {
        let sixteenth = (total / 16).max(1 << 20);
        Budget {
            texts: total
                .saturating_sub(4 * sixteenth + sixteenth / 2 + sixteenth / 4)
                .max(1 << 20),
            outlines: sixteenth,
            pages: sixteenth,
            listings: sixteenth,
            indexes: sixteenth,
            index_files: sixteenth / 2,
            negatives: sixteenth / 4,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_goes_mostly_to_texts() {
        let b = Budget::split(256 << 20);
        assert_eq!(
            (b.outlines, b.pages, b.listings),
            (16 << 20, 16 << 20, 16 << 20)
        );
        assert_eq!(b.indexes, 16 << 20);
        assert_eq!(b.index_files, 8 << 20);
        assert_eq!(b.negatives, 4 << 20);
        assert_eq!(b.texts, 180 << 20);
        let tiny = Budget::split(0);
        assert_eq!((tiny.texts, tiny.outlines), (1 << 20, 1 << 20));
    }

    #[test]
    fn mapped_buffers_count_whole_pages() {
        assert_eq!(allocated(100), 116);
        assert_eq!(allocated(40_000), 40_016);
        assert_eq!(allocated(MMAP_THRESHOLD), MMAP_THRESHOLD + 4096);
        assert_eq!(allocated(MMAP_THRESHOLD + 1), MMAP_THRESHOLD + 4096);
    }
}
