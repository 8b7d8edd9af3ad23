//! A chapter's source file looked at without reading it: its place in its
//! book, its metadata, and the version of its bytes (of its stamp, or of
//! a digest while the stamp proves nothing yet).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use super::stamps::version_of;
use super::{ChapterFile, LOOKED_BYTES, Source};
use crate::cache::Stamp;
use crate::error::{Error, Result};
use crate::freshness::racy::Known;
use crate::lock;
use crate::node::{ChapterRef, chapter_ref};

impl Source {
    /// The source file of a chapter, without reading it: a listing of
    /// 10,000 chapter directories must not decode 10,000 files.
    pub(crate) fn chapter_file(&self, c: &ChapterRef) -> Result<ChapterFile> {
        // The chapter's own lstat below decides what it is now; the book's
        // index only places it among its siblings (the chapters ahead of a
        // reader), so a cached index that holds it serves without a look
        // at the book's directory, which would be a large part of a
        // chapter directory's listing. An index without it is looked at
        // again.
        let cached = lock(&self.books).get(&*c.book).map(|b| b.index.clone());
        let found = cached.and_then(|index| {
            let position = index.exact(c.file.as_bytes())?;
            Some((index, position))
        });
        let (index, position) = match found {
            Some(found) => found,
            None => {
                let index = self.book_index(&c.book)?;
                let position = index.exact(c.file.as_bytes()).ok_or(Error::NotFound)?;
                (index, position)
            }
        };
        // In a watched book a look holds until the watch reports a change
        // in the chapter (`changed`, before the kernel is told to drop
        // its names): the rule the kernel's caches follow there.
        let watched = self.watched(&c.book);
        if watched && let Some((meta, version)) = lock(&self.looked).held().get(c) {
            return Ok(ChapterFile {
                index,
                position,
                meta,
                version,
            });
        }
        let reports = lock(&self.looked).reports();
        #[cfg(test)]
        self.at(|s| &s.before_stat, c);
        let meta = self
            .library
            .chapter_metadata(&c.book, &c.file)
            .ok_or(Error::NotFound)?;
        let stamp = Stamp::of(&meta);
        let (meta, version) = match self.versions.known(c, &stamp, self.freshness.granularity()) {
            Known::Version(v) => (meta, v),
            Known::Look(last) => self.look_again(c, meta, last)?,
        };
        if watched && let Some(looked) = lock(&self.looked).since(reports) {
            looked.insert(c.clone(), (meta.clone(), version), LOOKED_BYTES);
        }
        Ok(ChapterFile {
            index,
            position,
            meta,
            version,
        })
    }

    /// The version of a chapter whose metadata `meta` was just taken (see
    /// `chapter_file`): its stamp's, or, while the stamp is recent, of its
    /// bytes.
    pub(crate) fn version_now(
        &self,
        book: &Arc<OsStr>,
        file: &OsStr,
        meta: novelfs_library::backing::Meta,
    ) -> u64 {
        let stamp = Stamp::of(&meta);
        if self.versions.is_empty() {
            return version_of(&stamp);
        }
        let c = &chapter_ref(book, file);
        match self.versions.known(c, &stamp, self.freshness.granularity()) {
            Known::Version(v) => v,
            Known::Look(last) => self.look_again(c, meta, last).map_or(last, |(_, v)| v),
        }
    }

    /// The version of a chapter whose stamp proves nothing yet: of its
    /// bytes, read now and compared with those read before (`last` when
    /// they cannot be read; the load says why).
    fn look_again(
        &self,
        c: &ChapterRef,
        meta: novelfs_library::backing::Meta,
        last: u64,
    ) -> Result<(novelfs_library::backing::Meta, u64)> {
        let at = self.freshness.now();
        let Ok(opened) = self.library.open_chapter_file(&c.book, &c.file) else {
            return Ok((meta, last));
        };
        let f = opened.ok_or(Error::NotFound)?;
        let meta = f.meta().clone();
        let Ok(digest) = novelfs_library::backing::digest(&*f) else {
            return Ok((meta, last));
        };
        let stamp = Stamp::of(&meta);
        let g = self.freshness.granularity();
        Ok((meta, self.versions.looked(c, &stamp, digest, at, g)))
    }
}
