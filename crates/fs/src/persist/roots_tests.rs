//! One index serves every path root and size limit: a row keeps its pages'
//! sizes without the names' share (`bare`), counted in bytes of UTF-8 with
//! what JSON escapes, and its chapter's size, judged at lookup.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::bare::NamesLen;
use super::index::PersistentIndex;
use super::rows::{Record, chapter_key, write_batch};
use crate::cache::Stamp;
use crate::chapter_shape::Outline;
use crate::lock;
use novelfs_library::{ChapterText, Library, READ_LIMIT};

const FINE: Duration = Duration::from_millis(20);
const BOOK: &str = "书 \"引\" \\ 😀";
const FILE: &str = "第1章 \"一\"\t\\.txt";

/// A library of one chapter of several pages, in a directory whose name
/// (the root pages print without `--path-root`) JSON escapes.
fn library() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("库 \"引\" \\ \t 😀");
    let book = root.join("novels").join(BOOK);
    std::fs::create_dir_all(&book).unwrap();
    let text: String = (0..1200)
        .map(|i| format!("第{i}行 \"内容\" \\ 😀{}\r\n", "长".repeat(i % 9)))
        .collect();
    std::fs::write(book.join(FILE), text).unwrap();
    // Outside the racy window of the write above.
    std::thread::sleep(FINE * 2);
    (dir, root)
}

fn opened(root: &Path, path_root: Option<&str>, max: Option<u64>) -> Library {
    let mut library = novelfs_storage::open_local(root).unwrap();
    if let Some(max) = max {
        library.max_chapter_bytes = max;
    }
    match path_root {
        Some(p) => library.with_path_root(p).unwrap(),
        None => library,
    }
}

fn names(library: &Library) -> NamesLen {
    NamesLen::of(library, OsStr::new(BOOK), OsStr::new(FILE))
}

fn text_of(library: &Library) -> ChapterText {
    let bytes = std::fs::read(library.book_dir(OsStr::new(BOOK)).join(FILE)).unwrap();
    ChapterText::new(novelfs_library::decode::decode_text(&bytes).unwrap())
}

fn stamp_of(library: &Library) -> Stamp {
    let meta = library
        .chapter_metadata(OsStr::new(BOOK), OsStr::new(FILE))
        .unwrap();
    Stamp::of(&meta)
}

/// Records the chapter's outline, made under `library`'s root, in `dir`.
fn record_in(dir: &Path, library: &Library) {
    let (book, file) = (OsStr::new(BOOK), OsStr::new(FILE));
    let index = PersistentIndex::open(dir, library, 1 << 20, FINE).unwrap();
    let record = Record {
        key: chapter_key(book, file),
        stamp: stamp_of(library),
        read_at: SystemTime::now(),
        outline: Arc::new(Outline::compute(library, book, file, &text_of(library))),
        names: names(library),
    };
    let mut conn = lock(&index.conn);
    let written = write_batch(&mut conn, index.profile, index.granularity, &[record]).unwrap();
    assert_eq!(written, 1);
}

/// The chapter's outline as the index in `dir` gives it to `library`.
fn found_in(dir: &Path, library: &Library) -> Option<Outline> {
    let index = PersistentIndex::open(dir, library, 1 << 20, FINE).unwrap();
    index.lookup(
        &chapter_key(OsStr::new(BOOK), OsStr::new(FILE)),
        &stamp_of(library),
    )
}

#[test]
fn the_names_share_is_in_bytes_of_utf8_with_what_json_escapes() {
    let (_dir, root) = library();
    let base = names(&opened(&root, Some("/"), None));
    // What each root adds to a page over `/` (which prints `/novels/…`).
    for (path_root, text, json) in [
        ("/library", 8, 8),
        // Three characters of three bytes each; JSON leaves them as they are.
        ("/图书馆", 10, 10),
        ("/书架/😀", 12, 12),
        // A quote and a backslash take two bytes each in JSON.
        ("/a\"b\\c", 6, 8),
    ] {
        let share = names(&opened(&root, Some(path_root), None));
        assert_eq!(
            (share.text - base.text, share.json - base.json),
            (text, json),
            "{path_root}"
        );
    }
    // The directory's own name: its tab is two bytes in JSON too, and the
    // quote and backslash of the book and file count once per name.
    let canonical = root.to_str().unwrap();
    let share = names(&opened(&root, None, None));
    assert_eq!(share.text - base.text, canonical.len() as u64);
    let escaped = canonical.matches(['"', '\\', '\t']).count() as u64;
    assert_eq!(share.json - base.json, canonical.len() as u64 + escaped);
}

#[test]
fn a_row_made_under_one_root_sizes_the_pages_of_every_other() {
    let (_dir, root) = library();
    let roots = [
        None,
        Some("/"),
        Some("/library"),
        Some("/图书馆/😀"),
        Some("/a\"b\\c d"),
    ];
    for maker in roots {
        let dir = tempfile::tempdir().unwrap();
        record_in(dir.path(), &opened(&root, maker, None));
        for reader in roots {
            let library = opened(&root, reader, None);
            let found = found_in(dir.path(), &library)
                .unwrap_or_else(|| panic!("made under {maker:?}, read under {reader:?}"));
            let text = text_of(&library);
            assert_eq!(
                found.pages.iter().map(|p| p.offset).collect::<Vec<_>>(),
                text.chain()
            );
            assert!(found.pages.len() > 2, "{}", found.pages.len());
            for p in &found.pages {
                let page = library
                    .page_output(
                        OsStr::new(BOOK),
                        OsStr::new(FILE),
                        &text,
                        p.offset,
                        READ_LIMIT,
                    )
                    .unwrap();
                let rendered = (page.text().len() as u64, page.json().len() as u64);
                assert_eq!(
                    (p.text_bytes, p.json_bytes),
                    rendered,
                    "offset {} made under {maker:?}, read under {reader:?}",
                    p.offset
                );
            }
        }
    }
}

#[test]
fn a_row_of_a_chapter_over_the_size_limit_is_not_used() {
    let (_dir, root) = library();
    let dir = tempfile::tempdir().unwrap();
    record_in(dir.path(), &opened(&root, None, None));
    let size = stamp_of(&opened(&root, None, None)).size;
    let under = opened(&root, Some("/library"), Some(size - 1));
    assert!(found_in(dir.path(), &under).is_none(), "over the limit");
    let at = opened(&root, Some("/library"), Some(size));
    assert!(found_in(dir.path(), &at).is_some(), "at the limit");
}
