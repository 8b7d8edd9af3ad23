//! The readers: threads that read pages through the mount and check each
//! is one whole valid page of one version, counting what they saw.

use super::*;

#[derive(Default)]
pub(super) struct Counters {
    pub(super) pages_ok: AtomicU64,
    /// Valid pages read, per reader: each must make progress.
    pub(super) pages_by_reader: Vec<AtomicU64>,
    pub(super) listings_ok: AtomicU64,
    pub(super) vanished_listings: AtomicU64,
    /// Watched mounts: a listing through a name the kernel still held a
    /// moment after its chapter went (the watch's notice was on its way),
    /// which was gone when asked again 300 ms later.
    pub(super) settled_listings: AtomicU64,
    pub(super) ambiguous: AtomicU64,
    pub(super) torn: AtomicU64,
    pub(super) bad_error_file: AtomicU64,
    pub(super) errors: Mutex<BTreeMap<String, u64>>,
    pub(super) failures: Mutex<Vec<String>>,
}

impl Counters {
    pub(super) fn error(&self, what: &str, e: &std::io::Error) {
        *self
            .errors
            .lock()
            .unwrap()
            .entry(format!("{what}:{}", errno_name(crate::common::errno(e))))
            .or_default() += 1;
    }
    pub(super) fn fail(&self, counter: &AtomicU64, msg: String) {
        counter.fetch_add(1, Ordering::Relaxed);
        let mut f = self.failures.lock().unwrap();
        if f.len() < 20 {
            f.push(msg);
        }
    }
    pub(super) fn count_errors(&self, pred: impl Fn(&str) -> bool) -> u64 {
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

#[allow(clippy::too_many_lines)]
pub(super) fn reader(
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
