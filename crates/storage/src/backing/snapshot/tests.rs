use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::memory::MemoryStorage;
use crate::{EntryKind, Storage};

fn head() -> Head {
    Head {
        etag: "\"h\"".into(),
        root: String::new(),
        files: 0,
        listing: String::new(),
        published: 10,
        confirmed: 100,
        every: Some(30),
    }
}

/// A bucket of `books` books of `chapters` chapters each, and a file
/// beside them.
fn bucket(books: usize, chapters: usize) -> MemoryStorage {
    let storage = MemoryStorage::new();
    for b in 0..books {
        for c in 0..chapters {
            let text = format!("第{c}章的正文，书{b}。");
            storage.insert(&format!("novels/书{b:03}/第{c:03}章.md"), text.as_bytes());
        }
    }
    storage.insert("readme.md", b"hello");
    storage
}

fn publish_now(storage: &MemoryStorage) -> Head {
    let before = published_head(storage).unwrap();
    let listing = walk(storage).unwrap();
    publish(
        storage,
        listing,
        &|_, _| Beside::default(),
        before.as_ref(),
        Some(30),
    )
    .unwrap();
    published_head(storage).unwrap().expect("published")
}

fn names(snap: &Snapshot, storage: &MemoryStorage, dir: &str) -> Vec<(String, EntryKind)> {
    snap.dir(storage, Path::new(dir), None)
        .unwrap()
        .expect("a directory of the snapshot")
        .iter()
        .map(|e| (e.name.to_string_lossy().into_owned(), e.kind))
        .collect()
}

/// The snapshot serves each directory as a LIST with a delimiter gives
/// it: files and sub-directories, sorted byte for byte, with each file's
/// size and version as listed.
#[test]
fn a_snapshot_gives_each_directory_as_a_list_would() {
    let storage = bucket(3, 4);
    let head = publish_now(&storage);
    assert_eq!(head.files, 13);
    let snap = Snapshot::fetch(&storage, head).unwrap();
    assert_eq!(snap.files(), 13);
    for dir in ["", "novels", "novels/书001"] {
        let mut listed = storage.list(&RelPath::new(dir).unwrap()).unwrap();
        listed.retain(|e| e.name != ".novelfs");
        let served = snap.dir(&storage, Path::new(dir), None).unwrap().unwrap();
        assert_eq!(*served, listed, "{dir:?}");
    }
    assert_eq!(
        names(&snap, &storage, ""),
        [
            ("novels".into(), EntryKind::Dir),
            ("readme.md".into(), EntryKind::File)
        ]
    );
    assert!(
        snap.dir(&storage, Path::new("novels/丙"), None)
            .unwrap()
            .is_none()
    );
    assert!(
        snap.dir(&storage, Path::new(".novelfs"), None)
            .unwrap()
            .is_none(),
        "the publisher's folder is no part of the library"
    );
}

/// A mount starts from the head and the root, and fetches a book's piece
/// the first time the book is asked for, once: not the library.
#[test]
fn a_mount_fetches_the_root_and_then_only_the_books_it_reads() {
    let storage = bucket(200, 20);
    let head = publish_now(&storage);
    let before = storage.asked();
    let snap = Snapshot::fetch(&storage, head).unwrap();
    let started = storage.asked();
    assert_eq!(started.gets - before.gets, 1, "the root: one GET");
    names(&snap, &storage, "novels");
    assert_eq!(
        storage.asked().gets,
        started.gets,
        "the books need no piece"
    );
    for _ in 0..3 {
        assert_eq!(names(&snap, &storage, "novels/书007").len(), 20);
    }
    let read = storage.asked();
    assert_eq!(read.gets - started.gets, 1, "a book: one GET, once");
    let piece = read.bytes_out - started.bytes_out;
    let root = started.bytes_out - before.bytes_out;
    let whole: u64 = storage
        .keys()
        .iter()
        .filter(|k| k.starts_with(PIECES))
        .map(|k| {
            storage
                .read(&RelPath::new(k).unwrap(), None)
                .unwrap()
                .bytes
                .len() as u64
        })
        .sum();
    assert!(
        (root + piece) * 10 < whole,
        "root {root} B and a book {piece} B of {whole} B published"
    );
    assert_eq!(snap.made(), 2);
}

/// One chapter replaced: the publisher writes that book's piece, the root
/// and the head; a follower that had read the book fetches the root and
/// that piece again, and nothing for the books that did not change.
#[test]
fn one_chapter_replaced_costs_one_piece_and_the_root() {
    let storage = bucket(50, 10);
    let first = publish_now(&storage);
    let old = Snapshot::fetch(&storage, first.clone()).unwrap();
    names(&old, &storage, "novels/书001");
    names(&old, &storage, "novels/书002");
    storage.insert("novels/书001/第003章.md", "新的正文".as_bytes());
    let before = storage.asked();
    let second = publish_now(&storage);
    let published = storage.asked();
    assert_ne!(second.root, first.root);
    // One LIST, the piece, the root and the head; the root before is
    // read once, for the pieces it names (kept a round longer).
    assert_eq!(published.puts - before.puts, 3, "{published:?}");
    assert_eq!(published.lists - before.lists, 1);
    assert!(published.bytes_in - before.bytes_in < 8 << 10);
    let new = Snapshot::fetch(&storage, second).unwrap().keeping(&old);
    let fetched = storage.asked();
    names(&new, &storage, "novels/书002");
    assert_eq!(
        storage.asked().gets,
        fetched.gets,
        "an unchanged book is kept"
    );
    let changed = names(&new, &storage, "novels/书001");
    assert_eq!(
        storage.asked().gets,
        fetched.gets + 1,
        "the changed book's piece"
    );
    assert_eq!(changed.len(), 10);
    let size = new
        .dir(&storage, Path::new("novels/书001"), None)
        .unwrap()
        .unwrap()
        .iter()
        .find(|e| e.name == "第003章.md")
        .unwrap()
        .size;
    assert_eq!(size, "新的正文".len() as u64);
}

/// Republishing an unchanged library writes the head alone.
#[test]
fn a_round_with_nothing_changed_writes_the_head_alone() {
    let storage = bucket(20, 5);
    let first = publish_now(&storage);
    let before = storage.asked();
    let again = publish_now(&storage);
    let after = storage.asked();
    assert_eq!(again.root, first.root);
    assert_eq!(again.published, first.published);
    assert_eq!(after.puts - before.puts, 1, "the head: {after:?}");
    assert_eq!(after.lists - before.lists, 1);
    assert_eq!(after.deletes, 0);
}

/// Pieces that no snapshot names are removed once past the grace; those
/// the snapshot before names stay a round longer, and so does any piece
/// written within the grace.
#[test]
fn pieces_no_snapshot_names_are_removed_after_the_grace() {
    let storage = bucket(5, 3);
    publish_now(&storage);
    let age_pieces = || {
        for key in storage.keys().iter().filter(|k| k.starts_with(PIECES)) {
            storage.age(key, GRACE * 2);
        }
    };
    age_pieces();
    storage.insert("novels/书001/第000章.md", b"changed once");
    publish_now(&storage);
    assert_eq!(storage.asked().deletes, 0, "the round before's pieces stay");
    age_pieces();
    storage.insert("novels/书001/第000章.md", b"changed twice");
    let pieces_before = storage.keys().len();
    let head = publish_now(&storage);
    let asked = storage.asked();
    // The first snapshot's root and its piece of book 1 are named by
    // neither the last snapshot nor the one before it.
    assert_eq!(asked.deletes, 2, "{asked:?}");
    assert_eq!(storage.keys().len(), pieces_before + 2 - 2);
    // What the last snapshot names is all there.
    let snap = Snapshot::fetch(&storage, head).unwrap();
    for b in 0..5 {
        assert_eq!(names(&snap, &storage, &format!("novels/书{b:03}")).len(), 3);
    }
    let orphan = format!("{PIECES}/0000000000000000.json");
    storage.insert(&orphan, b"{}");
    publish_now(&storage);
    assert!(storage.keys().contains(&orphan), "written within the grace");
    storage.age(&orphan, GRACE + Duration::from_secs(1));
    publish_now(&storage);
    assert!(!storage.keys().contains(&orphan), "past the grace");
}

#[test]
fn a_head_reads_back_and_lapses_past_twice_its_cadence() {
    let h = head();
    assert_eq!(Head::parse(&h.to_json(), "\"h\"".into()).unwrap(), h);
    assert_eq!(h.lapsed(160), None);
    assert!(h.lapsed(161).is_some());
    let no_cadence = Head { every: None, ..h };
    assert_eq!(no_cadence.lapsed(u64::MAX), None);
    let other = br#"{"format": 1}"#;
    assert!(Head::parse(other, String::new()).is_err());
}

/// A piece whose bytes are not what its name says is refused, not served.
#[test]
fn a_piece_that_is_not_its_digest_is_refused() {
    let storage = bucket(2, 2);
    let head = publish_now(&storage);
    let snap = Snapshot::fetch(&storage, head).unwrap();
    let key = storage
        .keys()
        .into_iter()
        .filter(|k| k.starts_with(PIECES))
        .find(|k| {
            let bytes = storage.read(&RelPath::new(k).unwrap(), None).unwrap().bytes;
            String::from_utf8_lossy(&bytes).contains("第000章")
        })
        .expect("a book's piece");
    storage.insert(&key, br#"{"format":2,"files":[]}"#);
    let served = ["novels/书000", "novels/书001"].map(|d| {
        snap.dir(&storage, Path::new(d), None)
            .map(|e| e.map(|e| e.len()))
    });
    assert!(served.iter().any(|r| r.is_err()), "{served:?}");
}

/// Rows like those the publisher records beside a book's chapters (the
/// persistent index's: a name, seven numbers and the pages), one a file
/// of `dir`, from the listing's sizes so that a replaced chapter changes
/// its row.
fn rows_beside(storage: &MemoryStorage, dir: &str) -> Option<Value> {
    let listed = storage.list(&RelPath::new(dir).ok()?).ok()?;
    let rows: Vec<Value> = listed
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .map(|e| {
            let name = e.name.to_string_lossy();
            json!([
                name,
                1,
                2,
                e.size,
                1_700_000_000_123_456_789u64,
                0,
                5,
                3_000,
                120,
                "0a".repeat(40)
            ])
        })
        .collect();
    Some(json!({ "profile": 7, "rows": rows }))
}

/// A book's rows travel in its piece: a mount hands them to its index
/// when it first reads the book, and only then. One chapter replaced and
/// published again: a mount that had read the book fetches the root and
/// that book's piece (≤ 256 KiB at 100 chapters a book) and hands its new
/// rows over; one that had not fetches the root alone (≤ 128 KiB); a book
/// that did not change costs neither a GET nor rows handed over again.
#[test]
fn a_books_rows_come_with_its_piece_and_a_change_costs_that_piece() {
    let storage = bucket(300, 100);
    let publish_rows = |storage: &MemoryStorage| {
        let before = published_head(storage).unwrap();
        let listing = walk(storage).unwrap();
        publish(
            storage,
            listing,
            &|d, _| Beside {
                piece: rows_beside(storage, d),
                root: None,
            },
            before.as_ref(),
            None,
        )
        .unwrap();
        published_head(storage).unwrap().unwrap()
    };
    let first = publish_rows(&storage);
    let handed: Arc<Mutex<Vec<(PathBuf, usize)>>> = Arc::default();
    let into = handed.clone();
    let index: novelfs_library::backing::PublishedIndex =
        Arc::new(move |dir, rows| into.lock().unwrap().push((dir.to_path_buf(), rows.len())));
    let reader = Snapshot::fetch(&storage, first.clone()).unwrap();
    let other = Snapshot::fetch(&storage, first).unwrap();
    for book in ["novels/书001", "novels/书002", "novels/书001"] {
        reader.dir(&storage, Path::new(book), Some(&index)).unwrap();
    }
    let books: Vec<PathBuf> = handed.lock().unwrap().iter().map(|h| h.0.clone()).collect();
    assert_eq!(
        books,
        [Path::new("novels/书001"), Path::new("novels/书002")]
    );
    storage.insert("novels/书001/第003章.md", "新的正文".as_bytes());
    let second = publish_rows(&storage);
    let before = storage.asked();
    let reader = Snapshot::fetch(&storage, second.clone())
        .unwrap()
        .keeping(&reader);
    for book in ["novels/书001", "novels/书002"] {
        reader.dir(&storage, Path::new(book), Some(&index)).unwrap();
    }
    let read = storage.asked();
    assert_eq!(
        read.gets - before.gets,
        2,
        "the root and the changed book's piece"
    );
    let fetched = read.bytes_out - before.bytes_out;
    assert!(
        fetched <= 256 << 10,
        "{fetched} B to show one chapter replaced"
    );
    let handed_again: Vec<PathBuf> = handed.lock().unwrap()[2..]
        .iter()
        .map(|h| h.0.clone())
        .collect();
    assert_eq!(
        handed_again,
        [Path::new("novels/书001")],
        "the changed book's rows"
    );
    let _other = Snapshot::fetch(&storage, second).unwrap().keeping(&other);
    let root = storage.asked().bytes_out - read.bytes_out;
    eprintln!("one chapter replaced: {fetched} B for a reader of the book, {root} B for another");
    assert!(
        root <= 128 << 10,
        "{root} B for a mount that had not read the book"
    );
}

/// A head an older novelfs published (another format) is replaced, not
/// a reason for the publisher to stop.
#[test]
fn a_head_of_another_format_is_published_over() {
    let storage = bucket(2, 2);
    storage.insert(HEAD, br#"{"format": 2, "root": "0", "files": 4}"#);
    assert_eq!(head_to_replace(&storage).unwrap(), None);
    let listing = walk(&storage).unwrap();
    publish(&storage, listing, &|_, _| Beside::default(), None, None).unwrap();
    let head = head_to_replace(&storage)
        .unwrap()
        .expect("this format's head");
    assert_eq!(published_head(&storage).unwrap(), Some(head));
}

/// A store whose listings give no ETag (its GETs do): the snapshot holds
/// each file by its size and time, serves it as such a listing gives it,
/// and a follower's GET pinned to that version reads it.
#[test]
fn a_listing_without_etags_is_published_by_size_and_time() {
    let storage = bucket(2, 3);
    storage.set_listing_etags(false);
    let head = publish_now(&storage);
    let snap = Snapshot::fetch(&storage, head).unwrap();
    let dir = "novels/书001";
    let listed = storage.list(&RelPath::new(dir).unwrap()).unwrap();
    let served = snap.dir(&storage, Path::new(dir), None).unwrap().unwrap();
    assert_eq!(*served, listed);
    for e in served.iter() {
        let path = RelPath::new(format!("{dir}/{}", e.name.to_str().unwrap())).unwrap();
        let read = storage.read(&path, Some(&e.version)).unwrap();
        assert_eq!(read.version, e.version, "{:?}", e.name);
    }
}

/// A head that does not read says why, by kind: not JSON (with the
/// parser's error under it), another format, a field missing.
#[test]
fn a_head_that_does_not_read_says_why() {
    let parse = |bytes: &[u8]| Head::parse(bytes, String::new());
    let not_json = parse(b"{").unwrap_err();
    assert!(matches!(not_json, Malformed::NotJson(_)), "{not_json:?}");
    assert!(std::error::Error::source(&not_json).is_some());
    let newer = parse(br#"{"format": 999}"#).unwrap_err();
    assert!(matches!(newer, Malformed::Format { .. }), "{newer:?}");
    let no_root = format!(r#"{{"format": {FORMAT}}}"#);
    let no_root = parse(no_root.as_bytes()).unwrap_err();
    assert!(matches!(no_root, Malformed::Missing("root")), "{no_root:?}");
}

/// What the publisher records of a book in the root (its figures) comes
/// back to a mount as written, with the book's stamp as its listing has
/// it, without a piece fetched; once the mount reads the book (its piece
/// fetched), and for a directory given none, there are none. A book
/// changed and published again has the figures made of its new piece.
#[test]
fn a_books_figures_travel_in_the_root() {
    let storage = bucket(3, 4);
    let publish_figures = |storage: &MemoryStorage| {
        let before = published_head(storage).unwrap();
        let listing = walk(storage).unwrap();
        let figures = |dir: &str, files: &[crate::Entry]| Beside {
            piece: None,
            root: (dir != "novels/书002").then(|| {
                let bytes: u64 = files.iter().map(|e| e.size).sum();
                json!([7, files.len(), bytes, 0])
            }),
        };
        publish(storage, listing, &figures, before.as_ref(), None).unwrap();
        published_head(storage).unwrap().unwrap()
    };
    let head = publish_figures(&storage);
    let gets = storage.asked().gets;
    let snap = Snapshot::fetch(&storage, head).unwrap();
    assert_eq!(storage.asked().gets - gets, 1, "the root alone");
    let book = Path::new("novels/书001");
    let published = snap.published_figures(book).expect("the book's figures");
    let bytes: u64 = (0..4)
        .map(|c| format!("第{c}章的正文，书1。").len() as u64)
        .sum();
    assert_eq!(published.figures, json!([7, 4, bytes, 0]));
    assert_eq!(Some((published.stamp, published.newest)), snap.shape(book));
    assert_eq!(storage.asked().gets - gets, 1, "no piece for the figures");
    assert!(snap.published_figures(Path::new("novels/书002")).is_none());
    assert!(snap.published_figures(Path::new("novels")).is_none());
    snap.dir(&storage, book, None).unwrap();
    assert!(
        snap.published_figures(book).is_none(),
        "a book read is counted from its listing"
    );
    storage.insert("novels/书000/第000章.md", "更长的新正文，书0。".as_bytes());
    let again = Snapshot::fetch(&storage, publish_figures(&storage)).unwrap();
    let changed = again
        .published_figures(Path::new("novels/书000"))
        .expect("the changed book's figures");
    let bytes: u64 = std::iter::once("更长的新正文，书0。".len() as u64)
        .chain((1..4).map(|c| format!("第{c}章的正文，书0。").len() as u64))
        .sum();
    assert_eq!(changed.figures, json!([7, 4, bytes, 0]));
}
