//! A library in an S3 bucket (moto_server on 127.0.0.1, mounted with s3fs;
//! see common/s3.rs): novelfs over the s3fs mount serves the same pages as
//! over a local copy, and how soon a chapter added, a chapter deleted and a
//! book added in the bucket show through novelfs.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::s3::S3;
use crate::common::{Mount, sorted_names};

/// Written instead of either root in `<path>`, so the pages of both
/// mounts can be compared byte for byte.
const PATH_ROOT: &str = "/library";

fn examples() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/library"))
}

fn novelfs_over(root: &Path, ttl: &str) -> Mount {
    Mount::new(
        root,
        &[
            "--ttl",
            ttl,
            "--path-root",
            PATH_ROOT,
            "--state-file",
            "/nonexistent/state.json",
        ],
    )
}

/// What `novelfs read` prints for `book`/`chapter` over the local copy.
fn read_local(book: &str, chapter: &str) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .args(["read", "--state-file", "/nonexistent/state.json"])
        .args(["--path-root", PATH_ROOT, "--root"])
        .arg(examples())
        .args([book, chapter])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn pages_over_s3fs_equal_novelfs_read_over_a_local_copy() {
    require_fuse!();
    let Some(bucket) = S3::mount(examples()) else {
        return;
    };
    let m = novelfs_over(&bucket.path(), "1");
    let books: Vec<String> = sorted_names(m.path())
        .unwrap()
        .into_iter()
        .filter(|n| m.path().join(n).is_dir())
        .collect();
    assert_eq!(
        books,
        sorted_names(&examples().join("novels")).unwrap(),
        "every book of the bucket is listed"
    );
    let mut pages = 0;
    for book in &books {
        let chapters = sorted_names(&m.path().join(book)).unwrap();
        // Chapter directories are named by their file names (contract §2.1).
        for chapter in chapters
            .iter()
            .filter(|c| m.path().join(book).join(c).is_dir())
        {
            let page = std::fs::read(m.path().join(book).join(chapter).join("offset-1.txt"))
                .unwrap_or_else(|e| panic!("{book}/{chapter}: {e}"));
            assert_eq!(
                String::from_utf8_lossy(&page),
                String::from_utf8_lossy(&read_local(book, chapter)),
                "{book}/{chapter}"
            );
            pages += 1;
        }
    }
    assert!(pages >= 8, "only {pages} pages compared");
}

/// How long until `wrong` lists no view, polled until `limit`; the views
/// still wrong at the limit otherwise. The time is when the check that
/// found every view right began: one check reads every view through s3fs
/// and moto, which takes seconds on a busy machine, so when it ends says as
/// much about the machine as about novelfs.
fn time_until_right(
    limit: Duration,
    mut wrong: impl FnMut() -> Vec<String>,
) -> Result<Duration, Vec<String>> {
    let start = Instant::now();
    loop {
        let began = start.elapsed();
        let still = wrong();
        if still.is_empty() {
            return Ok(began);
        }
        if start.elapsed() >= limit {
            return Err(still);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn text(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

fn names(dir: &Path) -> Vec<String> {
    sorted_names(dir).unwrap_or_default()
}

/// The views of one chapter of `book` that do not show it as `present`:
/// `ls` of the book, lookups by file name, number and title, its first
/// page, and both `novel_chapters` files.
fn chapter_views_wrong(
    book: &Path,
    file: &str,
    number: &str,
    title: &str,
    line: &str,
    present: bool,
) -> Vec<String> {
    let page = |name: &str| text(&book.join(name).join("offset-1.txt")).contains(line);
    let views = [
        ("ls of the book", names(book).contains(&file.to_string())),
        ("page by file name", page(file)),
        ("page by number", page(number)),
        (
            "lookup by title",
            std::fs::symlink_metadata(book.join(title)).is_ok(),
        ),
        (
            "novel_chapters.txt",
            text(&book.join("novel_chapters.txt")).contains(title),
        ),
        (
            "novel_chapters.json",
            text(&book.join("novel_chapters.json")).contains(title),
        ),
    ];
    views
        .into_iter()
        .filter(|(_, shown)| *shown != present)
        .map(|(view, _)| {
            format!(
                "{view} {}",
                if present { "lacks it" } else { "still has it" }
            )
        })
        .collect()
}

/// s3fs gives every directory the mtime -1 and never changes it: novelfs
/// lists such directories again once per TTL (contract §2.5). A chapter
/// added, a chapter deleted and a new book show in every view within the
/// TTL + s3fs's 1 s stat cache + 2 s (issue 24).
#[test]
fn changes_in_the_bucket_show_in_every_view() {
    require_fuse!();
    let Some(bucket) = S3::mount(examples()) else {
        return;
    };
    let ttl = 1.0;
    let target = Duration::from_secs_f64(ttl + 1.0 + 2.0);
    let limit = Duration::from_secs(30);
    let m = novelfs_over(&bucket.path(), &ttl.to_string());
    let mnt = m.path().to_path_buf();
    let book = mnt.join("唐诗选");
    let books_txt = mnt.join("novel_books.txt");
    let books_json = mnt.join("novel_books.json");
    // Every view is read once first, so that novelfs holds them all.
    let before = names(&book);
    let chapters = before.iter().filter(|c| book.join(c).is_dir()).count();
    let (first_books, first_books_json) = (text(&books_txt), text(&books_json));
    assert!(
        first_books.contains(&format!("唐诗选: {chapters} 章")),
        "{first_books}"
    );
    let (number, title, line) = ((chapters + 1).to_string(), "新添的诗", "床前看月光");
    let file = format!("{:02}-{title}.md", chapters + 1);
    let absent = chapter_views_wrong(&book, &file, &number, title, line, false);
    assert!(absent.is_empty(), "before it is added: {absent:?}");
    for page in ["1", "2"] {
        text(&book.join(page).join("offset-1.txt"));
    }

    let mut late = Vec::new();
    let mut note = |what: &str, took: Result<Duration, Vec<String>>| {
        eprintln!("{what}: {took:.2?}");
        if took.as_ref().is_ok_and(|d| *d <= target) {
            return;
        }
        late.push(format!("{what}: {took:.2?}"));
    };

    bucket.put(
        &format!("novels/唐诗选/{file}"),
        format!("{title}\n\n{line}。\n").as_bytes(),
    );
    let counted = format!("唐诗选: {} 章", chapters + 1);
    note(
        "added chapter, every view",
        time_until_right(limit, || {
            let mut wrong = chapter_views_wrong(&book, &file, &number, title, line, true);
            if !text(&books_txt).contains(&counted) {
                wrong.push(format!("novel_books.txt lacks {counted}"));
            }
            if text(&books_json) == first_books_json {
                wrong.push("novel_books.json unchanged".into());
            }
            wrong
        }),
    );

    bucket.delete(&format!("novels/唐诗选/{file}"));
    note(
        "deleted chapter, every view",
        time_until_right(limit, || {
            let mut wrong = chapter_views_wrong(&book, &file, &number, title, line, false);
            if text(&books_txt) != first_books {
                wrong.push("novel_books.txt counts the deleted chapter".into());
            }
            if text(&books_json) != first_books_json {
                wrong.push("novel_books.json counts the deleted chapter".into());
            }
            wrong
        }),
    );

    bucket.put("novels/新书/第1章 开篇.md", "开篇\n\n第一行。\n".as_bytes());
    let new_book = mnt.join("新书");
    note(
        "new book, every view",
        time_until_right(limit, || {
            let mut wrong =
                chapter_views_wrong(&new_book, "第1章 开篇.md", "1", "开篇", "第一行", true);
            if !names(&mnt).contains(&"新书".to_string()) {
                wrong.push("ls of the root lacks it".into());
            }
            for index in [&books_txt, &books_json] {
                if !text(index).contains("新书") {
                    wrong.push(format!("{} lacks it", index.display()));
                }
            }
            wrong
        }),
    );

    assert!(late.is_empty(), "later than {target:?}: {late:#?}");
}
