//! The inode journal through a real mount: many lookups and forgets keep
//! it about the size of what the kernel holds, and a server killed after
//! all that is replaced by one that knows every node the kernel still
//! holds. The kernel forgets what the server invalidates: each round looks
//! up fresh names in a chapter and then changes that chapter on disk, which
//! the server tells the kernel to drop (a change of this mount's library
//! only: nothing machine-wide).
//!
//! `NOVELFS_TEST_FAILOVER_OFF=compact` in the tests' environment reaches
//! the mount and never compacts the journal: it grows with every lookup
//! and forget, and the test fails.

use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::time::{Duration, Instant};

use crate::common::{Mount, fuse_available};
use crate::failover::killed::{holder_count, library, read_uncached, server_of};

#[test]
fn many_lookups_and_forgets_keep_the_journal_small_and_a_failover_finds_every_node() {
    if !fuse_available() {
        return;
    }
    let (_tmp, root) = library(4);
    let mut mount = Mount::with_log(&root, &["-o", "failover"], "info");
    let mnt = mount.path().to_path_buf();
    // Pages the kernel holds throughout: open, with their bytes.
    let kept: Vec<(std::path::PathBuf, std::fs::File, Vec<u8>)> = (1..=2)
        .map(|c| {
            let path = mnt.join(format!("书/第{c}章.txt/offset-{}.txt", 1 + 100 * c));
            let bytes = read_uncached(&path).expect("a page");
            let file = std::fs::File::open(&path).unwrap();
            (path, file, bytes)
        })
        .collect();
    let mut largest = 0;
    let mut lookups = 0;
    for round in 0..12u64 {
        // Chapters 3 and 4 in turn (the kept pages are of 1 and 2).
        let c = 3 + round % 2;
        // Names no one looked up before: each a number of its own.
        for k in 0..400u64 {
            let path = mnt.join(format!(
                "书/第{c}章.txt/offset-{}-limit-{}.txt",
                1 + (k * 3) % 1400,
                1 + round
            ));
            std::fs::metadata(&path).expect("a fresh page name");
            lookups += 1;
        }
        // The chapter changes: the server has the kernel drop its names.
        let mut chapter = std::fs::OpenOptions::new()
            .append(true)
            .open(root.join(format!("novels/书/第{c}章.txt")))
            .unwrap();
        writeln!(chapter, "第{c}章第{round}次改：又一行。").unwrap();
        drop(chapter);
        std::thread::sleep(Duration::from_millis(300));
        largest = largest.max(holder_count(&mnt, "inode journal bytes"));
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "{lookups} lookups, each forgotten: the journal took up to {largest} bytes (load {})",
        load.split(' ').next().unwrap_or("?")
    );
    // Without compaction: about 80 bytes a lookup and 25 a forget (over
    // 500 KiB); with it, a round or two of forgets late on a busy
    // machine still fit.
    assert!(
        largest < 256 << 10,
        "the inode journal took {largest} bytes for {lookups} lookups, each forgotten"
    );
    // A server killed now: the next replays the compacted journal and
    // knows the pages the kernel still holds, by their numbers.
    let holder = mount.pid();
    let server = server_of(holder).expect("a server");
    // SAFETY: a signal to a process of this test's mount.
    unsafe { libc::kill(server as i32, libc::SIGKILL) };
    for (path, file, bytes) in &kept {
        let mut got = vec![0u8; bytes.len()];
        file.read_exact_at(&mut got, 0)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            &got == bytes,
            "{}: other bytes after the failover",
            path.display()
        );
        let held = file.metadata().unwrap().ino();
        assert_eq!(
            std::fs::metadata(path).unwrap().ino(),
            held,
            "{}: the next server gives the number the kernel holds",
            path.display()
        );
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while server_of(holder).is_none_or(|s| s == server) {
        assert!(Instant::now() < deadline, "no next server");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut listing = String::new();
    for e in std::fs::read_dir(mnt.join("书/第1章.txt")).unwrap() {
        listing += &e.unwrap().file_name().to_string_lossy();
    }
    assert!(listing.contains("offset-1.txt"), "{listing}");
    let mut again = Vec::new();
    std::fs::File::open(&kept[0].0)
        .unwrap()
        .read_to_end(&mut again)
        .unwrap();
    assert_eq!(again, kept[0].2);
    assert_eq!(holder_count(&mnt, "servers died"), 1);
    assert!(mount.alive(), "the holder serves on");
}
