//! Soak: reader threads hammer one book through the mount while a mutator
//! rewrites, renames, deletes, re-encodes and shadows its chapters.
//!
//! `NOVELFS_SOAK_THREADS` readers (default 8) for `NOVELFS_SOAK_SECS`
//! seconds (default 12, once strict and once watched; run `NOVELFS_SOAK_SECS=60 cargo test --test it soak:: --
//! --nocapture` for the long run). Every successful read must be one whole
//! valid page; the only error a reader may see is ENOENT (a chapter deleted
//! or renamed, an offset gone, a number shadowed by a second file).
//!
//! Why no EIO is allowed, even for in-place rewrites: EIO only comes from a
//! chapter that cannot be decoded. Atomic rewrites (temp file + rename) never
//! expose a partial file. In-place rewrites (UTF-8 only) are the risk: a
//! reader may read the file while it is being written and see (a) a prefix
//! of the new bytes, because the file's size grows one page-cache page at a
//! time, (b) an old prefix followed by new bytes, when its `read` calls
//! straddle a truncation, both cut at 4096-byte page boundaries, or (c)
//! old and new bytes interleaved anywhere, for an overwrite without
//! truncation. The mutator makes every such state valid UTF-8: its UTF-8
//! texts are laid out so that no character straddles a 4096-byte boundary
//! (an ASCII space is inserted before one that would), which covers (a) and
//! (b); and its same-size overwrites change only ASCII digits, so any byte
//! mix of old and new is still the same sequence of characters (c). Every
//! state a reader can catch is therefore decodable, and an EIO would be a bug.
//! Only whole-version identity (all lines of one page from one version of
//! the file, line `#n` tags matching their numbers) is not checked for the
//! in-place chapters, since their sources legitimately mix versions.
//!
//! `texts` writes a chapter's versions, `readers` read and check pages,
//! `mutation` changes the library; this file holds the two runs.

mod mutation;
mod readers;
mod texts;

use mutation::*;
use readers::*;
use texts::*;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{Mount, PageInfo, Rng, check_json_page, check_text_page, errno_name};

const BOOK: &str = "书";
const CHAPTERS: u64 = 30;

/// Chapters that also get in-place (non-atomic) rewrites.
fn in_place(i: u64) -> bool {
    i.is_multiple_of(5)
}

const HANZI: &str = "月光落在旧街的石板上风吹过长巷少年提灯而行远山如黛云深不知处江水东流去夜色渐浓灯火阑珊人间烟火气，。！？";

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Library {
    book: PathBuf,
    /// Current file name of each chapter (index i-1), `None` while deleted.
    names: Mutex<Vec<Option<String>>>,
    /// Per chapter: bumped before and after each operation that makes one
    /// of its names vanish (rename, delete, a shadowing file coming or
    /// going), so it is odd while one is in progress.
    vanish: Vec<AtomicU64>,
}

/// Asking the daemon every time.
#[test]
fn soak_strict() {
    soak("0");
}

/// The kernel keeping names, attributes, pages and listings for up to an
/// hour: only the watch's invalidations keep it from serving stale pages
/// (which the check at rest would catch).
#[test]
fn soak_watched() {
    soak("3600");
}

fn soak(ttl: &str) {
    require_fuse!();
    let threads = env_num("NOVELFS_SOAK_THREADS", 8);
    let secs = env_num("NOVELFS_SOAK_SECS", 12);
    let (_g, root) = crate::common::book_library(&[]);
    let book = root.join("novels").join(BOOK);
    let mut seed_rng = Rng::new(42);
    let mut versions: Vec<Version> = (1..=CHAPTERS)
        .map(|i| Version {
            seed: seed_rng.next(),
            // A third of the chapters span several pages.
            lines: if i % 3 == 0 {
                seed_rng.range(450, 1300)
            } else {
                seed_rng.range(1, 400)
            },
            crlf: i == 7,
            version: 0,
            enc: Enc::Utf8,
        })
        .collect();
    for i in 1..=CHAPTERS {
        std::fs::write(book.join(name_a(i)), encode(i, &versions[(i - 1) as usize])).unwrap();
    }
    let lib = Arc::new(Library {
        book,
        names: Mutex::new((1..=CHAPTERS).map(|i| Some(name_a(i))).collect()),
        vanish: (1..=CHAPTERS).map(|_| AtomicU64::new(0)).collect(),
    });

    let mut m = Mount::new(
        &root,
        &["--ttl", ttl, "--state-file", "/nonexistent/state.json"],
    );
    let pid = m.server_pid();
    let mnt = m.path().to_path_buf();
    let root_prefix = format!("{}/novels/{BOOK}/", root.display());
    let stop = Arc::new(AtomicBool::new(false));
    let counters = Arc::new(Counters {
        pages_by_reader: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        ..Counters::default()
    });

    let peak_rss = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak_rss.clone());
        std::thread::spawn(move || {
            // RSS in MiB every 5 s, to tell a leak from a cache filling up.
            let mut timeline = Vec::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if let Some((rss, _)) = crate::common::rss_kib(pid) {
                    peak.fetch_max(rss, Ordering::Relaxed);
                    if n.is_multiple_of(25) {
                        timeline.push(rss / 1024);
                    }
                }
                n += 1;
                std::thread::sleep(Duration::from_millis(200));
            }
            timeline
        })
    };
    let readers: Vec<_> = (0..threads)
        .map(|id| {
            let (mnt, prefix, lib, stop, c) = (
                mnt.clone(),
                root_prefix.clone(),
                lib.clone(),
                stop.clone(),
                counters.clone(),
            );
            let watched = ttl != "0";
            std::thread::spawn(move || reader(id, mnt, prefix, lib, stop, c, watched))
        })
        .collect();
    let started = Instant::now();
    let mutator_thread = {
        let (lib, stop) = (lib.clone(), stop.clone());
        std::thread::spawn(move || {
            let st = mutator(lib, &mut versions, stop);
            (st, versions)
        })
    };
    std::thread::sleep(Duration::from_secs(secs));
    // Not a throughput figure (tests assert no speed): the run only ends
    // once every reader has read a valid page, however loaded the machine
    // is, so the checks below have something to check. A reader that gets
    // none in a further minute is stuck, which fails below.
    let progress_guard = Instant::now();
    while !counters
        .pages_by_reader
        .iter()
        .all(|n| n.load(Ordering::Relaxed) > 0)
        && progress_guard.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    let (stats, _versions) = mutator_thread.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    let timeline = sampler.join().unwrap();
    let elapsed = started.elapsed();

    let (rss, hwm) = crate::common::rss_kib(pid).expect("daemon still running");
    assert!(m.alive(), "the daemon died or the mount stopped answering");
    // The watch hears of the last changes a moment after they are made.
    std::thread::sleep(Duration::from_millis(500));
    check_at_rest(&mnt, &root);

    let c = &counters;
    let errors = c.errors.lock().unwrap().clone();
    println!(
        "soak (ttl {ttl}): {threads} readers, {:.1} s: pages read and valid {}, listings {} (+{} empty: removed while open, +{} settled), ambiguous {}, torn/invalid {}, \
         bad ERROR files {}, errors {:?}; mutator {:?}; daemon RSS {} KiB now, {} KiB sampled peak, VmHWM {} KiB; RSS MiB every 5 s {:?}",
        elapsed.as_secs_f64(),
        c.pages_ok.load(Ordering::Relaxed),
        c.listings_ok.load(Ordering::Relaxed),
        c.vanished_listings.load(Ordering::Relaxed),
        c.settled_listings.load(Ordering::Relaxed),
        c.ambiguous.load(Ordering::Relaxed),
        c.torn.load(Ordering::Relaxed),
        c.bad_error_file.load(Ordering::Relaxed),
        errors,
        stats,
        rss,
        peak_rss.load(Ordering::Relaxed),
        hwm,
        timeline,
    );
    let failures = c.failures.lock().unwrap().clone();
    assert_eq!(
        c.torn.load(Ordering::Relaxed),
        0,
        "torn or invalid reads: {failures:#?}"
    );
    let (settled, listed) = (
        c.settled_listings.load(Ordering::Relaxed),
        c.listings_ok.load(Ordering::Relaxed),
    );
    assert!(
        settled * 10 <= listed,
        "{settled} listings went stale for a moment, of {listed}"
    );
    assert_eq!(
        c.bad_error_file.load(Ordering::Relaxed),
        0,
        "ERROR for a decodable chapter: {failures:#?}"
    );
    assert_eq!(
        c.count_errors(|k| !k.ends_with(":ENOENT")),
        0,
        "errors other than ENOENT: {errors:?}"
    );
    let by_reader: Vec<u64> = c
        .pages_by_reader
        .iter()
        .map(|n| n.load(Ordering::Relaxed))
        .collect();
    assert!(
        by_reader.iter().all(|&n| n > 0),
        "a reader read no valid page (stuck, or every read failed): {by_reader:?}"
    );
    assert!(
        stats.in_place_truncate + stats.in_place_overwrite > 0
            && stats.encoding_switch > 0
            && stats.shadow > 0
    );
    assert!(hwm < 300 * 1024, "daemon VmHWM {hwm} KiB");
    let status = m.terminate().expect("running");
    assert!(status.success(), "exit {status}");
}
