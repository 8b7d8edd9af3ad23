//! A library on a network filesystem, with real parts: an sshfs mount of
//! the library through a test-owned sshd on 127.0.0.1, and novelfs mounted
//! over that sshfs mount. Edits are made to the library itself, as another
//! host sharing it would make them; reads go through both mounts with
//! ordinary syscalls.
//!
//! sshfs shows whole-second times and directory sizes that never change,
//! and inotify sees nothing of it: two changes within one second look the
//! same to a stamp, and only looking again at the names or the bytes tells
//! them apart.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::sshfs::Sshfs;
use crate::common::{Mount, book_library};

const BOOK: &str = "书";
const CHAPTER: &str = "第1章 起.md";

/// The novelfs TTL when none is given.
const DEFAULT_TTL: Duration = Duration::from_secs(1);

/// The same size in bytes, different text.
const FIRST: &str = "甲乙丙丁";
const SECOND: &str = "戊己庚辛";

/// A library, shared over sshfs with `sshfs_options`, mounted by novelfs
/// with `novelfs_args`.
struct Shared {
    _lib: tempfile::TempDir,
    root: PathBuf,
    mount: Mount,
    _sshfs: Sshfs,
}

impl Shared {
    fn new(sshfs_options: &[&str], novelfs_args: &[&str]) -> Option<Shared> {
        let (lib, root) = book_library(&[(CHAPTER, FIRST.as_bytes())]);
        let sshfs = Sshfs::mount(&root, sshfs_options)?;
        let mut args = vec!["--state-file", "/nonexistent/state.json"];
        args.extend_from_slice(novelfs_args);
        let mount = Mount::new(&sshfs.path(), &args);
        Some(Shared {
            _lib: lib,
            root,
            mount,
            _sshfs: sshfs,
        })
    }

    fn page(&self) -> PathBuf {
        self.mount
            .path()
            .join(BOOK)
            .join(CHAPTER)
            .join("offset-1.txt")
    }

    fn read_page(&self) -> String {
        std::fs::read_to_string(self.page()).unwrap()
    }

    fn books(&self) -> Vec<String> {
        crate::common::sorted_names(self.mount.path()).unwrap()
    }

    fn source(&self, rel: &str) -> PathBuf {
        self.root.join("novels").join(rel)
    }
}

/// Lets every cache over the source expire (the kernel keeps sshfs's
/// attributes for 1 s, novelfs's names for its TTL of 1 s), so that the
/// first look of a trial is at the source, then waits for the start of a
/// second.
fn fresh_second() {
    std::thread::sleep(Duration::from_millis(2200));
    start_of_a_second();
}

/// Waits until the clock is early in a second, so that what follows (a
/// few milliseconds of work) happens within that one second. Not at its
/// very start: a file's times come from the kernel's coarse clock, which
/// lags the clock read here by up to a tick (10 ms at HZ=100, more when a
/// busy CPU delays the tick), and a write in the first milliseconds of a
/// second can still be stamped with the second before.
fn start_of_a_second() {
    const INTO: u32 = 60;
    let sub = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_millis();
    if sub < INTO {
        std::thread::sleep(Duration::from_millis(u64::from(INTO - sub)));
    } else if sub > INTO + 100 {
        std::thread::sleep(Duration::from_millis(u64::from(1000 - sub + INTO)));
    }
}

fn whole_seconds(p: &Path) -> i64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).unwrap().mtime()
}

/// Polls `seen` until it holds or `limit` passes; how long it took.
fn time_until(limit: Duration, mut seen: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if seen() {
            return Some(start.elapsed());
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes `text` over the chapter in place (same inode, same size).
fn rewrite(path: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// A same-size edit in the same second as a read of the previous text,
/// which shows within `limit` (measured from the edit).
fn same_size_edit_after_a_read(shared: &Shared, limit: Duration) {
    let source = shared.source(&format!("{BOOK}/{CHAPTER}"));
    for attempt in 1..=20 {
        let (old, new) = if attempt % 2 == 1 {
            (FIRST, SECOND)
        } else {
            (SECOND, FIRST)
        };
        fresh_second();
        rewrite(&source, old);
        let before = whole_seconds(&source);
        assert!(shared.read_page().contains(old), "the first text is read");
        rewrite(&source, new);
        if whole_seconds(&source) != before {
            continue; // Not within one second after all: again.
        }
        let took = time_until(limit, || shared.read_page().contains(new));
        eprintln!("same-size edit in the same second shown after {took:?}");
        assert!(
            took.is_some(),
            "a same-size edit in the same second as a read is not shown within {limit:?}"
        );
        return;
    }
    panic!("could not make two edits within one second");
}

/// A book added in the same second as a listing of the root, which shows
/// within `limit` (measured from the change).
fn book_added_after_a_listing(shared: &Shared, name: &str, limit: Duration) {
    fresh_second();
    let novels = shared.source("");
    let before = whole_seconds(&novels);
    assert!(!shared.books().contains(&name.to_string()));
    std::fs::create_dir(novels.join(name)).unwrap();
    std::fs::write(novels.join(name).join(CHAPTER), FIRST).unwrap();
    if whole_seconds(&novels) != before {
        eprintln!("note: the listing and the new book were not within one second");
    }
    let took = time_until(limit, || shared.books().contains(&name.to_string()));
    eprintln!("book added after a listing shown after {took:?}");
    assert!(
        took.is_some(),
        "a book added after a listing is not listed within {limit:?}"
    );
    let page = shared
        .mount
        .path()
        .join(name)
        .join(CHAPTER)
        .join("offset-1.txt");
    assert!(std::fs::read_to_string(page).unwrap().contains(FIRST));
}

/// A chapter added in the same second as a listing of its book, which
/// shows within `limit`.
fn chapter_added_after_a_listing(shared: &Shared, limit: Duration) {
    let book = shared.mount.path().join(BOOK);
    let name = "第9章 新.md";
    fresh_second();
    assert!(
        !crate::common::sorted_names(&book)
            .unwrap()
            .contains(&name.to_string())
    );
    std::fs::write(shared.source(&format!("{BOOK}/{name}")), FIRST).unwrap();
    let took = time_until(limit, || {
        crate::common::sorted_names(&book)
            .unwrap()
            .contains(&name.to_string())
    });
    eprintln!("chapter added after a listing shown after {took:?}");
    assert!(
        took.is_some(),
        "a chapter added after a listing is not listed within {limit:?}"
    );
    assert!(
        std::fs::read_to_string(book.join("9/offset-1.txt"))
            .unwrap()
            .contains(FIRST)
    );
}

/// The margin a test allows on top of what the contract promises: polling,
/// a busy machine.
const SLACK: Duration = Duration::from_secs(2);

#[test]
fn same_second_changes_show_within_the_ttl() {
    require_fuse!();
    let Some(shared) = Shared::new(&["dir_cache=no"], &[]) else {
        return;
    };
    // Time granularity (2 s) plus the TTL: the first look after that is
    // of what is on the source.
    let limit = Duration::from_secs(2) + DEFAULT_TTL + SLACK;
    same_size_edit_after_a_read(&shared, limit);
    book_added_after_a_listing(&shared, "新书", limit);
    chapter_added_after_a_listing(&shared, limit);
}

#[test]
fn with_ttl_0_every_answer_is_of_the_source_now() {
    require_fuse!();
    let Some(shared) = Shared::new(&["dir_cache=no"], &["--ttl", "0"]) else {
        return;
    };
    // No waiting at all: the first read after the change shows it.
    same_size_edit_after_a_read(&shared, Duration::ZERO);
    book_added_after_a_listing(&shared, "新书", Duration::ZERO);
    chapter_added_after_a_listing(&shared, Duration::ZERO);
}

#[test]
fn a_new_book_shows_with_sshfs_defaults_and_the_default_ttl() {
    require_fuse!();
    let Some(shared) = Shared::new(&[], &[]) else {
        return;
    };
    assert!(shared.books().contains(&BOOK.to_string()));
    // sshfs keeps what it was told for 20 s (its cache_timeout), novelfs
    // for its TTL after that.
    let limit = Duration::from_secs(20) + Duration::from_secs(2) + DEFAULT_TTL + 2 * SLACK;
    book_added_after_a_listing(&shared, "新书", limit);
}

/// The trials of the freshness table (README, docs/performance.md): how
/// long each change takes to show, capped. Not a check: run it with
/// `cargo test --test it sources::network_fs::trials -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, printed; about 4 minutes"]
fn trials() {
    require_fuse!();
    let show = |what: &str, took: Vec<Option<Duration>>| {
        let cells: Vec<String> = took
            .iter()
            .map(|t| match t {
                Some(t) => format!("{:.2} s", t.as_secs_f64()),
                None => "not shown".into(),
            })
            .collect();
        println!("| {what} | {} |", cells.join(", "));
    };
    let book_trials = |sshfs: &[&str], args: &[&str], n: usize, cap: Duration| {
        let Some(shared) = Shared::new(sshfs, args) else {
            return Vec::new();
        };
        (0..n)
            .map(|i| {
                let name = format!("新书{i}");
                fresh_second();
                let novels = shared.source("");
                assert!(!shared.books().contains(&name));
                std::fs::create_dir(novels.join(&name)).unwrap();
                std::fs::write(novels.join(&name).join(CHAPTER), FIRST).unwrap();
                time_until(cap, || shared.books().contains(&name))
            })
            .collect()
    };
    let edit_trials = |sshfs: &[&str], args: &[&str], n: usize, cap: Duration| {
        let Some(shared) = Shared::new(sshfs, args) else {
            return Vec::new();
        };
        (0..n)
            .map(|i| {
                // A chapter of its own per trial: one never shown must not
                // spoil the next.
                let file = format!("第{}章 试.md", i + 10);
                let source = shared.source(&format!("{BOOK}/{file}"));
                std::fs::write(&source, FIRST).unwrap();
                let page = shared
                    .mount
                    .path()
                    .join(BOOK)
                    .join(&file)
                    .join("offset-1.txt");
                let read = || std::fs::read_to_string(&page).unwrap_or_default();
                assert!(time_until(cap, || read().contains(FIRST)).is_some());
                fresh_second();
                rewrite(&source, FIRST);
                assert!(read().contains(FIRST));
                rewrite(&source, SECOND);
                time_until(cap, || read().contains(SECOND))
            })
            .collect()
    };
    let no_cache = ["dir_cache=no"];
    let s30 = Duration::from_secs(30);
    let s20 = Duration::from_secs(20);
    println!("| trial (sshfs dir_cache=no unless said) | time until shown, each trial |");
    println!("|---|---|");
    show(
        "book added after a listing, same second, default TTL (cap 30 s)",
        book_trials(&no_cache, &[], 4, s30),
    );
    show(
        "same-size edit after a read, same second, default TTL (cap 20 s)",
        edit_trials(&no_cache, &[], 3, s20),
    );
    show(
        "same-size edit after a read, same second, --ttl 0 (cap 20 s)",
        edit_trials(&no_cache, &["--ttl", "0"], 3, s20),
    );
    show(
        "book added after a listing, same second, --ttl 0 (cap 20 s)",
        book_trials(&no_cache, &["--ttl", "0"], 3, s20),
    );
    show(
        "new book, sshfs defaults, default TTL (cap 90 s)",
        book_trials(&[], &[], 2, Duration::from_secs(90)),
    );
}
