//! A library in a local directory: `readdir`'s file types for names,
//! `lstat` for metadata, files opened without following symlinks, the
//! kernel's page cache asked whether bytes are at hand (`cachestat`) and
//! told what to read ahead (`POSIX_FADV_WILLNEED`, on a thread of its own).
//! Each system call on the library's files is one `access` (what
//! `--source-timeout` bounds); a big read is made in `access::READ_CHUNK`s,
//! so that one access asks the source for a bounded amount.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use novelfs_kit::lock;

use super::{Backing, EntryKind, Meta, Opened, access};

/// Opens the regular file at `path` for reading, without following a
/// symlink or blocking on a FIFO swapped in: one access.
fn open_file(path: &Path) -> io::Result<File> {
    access::one(|| {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
    })
}

/// The metadata of an open file (`fstat`): one access.
fn metadata_of(file: &File) -> io::Result<std::fs::Metadata> {
    access::one(|| file.metadata())
}

/// A library rooted at a local directory (absolute and canonical).
#[derive(Debug)]
pub struct LocalBacking {
    root: PathBuf,
    /// Files for the read-ahead thread, started at the first read-ahead.
    read_ahead: OnceLock<Mutex<Sender<Vec<PathBuf>>>>,
}

impl LocalBacking {
    pub fn new(root: PathBuf) -> LocalBacking {
        LocalBacking {
            root,
            read_ahead: OnceLock::new(),
        }
    }

    fn full(&self, path: &Path) -> PathBuf {
        self.root.join(path)
    }

    /// `f` of the full path of `path`, written into this thread's buffer:
    /// a walk of the library stats every chapter, and a path allocated
    /// (then grown) for each would be a noticeable part of the walk's
    /// time, the threads contending for the allocator's one arena.
    fn at_full<R>(&self, path: &Path, f: impl FnOnce(&Path) -> R) -> R {
        thread_local! {
            static FULL: std::cell::RefCell<PathBuf> = const { std::cell::RefCell::new(PathBuf::new()) };
        }
        FULL.with(|full| match full.try_borrow_mut() {
            Ok(mut full) => {
                full.clear();
                full.push(&self.root);
                full.push(path);
                f(&full)
            }
            // In use further up this thread's stack.
            Err(_) => f(&self.full(path)),
        })
    }

    /// Starts the thread that asks the kernel to read files into its page
    /// cache (`POSIX_FADV_WILLNEED` starts the reads and returns).
    fn start_read_ahead() -> Mutex<Sender<Vec<PathBuf>>> {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<PathBuf>>();
        let spawned = novelfs_kit::thread::spawn("novelfs-readahead", None, move || {
            for path in rx.into_iter().flatten() {
                if let Ok(f) = open_file(&path) {
                    // Not an access: the advice starts reads and
                    // returns, and no request waits on this thread.
                    // SAFETY: advice on an open descriptor; no memory involved.
                    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_WILLNEED) };
                }
            }
        });
        if let Err(e) = spawned {
            log::warn!("no read-ahead thread: {e}");
        }
        Mutex::new(tx)
    }
}

/// Whether an error only says that a path is not there.
fn is_absence(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP)
    )
}

impl Backing for LocalBacking {
    fn list(&self, dir: &Path) -> io::Result<Vec<(OsString, EntryKind)>> {
        let mut names = Vec::new();
        let mut entries = self.at_full(dir, |full| access::one(|| std::fs::read_dir(full)))?;
        // Each step may read a page of the listing (`getdents`), and a file
        // type the listing lacks is an `lstat`: an access each.
        while let Some(entry) = access::one(|| entries.next()) {
            let entry = entry?;
            let kind = match access::one(|| entry.file_type()) {
                Ok(t) if t.is_file() => EntryKind::File,
                Ok(t) if t.is_dir() => EntryKind::Dir,
                _ => continue,
            };
            names.push((entry.file_name(), kind));
        }
        Ok(names)
    }

    fn stat(&self, path: &Path) -> io::Result<Option<Meta>> {
        match self.at_full(path, |full| access::one(|| std::fs::symlink_metadata(full))) {
            Ok(m) => Ok(Meta::from_std(&m)),
            Err(e) if is_absence(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn open(&self, path: &Path) -> io::Result<Option<Box<dyn Opened>>> {
        let f = match self.at_full(path, open_file) {
            Ok(f) => f,
            Err(e) if is_absence(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let meta = match Meta::from_std(&metadata_of(&f)?) {
            Some(m) if m.is_file() => m,
            _ => return Ok(None),
        };
        Ok(Some(Box::new(LocalFile { file: f, meta })))
    }

    fn read_ahead(&self, paths: Vec<PathBuf>) {
        let full = paths.iter().map(|p| self.full(p)).collect();
        let queue = self.read_ahead.get_or_init(Self::start_read_ahead);
        let _ = lock(queue).send(full);
    }

    fn local_root(&self) -> Option<&Path> {
        Some(&self.root)
    }

    fn listing_ttl(&self) -> Option<Duration> {
        None
    }
}

/// An open local file and the metadata of that file (not of its name).
struct LocalFile {
    file: File,
    meta: Meta,
}

impl Opened for LocalFile {
    fn meta(&self) -> &Meta {
        &self.meta
    }

    fn at_hand(&self) -> bool {
        in_page_cache(&self.file, self.meta.len)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        access::read_at(&self.file, buf, offset)
    }

    fn unchanged(&self) -> io::Result<bool> {
        Ok(Meta::from_std(&metadata_of(&self.file)?).as_ref() == Some(&self.meta))
    }
}

/// Whether all of an open file's `len` bytes are in the page cache
/// (false when the kernel cannot tell).
pub fn in_page_cache(f: &File, len: u64) -> bool {
    len == 0 || cached_pages(f, len).is_some_and(|pages| pages >= len.div_ceil(4096))
}

/// How many pages of the first `len` bytes of `f` the page cache holds
/// (`cachestat`, Linux 6.5; `None` before).
pub(crate) fn cached_pages(f: &File, len: u64) -> Option<u64> {
    #[repr(C)]
    struct CachestatRange {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Cachestat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    /// The same number on every architecture (added after the tables
    /// were unified).
    const SYS_CACHESTAT: libc::c_long = 451;
    let range = CachestatRange { off: 0, len };
    let mut stat = Cachestat::default();
    // SAFETY: cachestat reads `range` and writes `stat`, both valid and
    // laid out as the kernel's structs; flags must be 0.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            f.as_raw_fd(),
            &range as *const CachestatRange,
            &mut stat as *mut Cachestat,
            0u32,
        )
    };
    (r == 0).then_some(stat.nr_cache)
}

/// An open local file as the library reads one (what `Backing::open`
/// gives for a local library), for a file opened elsewhere.
pub fn opened_file(file: File) -> io::Result<Box<dyn Opened>> {
    let meta = Meta::from_std(&metadata_of(&file)?)
        .ok_or_else(|| io::Error::other("not a regular file or directory"))?;
    Ok(Box::new(LocalFile { file, meta }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_path_is_the_root_joined_with_the_path_even_nested() {
        let b = LocalBacking::new(PathBuf::from("/lib/root"));
        let (outer, inner) = b.at_full(Path::new("novels/书/第1章.md"), |outer| {
            let inner = b.at_full(Path::new("novels/书"), |inner| inner.to_path_buf());
            (outer.to_path_buf(), inner)
        });
        assert_eq!(outer, Path::new("/lib/root/novels/书/第1章.md"));
        assert_eq!(inner, Path::new("/lib/root/novels/书"));
        // The buffer, reused, holds only the latest path.
        let again = b.at_full(Path::new("novels"), |p| p.to_path_buf());
        assert_eq!(again, Path::new("/lib/root/novels"));
    }

    #[test]
    fn a_file_just_written_is_in_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        std::fs::write(&path, vec![b'x'; 10_000]).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        // Kernels before 6.5 cannot tell: then nothing counts as cached.
        match cached_pages(&f, 10_000) {
            Some(pages) => {
                assert_eq!(pages, 3);
                assert!(in_page_cache(&f, 10_000));
                assert!(!in_page_cache(&f, 1 << 40), "far more than the file holds");
            }
            None => assert!(!in_page_cache(&f, 10_000)),
        }
    }
}
