//! The tree's unit tests' library: one book, `书`, served by a `NovelFs`,
//! and the moves a test makes on it (walking paths as the kernel does,
//! reading files, seams in the source, the clock stamps are compared with).

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::error::Result;
use crate::node::{Attr, ChapterRef, Kind, ROOT_INO, chapter_ref};
use crate::source::Seams;

use super::{FsConfig, NovelFs};

/// A library of one book, `书`, served by a `NovelFs`.
pub(super) struct Fixture {
    _dir: tempfile::TempDir,
    pub(super) book_dir: PathBuf,
    pub(super) fs: NovelFs,
}

pub(super) fn fixture(files: &[(&str, &str)]) -> Fixture {
    fixture_with_cache(files, FsConfig::default().cache_bytes)
}

pub(super) fn fixture_with_cache(files: &[(&str, &str)], cache_bytes: usize) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let book_dir = dir.path().join("novels/书");
    std::fs::create_dir_all(&book_dir).unwrap();
    for (name, body) in files {
        std::fs::write(book_dir.join(name), body).unwrap();
    }
    let config = FsConfig {
        state_file: Some(dir.path().join("no-state.json")),
        cache_bytes,
        ..FsConfig::default()
    };
    let fs = NovelFs::new(novelfs_storage::open_local(dir.path()).unwrap(), config);
    Fixture {
        _dir: dir,
        book_dir,
        fs,
    }
}

/// Hands what the library's watch reported over to `fs`, as the mount's
/// notify thread does (within milliseconds of a change; here before each
/// move a test makes).
pub(super) fn reported(fs: &NovelFs) {
    if let Some(watch) = fs.watch() {
        let changes = watch.wait(Duration::ZERO);
        if !changes.is_empty() {
            fs.invalidations(&changes);
        }
    }
}

pub(super) fn walk(fs: &NovelFs, path: &str) -> Result<Attr> {
    reported(fs);
    let mut attr = fs.getattr(ROOT_INO)?;
    for part in path.split('/').filter(|p| !p.is_empty()) {
        let node = fs.node(attr.ino)?;
        attr = fs.lookup(attr.ino, OsStr::new(part))?;
        // Follow aliases the way the kernel would.
        if attr.kind == Kind::Symlink {
            let target = fs.readlink(attr.ino)?;
            let parent = fs.inodes.intern(node, false, None);
            attr = fs.lookup(parent, &target)?;
        }
    }
    Ok(attr)
}

pub(super) fn read_all(fs: &NovelFs, ino: u64) -> Vec<u8> {
    reported(fs);
    fs.read(ino, 0, u32::MAX).unwrap()
}

/// Waits until the outline thread has done what was queued.
pub(super) fn outlined_ahead(fs: &NovelFs) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while fs.ahead.outliner().pending() > 0 {
        assert!(std::time::Instant::now() < deadline, "outline thread stuck");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A book of 60 small chapters in listing order, and a big one first.
pub(super) fn walked_book() -> (Fixture, Vec<ChapterRef>, ChapterRef) {
    let names: Vec<String> = (1..=60).map(|i| format!("第{i}章.md")).collect();
    let body = "字\n".repeat(50);
    let mut files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), body.as_str())).collect();
    let big = "字\n".repeat(400_000);
    files.push(("第0章.md", &big));
    let f = fixture(&files);
    let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
    let chapters = names
        .iter()
        .map(|n| chapter_ref(&book, OsStr::new(n)))
        .collect();
    let big = chapter_ref(&book, OsStr::new("第0章.md"));
    (f, chapters, big)
}

/// Runs `f` with `seams` set on a fixture's source.
pub(super) fn with_seams(f: &Fixture, seams: Seams) {
    assert!(f.fs.source.seams.set(seams).is_ok(), "seams are set once");
}

/// Rewrites `path` with a different size before every look at a
/// chapter's source, so no two looks see the same version.
pub(super) fn edit_before_every_stat(
    path: PathBuf,
    body: impl Fn(usize) -> Vec<u8> + Send + Sync + 'static,
) -> Seams {
    let edits = AtomicUsize::new(0);
    Seams {
        before_stat: Some(Box::new(move |_| {
            let n = edits.fetch_add(1, Ordering::SeqCst) + 1;
            std::fs::write(&path, body(n)).unwrap();
        })),
        ..Seams::default()
    }
}

/// Sets the clock the mount compares stamps with.
pub(super) fn clock_at(f: &Fixture, now: std::time::SystemTime) {
    *crate::lock(&f.fs.freshness.fake_now) = Some(now);
}

/// Makes this thread's stamps whole seconds (as on sshfs) and waits
/// for the start of a second, so that the few changes that follow
/// leave one stamp.
pub(super) fn whole_second_stamps() {
    crate::cache::WHOLE_SECONDS.set(true);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    if now.subsec_millis() > 200 {
        std::thread::sleep(Duration::from_millis(u64::from(1005 - now.subsec_millis())));
    }
}

pub(super) fn rewrite(path: &std::path::Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// Lists the directories of chapters 1 to `count` of the book, in order,
/// as a walk of it does.
pub(super) fn list_chapters(fs: &NovelFs, count: usize) {
    for n in 1..=count {
        let chapter = walk(fs, &format!("书/{n}")).unwrap();
        fs.listing(chapter.ino, 0).unwrap();
    }
}

pub(super) fn text_of(fs: &NovelFs, ino: u64) -> String {
    String::from_utf8(read_all(fs, ino)).unwrap()
}

pub(super) const LATER: Duration = Duration::from_secs(3600);
