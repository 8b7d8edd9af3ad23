//! A book's directory (its chapters, then its index files), its `ERROR`
//! when it cannot be read, and the aliases at the root that name it.

use std::ffi::OsStr;
use std::sync::Arc;

use crate::cache::Stamp;
use crate::error::{Error, Result};
use crate::indexes::BookLook;
use crate::listing::Listed;
use crate::names::ERROR_FILE;
use crate::node::{Attr, Kind, Node, chapter_ref};
use crate::resolve;
use crate::source::{dir_mtime, mtime_of, stamp_of};
use novelfs_library::index::is_chapters_file;

use super::super::{Found, NovelFs, Stat, digest, error_bytes, index_files, listed};

pub(in crate::tree) fn stat(fs: &NovelFs, book: &OsStr) -> Result<Stat> {
    let library = fs.library();
    if !library.is_book(book) {
        return Err(Error::NotFound);
    }
    Ok(Stat::dir(dir_mtime(library, Some(book))))
}

pub(in crate::tree) fn error_stat(fs: &NovelFs, book: &OsStr) -> Result<Stat> {
    let library = fs.library();
    let e = library.unreadable_dir(Some(book)).ok_or(Error::NotFound)?;
    Ok(Stat::file(
        e.error_line().len() as u64,
        dir_mtime(library, Some(book)),
    ))
}

pub(in crate::tree) fn error_content(fs: &NovelFs, book: &OsStr) -> Result<Arc<Vec<u8>>> {
    match fs.library().unreadable_dir(Some(book)) {
        Some(e) => Ok(error_bytes(&e)),
        None => Err(Error::NotFound),
    }
}

/// An alias at the root exists while it still names `target`.
pub(in crate::tree) fn alias_stat(fs: &NovelFs, name: &OsStr, target: &OsStr) -> Result<Stat> {
    let library = fs.library();
    if *resolve::book_alias_target(library, name)? != *target {
        return Err(Error::NotFound);
    }
    Ok(Stat::link(target, dir_mtime(library, Some(target))))
}

/// The node `name` names in a book directory, with its attributes.
pub(in crate::tree) fn lookup(fs: &NovelFs, book: Arc<OsStr>, name: &OsStr) -> Result<Found> {
    if name == ERROR_FILE && fs.source.book_index(&book).is_err() {
        return fs.checked(Node::BookError { book });
    }
    if is_chapters_file(name) {
        return index_files::chapters_found(fs, book, name);
    }
    fs.checked(resolve::in_book(&fs.source, book, name)?)
}

/// The chapters with their attributes, then the book's index files; a
/// book that cannot be read lists only its `ERROR`.
pub(in crate::tree) fn list(fs: &NovelFs, book: Arc<OsStr>) -> Result<Vec<Listed>> {
    // The book was looked at for this listing: each chapter's
    // attributes need only its own `lstat`, not `attr_of`'s
    // second look at the book per chapter.
    let reports = (fs.index_files.reports(), fs.source.looks_reported());
    let look = match BookLook::take(&fs.source, &book) {
        Ok(look) => {
            fs.index_files.listed(&fs.source, &book, reports.0, &look);
            look.keep(&fs.source, &book, reports.1);
            fs.unreadable
                .readable_again(&fs.library().display_dir(Some(&book)));
            look
        }
        // A book that cannot be read holds an ERROR saying why
        // (not nothing, which would look like an empty book).
        Err(failed) => {
            let Some(e) = fs.library().unreadable_dir(Some(&book)) else {
                return Err(failed);
            };
            fs.log_unreadable(&e);
            let mtime = dir_mtime(fs.library(), Some(&book));
            let node = Node::BookError { book };
            return Ok(vec![fs.error_file(node, &e, mtime).listed_as_error()]);
        }
    };
    let mut chapter_ttl = None;
    let chapters = look
        .book
        .index
        .chapters
        .iter()
        .zip(&look.metas)
        // A chapter of a reserved name is reached by its aliases.
        .filter(|(c, _)| !is_chapters_file(&c.os_name))
        .map(|(c, meta)| {
            let node = Node::Chapter {
                chapter: chapter_ref(&book, &c.os_name),
            };
            let ttl = *chapter_ttl.get_or_insert_with(|| fs.freshness.ttl_for(&node));
            let attr = meta.as_ref().map(|meta| Attr {
                ino: 0,
                kind: Kind::Directory,
                size: 0,
                mtime: mtime_of(meta),
                ttl,
            });
            Listed {
                attr,
                ..listed(node, Kind::Directory, c.os_name.clone())
            }
        })
        .collect::<Vec<_>>();
    // Their listings are what a walk of the tree asks for next.
    fs.ahead.book_listed(&book, &look.book.index);
    let index_files = index_files::chapters_listed(fs, &book, &look);
    Ok(chapters.into_iter().chain(index_files).collect())
}

/// What a listing of a book depends on: its directory.
pub(in crate::tree) fn listing_digest(fs: &NovelFs, book: &OsStr) -> Option<(u64, Stamp)> {
    let stamp = stamp_of(fs.library(), Some(book))?;
    Some((digest(&stamp), stamp))
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::super::super::test_fixture::*;
    use super::*;
    use crate::freshness::{self, WATCHED_TTL};
    use crate::node::ChapterRef;
    use crate::source::stamp_of_path;

    #[test]
    fn listing_a_book_outlines_its_first_chapters_ahead() {
        let (f, chapters, big) = walked_book();
        let outlined = |c: &ChapterRef| f.fs.outlines.is_cached(&f.fs.source, c);
        let book_ino = walk(&f.fs, "书").unwrap().ino;
        f.fs.listing(book_ino, 0).unwrap();
        outlined_ahead(&f.fs);
        assert!(
            !outlined(&big),
            "a chapter over 1 MiB is outlined only when listed"
        );
        // The big chapter is first: the window holds it and 15 small ones.
        let ahead = crate::ahead::WINDOW - 1;
        assert!(
            chapters[..ahead].iter().all(outlined),
            "the first {ahead} outlined"
        );
        assert!(
            !chapters[ahead..].iter().any(outlined),
            "nothing past the window is outlined"
        );
        assert!(f.fs.decodes() as usize <= ahead, "each decoded once");
    }

    #[test]
    fn a_book_listing_carries_each_chapters_attributes() {
        let f = fixture(&[("第1章 起.md", "a"), ("第2章 承.md", "b")]);
        let book = walk(&f.fs, "书").unwrap();
        let listing = f.fs.listing(book.ino, 0).unwrap();
        assert_eq!(
            listing.entries.len(),
            2 + 2,
            "two chapters, two index files"
        );
        for e in listing.entries.iter().filter(|e| e.kind == Kind::Directory) {
            let listed = f.fs.listed_plus(e).unwrap();
            let now = f.fs.getattr(listed.ino).unwrap();
            assert_eq!(
                (listed.kind, listed.mtime, listed.ttl),
                (now.kind, now.mtime, now.ttl)
            );
            assert_eq!(listed.ttl, WATCHED_TTL, "a chapter of a watched book");
        }
    }

    #[test]
    fn a_chapter_added_in_the_second_of_a_listing_is_listed() {
        let f = fixture(&[("第1章 起.md", "甲")]);
        let book = walk(&f.fs, "书").unwrap();
        // The chapters, without the book's index files.
        let names = || -> Vec<OsString> {
            f.fs.list(book.ino)
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .filter(|n| !n.to_string_lossy().starts_with("novel_chapters."))
                .collect()
        };
        let mut name = "第1章 起.md";
        for attempt in 0..5 {
            let other = if attempt % 2 == 0 {
                "第2章 承.md"
            } else {
                "第1章 起.md"
            };
            whole_second_stamps();
            let stamp = stamp_of_path(&f.book_dir).unwrap();
            clock_at(&f, freshness::racy::changed(&stamp));
            assert_eq!(names(), [name]);
            std::fs::rename(f.book_dir.join(name), f.book_dir.join(other)).unwrap();
            name = other;
            if stamp_of_path(&f.book_dir) != Some(stamp) {
                continue; // Not within one second: again.
            }
            assert_eq!(names(), [name], "the same stamp, other names");
            let alias = f.fs.lookup(book.ino, OsStr::new(&name[..4]));
            assert!(alias.is_ok(), "{alias:?}");
            return;
        }
        panic!("no listing and rename within one second in 5 attempts");
    }
}
