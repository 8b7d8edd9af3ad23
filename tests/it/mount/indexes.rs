//! The index files through a real mount: an edit shows in both indexes
//! under each freshness mode, and listing (READDIRPLUS) the root decodes nothing.

use std::path::Path;

use crate::common::Mount;
use crate::common::daemon_log::DaemonLog;
use crate::common::eventually;
use novelfs::events::DECODED;

/// The file's text, checked against the `st_size` of the same open file:
/// an inode's bytes never change, while the name may stand for a newer
/// inode by the time a second look at the path is taken.
fn read(p: &Path) -> Option<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(p).ok()?;
    let size = file.metadata().ok()?.len();
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    assert_eq!(text.len() as u64, size, "st_size of {}", p.display());
    Some(text)
}

#[test]
fn an_edited_chapter_changes_both_indexes_in_every_freshness_mode() {
    require_fuse!();
    let (guard, root) = crate::common::book_library(&[
        ("第1章 起.md", "一二三".as_bytes()),
        ("第2章 承.md", "四五".as_bytes()),
    ]);
    let state = guard.path().join("no-state.json");
    let chapter = root.join("novels/书/第1章 起.md");
    for (mode, args) in [
        ("strict", vec!["--ttl", "0"]),
        ("watched", vec!["--ttl", "3600"]),
        ("unwatched", vec!["--ttl", "0.5", "--no-watch"]),
    ] {
        std::fs::write(&chapter, "一二三").unwrap();
        let mut all = vec!["--state-file", state.to_str().unwrap()];
        all.extend(args);
        let mount = Mount::new(&root, &all);
        let books = mount.path().join("novel_books.txt");
        let chapters = mount.path().join("书/novel_chapters.txt");
        assert!(read(&books).unwrap().contains("- 书: 2 章, 5 字\n"));
        assert!(
            read(&chapters)
                .unwrap()
                .contains("- 第01章 起 — 3 字 / 1 行")
        );
        std::fs::write(&chapter, "一二三\n四五六七").unwrap();
        eventually(&format!("{mode}: novel_books.txt shows the edit"), || {
            read(&books).filter(|t| t.contains("- 书: 2 章, 10 字\n"))
        });
        eventually(
            &format!("{mode}: novel_chapters.txt shows the edit"),
            || read(&chapters).filter(|t| t.contains("- 第01章 起 — 8 字 / 2 行")),
        );
        let json = mount.path().join("书/novel_chapters.json");
        let value: serde_json::Value = serde_json::from_str(&read(&json).unwrap()).unwrap();
        assert_eq!(value["chapters"][0]["chars"], 8, "{mode}");
    }
}

#[test]
fn listing_the_root_decodes_nothing_and_books_only_a_window_ahead() {
    require_fuse!();
    let dir = tempfile::tempdir().unwrap();
    for b in 0..10 {
        let book = dir.path().join(format!("novels/书{b}"));
        std::fs::create_dir_all(&book).unwrap();
        for c in 1..=50 {
            std::fs::write(book.join(format!("第{c}章.md")), format!("第{c}章\n正文")).unwrap();
        }
    }
    let state = dir.path().join("no-state.json");
    let mut mount = Mount::with_log(
        dir.path(),
        &["--state-file", state.to_str().unwrap()],
        "novelfs=debug,fuser=debug",
    );
    let log = DaemonLog::follow(&mut mount);
    // The chapters decoded so far (`events::DECODED`), in order.
    let decodes = || log.event_paths(0..usize::MAX, DECODED);
    let names = crate::common::sorted_names(mount.path()).unwrap();
    assert!(names.contains(&"novel_books.txt".to_string()), "{names:?}");
    // A page read after the root's listing: its decode is logged after
    // anything the listing did.
    let page = mount.path().join("书9/第50章.md/offset-1.txt");
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .contains("1: 第50章\n")
    );
    let first = eventually("the page's decode is logged", || {
        let decodes = decodes();
        decodes
            .iter()
            .any(|l| l.ends_with("书9/第50章.md"))
            .then_some(decodes)
    });
    assert_eq!(first.len(), 1, "listing the root decoded: {first:?}");
    // Listing a book outlines its first chapters ahead of a walk, on a
    // thread of the daemon: 16 of them, not the book.
    for b in 0..10 {
        let listed = crate::common::sorted_names(&mount.path().join(format!("书{b}"))).unwrap();
        assert_eq!(listed.len(), 50 + 2, "50 chapters and the two index files");
    }
    let ahead = eventually("the first chapters of the last book are outlined", || {
        let decodes = decodes();
        decodes
            .iter()
            .any(|l| l.ends_with("书9/第16章.md"))
            .then_some(decodes)
    });
    // The thread works in listing order: the other books' are done.
    assert!(
        ahead.len() <= 1 + 10 * 16,
        "{} decodes after listing 10 books",
        ahead.len()
    );
    assert!(
        !ahead.iter().any(|l| l.ends_with("/第17章.md")),
        "nothing past the window: {ahead:?}"
    );
    // The library's index decodes what is not outlined yet, each chapter once.
    let books = read(&mount.path().join("novel_books.txt")).unwrap();
    assert!(books.contains("- 书0: 50 章, "), "{books}");
    // The log is read on another thread: every decode is in it once a
    // lookup made after the index shows (a count taken at once missed up
    // to 67 of 500 under the whole suite's load).
    let end = log.mark(mount.path(), "zz-sentinel");
    let all = log.event_paths(0..end, DECODED);
    let distinct: std::collections::HashSet<&String> = all.iter().collect();
    assert_eq!(
        (all.len(), distinct.len()),
        (500, 500),
        "each chapter decoded once"
    );
}

#[test]
fn an_index_json_whose_call_fails_holds_the_error_as_json() {
    require_fuse!();
    // Undecodable under every rule: the novel_chapters call of this book fails.
    let bad: &[u8] = &[0x81, 0x20, 0xfe, 0x7f, 0x81, 0x20, 0xfe, 0x7f];
    let (guard, root) =
        crate::common::book_library(&[("第1章 起.md", "一".as_bytes()), ("第2章 坏.txt", bad)]);
    let state = guard.path().join("no-state.json");
    let mount = Mount::new(&root, &["--state-file", state.to_str().unwrap()]);
    for index in ["书/novel_chapters", "novel_books"] {
        let text = read(&mount.path().join(format!("{index}.txt"))).unwrap();
        let json = read(&mount.path().join(format!("{index}.json"))).unwrap();
        if !text.starts_with("错误：") {
            // This call does not fail here; its JSON is the tool's.
            assert!(
                serde_json::from_str::<serde_json::Value>(&json).is_ok(),
                "{json}"
            );
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("{index}.json is not JSON ({e}): {json}"));
        assert_eq!(value, serde_json::json!({ "error": text.trim_end() }));
        assert_eq!(
            json,
            format!(
                "{{\n  \"error\": {}\n}}\n",
                serde_json::to_string(text.trim_end()).unwrap()
            )
        );
    }
    let chapters = read(&mount.path().join("书/novel_chapters.txt")).unwrap();
    assert!(chapters.starts_with("错误："), "the call fails: {chapters}");
}

/// A chapter deleted and added again every few milliseconds while readers
/// read both indexes: each shows the book before or after a change, never
/// the error of a walk that listed the chapter and then found it gone.
#[test]
fn indexes_read_while_a_chapter_comes_and_goes_show_no_error() {
    require_fuse!();
    let names: Vec<String> = (1..=50).map(|i| format!("第{i}章 章{i}.md")).collect();
    let files: Vec<(&str, &[u8])> = names
        .iter()
        .map(|n| (n.as_str(), "一二三".as_bytes()))
        .collect();
    let (guard, root) = crate::common::book_library(&files);
    let state = guard.path().join("no-state.json");
    let mount = Mount::new(&root, &["--state-file", state.to_str().unwrap()]);
    let churned = root.join("novels/书/第500章 临时.md");
    let stop = std::sync::atomic::AtomicBool::new(false);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let files = [
        "书/novel_chapters.txt",
        "书/novel_chapters.json",
        "novel_books.txt",
        "novel_books.json",
    ];
    // Readers give back what they saw wrong rather than panic, so that the
    // mutator is always stopped.
    let reads: Vec<Result<usize, String>> = std::thread::scope(|s| {
        s.spawn(|| {
            // Added whole by a rename: a write in place is two changes,
            // an empty chapter first, which an index may show too.
            let whole = guard.path().join("临时.md");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::fs::write(&whole, "临时").unwrap();
                std::fs::rename(&whole, &churned).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(3));
                std::fs::remove_file(&churned).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
        let readers: Vec<_> = (0..4)
            .map(|r| {
                let path = mount.path().join(files[r]);
                s.spawn(move || {
                    let mut reads = 0;
                    while std::time::Instant::now() < until {
                        let text = std::fs::read_to_string(&path)
                            .map_err(|e| format!("{}: {e}", path.display()))?;
                        if text.contains("错误") {
                            return Err(format!("{}: {text}", path.display()));
                        }
                        if path.ends_with("novel_books.txt")
                            && !text.contains("- 书: 50 章, 150 字\n")
                            && !text.contains("- 书: 51 章, 152 字\n")
                        {
                            return Err(format!("neither before nor after a change: {text}"));
                        }
                        reads += 1;
                    }
                    Ok(reads)
                })
            })
            .collect();
        let reads = readers
            .into_iter()
            .map(|r| r.join().unwrap_or_else(|_| Err("reader panicked".into())))
            .collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        reads
    });
    for read in &reads {
        assert!(read.as_ref().is_ok_and(|&n| n > 0), "{read:?}");
    }
}
