//! The persistent index on small libraries: what it trusts, and how it
//! handles files it cannot use.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::bare::NamesLen;
use super::identity::{Identity, unix_nanos};
use super::index::PersistentIndex;
use super::pages::{decode_pages, encode_pages};
use super::rows::{Record, chapter_key, lookup_row, write_batch};
use super::*;
use crate::cache::Stamp;
use crate::chapter_shape::{Outline, OutlinePage};
use crate::lock;
use novelfs_library::{ChapterText, Library};
use rusqlite::Connection;

const FINE: Duration = Duration::from_millis(20);

fn library_with(chapters: &[(&str, &str)]) -> (tempfile::TempDir, Library) {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("novels").join("书");
    std::fs::create_dir_all(&book).unwrap();
    for (name, text) in chapters {
        std::fs::write(book.join(name), text).unwrap();
    }
    // Outside the racy window of the writes above.
    std::thread::sleep(FINE * 2);
    let library = novelfs_storage::open_local(dir.path()).unwrap();
    (dir, library)
}

fn stamp_of(library: &Library, file: &str) -> Stamp {
    let meta = library
        .chapter_metadata(OsStr::new("书"), OsStr::new(file))
        .unwrap();
    Stamp::of(&meta)
}

fn outline_of(library: &Library, file: &str) -> Outline {
    let bytes = std::fs::read(library.book_dir(OsStr::new("书")).join(file)).unwrap();
    let text = novelfs_library::decode::decode_text(&bytes).unwrap();
    Outline::compute(
        library,
        OsStr::new("书"),
        OsStr::new(file),
        &ChapterText::new(text),
    )
}

fn record(library: &Library, file: &str, read_at: SystemTime) -> Record {
    Record {
        key: chapter_key(OsStr::new("书"), OsStr::new(file)),
        stamp: stamp_of(library, file),
        read_at,
        outline: Arc::new(outline_of(library, file)),
        names: NamesLen::of(library, OsStr::new("书"), OsStr::new(file)),
    }
}

fn store(index: &PersistentIndex, records: &[Record]) -> usize {
    let mut conn = lock(&index.conn);
    write_batch(&mut conn, index.profile, index.granularity, records).unwrap()
}

fn lookup(index: &PersistentIndex, library: &Library, file: &str) -> Option<Outline> {
    let key = chapter_key(OsStr::new("书"), OsStr::new(file));
    index.lookup(&key, &stamp_of(library, file))
}

fn same(a: &Outline, b: &Outline) -> bool {
    a.pages == b.pages && a.stats == b.stats
}

fn long_text() -> String {
    (0..500).map(|i| format!("第{i}行 \"内容\"\n")).collect()
}

#[test]
fn pages_round_trip_through_their_encoding() {
    let pages = vec![
        OutlinePage {
            offset: 1,
            text_bytes: 130,
            json_bytes: 1 << 40,
        },
        OutlinePage {
            offset: 301,
            text_bytes: 0,
            json_bytes: 127,
        },
    ];
    assert_eq!(decode_pages(&encode_pages(&pages)), Some(pages));
    assert_eq!(decode_pages(&[0x80]), None, "a cut number");
    assert_eq!(decode_pages(&[2, 1, 1]), None, "a chain starts at 1");
}

#[test]
fn a_recorded_outline_is_found_by_a_later_open() {
    let (_lib, library) = library_with(&[("第1章.txt", &long_text()), ("第2章.txt", "短\n")]);
    let dir = tempfile::tempdir().unwrap();
    let index = PersistentIndex::open(dir.path(), &library, 1 << 20, FINE).unwrap();
    assert!(index.writable());
    let now = SystemTime::now();
    let records = [
        record(&library, "第1章.txt", now),
        record(&library, "第2章.txt", now),
    ];
    assert_eq!(store(&index, &records), 2);
    drop(index);
    let again = PersistentIndex::open(dir.path(), &library, 1 << 20, FINE).unwrap();
    for file in ["第1章.txt", "第2章.txt"] {
        let found = lookup(&again, &library, file).expect("stored");
        assert!(same(&found, &outline_of(&library, file)), "{file}");
    }
    assert!(outline_of(&library, "第1章.txt").pages.len() > 1);
}

#[test]
fn an_entry_recorded_within_the_racy_window_is_not_trusted() {
    let (_lib, library) = library_with(&[("第1章.txt", "一\n")]);
    let dir = tempfile::tempdir().unwrap();
    // Written by an index that takes times as exact...
    let exact = PersistentIndex::open(dir.path(), &library, 1 << 20, Duration::ZERO).unwrap();
    assert_eq!(
        store(&exact, &[record(&library, "第1章.txt", SystemTime::now())]),
        1
    );
    assert!(lookup(&exact, &library, "第1章.txt").is_some());
    // ...it proves nothing where times have whole seconds: the file may
    // have changed again in the second it was read.
    let coarse =
        PersistentIndex::open(dir.path(), &library, 1 << 20, Duration::from_secs(5)).unwrap();
    assert!(lookup(&coarse, &library, "第1章.txt").is_none());
    // And such an entry is not written at all.
    assert_eq!(
        store(&coarse, &[record(&library, "第1章.txt", SystemTime::now())]),
        0
    );
}

#[test]
fn an_entry_whose_identity_differs_is_not_trusted() {
    let (lib, library) = library_with(&[("第1章.txt", "一二三\n"), ("第2章.txt", "四\n")]);
    let dir = tempfile::tempdir().unwrap();
    let index = PersistentIndex::open(dir.path(), &library, 1 << 20, FINE).unwrap();
    let now = SystemTime::now();
    store(
        &index,
        &[
            record(&library, "第1章.txt", now),
            record(&library, "第2章.txt", now),
        ],
    );
    let book = lib.path().join("novels/书");
    // Same size, same mtime restored: the ctime still moved.
    let first = book.join("第1章.txt");
    let mtime = std::fs::metadata(&first).unwrap().modified().unwrap();
    std::fs::write(&first, "三二一\n").unwrap();
    let f = std::fs::File::options().write(true).open(&first).unwrap();
    f.set_modified(mtime).unwrap();
    assert!(lookup(&index, &library, "第1章.txt").is_none());
    // Grown.
    std::fs::write(book.join("第2章.txt"), "四五\n").unwrap();
    assert!(lookup(&index, &library, "第2章.txt").is_none());
}

#[test]
fn another_path_root_uses_the_entries_with_its_own_sizes() {
    let (_lib, library) = library_with(&[("第1章.txt", "一\n")]);
    let dir = tempfile::tempdir().unwrap();
    let index = PersistentIndex::open(dir.path(), &library, 1 << 20, FINE).unwrap();
    store(&index, &[record(&library, "第1章.txt", SystemTime::now())]);
    let rooted = novelfs_storage::open_local(library.root())
        .unwrap()
        .with_path_root("/library")
        .unwrap();
    let other = PersistentIndex::open(dir.path(), &rooted, 1 << 20, FINE).unwrap();
    let found = lookup(&other, &rooted, "第1章.txt").expect("the same row");
    assert!(same(&found, &outline_of(&rooted, "第1章.txt")));
    assert!(!same(&found, &outline_of(&library, "第1章.txt")));
    assert!(lookup(&index, &library, "第1章.txt").is_some());
}

fn index_file(dir: &Path, library: &Library) -> std::path::PathBuf {
    store::file_for(dir, library.root())
}

#[test]
fn a_corrupt_file_is_set_aside_and_made_anew() {
    let (_lib, library) = library_with(&[("第1章.txt", "一\n")]);
    let dir = tempfile::tempdir().unwrap();
    let file = index_file(dir.path(), &library);
    std::fs::write(&file, vec![0x5a; 8192]).unwrap();
    let index = PersistentIndex::open(dir.path(), &library, 1 << 20, FINE).unwrap();
    assert_eq!(
        store(&index, &[record(&library, "第1章.txt", SystemTime::now())]),
        1
    );
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        std::fs::read(dir.path().join(&aside[0])).unwrap(),
        vec![0x5a; 8192]
    );
}

#[test]
fn a_file_from_a_newer_version_is_refused_and_left_alone() {
    let (_lib, library) = library_with(&[("第1章.txt", "一\n")]);
    let dir = tempfile::tempdir().unwrap();
    drop(PersistentIndex::open(dir.path(), &library, 1 << 20, FINE).unwrap());
    let file = index_file(dir.path(), &library);
    let conn = Connection::open(&file).unwrap();
    conn.pragma_update(None, "user_version", store::SCHEMA_VERSION + 1)
        .unwrap();
    drop(conn);
    let refused = PersistentIndex::open(dir.path(), &library, 1 << 20, FINE)
        .err()
        .expect("refused");
    assert!(matches!(refused, Refused::Newer { .. }), "{refused:?}");
    assert!(refused.to_string().contains("newer novelfs"), "{refused}");
    let conn = Connection::open(&file).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, store::SCHEMA_VERSION + 1);
}

/// A read-only bind mount of `dir`, unmounted on drop (`None` where this
/// process may not mount).
struct ReadOnlyView(tempfile::TempDir);

impl ReadOnlyView {
    fn of(dir: &Path) -> Option<ReadOnlyView> {
        let view = tempfile::tempdir().ok()?;
        let run = |args: &[&OsStr]| {
            std::process::Command::new("mount")
                .args(args)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !run(&["--bind".as_ref(), dir.as_os_str(), view.path().as_os_str()]) {
            return None;
        }
        let view = ReadOnlyView(view);
        run(&[
            "-o".as_ref(),
            "remount,bind,ro".as_ref(),
            view.0.path().as_os_str(),
        ])
        .then_some(view)
    }
}

impl Drop for ReadOnlyView {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.0.path())
            .status();
    }
}

#[test]
fn a_file_that_cannot_be_written_is_used_read_only() {
    let (_lib, library) = library_with(&[("第1章.txt", &long_text())]);
    let dir = tempfile::tempdir().unwrap();
    let index = PersistentIndex::open(dir.path(), &library, 1 << 20, FINE).unwrap();
    store(&index, &[record(&library, "第1章.txt", SystemTime::now())]);
    drop(index);
    let Some(view) = ReadOnlyView::of(dir.path()) else {
        eprintln!("skipped: cannot make a read-only bind mount here");
        return;
    };
    let index = PersistentIndex::open(view.0.path(), &library, 1 << 20, FINE).unwrap();
    assert!(!index.writable());
    assert!(index.recorder(16).is_none());
    let found = lookup(&index, &library, "第1章.txt").expect("read from a read-only file");
    assert!(same(&found, &outline_of(&library, "第1章.txt")));
}

#[test]
fn writers_in_parallel_all_land() {
    let names: Vec<String> = (0..60).map(|i| format!("第{i}章.txt")).collect();
    let chapters: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "一\n二\n")).collect();
    let (_lib, library) = library_with(&chapters);
    let dir = tempfile::tempdir().unwrap();
    let library = Arc::new(library);
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (library, dir, names) = (library.clone(), dir.path().to_path_buf(), names.clone());
            std::thread::spawn(move || {
                let index = PersistentIndex::open(&dir, &library, 1 << 20, FINE)
                    .unwrap_or_else(|e| panic!("{e}"));
                for chunk in names
                    .iter()
                    .skip(w * 20)
                    .take(20)
                    .collect::<Vec<_>>()
                    .chunks(5)
                {
                    let now = SystemTime::now();
                    let records: Vec<_> = chunk.iter().map(|n| record(&library, n, now)).collect();
                    assert_eq!(store(&index, &records), records.len());
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let index = PersistentIndex::open(dir.path(), &library, 1 << 20, FINE).unwrap();
    for n in &names {
        assert!(lookup(&index, &library, n).is_some(), "{n}");
    }
}

#[test]
fn the_recorder_writes_what_it_was_given_before_it_ends() {
    let (_lib, library) = library_with(&[("第1章.txt", "一\n")]);
    let dir = tempfile::tempdir().unwrap();
    let index = PersistentIndex::open(dir.path(), &library, 1 << 20, FINE).unwrap();
    let recorder = index.recorder(16).unwrap();
    recorder.record(record(&library, "第1章.txt", SystemTime::now()));
    drop(recorder);
    assert!(lookup(&index, &library, "第1章.txt").is_some());
}

#[test]
fn a_refresh_reads_only_what_changed_and_forgets_what_went() {
    let (lib, library) = library_with(&[("第1章.txt", "一\n"), ("第2章.txt", "二\n")]);
    let dir = tempfile::tempdir().unwrap();
    let first = refresh(&library, dir.path(), &mut |_| {}).unwrap();
    assert_eq!((first.indexed, first.reused, first.removed), (2, 0, 0));
    let book = lib.path().join("novels/书");
    std::fs::write(book.join("第1章.txt"), "一一\n").unwrap();
    std::fs::remove_file(book.join("第2章.txt")).unwrap();
    std::fs::write(book.join("第3章.txt"), "三\n").unwrap();
    std::thread::sleep(FINE * 2);
    let second = refresh(&library, dir.path(), &mut |_| {}).unwrap();
    assert_eq!((second.indexed, second.reused, second.removed), (2, 0, 1));
    let third = refresh(&library, dir.path(), &mut |_| {}).unwrap();
    assert_eq!((third.indexed, third.reused, third.removed), (0, 2, 0));
}

/// A file of an older layout (schema 1: every row named by its whole
/// path) is made anew when it can be written, and its rows go with it.
#[test]
fn a_file_from_an_older_version_is_made_anew() {
    let (_lib, library) = library_with(&[("第1章.txt", &long_text())]);
    let dir = tempfile::tempdir().unwrap();
    let file = index_file(dir.path(), &library);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let conn = Connection::open(&file).unwrap();
    conn.execute_batch(
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value BLOB NOT NULL);
         CREATE TABLE chapters(profile INTEGER, path BLOB, dev INTEGER, ino INTEGER,
             size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, recorded_ns INTEGER,
             chars INTEGER, lines INTEGER, pages BLOB, PRIMARY KEY(profile, path))
             WITHOUT ROWID;
         INSERT INTO chapters VALUES(1, X'00', 0, 0, 0, 0, 0, 0, 0, 0, X'');
         PRAGMA user_version = 1;",
    )
    .unwrap();
    drop(conn);
    let index = PersistentIndex::open(dir.path(), &library, 1 << 20, FINE).unwrap();
    assert!(lookup(&index, &library, "第1章.txt").is_none());
    assert_eq!(
        store(&index, &[record(&library, "第1章.txt", SystemTime::now())]),
        1
    );
    let found = lookup(&index, &library, "第1章.txt").expect("stored in the new layout");
    assert!(same(&found, &outline_of(&library, "第1章.txt")));
    let conn = lock(&index.conn);
    let old_rows: i64 = conn
        .query_row(
            "SELECT count(*) FROM chapters WHERE file = X'00'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(old_rows, 0);
}

/// What a row keeps of its identity gives back the identity exactly, and
/// the moment of recording no later than it was.
#[test]
fn a_stored_row_gives_back_its_identity() {
    let (_lib, library) = library_with(&[("第1章.txt", &long_text())]);
    let dir = tempfile::tempdir().unwrap();
    let index = PersistentIndex::open(dir.path(), &library, 1 << 20, FINE).unwrap();
    let read_at = SystemTime::now();
    store(&index, &[record(&library, "第1章.txt", read_at)]);
    let conn = lock(&index.conn);
    let key = chapter_key(OsStr::new("书"), OsStr::new("第1章.txt"));
    let row = lookup_row(&conn, index.profile, &key).unwrap().unwrap();
    let stamp = stamp_of(&library, "第1章.txt");
    assert_eq!(Some(row.identity), Identity::of(&stamp));
    let at = unix_nanos(read_at).unwrap();
    assert!(row.recorded_ns <= at && at - row.recorded_ns < 1_000_000);
}

/// An index that cannot be read for publishing says which file and keeps
/// SQLite's error under it; one that cannot be put in place keeps the
/// OS's.
#[test]
fn an_index_that_cannot_be_read_or_put_keeps_its_cause() {
    let (_root, library) = library_with(&[("第1章.md", "正文")]);
    let dir = tempfile::tempdir().unwrap();
    let failed = rows_by_book(dir.path(), &library).unwrap_err();
    let sql = std::error::Error::source(&failed).and_then(|e| e.downcast_ref::<rusqlite::Error>());
    assert!(sql.is_some(), "{failed}");
    assert!(
        failed
            .what
            .contains(&index_file(dir.path(), &library).display().to_string())
    );
    let not_a_dir = dir.path().join("a file");
    std::fs::write(&not_a_dir, b"").unwrap();
    let failed = import(&not_a_dir, &library, b"bytes").unwrap_err();
    let os = std::error::Error::source(&failed).and_then(|e| e.downcast_ref::<std::io::Error>());
    assert!(os.is_some(), "{failed}");
}
