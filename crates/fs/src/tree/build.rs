//! Builds `NovelFs` for one mount from its settings (`FsConfig`): the
//! cache budget split among its caches, the source, the persistent index,
//! the work done ahead; and what the mount asks of it outside requests
//! (readiness, its end, the watch, the figures tests read).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use novelfs_library::Library;

use super::NovelFs;
use crate::ahead::{Ahead, IndexAhead};
use crate::cache::{Budget, HeapTrim};
use crate::freshness::{Freshness, Negatives, SourceFs, Watch};
use crate::indexes::IndexFiles;
use crate::inodes::InodeTable;
use crate::listing::Listings;
use crate::lock;
use crate::outline::Outlines;
use crate::pages::Pages;
use crate::persist::MountIndex;
use crate::source::Source;
use crate::switch::{Switch, Tool};
use crate::unreadable_dirs::UnreadableDirs;

/// Settings of one mount.
#[derive(Debug, Clone)]
pub struct FsConfig {
    /// How long the kernel may cache entries and attributes of what is
    /// not watched; 0 = ask every time (and nothing is watched).
    pub ttl: Duration,
    /// The assistant's switch file; `None` = the default location.
    pub state_file: Option<PathBuf>,
    /// Bytes of decoded chapters, outlines, rendered pages and listings
    /// kept in memory.
    pub cache_bytes: usize,
    /// Watch the library for changes (inotify) so that the kernel may
    /// cache for long; only with a non-zero `ttl`.
    pub watch: bool,
    /// The type of the mount `novels/` lies on (`fuse.s3fs`, …, from
    /// mountinfo): object storage there has directory times that never
    /// move (see `freshness::SourceFs`).
    pub source_fs_type: Option<String>,
    /// Where the persistent index of chapter outlines lives; `None`: none.
    pub index_dir: Option<PathBuf>,
}

impl Default for FsConfig {
    fn default() -> Self {
        FsConfig {
            ttl: Duration::from_secs(1),
            state_file: None,
            cache_bytes: 256 << 20,
            watch: true,
            source_fs_type: None,
            index_dir: None,
        }
    }
}

impl NovelFs {
    pub fn new(library: Library, config: FsConfig) -> Self {
        let budget = Budget::split(config.cache_bytes);
        // On the other core while the mount is attached (see `prepared`),
        // unless done already: a thread started only to be joined can wait
        // for a CPU on a busy machine, and the mount is ready only then.
        let preparing = match novelfs_library::patterns_prepared() {
            true => None,
            false => novelfs_kit::thread::spawn(
                "novelfs-prepare",
                None,
                novelfs_library::prepare_patterns,
            )
            .ok(),
        };
        // The library's filesystem, worked out once for all that depends
        // on it.
        let novels_dir = library.novels_dir();
        let (source_fs, freshness) = match library.local_root() {
            Some(_) => {
                let source_fs = SourceFs::of(&novels_dir, config.source_fs_type.as_deref());
                let freshness = Freshness::of(&source_fs, &novels_dir, config.ttl, config.watch);
                (source_fs, freshness)
            }
            None => (SourceFs::in_bucket(), Freshness::in_bucket(config.ttl)),
        };
        let freshness = Arc::new(freshness);
        // SQLite's page cache is a quarter of the outlines' share.
        let stored_cache = budget.outlines / 4;
        let stored = config
            .index_dir
            .as_deref()
            .and_then(|dir| MountIndex::open(dir, &library, stored_cache, &source_fs));
        let outlines_budget = budget.outlines - stored.as_ref().map_or(0, |_| stored_cache);
        let inodes = InodeTable::default();
        let source = Arc::new(Source::new(
            library,
            freshness.clone(),
            budget.texts,
            budget.indexes,
            inodes.bytes(),
        ));
        let outlines = Arc::new(Outlines::new(outlines_budget).with_stored(stored));
        let index_files = Arc::new(IndexFiles::new(budget.index_files));
        let switch = Arc::new(Switch::new(config.state_file));
        // On a disk only: in a bucket a book's index made ahead would fetch
        // each chapter whose outline is not cached, a GET its reader may
        // never have asked for (one who started mid-book reads no index).
        let local = source.library().local_root().is_some();
        let index_ahead: Option<IndexAhead> = local.then(|| {
            let (index_files, switch) = (index_files.clone(), switch.clone());
            let (source, outlines) = (Arc::downgrade(&source), Arc::downgrade(&outlines));
            Box::new(move |book: &Arc<std::ffi::OsStr>| {
                if let (Some(source), Some(outlines)) = (source.upgrade(), outlines.upgrade()) {
                    let on = switch.tool_on(Tool::Chapters);
                    // Made and kept, or failed: its lookup says why.
                    let _ = index_files.book(&source, &outlines, book, on);
                }
            }) as IndexAhead
        });
        NovelFs {
            ahead: Ahead::start(&source, &outlines, budget.outlines, index_ahead),
            source,
            freshness,
            inodes,
            negatives: Negatives::new(budget.negatives),
            outlines,
            pages: Pages::new(budget.pages),
            listings: Listings::new(budget.listings),
            index_files,
            switch,
            heap_trim: HeapTrim::default(),
            unreadable: UnreadableDirs::default(),
            preparing: Mutex::new(preparing),
            formats: crate::Formats::default(),
        }
    }

    /// Lists only the page formats `formats` in chapter directories (the
    /// others are still found by name). Set before the mount serves:
    /// listings are cached as made.
    pub fn listing_formats(mut self, formats: crate::Formats) -> Self {
        self.formats = formats;
        self
    }

    /// Waits until the file-name patterns are compiled. The mount is
    /// reported ready only then: compiled on first use they would cost a
    /// fresh mount's first requests a share of their CPU.
    pub fn prepared(&self) {
        if let Some(thread) = lock(&self.preparing).take() {
            let _ = thread.join();
        }
    }

    /// The mount ends: what is queued for the persistent index is written.
    pub fn finish(&self) {
        self.outlines.finish();
    }

    /// The watch over the library, when changes are pushed to the kernel.
    pub fn watch(&self) -> Option<&Watch> {
        self.freshness.watch()
    }

    /// Whether the kernel is told of changes (then directories need no
    /// OPENDIR: their cached listings are dropped on change).
    pub fn watching(&self) -> bool {
        self.freshness.covered(None)
    }

    /// Why the library is not watched (`None` when it is).
    pub fn unwatched(&self) -> Option<&str> {
        self.freshness.unwatched()
    }

    /// The rule by which unwatched directories are trusted, and the delay
    /// that follows from it (for the log).
    pub fn freshness_rule(&self) -> String {
        self.freshness.rule()
    }

    /// The configured TTL (what unwatched names get).
    pub fn ttl(&self) -> Duration {
        self.freshness.ttl()
    }

    pub fn library(&self) -> &Library {
        self.source.library()
    }

    /// Bytes the inode table holds (inside the cache budget).
    #[cfg(test)]
    pub(super) fn inode_table_bytes(&self) -> usize {
        self.inodes
            .bytes()
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Inodes currently known (for tests of `forget`).
    pub fn inode_count(&self) -> usize {
        self.inodes.len()
    }

    /// Whether `novel_read` is switched on.
    pub fn switched_on(&self) -> bool {
        self.switch.switched_on()
    }

    /// Whether the switch flipped since the previous call (the first call
    /// only records it).
    pub fn switch_flipped(&self) -> bool {
        self.switch.flipped()
    }

    /// How many chapter files were read and decoded so far (for tests
    /// that show what a request costs).
    pub fn decodes(&self) -> u64 {
        self.source.decodes()
    }

    /// Bytes of names recorded as missing (inside the cache budget).
    pub fn negatives_bytes(&self) -> usize {
        self.negatives.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mount whose file-name patterns are compiled already (a bucket's,
    /// while its check was on its round trip) starts no thread to compile
    /// them, which it would wait for before it is ready.
    #[test]
    fn no_thread_compiles_patterns_compiled_already() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("novels/书")).unwrap();
        novelfs_library::prepare_patterns();
        let config = FsConfig {
            watch: false,
            ..FsConfig::default()
        };
        let fs = NovelFs::new(novelfs_storage::open_local(dir.path()).unwrap(), config);
        assert!(lock(&fs.preparing).is_none(), "a thread was started");
        fs.prepared();
    }
}
