//! Names that do not exist, through a real mount: the kernel may keep the
//! answer, yet a name missing a moment ago resolves once its chapter or
//! book is added, within the freshness bound of the mode.

use std::path::Path;

use crate::common::{Mount, eventually};

/// A watched mount with a TTL so long that only a pushed invalidation can
/// make a kept answer go; an unwatched one whose TTL (0.5 s) bounds it.
const MODES: [(&str, &[&str]); 2] = [
    ("watched", &["--ttl", "3600"]),
    ("unwatched", &["--ttl", "0.5", "--no-watch"]),
];

fn missing(p: &Path) -> bool {
    std::fs::symlink_metadata(p)
        .err()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

#[test]
fn a_name_missing_a_moment_ago_resolves_once_its_chapter_is_added() {
    require_fuse!();
    for (mode, args) in MODES {
        let (_g, root) = crate::common::book_library(&[("第1章 起.md", b"a")]);
        let mut extra = args.to_vec();
        extra.extend(["--state-file", "/nonexistent/state.json"]);
        let m = Mount::new(&root, &extra);
        // By number, by file name, by a piece of the title, a page in it,
        // and a book by its name.
        let names = [
            "书/2",
            "书/第2章 承上.md",
            "书/承上",
            "书/第2章 承上.md/offset-1.txt",
            "新书",
        ];
        for name in names {
            for _ in 0..3 {
                assert!(missing(&m.path().join(name)), "{mode}: {name} is missing");
            }
        }
        let novels = root.join("novels");
        std::fs::write(novels.join("书/第2章 承上.md"), "b").unwrap();
        std::fs::create_dir(novels.join("新书")).unwrap();
        std::fs::write(novels.join("新书/第1章 始.md"), "c").unwrap();
        for name in names {
            eventually(&format!("{mode}: {name} resolves"), || {
                std::fs::symlink_metadata(m.path().join(name)).ok()
            });
        }
        assert!(
            std::fs::read_to_string(m.path().join("书/承上/offset-1.txt"))
                .unwrap()
                .contains("1: b"),
            "{mode}"
        );
    }
}

/// The daemon's CPU time so far (all its threads), in clock ticks.
fn daemon_ticks(m: &Mount) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", m.server_pid())).unwrap();
    // The fields after the command name (which may hold spaces).
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    // utime and stime: fields 14 and 15 of the whole line.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn a_repeated_stat_of_a_missing_name_asks_the_daemon_nothing() {
    require_fuse!();
    let (_g, root) = crate::common::book_library(&[("第1章 起.md", b"a")]);
    let m = Mount::new(&root, &["--state-file", "/nonexistent/state.json"]);
    let book = m.path().join("书");
    let stats = |name: &str| {
        let p = book.join(name);
        let before = daemon_ticks(&m);
        for _ in 0..20_000 {
            std::fs::symlink_metadata(&p).ok();
        }
        daemon_ticks(&m) - before
    };
    let existing = stats("第1章 起.md");
    let absent = stats(".gitignore");
    // A round trip each costs the daemon 20 µs or more: 0.4 s, 40 ticks.
    assert!(
        absent <= 2 * existing + 10,
        "20,000 stats of a missing name cost the daemon {absent} ticks, of an existing one {existing}"
    );
}
