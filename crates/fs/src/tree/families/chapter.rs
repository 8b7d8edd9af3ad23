//! A chapter's directory (its pages, or only an `ERROR` when its source
//! cannot be decoded), that `ERROR`, and the aliases in a book that name
//! the chapter.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::cache::Stamp;
use crate::error::{Error, Result};
use crate::listing::Listed;
use crate::names::{ERROR_FILE, PageName};
use crate::node::{ChapterRef, Node};
use crate::resolve;
use novelfs_library::NovelError;

use super::super::{Found, NovelFs, Stat, digest, error_bytes, page};

pub(in crate::tree) fn stat(fs: &NovelFs, chapter: &ChapterRef) -> Result<Stat> {
    Ok(Stat::dir(fs.source.chapter_file(chapter)?.mtime()))
}

/// An alias in a book exists while it still names `target`.
pub(in crate::tree) fn alias_stat(fs: &NovelFs, name: &OsStr, target: &ChapterRef) -> Result<Stat> {
    if *resolve::alias_target(&fs.source, &target.book, name)? != *target.file {
        return Err(Error::NotFound);
    }
    let mtime = fs
        .library()
        .chapter_metadata(&target.book, &target.file)
        .map_or(std::time::UNIX_EPOCH, |m| m.modified());
    Ok(Stat::link(&target.file, mtime))
}

/// Whether `name` in `directory` may ever resolve: in a chapter directory
/// only `ERROR` and page names can (a page of any offset, since the chapter
/// may grow); any other name there stays missing whatever happens on disk.
/// Names elsewhere may always come to resolve (a new book, a chapter whose
/// title holds the name).
pub(in crate::tree) fn can_ever_hold(directory: &Node, name: &OsStr) -> bool {
    !matches!(directory, Node::Chapter { .. })
        || name == ERROR_FILE
        || PageName::parse(name.as_bytes()).is_some()
}

/// The `ERROR` of `version` of the chapter, while that version is current
/// and cannot be decoded.
pub(in crate::tree) fn error_stat(
    fs: &NovelFs,
    ino: u64,
    chapter: &ChapterRef,
    version: u64,
) -> Result<Stat> {
    match fs.source.chapter(chapter) {
        Ok(now) if now.version == version => match now.loaded {
            Err(e) => Ok(Stat::file(e.error_line().len() as u64, now.mtime)),
            Ok(_) => fs.older(ino),
        },
        _ => fs.older(ino),
    }
}

pub(in crate::tree) fn error_content(
    fs: &NovelFs,
    chapter: &ChapterRef,
    version: u64,
) -> Result<Arc<Vec<u8>>> {
    match fs.source.chapter_version(chapter, version)? {
        Err(e) => Ok(error_bytes(&e)),
        Ok(_) => Err(Error::Stale),
    }
}

/// The node `name` names in a chapter directory (its `ERROR`, or a
/// page of the source's current version) with its attributes, both of
/// one look at the source: asked twice, an edit in between would make
/// the version of the name not the version of the attributes, and a
/// name that exists in both versions ENOENT.
pub(in crate::tree) fn lookup(fs: &NovelFs, chapter: ChapterRef, name: &OsStr) -> Result<Found> {
    if name == ERROR_FILE {
        let now = fs.source.chapter(&chapter)?;
        let Err(e) = now.loaded else {
            return Err(Error::NotFound);
        };
        return Ok(error(fs, chapter, now.version, &e, now.mtime));
    }
    // A page is looked up before it is read: its reader is on the chapter
    // before the chapter's load, which fetches ahead as far as it reaches.
    fs.ahead.chapter_entered(&chapter);
    page::found(fs, chapter, name)
}

/// The `ERROR` of `version` of the chapter, which cannot be decoded, with
/// its attributes.
fn error(
    fs: &NovelFs,
    chapter: ChapterRef,
    version: u64,
    error: &NovelError,
    mtime: SystemTime,
) -> Found {
    fs.error_file(Node::ChapterError { chapter, version }, error, mtime)
}

/// The pages of the chapter's current version, each with its attributes
/// (`ttl`: the chapter's), or only its `ERROR`.
pub(in crate::tree) fn list(
    fs: &NovelFs,
    chapter: ChapterRef,
    ttl: Duration,
) -> Result<Vec<Listed>> {
    let now = fs.outlines.outline(&fs.source, &chapter)?;
    // The next chapters' listings are what a walk asks for next.
    fs.ahead
        .chapter_listed(&chapter.book, &now.index, now.position);
    match now.outline {
        Ok(outline) => Ok(page::listed(
            &chapter,
            &outline,
            now.version,
            now.mtime,
            ttl,
            fs.formats,
        )),
        Err(e) => Ok(vec![
            error(fs, chapter, now.version, &e, now.mtime).listed_as_error(),
        ]),
    }
}

/// What a listing of a chapter depends on: its source's version (which
/// tells apart bytes under one stamp).
pub(in crate::tree) fn listing_digest(fs: &NovelFs, chapter: &ChapterRef) -> Option<(u64, Stamp)> {
    let source = fs.source.chapter_file(chapter).ok()?;
    Some((digest(&source.version()), Stamp::of(&source.meta)))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Condvar, Mutex};

    use super::super::super::test_fixture::*;
    use super::*;
    use crate::ahead::{Outliner, Track};
    use crate::node::chapter_ref;
    use crate::source::{BIG_CHAPTER_BYTES, Seams};

    #[test]
    fn loading_a_chapter_not_in_the_page_cache_queues_the_next_ones() {
        let names: Vec<String> = (1..=20).map(|i| format!("第{i}章.md")).collect();
        let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "x")).collect();
        let f = fixture(&files);
        // The end of the chapters the disk was asked for (`None`: none).
        let queued = || {
            let track = f.fs.ahead.track_of(OsStr::new("书"));
            track.map(|t| t.disk_to).filter(|&to| to > 0)
        };
        let loaded = walk(&f.fs, "书/3/offset-1.txt").unwrap();
        assert!(read_all(&f.fs, loaded.ino).starts_with(b"<path>"));
        let file = std::fs::File::open(f.book_dir.join("第5章.md")).unwrap();
        if novelfs_storage::backing::in_page_cache(&file, 1) {
            assert_eq!(
                queued(),
                None,
                "just written, so cached: nothing to ask for"
            );
        }
        // Out of the page cache (clean pages of an ext4 file can be dropped).
        file.sync_all().unwrap();
        use std::os::fd::AsRawFd;
        // SAFETY: advice on an open descriptor; no memory involved.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if novelfs_storage::backing::in_page_cache(&file, 1) {
            return; // tmpfs, or a kernel that cannot tell.
        }
        walk(&f.fs, "书/5/offset-1.txt").unwrap();
        assert_eq!(
            queued(),
            Some(20),
            "loading chapter 5 (index 4) queued up to 21, the end of the book"
        );
    }

    #[test]
    fn listing_a_chapter_directory_outlines_the_next_ones_only() {
        let (f, chapters, _) = walked_book();
        let outlined = |c: &ChapterRef| f.fs.outlines.is_cached(&f.fs.source, c);
        // The 20th small chapter, listed without its book.
        let ino = walk(&f.fs, "书/第20章.md").unwrap().ino;
        f.fs.listing(ino, 0).unwrap();
        outlined_ahead(&f.fs);
        let window = crate::ahead::WINDOW;
        assert!(!chapters[..19].iter().any(outlined), "nothing before it");
        assert!(chapters[19..20 + window].iter().all(outlined));
        assert!(!chapters[20 + window..].iter().any(outlined));
        // The walk goes on: the window is refilled by halves.
        let before = f.fs.decodes();
        for n in 21..=27 {
            let ino = walk(&f.fs, &format!("书/第{n}章.md")).unwrap().ino;
            f.fs.listing(ino, 0).unwrap();
        }
        outlined_ahead(&f.fs);
        assert_eq!(
            f.fs.decodes(),
            before,
            "every one listed was outlined ahead"
        );
        let ino = walk(&f.fs, "书/第28章.md").unwrap().ino;
        f.fs.listing(ino, 0).unwrap();
        outlined_ahead(&f.fs);
        assert_eq!(
            f.fs.decodes(),
            before + window as u64 / 2,
            "half a window more"
        );
        assert!(chapters[19..20 + window + window / 2].iter().all(outlined));
        assert!(!outlined(&chapters[20 + window + window / 2]));
    }

    #[test]
    fn outlines_ahead_stay_within_a_quarter_of_the_outlines_share() {
        let (f, _, _) = walked_book();
        let window = crate::ahead::WINDOW;
        let index = f.fs.source.book_index(OsStr::new("书")).unwrap();
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let share = |chapters: usize| 4 * chapters * crate::ahead::OUTLINE_GUESS;
        let small = Outliner::start(
            f.fs.source.clone(),
            f.fs.outlines.clone(),
            share(window - 1),
            None,
        );
        let on_1 = || {
            let mut track = Track::new(&book, &index);
            track.on(1);
            track
        };
        assert_eq!(small.reached(&mut on_1()), 0, "a window over the share");
        let fits = Outliner::start(
            f.fs.source.clone(),
            f.fs.outlines.clone(),
            share(window),
            None,
        );
        let mut track = on_1();
        assert_eq!(fits.reached(&mut track), window);
        assert_eq!(fits.reached(&mut track), 0, "queued once");
    }

    #[test]
    fn an_error_lookup_and_listing_answer_from_one_look_at_a_source_edited_meanwhile() {
        let undecodable = |n: usize| [0x81u8, 0x20, 0xfe, 0x7f].repeat(10 + n);
        let f = fixture(&[("第1章 坏.txt", "")]);
        let path = f.book_dir.join("第1章 坏.txt");
        std::fs::write(&path, undecodable(0)).unwrap();
        let chapter = walk(&f.fs, "书/1").unwrap();
        with_seams(&f, edit_before_every_stat(path, undecodable));
        let error = f.fs.lookup(chapter.ino, OsStr::new("ERROR"));
        assert!(error.is_ok(), "ERROR exists in every version: {error:?}");
        let listed = f.fs.list(chapter.ino).unwrap();
        assert_eq!(listed.len(), 1);
        let plus = f.fs.listed_plus(&listed[0]);
        assert!(plus.is_some(), "readdirplus drops the listed ERROR");
        let plus = plus.unwrap();
        assert_eq!(read_all(&f.fs, plus.ino).len() as u64, plus.size);
    }

    fn big_chapter(fill: &str) -> String {
        let line = format!("{}\n", fill.repeat(200));
        line.repeat((BIG_CHAPTER_BYTES as usize) / line.len() + 2)
    }

    /// How long a test waits for something that should happen at once
    /// before it fails instead of hanging (never reached when it passes).
    const HANG_GUARD: Duration = Duration::from_secs(10);

    #[test]
    fn two_different_big_chapters_load_at_once() {
        let (one, two) = (big_chapter("一"), big_chapter("二"));
        let f = fixture(&[("第1章.md", &one), ("第2章.md", &two)]);
        let entered = Arc::new((Mutex::new(0usize), Condvar::new()));
        let met = Arc::new(Mutex::new(Vec::new()));
        let (e, m) = (entered.clone(), met.clone());
        with_seams(
            &f,
            Seams {
                loading: Some(Box::new(move |_| {
                    let (count, changed) = &*e;
                    let mut n = count.lock().unwrap();
                    *n += 1;
                    changed.notify_all();
                    // Each load waits, inside, for the other to be inside too.
                    let (n, _) = changed
                        .wait_timeout_while(n, HANG_GUARD, |n| *n < 2)
                        .unwrap();
                    m.lock().unwrap().push(*n >= 2);
                })),
                ..Seams::default()
            },
        );
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        std::thread::scope(|s| {
            for file in ["第1章.md", "第2章.md"] {
                let c = chapter_ref(&book, OsStr::new(file));
                let fs = &f.fs;
                s.spawn(move || assert!(fs.source.chapter(&c).unwrap().loaded.is_ok()));
            }
        });
        assert_eq!(
            *met.lock().unwrap(),
            [true, true],
            "each big load was under way while the other was"
        );
    }

    #[test]
    fn readers_of_one_big_chapter_wait_for_one_decode() {
        let f = fixture(&[("第1章.md", &big_chapter("一"))]);
        let joined = Arc::new((Mutex::new(0usize), Condvar::new()));
        let loads = Arc::new(AtomicUsize::new(0));
        let (j, l, j2) = (joined.clone(), loads.clone(), joined.clone());
        with_seams(
            &f,
            Seams {
                loading: Some(Box::new(move |_| {
                    l.fetch_add(1, Ordering::SeqCst);
                    // The first load goes on once the second reader waits for it.
                    let (count, changed) = &*j;
                    let n = count.lock().unwrap();
                    drop(
                        changed
                            .wait_timeout_while(n, HANG_GUARD, |n| *n < 1)
                            .unwrap(),
                    );
                })),
                joined: Some(Box::new(move |_| {
                    let (count, changed) = &*j2;
                    *count.lock().unwrap() += 1;
                    changed.notify_all();
                })),
                ..Seams::default()
            },
        );
        let c = chapter_ref(&Arc::from(OsStr::new("书")), OsStr::new("第1章.md"));
        let texts: Vec<_> = std::thread::scope(|s| {
            let readers: Vec<_> = (0..2)
                .map(|_| {
                    let (fs, c) = (&f.fs, c.clone());
                    s.spawn(move || fs.source.chapter(&c).unwrap().loaded.unwrap())
                })
                .collect();
            readers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        assert_eq!(loads.load(Ordering::SeqCst), 1, "decoded once");
        assert_eq!(*joined.0.lock().unwrap(), 1, "the second reader waited");
        assert!(Arc::ptr_eq(&texts[0], &texts[1]), "both got the one text");
    }

    #[test]
    fn a_load_that_panics_leaves_the_chapter_loadable() {
        crate::test_util::quiet_panics("a load fails halfway");
        let f = fixture(&[("第1章.md", "一")]);
        let panics = Arc::new(AtomicUsize::new(1));
        let p = panics.clone();
        with_seams(
            &f,
            Seams {
                loading: Some(Box::new(move |_| {
                    if p.fetch_sub(1, Ordering::SeqCst) == 1 {
                        panic!("a load fails halfway");
                    }
                })),
                ..Seams::default()
            },
        );
        let c = chapter_ref(&Arc::from(OsStr::new("书")), OsStr::new("第1章.md"));
        let failed = std::thread::scope(|s| s.spawn(|| f.fs.source.chapter(&c)).join());
        assert!(failed.is_err(), "the first load panicked");
        let again =
            f.fs.source
                .chapter(&c)
                .expect("not left waiting on the failed load");
        assert!(again.loaded.is_ok());
    }

    #[test]
    fn undecodable_chapter_shows_only_error() {
        let f = fixture(&[("第1章 坏.txt", "")]);
        std::fs::write(
            f.book_dir.join("第1章 坏.txt"),
            [0x81u8, 0x20, 0xfe, 0x7f].repeat(10),
        )
        .unwrap();
        let dir = walk(&f.fs, "书/1").unwrap();
        let names: Vec<_> =
            f.fs.list(dir.ino)
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .collect();
        assert_eq!(names, ["ERROR"]);
        assert_eq!(
            f.fs.lookup(dir.ino, OsStr::new("offset-1.txt"))
                .map_err(|e| e.errno()),
            Err(libc::EIO)
        );
        let error = f.fs.lookup(dir.ino, OsStr::new("ERROR")).unwrap();
        let text = String::from_utf8(read_all(&f.fs, error.ino)).unwrap();
        assert!(
            text.starts_with("错误：cannot detect text encoding of \""),
            "{text}"
        );
        assert_eq!(text.len() as u64, error.size);
    }
}
