//! One published index serves every mount of its bucket, whatever the
//! mount's `--path-root` or `--max-chapter-bytes`: published by
//! `novelfs index s3://… --publish` with neither, a fresh machine's mount
//! with `--path-root /library` counts the library for `novel_books.txt`
//! without a chapter GET, and serves every page, `ERROR` and index file
//! byte for byte as a mount of the same library from disk with the same
//! options; a chapter over a smaller size limit is still refused.

use std::path::{Path, PathBuf};

use crate::bucket::native::publish;
use crate::common::bucket::Bucket;
use crate::common::s3_server::Emulator;
use crate::common::{Mount, reference_library};
use crate::mount::persist::tree;

const PATH_ROOT: &str = "/library";

/// The reference library without its symlink (a bucket holds no link, so
/// a mount of it from disk would list one its bucket has not) and without
/// its chapter of bytes no encoding decodes: no index holds a chapter that
/// cannot be read, so counting it reads it, and its read sets off the
/// read-ahead of the chapters after it, index or not.
fn sample() -> (tempfile::TempDir, PathBuf) {
    let (dir, root) = reference_library();
    std::fs::remove_file(root.join("novels/星河旧梦/第65章 坏字节.txt")).unwrap();
    let mut dirs = vec![root.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_symlink() {
                std::fs::remove_file(e.path()).unwrap();
            } else if t.is_dir() {
                dirs.push(e.path());
            }
        }
    }
    (dir, root)
}

/// The size of the biggest chapter file under `root`, and its path
/// relative to `novels/`.
fn biggest_chapter(root: &Path) -> (u64, PathBuf) {
    let novels = root.join("novels");
    let mut biggest = (0, PathBuf::new());
    for book in std::fs::read_dir(&novels).unwrap() {
        for chapter in std::fs::read_dir(book.unwrap().path()).unwrap() {
            let path = chapter.unwrap().path();
            let len = std::fs::metadata(&path).unwrap().len();
            if len > biggest.0 {
                biggest = (len, path.strip_prefix(&novels).unwrap().to_path_buf());
            }
        }
    }
    biggest
}

/// Publishes `root`'s library from its bucket with no `--path-root` and
/// the default size limit, then mounts the bucket on a fresh machine
/// (an empty index folder) with `--path-root /library` and `extra`, and
/// the library from disk with the same options: the counts of the
/// bucket mount's first `novel_books.txt`, and both mounts' trees.
fn published_and_from_disk(root: &Path, extra: &[&str]) -> Option<Mounted> {
    published_and_from_disk_in(Emulator::Moto, root, extra)
}

/// `published_and_from_disk` with the bucket in `emulator`.
fn published_and_from_disk_in(emulator: Emulator, root: &Path, extra: &[&str]) -> Option<Mounted> {
    let bucket = Bucket::with_cloud(root, emulator)?;
    let machines = tempfile::tempdir().unwrap();
    publish(&bucket, &machines.path().join("publisher"));
    let fresh = machines.path().join("fresh");
    let mut args = vec![
        "--path-root",
        PATH_ROOT,
        "--index-dir",
        fresh.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let m = bucket.mount(&args);
    // Until the mount answers: the published index is fetched by then.
    std::fs::metadata(m.path()).unwrap();
    bucket.server.reset_counts();
    std::fs::read(m.path().join("novel_books.txt")).unwrap();
    let mut counted = bucket.server.counts();
    // The chapters' GETs: the snapshot's pieces of the books listed are
    // none of them.
    counted.get = bucket.gets(true) as u64;
    let from_bucket = comparable(tree(m.path()));
    let mut args = vec!["--path-root", PATH_ROOT];
    args.extend_from_slice(extra);
    let from_disk = comparable(tree(Mount::new(root, &args).path()));
    Some(Mounted {
        counted,
        from_bucket,
        from_disk,
        _bucket: bucket,
        mount: m,
    })
}

struct Mounted {
    counted: crate::common::s3_server::Counts,
    from_bucket: Vec<String>,
    from_disk: Vec<String>,
    /// The bucket's mount, still up, and its bucket, which must outlive it.
    mount: Mount,
    _bucket: Bucket,
}

/// `tree`'s lines with the `updated` of each chapter in a book's
/// `novel_chapters.json` left out: it is the chapter's mtime, which is the
/// time of its upload in the bucket and of its writing on disk (the size
/// of the file is kept, and every other byte).
fn comparable(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .map(|line| {
            let (Some(at), Some(end)) = (line.find(" bytes): Ok(["), line.rfind("])")) else {
                return line;
            };
            if !line[..at].contains("/novel_chapters.json ") {
                return line;
            }
            let start = at + " bytes): Ok([".len();
            let bytes: Vec<u8> = line[start..end]
                .split(", ")
                .map(|b| b.parse().unwrap())
                .collect();
            let mut index: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            // A book with a chapter that cannot be read has an error here.
            let chapters = index.get_mut("chapters").and_then(|c| c.as_array_mut());
            for chapter in chapters.into_iter().flatten() {
                chapter.as_object_mut().unwrap().remove("updated");
            }
            format!("{} bytes): {index}", &line[..at])
        })
        .collect()
}

/// The lines of two trees that differ, for a readable failure.
fn differences(a: &[String], b: &[String]) -> Vec<String> {
    let shown = |s: &String| s.chars().take(300).collect::<String>();
    a.iter()
        .zip(b)
        .filter(|(x, y)| x != y)
        .take(3)
        .map(|(x, y)| format!("bucket: {}\n  disk: {}", shown(x), shown(y)))
        .collect()
}

#[test]
fn an_index_published_without_a_path_root_serves_a_mount_with_one() {
    published_serves_a_fresh_mount(Emulator::Moto);
}

/// The same publishing through `gs://` (fake-gcs-server): `novelfs index
/// --publish` PUTs the index and the snapshot into the bucket.
#[test]
fn an_index_published_in_a_gcs_bucket_serves_a_fresh_mount() {
    published_serves_a_fresh_mount(Emulator::FakeGcs);
}

/// The same publishing through `az://` (Azurite).
#[test]
fn an_index_published_in_an_azure_container_serves_a_fresh_mount() {
    published_serves_a_fresh_mount(Emulator::Azurite);
}

fn published_serves_a_fresh_mount(emulator: Emulator) {
    require_fuse!();
    let (_dir, root) = sample();
    let Some(Mounted {
        counted,
        from_bucket,
        from_disk,
        mount,
        _bucket: _up,
    }) = published_and_from_disk_in(emulator, &root, &[])
    else {
        return;
    };
    eprintln!("novel_books.txt of a fresh mount of {emulator:?} under {PATH_ROOT}: {counted:?}");
    assert_eq!(
        (counted.get, counted.ranged_get, counted.head),
        (0, 0, 0),
        "no chapter is read: {counted:?}"
    );
    assert!(from_bucket.len() > 100, "{} entries", from_bucket.len());
    let page =
        std::fs::read_to_string(mount.path().join("星河旧梦/第02章 故人.md/offset-1.txt")).unwrap();
    assert!(
        page.contains(&format!("<path>{PATH_ROOT}/novels/星河旧梦/")),
        "pages print the mount's root: {page}"
    );
    assert_eq!(from_bucket.len(), from_disk.len());
    assert!(
        from_bucket == from_disk,
        "{:#?}",
        differences(&from_bucket, &from_disk)
    );
}

#[test]
fn an_index_published_with_the_default_limit_serves_a_mount_with_a_smaller_one() {
    require_fuse!();
    let (_dir, root) = sample();
    let (size, biggest) = biggest_chapter(&root);
    let limit = (size - 1).to_string();
    let Some(Mounted {
        counted,
        from_bucket,
        from_disk,
        mount,
        _bucket: _up,
    }) = published_and_from_disk(&root, &["--max-chapter-bytes", &limit])
    else {
        return;
    };
    eprintln!("novel_books.txt of a fresh mount limited to {limit} bytes: {counted:?}");
    // The chapter over the limit is opened as without an index (and
    // refused), and its read sets off the read-ahead of a few chapters
    // after it; every other is counted from the index.
    let chapters = from_disk
        .iter()
        .filter(|l| l.contains("/offset-1.txt "))
        .count() as u64;
    assert!(chapters > 40, "{chapters} chapters");
    assert!(
        (1..chapters / 4).contains(&(counted.get + counted.ranged_get)),
        "{chapters} chapters: {counted:?}"
    );
    assert_eq!(counted.head, 0, "{counted:?}");
    // That chapter is refused, with the error a mount without the index
    // gives (the trees are equal), naming the limit.
    let error = std::fs::read_to_string(mount.path().join(&biggest).join("ERROR"))
        .unwrap_or_else(|e| panic!("{} is refused: {e}", biggest.display()));
    assert!(error.contains(&limit), "{error}");
    assert!(
        from_bucket == from_disk,
        "{:#?}",
        differences(&from_bucket, &from_disk)
    );
}
