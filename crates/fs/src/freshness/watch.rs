//! Change notification for the library's directories (inotify).
//!
//! The kernel may keep what the mount told it (names, attributes, page
//! bytes, listings) only as long as nothing on disk changed. Without a
//! watch that is the `--ttl` (1 s by default), after which every path is
//! asked again: a reader of a whole book pays a round trip per name. With
//! `novels/` and each book directory watched, the kernel may keep entries
//! for long, and a change is pushed to it as soon as inotify reports it
//! (`freshness::plan` says what to drop).
//!
//! Only directories on local filesystems are watched: inotify does not see
//! changes made through another client of a network filesystem, and such
//! books keep the plain TTL.

use std::collections::{HashMap, HashSet};
use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use novelfs_kit::lock;
use novelfs_library::scan::is_chapter_file_name;
use novelfs_storage::access;

use super::source_fs::{self, SourceFs};

/// A change on disk, as far as the mount's names and bytes are concerned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Change {
    /// Anything may have changed (queue overflow, `novels/` replaced, the
    /// switch file flipped).
    All,
    /// A book directory appeared, went, or was renamed in `novels/`.
    Books,
    /// The set of chapter files of a book changed: any alias in it may now
    /// resolve differently.
    Chapters(OsString),
    /// The bytes or attributes of one chapter file changed.
    Chapter(OsString, OsString),
}

const BOOK_EVENTS: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_MODIFY
    | libc::IN_CLOSE_WRITE
    | libc::IN_ATTRIB
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF;
const NOVELS_EVENTS: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ATTRIB;
const SET_EVENTS: u32 = libc::IN_CREATE | libc::IN_DELETE | libc::IN_MOVED_FROM | libc::IN_MOVED_TO;
const GONE_EVENTS: u32 =
    libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_IGNORED | libc::IN_UNMOUNT;

#[derive(Debug, Clone)]
enum Target {
    Novels,
    Book(OsString),
}

#[derive(Default)]
struct Watched {
    novels: Option<i32>,
    books: HashMap<OsString, i32>,
    by_wd: HashMap<i32, Target>,
    /// Books that could not be watched (a network filesystem, the inotify
    /// limit, gone), so that a lookup does not pay a statfs and an
    /// inotify_add_watch, nor log, each time. Tried again once `novels/`
    /// reports a change to that name.
    unwatchable: HashSet<OsString>,
    /// How many times a book's watch was attempted (for tests).
    attempts: usize,
}

pub struct Watch {
    fd: OwnedFd,
    novels_dir: PathBuf,
    watched: Mutex<Watched>,
}

/// Why a library's directory is not watched.
#[derive(Debug)]
pub(crate) enum Unwatchable {
    /// On a network filesystem, inotify does not see other hosts' changes.
    NetworkFs(PathBuf),
    /// No inotify instance.
    NoInotify(std::io::Error),
    /// `novels/` itself cannot be watched.
    Refused(PathBuf),
}

impl std::fmt::Display for Unwatchable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unwatchable::NetworkFs(dir) => write!(
                f,
                "{} is on a network filesystem, where inotify does not see other hosts' changes",
                dir.display()
            ),
            Unwatchable::NoInotify(e) => write!(f, "inotify_init1: {e}"),
            Unwatchable::Refused(dir) => write!(f, "{} cannot be watched", dir.display()),
        }
    }
}

impl Watch {
    /// Watches `novels_dir`, on the filesystem `source`; why not when it
    /// cannot be watched (then the mount relies on its TTL alone).
    pub(crate) fn new(novels_dir: &Path, source: &SourceFs) -> Result<Watch, Unwatchable> {
        if !source.watchable() {
            return Err(Unwatchable::NetworkFs(novels_dir.to_path_buf()));
        }
        // SAFETY: plain syscall; the fd is owned below.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(Unwatchable::NoInotify(std::io::Error::last_os_error()));
        }
        let watch = Watch {
            // SAFETY: fd was just returned by inotify_init1 and nothing else owns it.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            novels_dir: novels_dir.to_path_buf(),
            watched: Mutex::default(),
        };
        if watch.watch_novels() {
            Ok(watch)
        } else {
            Err(Unwatchable::Refused(novels_dir.to_path_buf()))
        }
    }

    fn add(&self, dir: &Path, mask: u32) -> Option<i32> {
        let path = CString::new(dir.as_os_str().as_bytes()).ok()?;
        // A lookup of `dir` on the library's filesystem: one access.
        let wd = access::one(|| {
            // SAFETY: valid fd and NUL-terminated path.
            unsafe {
                libc::inotify_add_watch(
                    self.fd.as_raw_fd(),
                    path.as_ptr(),
                    mask | libc::IN_ONLYDIR | libc::IN_DONT_FOLLOW,
                )
            }
        });
        if wd < 0 {
            log::warn!(
                "cannot watch {}: {}",
                dir.display(),
                std::io::Error::last_os_error()
            );
            return None;
        }
        Some(wd)
    }

    /// (Re-)watches `novels/`; true when it is watched.
    pub fn watch_novels(&self) -> bool {
        let mut w = lock(&self.watched);
        if w.novels.is_some() {
            return true;
        }
        let Some(wd) = self.add(&self.novels_dir, NOVELS_EVENTS) else {
            return false;
        };
        w.novels = Some(wd);
        w.by_wd.insert(wd, Target::Novels);
        true
    }

    /// Watches the book directory `book` if it is not yet; true when it is
    /// watched. Called before the book is scanned, so that no change made
    /// after the scan can go unreported.
    pub fn watch_book(&self, book: &OsStr) -> bool {
        let mut w = lock(&self.watched);
        if w.novels.is_none() {
            return false;
        }
        if w.books.contains_key(book) {
            return true;
        }
        if w.unwatchable.contains(book) {
            return false;
        }
        w.attempts += 1;
        let dir = self.novels_dir.join(book);
        let remote = source_fs::remote(&dir);
        if remote {
            log::info!(
                "{} is on a network filesystem: not watched, its changes show within the TTL",
                dir.display()
            );
        }
        let Some(wd) = (!remote).then(|| self.add(&dir, BOOK_EVENTS)).flatten() else {
            w.unwatchable.insert(book.to_os_string());
            return false;
        };
        // Two names for one directory (a rename we have not heard of yet)
        // share a descriptor: the newest name wins.
        if let Some(Target::Book(old)) = w.by_wd.insert(wd, Target::Book(book.to_os_string())) {
            w.books.remove(&old);
        }
        w.books.insert(book.to_os_string(), wd);
        true
    }

    /// Whether a change in `book` (`None`: in `novels/` itself) is
    /// reported: a book is covered only while `novels/` is.
    pub fn covers(&self, book: Option<&OsStr>) -> bool {
        let w = lock(&self.watched);
        w.novels.is_some() && book.is_none_or(|b| w.books.contains_key(b))
    }

    /// Whether a change anywhere in the library is reported: `novels/` is
    /// watched and no book failed to be (a book not watched yet is
    /// watched before it is read).
    pub fn covers_all(&self) -> bool {
        let w = lock(&self.watched);
        w.novels.is_some() && w.unwatchable.is_empty()
    }

    pub fn covers_root(&self) -> bool {
        self.covers(None)
    }

    fn forget_book(w: &mut Watched, book: &OsStr, fd: i32) {
        if let Some(wd) = w.books.remove(book) {
            w.by_wd.remove(&wd);
            // SAFETY: plain syscall; a descriptor already gone gives EINVAL.
            unsafe { libc::inotify_rm_watch(fd, wd) };
        }
    }

    /// Waits up to `timeout` for changes and returns them (deduplicated,
    /// possibly none).
    pub fn wait(&self, timeout: Duration) -> Vec<Change> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, ms) } <= 0 {
            return Vec::new();
        }
        let mut changes = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: reading into a buffer we own, of the given length.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            self.decode(&buf[..n as usize], &mut changes);
        }
        let mut seen = std::collections::HashSet::new();
        changes.retain(|c| seen.insert(c.clone()));
        changes
    }

    fn decode(&self, mut bytes: &[u8], changes: &mut Vec<Change>) {
        const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
        let mut w = lock(&self.watched);
        while bytes.len() >= HEADER {
            // SAFETY: the kernel writes whole events; read_unaligned copes with the buffer's alignment.
            let event: libc::inotify_event =
                unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) };
            let end = (HEADER + event.len as usize).min(bytes.len());
            let raw = &bytes[HEADER..end];
            let name = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
            bytes = &bytes[end..];
            let mask = event.mask;
            if mask & libc::IN_Q_OVERFLOW != 0 {
                changes.push(Change::All);
                continue;
            }
            match w.by_wd.get(&event.wd).cloned() {
                None => {}
                Some(Target::Novels) => {
                    if mask & GONE_EVENTS != 0 {
                        // novels/ itself went: watched again (if it comes
                        // back) by the waiting loop. A novels/ moved aside
                        // keeps its books, and their watches would answer for
                        // the new tree's books of the same names: all go.
                        w.by_wd.remove(&event.wd);
                        w.novels = None;
                        let fd = self.fd.as_raw_fd();
                        if mask & libc::IN_IGNORED == 0 {
                            // SAFETY: plain syscall; a gone descriptor gives EINVAL.
                            unsafe { libc::inotify_rm_watch(fd, event.wd) };
                        }
                        let books: Vec<OsString> = w.books.keys().cloned().collect();
                        for book in books {
                            Self::forget_book(&mut w, &book, fd);
                        }
                        w.unwatchable.clear();
                        changes.push(Change::All);
                    } else if mask & SET_EVENTS != 0 {
                        w.unwatchable.remove(OsStr::from_bytes(name));
                        if mask & (libc::IN_DELETE | libc::IN_MOVED_FROM) != 0 {
                            Self::forget_book(&mut w, OsStr::from_bytes(name), self.fd.as_raw_fd());
                        }
                        changes.push(Change::Books);
                    } else if mask & libc::IN_ATTRIB != 0 {
                        // Its mode (or a book's) changed: what can be
                        // listed may have (an ERROR instead of the books, or
                        // of a book's chapters).
                        changes.push(if name.is_empty() {
                            Change::All
                        } else {
                            Change::Books
                        });
                    }
                }
                Some(Target::Book(book)) => {
                    if mask & GONE_EVENTS != 0 {
                        if w.books.get(&book) == Some(&event.wd) {
                            w.books.remove(&book);
                        }
                        w.by_wd.remove(&event.wd);
                        changes.push(Change::Books);
                    } else if name.is_empty()
                        || !is_chapter_file_name(name)
                        || mask & libc::IN_ISDIR != 0
                    {
                        // The book's own attributes (its mode decides whether
                        // it can be listed), or a name that is no chapter.
                        if mask & SET_EVENTS != 0
                            || (name.is_empty() && mask & libc::IN_ATTRIB != 0)
                        {
                            changes.push(Change::Chapters(book));
                        }
                    } else if mask & SET_EVENTS != 0 {
                        // A rename over a chapter changes its bytes with no
                        // write to it.
                        changes.push(Change::Chapters(book.clone()));
                        changes.push(Change::Chapter(
                            book,
                            OsStr::from_bytes(name).to_os_string(),
                        ));
                    } else {
                        changes.push(Change::Chapter(
                            book,
                            OsStr::from_bytes(name).to_os_string(),
                        ));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settle(w: &Watch) -> Vec<Change> {
        let mut all = Vec::new();
        loop {
            let got = w.wait(Duration::from_millis(200));
            if got.is_empty() {
                return all;
            }
            all.extend(got);
        }
    }

    fn attempts(w: &Watch) -> usize {
        w.watched.lock().unwrap().attempts
    }

    #[test]
    fn a_book_that_cannot_be_watched_is_not_tried_again_until_novels_changes() {
        let dir = tempfile::tempdir().unwrap();
        let novels = dir.path().join("novels");
        std::fs::create_dir_all(&novels).unwrap();
        let w = Watch::new(&novels, &SourceFs::of(&novels, None)).unwrap();
        // A file is no directory: inotify_add_watch with IN_ONLYDIR refuses it.
        std::fs::write(novels.join("书"), "").unwrap();
        settle(&w);
        assert!(!w.watch_book(OsStr::new("书")));
        assert!(!w.watch_book(OsStr::new("书")));
        assert_eq!(attempts(&w), 1, "the refusal is remembered");
        std::fs::remove_file(novels.join("书")).unwrap();
        std::fs::create_dir(novels.join("书")).unwrap();
        settle(&w);
        assert!(
            w.watch_book(OsStr::new("书")),
            "a change to the name forgets it"
        );
        assert_eq!(attempts(&w), 2);
    }

    #[test]
    fn reports_what_changed_where() {
        let dir = tempfile::tempdir().unwrap();
        let novels = dir.path().join("novels");
        std::fs::create_dir_all(novels.join("书")).unwrap();
        std::fs::write(novels.join("书/第1章.md"), "a").unwrap();
        let w = Watch::new(&novels, &SourceFs::of(&novels, None))
            .expect("a local directory can be watched");
        assert!(w.covers_root());
        assert!(!w.covers(Some(OsStr::new("书"))));
        assert!(w.watch_book(OsStr::new("书")));
        assert!(w.covers(Some(OsStr::new("书"))));

        std::fs::write(novels.join("书/第1章.md"), "b").unwrap();
        assert_eq!(
            settle(&w),
            [Change::Chapter("书".into(), "第1章.md".into())]
        );
        std::fs::write(novels.join("书/notes.tmp"), "x").unwrap();
        assert_eq!(
            settle(&w),
            [Change::Chapters("书".into())],
            "a new name may change what an alias finds"
        );
        std::fs::write(novels.join("书/notes.tmp"), "y").unwrap();
        assert_eq!(settle(&w), [], "a file that is no chapter changes no page");
        std::fs::create_dir(novels.join("新书")).unwrap();
        assert_eq!(settle(&w), [Change::Books]);
        std::fs::rename(novels.join("书"), novels.join("旧书")).unwrap();
        assert!(settle(&w).contains(&Change::Books));
        assert!(
            !w.covers(Some(OsStr::new("书"))),
            "a renamed book is watched again under its new name"
        );
        std::fs::remove_dir_all(&novels).unwrap();
        assert!(settle(&w).contains(&Change::All));
        assert!(!w.covers_root());
    }
}
