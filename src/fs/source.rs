//! The library as it is on disk now: book indexes and decoded chapters,
//! each cached under a stamp of its source and checked against it at every
//! use, so a change on disk shows at the next request.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::hash::{Hash, Hasher};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::library::{BookIndex, ChapterText, Library, NovelError};

use super::cache::{Lru, Stamp, allocated};
use super::freshness::Freshness;
use super::lock;
use super::node::{ChapterId, ChapterRef, Node, Result};
use super::prefetch::Prefetcher;

/// A chapter's decoded text, or the error that stops it from being read.
pub type Loaded = std::result::Result<Arc<ChapterText>, NovelError>;

/// A version of a chapter's source.
pub type VersionKey = (ChapterRef, u64);

/// Chapter files above this size are loaded one at a time.
const BIG_CHAPTER_BYTES: u64 = 4 << 20;

/// A book's chapter index with the version of its directory.
pub struct BookVersion {
    pub version: u64,
    pub index: Arc<BookIndex>,
}

/// A chapter's source file as it is now, not yet read.
pub struct ChapterSource {
    pub index: Arc<BookIndex>,
    /// Of the chapter in `index`.
    pub position: usize,
    pub meta: std::fs::Metadata,
}

impl ChapterSource {
    pub fn version(&self) -> u64 {
        version_of(&Stamp::of(&self.meta))
    }
    pub fn mtime(&self) -> SystemTime {
        mtime_of(&self.meta)
    }
}

/// A chapter as loaded: the version of the source it was read from.
pub struct LoadedChapter {
    pub version: u64,
    pub loaded: Loaded,
    pub mtime: SystemTime,
}

struct CachedIndex {
    stamp: Stamp,
    index: Arc<BookIndex>,
}

pub struct Source {
    library: Library,
    freshness: Arc<Freshness>,
    books: Mutex<HashMap<OsString, CachedIndex>>,
    /// Decoded texts by source version: an inode of an older version can
    /// still be read while its text is cached.
    texts: Mutex<Lru<VersionKey, Loaded>>,
    big_loads: Mutex<()>,
    prefetcher: Prefetcher,
}

pub fn mtime_of(meta: &std::fs::Metadata) -> SystemTime {
    let secs = meta.mtime();
    let nanos = meta.mtime_nsec().clamp(0, 999_999_999) as u32;
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nanos)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::from_nanos(nanos as u64)
    }
}

/// The stamp of a path (`None` when it is gone; a symlink is not followed).
pub fn stamp_of(path: &Path) -> Option<Stamp> {
    std::fs::symlink_metadata(path).ok().map(|m| Stamp::of(&m))
}

/// The mtime of a directory, or the epoch when it is gone.
pub fn dir_mtime(path: &Path) -> SystemTime {
    std::fs::symlink_metadata(path)
        .map(|m| mtime_of(&m))
        .unwrap_or(UNIX_EPOCH)
}

/// A version number for a source stamp (a 64-bit digest: two versions of
/// one file colliding is not a practical concern).
pub fn version_of(stamp: &Stamp) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    stamp.hash(&mut hasher);
    hasher.finish()
}

impl Source {
    pub fn new(library: Library, freshness: Arc<Freshness>, texts_budget: usize) -> Source {
        Source {
            library,
            freshness,
            books: Mutex::new(HashMap::new()),
            texts: Mutex::new(Lru::new(texts_budget)),
            big_loads: Mutex::new(()),
            prefetcher: Prefetcher::start(),
        }
    }

    pub fn library(&self) -> &Library {
        &self.library
    }

    pub fn prefetcher(&self) -> &Prefetcher {
        &self.prefetcher
    }

    /// Bytes held by the decoded texts.
    pub fn cached_bytes(&self) -> usize {
        lock(&self.texts).used_bytes()
    }

    #[cfg(test)]
    pub fn drop_text(&self, key: &VersionKey) {
        lock(&self.texts).remove(key);
    }

    /// The book's chapter index and the version of its directory.
    pub fn book(&self, book: &OsStr) -> Result<BookVersion> {
        // Watched before it is read: a change after the scan is reported.
        self.freshness.watch_book(book);
        let meta = self.library.book_metadata(book).ok_or(libc::ENOENT)?;
        let stamp = Stamp::of(&meta);
        if let Some(cached) = lock(&self.books).get(book)
            && cached.stamp == stamp
        {
            return Ok(BookVersion {
                version: version_of(&stamp),
                index: cached.index.clone(),
            });
        }
        let index = Arc::new(self.library.index_book(book).map_err(|_| libc::ENOENT)?);
        lock(&self.books).insert(
            book.to_os_string(),
            CachedIndex {
                stamp,
                index: index.clone(),
            },
        );
        Ok(BookVersion {
            version: version_of(&stamp),
            index,
        })
    }

    pub fn book_index(&self, book: &OsStr) -> Result<Arc<BookIndex>> {
        Ok(self.book(book)?.index)
    }

    /// The source file of a chapter, without reading it: a listing of
    /// 10,000 chapter directories must not decode 10,000 files.
    pub fn chapter_source(&self, c: &ChapterId) -> Result<ChapterSource> {
        let index = self.book_index(&c.book)?;
        let position = index.exact(c.file.as_bytes()).ok_or(libc::ENOENT)?;
        let meta = self
            .library
            .chapter_metadata(&c.book, &c.file)
            .ok_or(libc::ENOENT)?;
        Ok(ChapterSource {
            index,
            position,
            meta,
        })
    }

    /// The chapter as it is now: its source version and its decoded text,
    /// or the error that stops it from being read.
    ///
    /// The stamp of a text that is read is taken from the file descriptor
    /// it is read through, never from an earlier `lstat` of the name: the
    /// name may be renamed over, deleted or re-created in between, and the
    /// text must be cached under the version of the file it came from. A
    /// name that no longer holds a file is ENOENT, never a cached error.
    pub fn chapter(&self, c: &ChapterRef) -> Result<LoadedChapter> {
        let source = self.chapter_source(c)?;
        self.chapter_from(c, source)
    }

    /// `chapter`, with the source already looked at.
    pub fn chapter_from(&self, c: &ChapterRef, source: ChapterSource) -> Result<LoadedChapter> {
        let version = source.version();
        let cached = |texts: &mut Lru<VersionKey, Loaded>| {
            texts
                .get(&(c.clone(), version))
                .map(|loaded| LoadedChapter {
                    version,
                    loaded,
                    mtime: source.mtime(),
                })
        };
        if let Some(hit) = cached(&mut lock(&self.texts)) {
            return Ok(hit);
        }
        // One big chapter decodes at a time (its bytes and text are both in
        // memory meanwhile): two readers of the same one wait for one load,
        // and two different ones do not double the daemon's peak.
        let _big = (source.meta.len() > BIG_CHAPTER_BYTES).then(|| lock(&self.big_loads));
        if _big.is_some()
            && let Some(hit) = cached(&mut lock(&self.texts))
        {
            return Ok(hit);
        }
        // The text will take about the file's size (exactly, for UTF-8):
        // room for it is made before it is read, not after.
        lock(&self.texts).make_room(source.meta.len() as usize);
        let chapter = &source.index.chapters[source.position];
        let (stamp, mtime, loaded): (Stamp, SystemTime, Loaded) =
            match self.library.open_chapter_file(&c.book, &c.file) {
                Ok(None) => return Err(libc::ENOENT),
                Ok(Some((f, meta))) => {
                    let loaded = self
                        .library
                        .load_opened_chapter(&c.book, chapter, f, &meta)
                        .map(Arc::new);
                    (Stamp::of(&meta), mtime_of(&meta), loaded)
                }
                // Opening failed for another reason: an error to show, under
                // the stamp of the name.
                Err(e) => (Stamp::of(&source.meta), source.mtime(), Err(e)),
            };
        self.prefetcher.read_ahead(
            &self.library.book_dir(&c.book),
            &c.book,
            &source.index,
            source.position,
        );
        let weight = match &loaded {
            Ok(text) => {
                text.buffer_bytes()
                    .into_iter()
                    .map(allocated)
                    .sum::<usize>()
                    + 256
            }
            Err(_) => 256,
        };
        let version = version_of(&stamp);
        lock(&self.texts).insert((c.clone(), version), loaded.clone(), weight);
        Ok(LoadedChapter {
            version,
            loaded,
            mtime,
        })
    }

    /// The text (or error) of one version of a chapter: cached, or the
    /// source as it is now if it still is that version. EIO otherwise: the
    /// bytes of an inode never change, so they cannot be made up from a
    /// newer source.
    pub fn chapter_version(&self, c: &ChapterRef, version: u64) -> Result<Loaded> {
        if let Some(loaded) = lock(&self.texts).get(&(c.clone(), version)) {
            return Ok(loaded);
        }
        match self.chapter(c) {
            Ok(now) if now.version == version => Ok(now.loaded),
            _ => {
                log::warn!(
                    "{}: the version read changed on disk and left the cache",
                    Node::Chapter { chapter: c.clone() }.path()
                );
                Err(libc::EIO)
            }
        }
    }
}
