//! A big chapter in a bucket, through a real mount: read in parts with
//! ranged GETs, several in flight, within the memory budget, each page the
//! same bytes as the same library on disk gives; and a chapter replaced
//! between two of its parts never gives a page that mixes the two.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::bucket::Bucket;
use crate::common::s3_server::Emulator;
use crate::common::{Mount, errno, rss_kib};

const BOOK: &str = "书";
const BIG: &str = "第1章 大.md";

/// The bucket's and the disk's mounts, alike: pages name the library by
/// the path root, the same for both.
const SAME_ARGS: [&str; 7] = [
    "--ttl",
    "60",
    "--cache-size",
    "32M",
    "--no-index",
    "--path-root",
    "/library",
];

/// About `bytes` of prose whose every line names its number and `tag`;
/// `stretch` changes the lines' lengths, so that two versions' lines start
/// at different offsets.
fn prose(bytes: usize, tag: &str, stretch: usize) -> Vec<u8> {
    let mut text = String::with_capacity(bytes + 4096);
    let mut i = 1usize;
    while text.len() < bytes {
        let filler = "月光落在旧街的石板上，他推开木门。".repeat(1 + (i + stretch) % (3 + stretch));
        text.push_str(&format!("第{i}行{tag}：{filler}\n"));
        i += 1;
    }
    text.into_bytes()
}

/// A library of one book with the chapter `BIG` of `body` and a small one.
fn library_with(dir: &Path, name: &str, body: &[u8]) -> PathBuf {
    let root = dir.join(name);
    let book = root.join("novels").join(BOOK);
    std::fs::create_dir_all(&book).unwrap();
    std::fs::write(book.join(BIG), body).unwrap();
    std::fs::write(book.join("第2章.md"), "短短的一章\n".as_bytes()).unwrap();
    root
}

/// The pages the mount lists for the big chapter, by offset.
fn chain(m: &Mount) -> Vec<u64> {
    let dir = m.path().join(BOOK).join(BIG);
    let mut offsets: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_prefix("offset-")?
                .strip_suffix(".txt")?
                .parse()
                .ok()
        })
        .collect();
    offsets.sort();
    offsets
}

fn page(m: &Mount, offset: u64) -> std::io::Result<Vec<u8>> {
    std::fs::read(
        m.path()
            .join(BOOK)
            .join(BIG)
            .join(format!("offset-{offset}.txt")),
    )
}

/// A chapter bigger than the cache (48 MiB, `--cache-size 32M`) is read
/// with ranged GETs of 1 MiB (an eighth of the cache is the bodies', half
/// of it held, a part a quarter of that or 1 MiB), several in flight: its pages are those of
/// the same library on disk, no GET reads it whole, and the daemon's peak
/// memory stays within the cache and 64 MiB.
#[test]
fn a_big_chapter_is_read_in_ranged_parts_within_the_memory_budget() {
    require_fuse!();
    let tmp = tempfile::tempdir().unwrap();
    let size = 48 << 20;
    let root = library_with(tmp.path(), "lib", &prose(size, "", 0));
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let args = SAME_ARGS;
    let m = bucket.mount(&args);
    let on_disk = Mount::new(&root, &args);
    let started = Instant::now();
    let chain_read = chain(&m);
    let took = started.elapsed();
    let counts = bucket.server.counts();
    assert_eq!(chain_read, chain(&on_disk), "the pages listed");
    let last = *chain_read.last().unwrap();
    for offset in [1, chain_read[chain_read.len() / 2], last] {
        assert!(
            page(&m, offset).unwrap() == page(&on_disk, offset).unwrap(),
            "offset-{offset}.txt differs from the library on disk"
        );
    }
    let listed = |m: &Mount| std::fs::read(m.path().join(BOOK).join("novel_chapters.txt")).unwrap();
    assert!(listed(&m) == listed(&on_disk), "novel_chapters.txt");
    let after = bucket.server.counts();
    let (_, hwm_kib) = rss_kib(m.pid()).unwrap();
    let parts = (size as u64).div_ceil(1 << 20);
    eprintln!(
        "a {} MiB chapter indexed in {took:?}: {counts:?}; with its pages: {after:?}; peak {} MiB",
        size >> 20,
        hwm_kib >> 10
    );
    // The small chapter is the one GET.
    // (The published snapshot's head, asked for at mount, is no chapter.)
    let chapter_gets = bucket.gets(true);
    assert!(chapter_gets <= 1, "no GET of the whole chapter: {after:?}");
    // A part given up before a late read of it is read again: on a busy
    // machine a few are, never most (a whole read would be 0 ranged).
    assert!(
        counts.ranged_get >= parts && after.ranged_get <= parts + parts / 3,
        "each part about once: {after:?}"
    );
    assert!(counts.max_in_flight >= 2, "parts in flight: {counts:?}");
    assert!(
        hwm_kib < (32 + 64) << 10,
        "the daemon peaked at {} MiB for a {} MiB chapter with a 32 MiB cache",
        hwm_kib >> 10,
        size >> 20
    );
}

/// The big chapter is replaced between two of its parts (the proxy holds
/// the fifth ranged GET while the new version is put): the read under way
/// fails rather than mix the versions, and the next read gives the new
/// version whole, the pages of the new library on disk, within the TTL.
#[test]
fn a_chapter_replaced_between_its_parts_never_gives_a_mixed_page() {
    replaced_between_parts(Emulator::Moto);
}

/// The same in Google Cloud Storage: fake-gcs-server ignores `If-Match`,
/// so a part of another version is told by the ETag it comes with.
#[test]
fn a_chapter_replaced_between_its_parts_in_gcs_never_gives_a_mixed_page() {
    replaced_between_parts(Emulator::FakeGcs);
}

/// The same in an Azure container (Azurite answers `If-Match` with 412).
#[test]
fn a_chapter_replaced_between_its_parts_in_azure_never_gives_a_mixed_page() {
    replaced_between_parts(Emulator::Azurite);
}

fn replaced_between_parts(emulator: Emulator) {
    require_fuse!();
    let tmp = tempfile::tempdir().unwrap();
    let size = 24 << 20;
    let old = prose(size, "旧", 0);
    // Of the same size, so that a read mixing the two would go through.
    let mut new = prose(size - 4096, "新", 2);
    new.resize(old.len() - 1, b'x');
    new.push(b'\n');
    let old_root = library_with(tmp.path(), "old", &old);
    let new_root = library_with(tmp.path(), "new", &new);
    let Some(bucket) = Bucket::with_cloud(&old_root, emulator) else {
        return;
    };
    let args = SAME_ARGS;
    let m = bucket.mount(&args);
    let new_on_disk = Mount::new(&new_root, &args);
    // The chapter's directory listed, nothing of it read yet.
    assert!(m.path().join(BOOK).join(BIG).is_dir());
    bucket.server.set("only=RANGED_GET&stall_after=4&stall=-1");
    let first = m.path().join(BOOK).join(BIG).join("offset-1.txt");
    let reader = std::thread::spawn(move || std::fs::read(first));
    let deadline = Instant::now() + Duration::from_secs(30);
    while bucket.server.counts().stalled == 0 {
        assert!(Instant::now() < deadline, "no part was held");
        std::thread::sleep(Duration::from_millis(20));
    }
    bucket.put(&format!("novels/{BOOK}/{BIG}"), &new);
    bucket.server.set("only=&stall=0");
    match reader.join().unwrap() {
        Ok(got) => assert!(
            got == page(&new_on_disk, 1).unwrap(),
            "a page of the read under way that is not the new version's"
        ),
        Err(e) => eprintln!("the read under way failed: {e} (errno {})", errno(&e)),
    }
    // Well within the TTL, the next reads give the new version.
    let mut got = page(&m, 1);
    let until = Instant::now() + Duration::from_secs(10);
    while got.is_err() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
        got = page(&m, 1);
    }
    assert!(
        got.unwrap() == page(&new_on_disk, 1).unwrap(),
        "the first page after the replacement"
    );
    let chain_read = chain(&m);
    assert_eq!(chain_read, chain(&new_on_disk), "the pages listed");
    let last = *chain_read.last().unwrap();
    assert!(
        page(&m, last).unwrap() == page(&new_on_disk, last).unwrap(),
        "the last page"
    );
}
