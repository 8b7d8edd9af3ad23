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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Enc {
    Utf8,
    Gbk,
    Utf16Le,
}

/// One version of a chapter: everything but `version` decides its layout, so
/// two versions differing only in `version` have the same size.
#[derive(Debug, Clone)]
struct Version {
    seed: u64,
    lines: u64,
    crlf: bool,
    version: u64,
    enc: Enc,
}

fn name_a(i: u64) -> String {
    format!("第{i:02}章 标题{i}号.md")
}
fn name_b(i: u64) -> String {
    format!("{i:02}-标题{i}号-修订.txt")
}
fn shadow_name(i: u64) -> String {
    format!("第{i}回 另稿.md")
}

/// The text of a version: every line starts with `[c=II g=GGGGGG]#n ` so a
/// reader can tell which chapter, version and line it shows.
fn text_of(i: u64, v: &Version) -> String {
    // Lines are slices of a fixed random pool: cheap enough for a debug
    // build, so the mutator is not starved by the readers.
    static POOLS: std::sync::LazyLock<[Vec<char>; 2]> = std::sync::LazyLock::new(|| {
        let hanzi: Vec<char> = HANZI.chars().collect();
        let mut rng = Rng::new(7);
        let with_emoji: Vec<char> = (0..8192)
            .map(|_| {
                if rng.chance(15) {
                    '🌙'
                } else {
                    hanzi[rng.below(hanzi.len() as u64) as usize]
                }
            })
            .collect();
        let plain = with_emoji
            .iter()
            .map(|&c| if c == '🌙' { '月' } else { c })
            .collect();
        [with_emoji, plain]
    });
    let pool = &POOLS[usize::from(v.enc == Enc::Gbk)];
    let mut rng = Rng::new(v.seed);
    let mut out = String::new();
    for n in 1..=v.lines {
        if n > 1 {
            out.push_str(if v.crlf { "\r\n" } else { "\n" });
        }
        out.push_str(&format!("[c={i:02} g={:06}]#{n} ", v.version % 1_000_000));
        let len = if rng.chance(8) {
            rng.range(3050, 3600)
        } else {
            rng.range(8, 60)
        } as usize;
        let start = rng.below((pool.len() - len) as u64) as usize;
        out.extend(&pool[start..start + len]);
    }
    out
}

/// UTF-8 with no character straddling a 4096-byte boundary (see the module doc).
fn aligned_utf8(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + text.len() / 1000);
    let mut buf = [0u8; 4];
    for c in text.chars() {
        let b = c.encode_utf8(&mut buf).as_bytes();
        if b.len() > 1 && out.len() / 4096 != (out.len() + b.len() - 1) / 4096 {
            while out.len() % 4096 != 0 {
                out.push(b' ');
            }
        }
        out.extend_from_slice(b);
    }
    out
}

fn encode(i: u64, v: &Version) -> Vec<u8> {
    let text = text_of(i, v);
    match v.enc {
        Enc::Utf8 => aligned_utf8(&text),
        Enc::Gbk => {
            // encoding_rs's GBK encoder is slow in a debug build: encode
            // each distinct character once.
            static GBK: std::sync::LazyLock<std::collections::HashMap<char, Vec<u8>>> =
                std::sync::LazyLock::new(|| {
                    HANZI
                        .chars()
                        .map(|c| {
                            let s = c.to_string();
                            let (b, _, unmappable) = encoding_rs::GBK.encode(&s);
                            assert!(!unmappable);
                            (c, b.into_owned())
                        })
                        .collect()
                });
            let mut out = Vec::with_capacity(text.len());
            for c in text.chars() {
                match GBK.get(&c) {
                    Some(b) => out.extend_from_slice(b),
                    None if c.is_ascii() => out.push(c as u8),
                    None => panic!("{c:?} is not in the GBK table"),
                }
            }
            out
        }
        Enc::Utf16Le => {
            let mut out = vec![0xFF, 0xFE];
            out.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
            out
        }
    }
}

#[derive(Default)]
struct Counters {
    pages_ok: AtomicU64,
    /// Valid pages read, per reader: each must make progress.
    pages_by_reader: Vec<AtomicU64>,
    listings_ok: AtomicU64,
    vanished_listings: AtomicU64,
    /// Watched mounts: a listing through a name the kernel still held a
    /// moment after its chapter went (the watch's notice was on its way),
    /// which was gone when asked again 300 ms later.
    settled_listings: AtomicU64,
    ambiguous: AtomicU64,
    torn: AtomicU64,
    bad_error_file: AtomicU64,
    errors: Mutex<BTreeMap<String, u64>>,
    failures: Mutex<Vec<String>>,
}

impl Counters {
    fn error(&self, what: &str, e: &std::io::Error) {
        *self
            .errors
            .lock()
            .unwrap()
            .entry(format!("{what}:{}", errno_name(crate::common::errno(e))))
            .or_default() += 1;
    }
    fn fail(&self, counter: &AtomicU64, msg: String) {
        counter.fetch_add(1, Ordering::Relaxed);
        let mut f = self.failures.lock().unwrap();
        if f.len() < 20 {
            f.push(msg);
        }
    }
    fn count_errors(&self, pred: impl Fn(&str) -> bool) -> u64 {
        self.errors
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _)| pred(k))
            .map(|(_, v)| v)
            .sum()
    }
}

/// Chapter identity checks on top of the structural ones: the page is of
/// chapter `i`, and (for chapters only ever replaced atomically) all its
/// lines come from one version and carry their own numbers.
fn check_identity(i: u64, root_prefix: &str, info: &PageInfo) -> Result<(), String> {
    if !info.path.starts_with(root_prefix) || !info.path.contains(&format!("标题{i}号")) {
        return Err(format!("path {:?} is not chapter {i}", info.path));
    }
    let mut gens = std::collections::HashSet::new();
    for (n, text) in &info.lines {
        let tag = text.strip_prefix('[').and_then(|t| t.split_once(']'));
        let Some((tag, rest)) = tag else {
            // A line joined across a 4096-byte seam of two versions (in-place
            // chapters), or the cut end of a file caught while it is written.
            if in_place(i) || *n == info.total_lines.max(1) {
                continue;
            }
            return Err(format!(
                "line {n} has no tag: {:?}",
                text.chars().take(40).collect::<String>()
            ));
        };
        let (c, g) = tag.split_once(' ').ok_or("tag")?;
        if c != format!("c={i:02}") {
            return Err(format!("line {n} is from chapter {c}, page is of {i}"));
        }
        gens.insert(g.to_string());
        let own = rest.split_once(' ').map(|(a, _)| a).unwrap_or(rest);
        if !in_place(i) && own != format!("#{n}") {
            return Err(format!("line {n} carries {own}"));
        }
    }
    if !in_place(i) && gens.len() > 1 {
        return Err(format!("one page mixes versions {gens:?}"));
    }
    Ok(())
}

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

#[allow(clippy::too_many_lines)]
fn reader(
    id: u64,
    mnt: PathBuf,
    root_prefix: String,
    lib: Arc<Library>,
    stop: Arc<AtomicBool>,
    c: Arc<Counters>,
    watched: bool,
) {
    let mut rng = Rng::new(0xA11CE + id);
    let book = mnt.join(BOOK);
    while !stop.load(Ordering::Relaxed) {
        let i = rng.range(1, CHAPTERS);
        if rng.chance(30) {
            match std::fs::read_dir(&book).and_then(|rd| rd.collect::<std::io::Result<Vec<_>>>()) {
                Ok(v) if v.len() >= CHAPTERS as usize - 5 => {
                    c.listings_ok.fetch_add(1, Ordering::Relaxed);
                }
                Ok(v) => c.fail(&c.torn, format!("the book lists only {} chapters", v.len())),
                Err(e) => c.error("list-book", &e),
            }
        }
        let mode = rng.below(3);
        let arg = match mode {
            0 => lib.names.lock().unwrap()[(i - 1) as usize]
                .clone()
                .unwrap_or_else(|| name_a(i)),
            1 => i.to_string(),
            _ => format!("标题{i}号"),
        };
        let dir = book.join(&arg);
        let epoch_before = lib.vanish[(i - 1) as usize].load(Ordering::SeqCst);
        let names: Vec<String> =
            match std::fs::read_dir(&dir).and_then(|rd| rd.collect::<std::io::Result<Vec<_>>>()) {
                Ok(v) => v
                    .into_iter()
                    .map(|e| e.file_name().into_string().unwrap())
                    .collect(),
                Err(e) => {
                    c.error("list", &e);
                    continue;
                }
            };
        if names.is_empty()
            && (epoch_before % 2 == 1
                || lib.vanish[(i - 1) as usize].load(Ordering::SeqCst) != epoch_before)
        {
            // The directory was removed after it was opened: readdir gets
            // ENOENT, which glibc's readdir reports as the end of the
            // directory (as for any directory removed while open).
            c.vanished_listings.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if names.is_empty() && watched {
            std::thread::sleep(Duration::from_millis(300));
            let again =
                std::fs::read_dir(&dir).and_then(|rd| rd.collect::<std::io::Result<Vec<_>>>());
            if !matches!(&again, Ok(v) if v.is_empty()) {
                c.settled_listings.fetch_add(1, Ordering::Relaxed);
                continue;
            }
        }
        c.listings_ok.fetch_add(1, Ordering::Relaxed);
        if names == ["ERROR"] {
            match std::fs::read_to_string(dir.join("ERROR")) {
                Ok(t) if mode == 1 && t.starts_with(&format!("错误：第 {i} 章有 2 个文件")) =>
                {
                    c.ambiguous.fetch_add(1, Ordering::Relaxed);
                }
                Ok(t) => c.fail(&c.bad_error_file, format!("{arg}: ERROR says {t:?}")),
                Err(e) => c.error("read-ERROR", &e),
            }
            continue;
        }
        let pages: Vec<&String> = names.iter().filter(|n| n.ends_with(".txt")).collect();
        if pages.is_empty() || pages.len() * 2 != names.len() {
            c.fail(&c.torn, format!("{arg}: listing {names:?}"));
            continue;
        }
        let page = pages[rng.below(pages.len() as u64) as usize];
        let offset: u64 = page
            .strip_prefix("offset-")
            .and_then(|p| p.strip_suffix(".txt"))
            .unwrap()
            .parse()
            .unwrap();
        for (name, json) in [(page.clone(), false), (page.replace(".txt", ".json"), true)] {
            let p = dir.join(&name);
            match std::fs::read(&p) {
                Ok(bytes) => {
                    let checked = if json {
                        check_json_page(&bytes, offset)
                    } else {
                        check_text_page(&bytes, offset)
                    };
                    match checked.and_then(|info| check_identity(i, &root_prefix, &info)) {
                        Ok(()) => {
                            c.pages_ok.fetch_add(1, Ordering::Relaxed);
                            c.pages_by_reader[id as usize].fetch_add(1, Ordering::Relaxed);
                        }
                        Err(msg) => {
                            let head = String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
                                .into_owned();
                            c.fail(
                                &c.torn,
                                format!("{arg}/{name}: {msg} ({} bytes: {head:?}…)", bytes.len()),
                            );
                        }
                    }
                }
                Err(e) => c.error(if json { "read-json" } else { "read-txt" }, &e),
            }
        }
    }
}

#[derive(Default, Debug)]
struct MutatorStats {
    atomic_rewrite: u64,
    atomic_same_size: u64,
    in_place_truncate: u64,
    in_place_overwrite: u64,
    rename: u64,
    delete_recreate: u64,
    encoding_switch: u64,
    shadow: u64,
}

fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) {
    // Not a chapter extension: the scan never sees the temp file.
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

/// Writes in 4096-byte `write` calls, to widen the window a reader can
/// catch; `truncate` empties the file first.
fn write_in_place(path: &Path, bytes: &[u8], truncate: bool) {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(truncate)
        .open(path)
        .unwrap();
    for chunk in bytes.chunks(4096) {
        f.write_all(chunk).unwrap();
    }
    f.set_len(bytes.len() as u64).unwrap();
}

fn mutator(lib: Arc<Library>, versions: &mut [Version], stop: Arc<AtomicBool>) -> MutatorStats {
    let mut rng = Rng::new(0x5EED);
    let mut st = MutatorStats::default();
    let mut version = 1_000u64;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(rng.below(4)));
        let i = rng.range(1, CHAPTERS);
        let k = (i - 1) as usize;
        let Some(name) = lib.names.lock().unwrap()[k].clone() else {
            continue;
        };
        let path = lib.book.join(&name);
        version += 1;
        let v = &mut versions[k];
        let vanish = &lib.vanish[k];
        // The in-place chapters mostly get in-place writes.
        let op = if in_place(i) && v.enc == Enc::Utf8 && rng.chance(500) {
            2 + rng.below(2)
        } else {
            rng.below(8)
        };
        match op {
            0 => {
                v.seed = rng.next();
                v.lines = rng.range(1, 1300);
                v.crlf = rng.chance(300);
                v.version = version;
                write_atomic(&lib.book, &name, &encode(i, v));
                st.atomic_rewrite += 1;
            }
            1 => {
                v.version = version;
                write_atomic(&lib.book, &name, &encode(i, v));
                st.atomic_same_size += 1;
            }
            2 if in_place(i) && v.enc == Enc::Utf8 => {
                v.seed = rng.next();
                v.lines = rng.range(1, 1300);
                v.version = version;
                write_in_place(&path, &encode(i, v), true);
                st.in_place_truncate += 1;
            }
            3 if in_place(i) && v.enc == Enc::Utf8 => {
                let before = encode(i, v).len();
                v.version = version;
                let bytes = encode(i, v);
                assert_eq!(bytes.len(), before, "a same-size version");
                write_in_place(&path, &bytes, false);
                st.in_place_overwrite += 1;
            }
            4 => {
                vanish.fetch_add(1, Ordering::SeqCst);
                let new = if name == name_a(i) {
                    name_b(i)
                } else {
                    name_a(i)
                };
                std::fs::rename(&path, lib.book.join(&new)).unwrap();
                lib.names.lock().unwrap()[k] = Some(new);
                vanish.fetch_add(1, Ordering::SeqCst);
                st.rename += 1;
            }
            5 => {
                vanish.fetch_add(1, Ordering::SeqCst);
                lib.names.lock().unwrap()[k] = None;
                std::fs::remove_file(&path).unwrap();
                std::thread::sleep(Duration::from_millis(rng.range(1, 20)));
                // Re-created by a plain create + write: readers may catch it
                // empty or half written (valid UTF-8 either way).
                v.enc = Enc::Utf8;
                v.version = version;
                std::fs::write(&path, encode(i, v)).unwrap();
                lib.names.lock().unwrap()[k] = Some(name);
                vanish.fetch_add(1, Ordering::SeqCst);
                st.delete_recreate += 1;
            }
            6 => {
                v.enc = match v.enc {
                    Enc::Utf8 => Enc::Gbk,
                    Enc::Gbk => Enc::Utf16Le,
                    Enc::Utf16Le => Enc::Utf8,
                };
                v.version = version;
                write_atomic(&lib.book, &name, &encode(i, v));
                st.encoding_switch += 1;
            }
            7 => {
                vanish.fetch_add(1, Ordering::SeqCst);
                let shadow = lib.book.join(shadow_name(i));
                std::fs::write(&shadow, "另一份稿子").unwrap();
                std::thread::sleep(Duration::from_millis(rng.range(20, 150)));
                std::fs::remove_file(&shadow).unwrap();
                vanish.fetch_add(1, Ordering::SeqCst);
                st.shadow += 1;
            }
            _ => {}
        }
    }
    st
}

/// With the mutator stopped, every chapter's listing and pages through the
/// mount equal what the library computes from the files now.
fn check_at_rest(mnt: &Path, root: &Path) {
    let lib = novelfs::storage::open_local(root).unwrap();
    let index = lib.scan_book(BOOK).unwrap();
    assert_eq!(index.chapters.len(), CHAPTERS as usize);
    for chapter in &index.chapters {
        let text = lib.load_chapter(OsStr::new(BOOK), chapter).unwrap();
        let dir = mnt.join(BOOK).join(&chapter.file);
        let mut listed: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        listed.sort();
        let mut want: Vec<String> = text
            .chain()
            .iter()
            .flat_map(|o| [format!("offset-{o}.txt"), format!("offset-{o}.json")])
            .collect();
        want.sort();
        assert_eq!(listed, want, "{}: listing at rest", chapter.file);
        for offset in text.chain() {
            let out = novelfs::library::PageOutput {
                book: BOOK.into(),
                file: chapter.file.clone(),
                path: lib.display_path(BOOK, &chapter.file),
                page: text.page(offset, 400).unwrap(),
            };
            let got = std::fs::read_to_string(dir.join(format!("offset-{offset}.txt"))).unwrap();
            assert!(
                got == out.text(),
                "{}: offset-{offset}.txt at rest is stale",
                chapter.file
            );
            let got = std::fs::read_to_string(dir.join(format!("offset-{offset}.json"))).unwrap();
            assert!(
                got == out.json(),
                "{}: offset-{offset}.json at rest is stale",
                chapter.file
            );
        }
    }
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
