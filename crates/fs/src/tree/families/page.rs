//! A page of a chapter (`offset-N[-limit-M].txt|json`): its attributes,
//! its bytes and its entries in the chapter's listing, each of one version
//! of the chapter's source.

use std::ffi::{OsStr, OsString};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::chapter_shape::Outline;
use crate::error::{Error, Result};
use crate::formats::Formats;
use crate::listing::Listed;
use crate::names::PageName;
use crate::node::{Attr, ChapterRef, Kind, Node};
use novelfs_library::PageFormat;

use super::super::{Found, NovelFs, Stat};

/// The page of `version`, while that version is current.
pub(in crate::tree) fn stat(
    fs: &NovelFs,
    ino: u64,
    chapter: &ChapterRef,
    page: PageName,
    version: u64,
) -> Result<Stat> {
    match fs.outlines.page_size(&fs.source, chapter, page) {
        Ok(now) if now.version == version => Ok(Stat::file(now.size, now.mtime)),
        _ => fs.older(ino),
    }
}

/// The page `name` names in the chapter's current version, with its
/// attributes of the same look at the source.
pub(in crate::tree) fn found(fs: &NovelFs, chapter: ChapterRef, name: &OsStr) -> Result<Found> {
    use std::os::unix::ffi::OsStrExt;
    let page = PageName::parse(name.as_bytes()).ok_or(Error::NotFound)?;
    let now = fs.outlines.page_size(&fs.source, &chapter, page)?;
    let node = Node::Page {
        chapter,
        page,
        version: now.version,
    };
    let attr = fs.file_attr(&node, now.size, now.mtime);
    Ok(Found { node, attr })
}

pub(in crate::tree) fn content(
    fs: &NovelFs,
    chapter: &ChapterRef,
    page: PageName,
    version: u64,
) -> Result<Arc<Vec<u8>>> {
    fs.pages.bytes(&fs.source, chapter, page, version)
}

/// The entries of the pages of `outline` (of `version` of the chapter,
/// dated `mtime`), each in the `formats` listed, with their attributes.
pub(in crate::tree) fn listed(
    chapter: &ChapterRef,
    outline: &Outline,
    version: u64,
    mtime: SystemTime,
    ttl: Duration,
    formats: Formats,
) -> Vec<Listed> {
    outline
        .pages
        .iter()
        .flat_map(|p| {
            [
                (PageFormat::Text, p.text_bytes),
                (PageFormat::Json, p.json_bytes),
            ]
            .into_iter()
            .filter(|(format, _)| formats.lists(*format))
            .map(|(format, size)| {
                let page = PageName {
                    offset: p.offset,
                    limit: None,
                    format,
                };
                (page, size)
            })
        })
        .map(|(page, size)| Listed {
            name: OsString::from(page.to_name()),
            node: Node::Page {
                chapter: chapter.clone(),
                page,
                version,
            },
            kind: Kind::File,
            attr: Some(Attr {
                ino: 0,
                kind: Kind::File,
                size,
                mtime,
                ttl,
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::super::test_fixture::*;
    use super::*;
    use crate::freshness;
    use crate::source::stamp_of_path;

    /// In a watched book a chapter's `lstat` holds until the watch reports
    /// a change in it: a page looked up again asks nothing of the disk,
    /// and after an edit is reported the new version is served.
    #[test]
    fn a_watched_chapter_is_looked_at_again_only_after_a_reported_change() {
        let f = fixture(&[("第1章 起.md", "旧")]);
        let stats = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = stats.clone();
        with_seams(
            &f,
            crate::source::Seams {
                before_stat: Some(Box::new(move |_| {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                })),
                ..Default::default()
            },
        );
        let first = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        let looked = stats.load(std::sync::atomic::Ordering::SeqCst);
        assert!(looked > 0);
        for _ in 0..3 {
            assert_eq!(walk(&f.fs, "书/1/offset-1.txt").unwrap().ino, first.ino);
            read_all(&f.fs, first.ino);
        }
        assert_eq!(stats.load(std::sync::atomic::Ordering::SeqCst), looked);
        std::fs::write(f.book_dir.join("第1章 起.md"), "新的内容").unwrap();
        // `walk` hands the watch's report over first.
        let new = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        assert_ne!(new.ino, first.ino);
        assert!(stats.load(std::sync::atomic::Ordering::SeqCst) > looked);
        assert!(
            String::from_utf8(read_all(&f.fs, new.ino))
                .unwrap()
                .contains("新的内容")
        );
    }

    #[test]
    fn a_new_version_is_a_new_inode_and_the_old_one_keeps_its_bytes() {
        let f = fixture(&[("第1章 起.md", "旧")]);
        let old = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        let old_bytes = read_all(&f.fs, old.ino);
        std::fs::write(f.book_dir.join("第1章 起.md"), "新的内容").unwrap();
        let new = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        assert_ne!(new.ino, old.ino);
        assert_eq!(
            f.fs.getattr(old.ino).unwrap().size,
            old.size,
            "an open old version keeps its size"
        );
        assert_eq!(
            read_all(&f.fs, old.ino),
            old_bytes,
            "the old version is still served from the cache"
        );
        assert!(String::from_utf8(old_bytes).unwrap().contains("1: 旧\n"));
        assert!(
            String::from_utf8(read_all(&f.fs, new.ino))
                .unwrap()
                .contains("1: 新的内容\n")
        );
    }

    #[test]
    fn an_old_version_that_left_the_cache_is_eio_never_new_bytes() {
        let f = fixture(&[("第1章 起.md", "旧")]);
        let old = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        // Not read yet: nothing of it is cached but the text, which goes.
        f.fs.source
            .drop_text(&(old_chapter(&f.fs, old.ino), version(&f.fs, old.ino)));
        std::fs::write(f.book_dir.join("第1章 起.md"), "改过了").unwrap();
        assert_eq!(
            f.fs.read(old.ino, 0, u32::MAX).map_err(|e| e.errno()),
            Err(libc::EIO)
        );
        let new = walk(&f.fs, "书/1/offset-1.txt").unwrap();
        assert!(
            String::from_utf8(read_all(&f.fs, new.ino))
                .unwrap()
                .contains("1: 改过了\n")
        );
    }

    fn old_chapter(fs: &NovelFs, ino: u64) -> ChapterRef {
        match fs.node(ino).unwrap() {
            Node::Page { chapter, .. } => chapter,
            n => panic!("not a page: {n:?}"),
        }
    }

    fn version(fs: &NovelFs, ino: u64) -> u64 {
        match fs.node(ino).unwrap() {
            Node::Page { version, .. } => version,
            n => panic!("not a page: {n:?}"),
        }
    }

    #[test]
    fn a_page_lookup_answers_from_one_look_at_a_source_edited_meanwhile() {
        let f = fixture(&[("第1章 起.md", "一")]);
        let chapter = walk(&f.fs, "书/第1章 起.md").unwrap();
        let path = f.book_dir.join("第1章 起.md");
        with_seams(
            &f,
            edit_before_every_stat(path, |n| "一\n".repeat(n).into_bytes()),
        );
        for name in ["offset-1.txt", "offset-1.json", "offset-1-limit-1.txt"] {
            let page = f.fs.lookup(chapter.ino, OsStr::new(name));
            assert!(page.is_ok(), "{name} exists in every version: {page:?}");
            let page = page.unwrap();
            assert_eq!(
                read_all(&f.fs, page.ino).len() as u64,
                page.size,
                "{name}: the size is of the version read"
            );
        }
    }

    #[test]
    fn a_same_size_edit_in_the_second_of_a_read_is_a_new_version() {
        let f = fixture(&[("第1章 起.md", "甲")]);
        let path = f.book_dir.join("第1章 起.md");
        for attempt in 0..5 {
            let (old, new) = if attempt % 2 == 0 {
                ("甲", "乙")
            } else {
                ("乙", "甲")
            };
            whole_second_stamps();
            rewrite(&path, old);
            let stamp = stamp_of_path(&path).unwrap();
            // The clock stands at the change: the stamp proves nothing.
            clock_at(&f, freshness::racy::changed(&stamp));
            let page = walk(&f.fs, "书/1/offset-1.txt").unwrap();
            assert!(text_of(&f.fs, page.ino).contains(&format!("1: {old}\n")));
            rewrite(&path, new);
            if stamp_of_path(&path) != Some(stamp) {
                continue; // Not within one second: again.
            }
            let again = walk(&f.fs, "书/1/offset-1.txt").unwrap();
            assert_ne!(again.ino, page.ino, "other bytes under one stamp");
            assert!(text_of(&f.fs, again.ino).contains(&format!("1: {new}\n")));
            assert!(
                text_of(&f.fs, page.ino).contains(&format!("1: {old}\n")),
                "the inode read before keeps its bytes"
            );
            // Looked at again once the stamp settled: the bytes read last
            // are proven, and stay the version they were.
            clock_at(&f, freshness::racy::changed(&stamp) + LATER);
            assert_eq!(walk(&f.fs, "书/1/offset-1.txt").unwrap().ino, again.ino);
            assert_eq!(walk(&f.fs, "书/1/offset-1.txt").unwrap().ino, again.ino);
            return;
        }
        panic!("no two edits within one second in 5 attempts");
    }
}
