//! The one memory budget through a real mount: a library whose pages,
//! outlines and indexes take several times `--cache-size` plus the slack is
//! grepped whole and its indexes read, and the daemon's peak (VmHWM) stays
//! within the cache plus 64 MiB. Where the cache is too small the mount
//! gets slower, never bigger.

use std::path::Path;
use std::process::Command;

use crate::common::{Mount, Rng, rss_kib};

const BOOKS: usize = 60;
const CHAPTERS: usize = 150;
/// Characters of a chapter (3 bytes each in UTF-8): 9,000 chapters of
/// about 10 KB make some 90 MB of sources, 180 MB of pages in both formats.
const CHAPTER_CHARS: usize = 3_300;
const CACHE_MIB: u64 = 4;
const SLACK_MIB: u64 = 64;

/// Text of CJK characters in lines of 20–60, from `rng`.
fn chapter_text(rng: &mut Rng) -> String {
    let mut text = String::with_capacity(CHAPTER_CHARS * 3 + 200);
    let mut chars = 0;
    while chars < CHAPTER_CHARS {
        let line = rng.range(20, 60) as usize;
        for _ in 0..line {
            // CJK Unified Ideographs, avoiding nothing in particular: the
            // word grepped for below is ASCII, so it is found nowhere.
            let c = char::from_u32(0x4E00 + rng.below(0x5000) as u32).unwrap();
            text.push(c);
        }
        text.push('\n');
        chars += line;
    }
    text
}

fn library(dir: &Path) {
    let mut rng = Rng::new(27);
    for b in 0..BOOKS {
        let book = dir.join(format!("novels/书{b:03}"));
        std::fs::create_dir_all(&book).unwrap();
        for c in 1..=CHAPTERS {
            std::fs::write(
                book.join(format!("第{c:03}章 标题{c}.md")),
                chapter_text(&mut rng),
            )
            .unwrap();
        }
    }
}

#[test]
fn a_whole_library_grep_and_its_indexes_stay_within_the_cache_and_the_slack() {
    require_fuse!();
    let dir = tempfile::tempdir().unwrap();
    library(dir.path());
    let cache = format!("{CACHE_MIB}M");
    let mount = Mount::new(dir.path(), &["--cache-size", &cache]);
    let bound_kib = (CACHE_MIB + SLACK_MIB) * 1024;

    let grep = Command::new("grep")
        .args(["-r", "-q", "novelfs-word-found-nowhere"])
        .arg(mount.path())
        .output()
        .unwrap();
    assert_eq!(
        grep.status.code(),
        Some(1),
        "grep read everything and found nothing: {}",
        String::from_utf8_lossy(&grep.stderr)
    );
    let (_, after_grep) = rss_kib(mount.server_pid()).unwrap();

    let books = std::fs::read_to_string(mount.path().join("novel_books.txt")).unwrap();
    assert!(books.contains(&format!("{CHAPTERS} 章")), "{books}");
    for b in 0..BOOKS {
        let chapters = mount.path().join(format!("书{b:03}/novel_chapters.json"));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(chapters).unwrap()).unwrap();
        assert_eq!(json["chapters"].as_array().map(Vec::len), Some(CHAPTERS));
    }
    let (_, after_indexes) = rss_kib(mount.server_pid()).unwrap();

    eprintln!(
        "VmHWM after the grep {} KiB, after the indexes {} KiB (bound {bound_kib} KiB)",
        after_grep, after_indexes
    );
    assert!(
        after_grep <= bound_kib,
        "VmHWM after grep -r {after_grep} KiB > cache + {SLACK_MIB} MiB"
    );
    assert!(
        after_indexes <= bound_kib,
        "VmHWM after the indexes {after_indexes} KiB > cache + {SLACK_MIB} MiB"
    );
}
