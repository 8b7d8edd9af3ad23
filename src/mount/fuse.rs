//! The thin `fuser::Filesystem` wrapper around `NovelFs`.
//!
//! Each request runs inside `catch_unwind`: a bug must cost one EIO, not a
//! worker thread (and with it, eventually, the mount).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime};

use fuser::{
    AccessFlags, BsdFileFlags, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, InitFlags, IoctlFlags, KernelConfig, LockOwner, OpenAccMode, OpenFlags, RenameFlags,
    ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry,
    ReplyIoctl, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use super::deadline::{Armed, Asks, Deadlines};
use super::offload::Offload;
use super::process::euid_egid;
use super::pusher::send_store;
use novelfs_fs::{Attr, DirCache, Entry, Errno, Kind, NovelFs, ROOT_INO};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Cloned into the requests that run on a spare thread (see `offload`).
#[derive(Clone)]
pub(crate) struct FuseAdapter {
    fs: Arc<NovelFs>,
    offload: Offload,
    /// Bounds each request's wait for the library's filesystem.
    deadlines: Deadlines,
    /// The root's attributes as last given: what `stat MNT` gets at once
    /// while the source does not answer.
    root_attr: Arc<Mutex<Option<Attr>>>,
    uid: u32,
    gid: u32,
    /// Mode bits every node keeps (owner-only for `allow_root`; see `access`).
    mode_mask: u16,
    /// How pages are stored into the kernel's page cache on a request's
    /// thread (on a page's IOCTL, at the end of a chapter directory's
    /// listing); set once the session has one.
    notifier: Arc<OnceLock<fuser::Notifier>>,
}

impl FuseAdapter {
    pub(crate) fn new(fs: Arc<NovelFs>) -> Self {
        // The mount's owner is the effective user (mount(2) and fusermount3
        // both record it as user_id); the modes are judged against it.
        let (uid, gid) = euid_egid();
        let source = fs.library().display_dir(None);
        FuseAdapter {
            fs,
            offload: Offload::new(1),
            deadlines: Deadlines::new(source, DEFAULT_SOURCE_TIMEOUT),
            root_attr: Arc::default(),
            uid,
            gid,
            mode_mask: 0o777,
            notifier: Arc::default(),
        }
    }

    pub(crate) fn with_mode_mask(mut self, mask: u16) -> Self {
        self.mode_mask = mask;
        self
    }

    /// Where the session's notifier goes once there is one.
    pub(crate) fn notifier_slot(&self) -> Arc<OnceLock<fuser::Notifier>> {
        self.notifier.clone()
    }

    /// Served by `workers` fuser threads.
    pub(crate) fn with_workers(mut self, workers: usize) -> Self {
        self.offload = Offload::new(workers);
        self
    }

    /// Each request waits at most `timeout` for the library's filesystem.
    pub(crate) fn with_source_timeout(mut self, timeout: Duration) -> Self {
        let source = self.fs.library().display_dir(None);
        self.deadlines = Deadlines::new(source, timeout);
        self
    }

    /// Runs a request that may wait on a chapter's load where it keeps a
    /// worker free for the others (see `offload`), its reply bounded by
    /// the source timeout (EIO past it). While the source does not answer
    /// (see `deadline`), requests run only on spare threads, and fail at
    /// once when every spare thread is taken.
    fn serve<R: Fails>(
        &self,
        reply: R,
        asks: Asks,
        job: impl FnOnce(&FuseAdapter, &Armed<R>) + Send + 'static,
    ) {
        self.serve_within(reply, None, asks, R::eio, job);
    }

    fn serve_within<R: Fails>(
        &self,
        reply: R,
        within: Option<Duration>,
        asks: Asks,
        fallback: impl FnOnce(R) + Send + 'static,
        job: impl FnOnce(&FuseAdapter, &Armed<R>) + Send + 'static,
    ) {
        let Some(armed) = self.deadlines.arm(reply, within, asks, fallback) else {
            return;
        };
        let stuck = self.deadlines.source_stuck();
        if stuck && self.offload.saturated() {
            if let Some(reply) = armed.take() {
                reply.eio();
            }
            return;
        }
        self.offload.serve(self, !stuck, move |a| {
            armed.running_here();
            job(a, &armed)
        });
    }

    /// The root's attributes as last given (the epoch before any).
    fn last_root_attr(&self) -> Attr {
        lock(&self.root_attr).unwrap_or(Attr {
            ino: ROOT_INO,
            kind: Kind::Directory,
            size: 0,
            mtime: std::time::UNIX_EPOCH,
            ttl: Duration::ZERO,
        })
    }

    /// The attributes sent with a negative entry (the kernel reads only
    /// its node id, 0).
    fn missing_attr(&self) -> FileAttr {
        self.attr(&Attr {
            ino: 0,
            kind: Kind::File,
            size: 0,
            mtime: std::time::UNIX_EPOCH,
            ttl: std::time::Duration::ZERO,
        })
    }

    fn attr(&self, a: &Attr) -> FileAttr {
        FileAttr {
            ino: INodeNo(a.ino),
            size: a.size,
            blocks: a.blocks(),
            atime: a.mtime,
            mtime: a.mtime,
            ctime: a.mtime,
            crtime: a.mtime,
            kind: kind(a.kind),
            perm: a.perm() & self.mode_mask,
            nlink: if a.kind == Kind::Directory { 2 } else { 1 },
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }
}

/// Whether the mode bits of `attr` grant `mask` to the caller, as the
/// kernel's own check would (`access(2)` reaches us only without
/// `default_permissions`). Root reads everything and may execute what has an
/// execute bit anywhere; others get the owner's or everyone's bits (the
/// group bits equal everyone's on every node we serve).
fn permits(attr: &FileAttr, uid: u32, gid: u32, mask: AccessFlags) -> bool {
    let want = (mask.bits() & 0o7) as u16;
    if uid == 0 {
        return !mask.contains(AccessFlags::X_OK)
            || attr.kind == FileType::Directory
            || attr.perm & 0o111 != 0;
    }
    let granted = if uid == attr.uid {
        attr.perm >> 6
    } else if gid == attr.gid {
        attr.perm >> 3
    } else {
        attr.perm
    } & 0o7;
    granted & want == want
}

/// How long `stat MNT` waits for the source before it gets the root's
/// last attributes.
const ROOT_ANSWER: Duration = Duration::from_millis(500);

/// The source timeout when none is given (`MountConfig` gives one).
const DEFAULT_SOURCE_TIMEOUT: Duration = Duration::from_secs(5);

/// A reply that can be failed with EIO (by a request's deadline).
trait Fails: Send + 'static {
    fn eio(self);
}

macro_rules! fails {
    ($($reply:ty),*) => {$(
        impl Fails for $reply {
            fn eio(self) {
                self.error(fuser::Errno::EIO)
            }
        }
    )*};
}

fails!(
    ReplyEntry,
    ReplyAttr,
    ReplyData,
    ReplyOpen,
    ReplyDirectory,
    ReplyDirectoryPlus,
    ReplyEmpty,
    ReplyIoctl
);

fn errno(code: Errno) -> fuser::Errno {
    fuser::Errno::from_i32(code)
}

/// Runs `f`, turning a panic into EIO (logged with what was being served).
fn guarded<T>(
    what: impl FnOnce() -> String,
    f: impl FnOnce() -> Result<T, Errno>,
) -> Result<T, fuser::Errno> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(errno),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            log::error!("panic while serving {}: {msg}", what());
            Err(fuser::Errno::EIO)
        }
    }
}

fn kind(k: Kind) -> FileType {
    match k {
        Kind::Directory => FileType::Directory,
        Kind::File => FileType::RegularFile,
        Kind::Symlink => FileType::Symlink,
    }
}

/// The requests that may wait on a chapter's load, run by `serve`.
impl FuseAdapter {
    fn serve_lookup(&self, parent: INodeNo, name: &OsStr, reply: &Armed<ReplyEntry>) {
        let r = guarded(
            || format!("lookup {:?} in {}", name, self.fs.describe(parent.0)),
            || self.fs.lookup_entry(parent.0, name),
        );
        let Some(reply) = reply.take() else { return };
        match r {
            Ok(Entry::Found(a)) => reply.entry(&a.ttl, &self.attr(&a), Generation(0)),
            Ok(Entry::Missing(ttl)) if ttl.is_zero() => reply.error(fuser::Errno::ENOENT),
            // Node id 0: the kernel keeps a negative entry for `ttl`.
            Ok(Entry::Missing(ttl)) => reply.entry(&ttl, &self.missing_attr(), Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn serve_getattr(&self, ino: INodeNo, reply: &Armed<ReplyAttr>) {
        let r = guarded(
            || format!("getattr {}", self.fs.describe(ino.0)),
            || self.fs.getattr(ino.0),
        );
        if let (Ok(a), ROOT_INO) = (&r, ino.0) {
            *lock(&self.root_attr) = Some(*a);
        }
        let Some(reply) = reply.take() else { return };
        match r {
            Ok(a) => reply.attr(&a.ttl, &self.attr(&a)),
            Err(e) => reply.error(e),
        }
    }

    fn serve_readlink(&self, ino: INodeNo, reply: &Armed<ReplyData>) {
        let r = guarded(
            || format!("readlink {}", self.fs.describe(ino.0)),
            || self.fs.readlink(ino.0),
        );
        let Some(reply) = reply.take() else { return };
        match r {
            Ok(target) => reply.data(target.as_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn serve_read(&self, ino: INodeNo, offset: u64, size: u32, reply: &Armed<ReplyData>) {
        let r = guarded(
            || format!("read {} at {offset}", self.fs.describe(ino.0)),
            || self.fs.read(ino.0, offset, size),
        );
        let Some(reply) = reply.take() else { return };
        match r {
            Ok(bytes) => reply.data(&bytes),
            Err(e) => reply.error(e),
        }
    }

    fn serve_opendir(&self, ino: INodeNo, reply: &Armed<ReplyOpen>) {
        let r = guarded(
            || format!("opendir {}", self.fs.describe(ino.0)),
            || self.fs.opendir(ino.0),
        );
        let Some(reply) = reply.take() else { return };
        match r {
            Ok(cache) => {
                let flags = match cache {
                    DirCache::Keep => FopenFlags::FOPEN_CACHE_DIR | FopenFlags::FOPEN_KEEP_CACHE,
                    DirCache::Refill => FopenFlags::FOPEN_CACHE_DIR,
                    DirCache::Uncached => FopenFlags::empty(),
                };
                // No handle: READDIR finds its listing by offset.
                reply.opened(FileHandle(0), flags)
            }
            Err(e) => reply.error(e),
        }
    }

    fn serve_readdir(&self, ino: INodeNo, offset: u64, reply: &Armed<ReplyDirectory>) {
        let listing = guarded(
            || format!("readdir {}", self.fs.describe(ino.0)),
            || self.fs.listing(ino.0, offset),
        );
        let Some(mut reply) = reply.take() else {
            return;
        };
        let listing = match listing {
            Ok(l) => l,
            Err(e) => return reply.error(e),
        };
        let entries = &listing.entries;
        let r = guarded(
            || format!("readdir {}", self.fs.describe(ino.0)),
            || {
                let dots = [
                    (ino.0, FileType::Directory, OsStr::new(".")),
                    (ino.0, FileType::Directory, OsStr::new("..")),
                ];
                let rest = entries
                    .iter()
                    .map(|e| (0, kind(e.kind), e.name.as_os_str()));
                for (i, (dot_ino, kind, name)) in
                    dots.into_iter().chain(rest).enumerate().skip(listing.start)
                {
                    let ino = if i < 2 {
                        dot_ino
                    } else {
                        self.fs.listed_ino(&entries[i - 2])
                    };
                    if reply.add(INodeNo(ino), listing.offset_after(i), kind, name) {
                        break;
                    }
                }
                Ok(reply)
            },
        );
        match r {
            Ok(reply) => reply.ok(),
            Err(_) => log::error!("readdir {} failed mid-listing", ino.0),
        }
    }

    fn serve_readdirplus(&self, ino: INodeNo, offset: u64, reply: &Armed<ReplyDirectoryPlus>) {
        let listing = guarded(
            || format!("readdirplus {}", self.fs.describe(ino.0)),
            || self.fs.listing(ino.0, offset),
        );
        let Some(mut reply) = reply.take() else {
            return;
        };
        let listing = match listing {
            Ok(l) => l,
            Err(e) => return reply.error(e),
        };
        // Past the first reply the reader has it: the pages it reads next are
        // stored now, before it is told the listing ended and goes on to them.
        if let Some(notifier) = self.notifier.get() {
            for store in self.fs.stores_at_listing(ino.0, offset) {
                if !send_store(&self.fs, notifier, store) {
                    break;
                }
            }
        }
        let entries = &listing.entries;
        // The kernel skips the attributes of "." and ".." in a READDIRPLUS
        // reply (`fuse_direntplus_link`), and only their inode number
        // reaches the caller: none are looked up for them (a `getattr` per
        // piece was a tenth of a cold listing).
        let dir_attr = Attr {
            ino: ino.0,
            kind: Kind::Directory,
            size: 0,
            mtime: std::time::UNIX_EPOCH,
            ttl: std::time::Duration::ZERO,
        };
        let r = guarded(
            || format!("readdirplus {}", self.fs.describe(ino.0)),
            || {
                for i in listing.start..entries.len() + 2 {
                    let (name, attr, ttl) = if i < 2 {
                        ([".", ".."][i].as_ref(), self.attr(&dir_attr), dir_attr.ttl)
                    } else {
                        let e = &entries[i - 2];
                        // Vanished since the listing: skipped (offsets stay those of the listing).
                        let Some(a) = self.fs.listed_plus(e) else {
                            continue;
                        };
                        (e.name.as_os_str(), self.attr(&a), a.ttl)
                    };
                    if reply.add(
                        attr.ino,
                        listing.offset_after(i),
                        name,
                        &ttl,
                        &attr,
                        Generation(0),
                    ) {
                        // Not sent: the kernel will not forget what it never got.
                        if i >= 2 {
                            self.fs.forget(attr.ino.0, 1);
                        }
                        break;
                    }
                }
                Ok(reply)
            },
        );
        match r {
            Ok(reply) => reply.ok(),
            Err(_) => log::error!("readdirplus {} failed mid-listing", ino.0),
        }
    }

    fn serve_access(
        &self,
        ino: INodeNo,
        uid: u32,
        gid: u32,
        mask: AccessFlags,
        reply: &Armed<ReplyEmpty>,
    ) {
        let r = guarded(
            || format!("access {}", self.fs.describe(ino.0)),
            || self.fs.getattr(ino.0),
        );
        let Some(reply) = reply.take() else { return };
        match r {
            Ok(a) => {
                let attr = self.attr(&a);
                if permits(&attr, uid, gid, mask) {
                    reply.ok()
                } else {
                    reply.error(fuser::Errno::EACCES)
                }
            }
            Err(e) => reply.error(e),
        }
    }
}

impl Filesystem for FuseAdapter {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // READDIRPLUS for every piece of a listing, not only the first
        // (what READDIRPLUS_AUTO does): `find` and `cat` of a listed
        // directory then cost no LOOKUP per entry.
        for flag in [
            InitFlags::FUSE_PARALLEL_DIROPS,
            InitFlags::FUSE_DO_READDIRPLUS,
            InitFlags::FUSE_CACHE_SYMLINKS,
        ] {
            // A kernel without one of these still works, only slower.
            let _ = config.add_capabilities(flag);
        }
        let _ = config.set_max_readahead(128 * 1024);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let name = name.to_owned();
        let asks = self.deadlines.asks(&("lookup", parent.0, &name));
        self.serve(reply, asks, move |a, reply| {
            a.serve_lookup(parent, &name, reply)
        });
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.fs.forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        if ino.0 == ROOT_INO {
            // `stat MNT` answers at once, from the last attributes given
            // when the source does not answer in time.
            if self.deadlines.source_stuck() {
                let a = self.last_root_attr();
                return reply.attr(&a.ttl, &self.attr(&a));
            }
            let me = self.clone();
            let fallback = move |reply: ReplyAttr| {
                let a = me.last_root_attr();
                reply.attr(&a.ttl, &me.attr(&a))
            };
            return self.serve_within(reply, Some(ROOT_ANSWER), 0, fallback, move |a, reply| {
                a.serve_getattr(ino, reply)
            });
        }
        self.serve(
            reply,
            self.deadlines.asks(&("getattr", ino.0)),
            move |a, reply| a.serve_getattr(ino, reply),
        );
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        self.serve(
            reply,
            self.deadlines.asks(&("readlink", ino.0)),
            move |a, reply| a.serve_readlink(ino, reply),
        );
    }

    /// ENOSYS: the kernel then opens every file without asking (and never
    /// sends RELEASE), keeping its page cache: an inode's bytes never
    /// change (see `novelfs_fs::tree`), and everything is read by inode. Writes never
    /// get here: the mount is read-only.
    fn open(&self, _req: &Request, _ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let write = flags.acc_mode() != OpenAccMode::O_RDONLY || flags.0 & libc::O_TRUNC != 0;
        reply.error(if write {
            fuser::Errno::EROFS
        } else {
            fuser::Errno::ENOSYS
        })
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.serve(
            reply,
            self.deadlines.asks(&("read", ino.0, offset)),
            move |a, reply| a.serve_read(ino, offset, size, reply),
        );
    }

    /// In a watched mount, ENOSYS: the kernel then opens directories
    /// without asking and keeps their listings, which the watch drops on
    /// change. Otherwise the listing may be kept while it is unchanged.
    fn opendir(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.acc_mode() != OpenAccMode::O_RDONLY {
            return reply.error(fuser::Errno::EROFS);
        }
        if self.fs.watching() {
            return reply.error(fuser::Errno::ENOSYS);
        }
        self.serve(
            reply,
            self.deadlines.asks(&("opendir", ino.0)),
            move |a, reply| a.serve_opendir(ino, reply),
        );
    }

    // Both listings continue the listing their offset names (see
    // `NovelFs::listing`) and give each entry an inode only when it is sent.

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        reply: ReplyDirectory,
    ) {
        self.serve(
            reply,
            self.deadlines.asks(&("readdir", ino.0, offset)),
            move |a, reply| a.serve_readdir(ino, offset, reply),
        );
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        reply: ReplyDirectoryPlus,
    ) {
        self.serve(
            reply,
            self.deadlines.asks(&("readdir", ino.0, offset)),
            move |a, reply| a.serve_readdirplus(ino, offset, reply),
        );
    }

    /// ENOTTY at once, touching nothing: no page is a terminal or a device.
    /// The kernel forwards every ioctl it does not know on a regular file,
    /// above all the TCGETS of `isatty()`, which Python's `open()` makes on
    /// every file: on a warm pass this is the only request that reaches
    /// the daemon. Nothing stops the kernel from sending it (there is no
    /// init flag, and it does not remember an ENOSYS for ioctls as it does
    /// for OPEN: it only turns it into ENOTTY for the caller), so the
    /// answer is ENOTTY, touching nothing but one lookup for a page the
    /// kernel already has; fuser's default would also log a warning per
    /// request. A page it does not have yet is stored first: the reader
    /// opened it to read it (see `NovelFs::store_on_open`).
    fn ioctl(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _flags: IoctlFlags,
        _cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: ReplyIoctl,
    ) {
        self.serve(
            reply,
            self.deadlines.asks(&("ioctl", ino.0)),
            move |a, reply| {
                if let Some(notifier) = a.notifier.get()
                    && let Some(store) = a.fs.store_on_open(ino.0)
                {
                    send_store(&a.fs, notifier, store);
                }
                if let Some(reply) = reply.take() {
                    reply.error(fuser::Errno::ENOTTY);
                }
            },
        );
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        reply.statfs(0, 0, 0, 0, 0, 4096, 255, 4096);
    }

    fn access(&self, req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        if mask.contains(AccessFlags::W_OK) {
            return reply.error(fuser::Errno::EROFS);
        }
        let (uid, gid) = (req.uid(), req.gid());
        self.serve(
            reply,
            self.deadlines.asks(&("access", ino.0, mask.bits())),
            move |a, reply| a.serve_access(ino, uid, gid, mask, reply),
        );
    }

    // getxattr/listxattr stay unimplemented: ENOSYS makes the kernel stop
    // asking (ENODATA would cost `ls -l` three round trips per entry).

    // Everything that would change the tree is refused: the library is the
    // source of truth and the mount is a view of it.

    fn setattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        reply.error(fuser::Errno::EROFS);
    }

    fn mknod(
        &self,
        _req: &Request,
        _p: INodeNo,
        _n: &OsStr,
        _m: u32,
        _u: u32,
        _r: u32,
        reply: ReplyEntry,
    ) {
        reply.error(fuser::Errno::EROFS);
    }

    fn mkdir(&self, _req: &Request, _p: INodeNo, _n: &OsStr, _m: u32, _u: u32, reply: ReplyEntry) {
        reply.error(fuser::Errno::EROFS);
    }

    fn unlink(&self, _req: &Request, _p: INodeNo, _n: &OsStr, reply: ReplyEmpty) {
        reply.error(fuser::Errno::EROFS);
    }

    fn rmdir(&self, _req: &Request, _p: INodeNo, _n: &OsStr, reply: ReplyEmpty) {
        reply.error(fuser::Errno::EROFS);
    }

    fn symlink(&self, _req: &Request, _p: INodeNo, _n: &OsStr, _t: &Path, reply: ReplyEntry) {
        reply.error(fuser::Errno::EROFS);
    }

    fn rename(
        &self,
        _req: &Request,
        _p: INodeNo,
        _n: &OsStr,
        _np: INodeNo,
        _nn: &OsStr,
        _f: RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(fuser::Errno::EROFS);
    }

    fn link(&self, _req: &Request, _ino: INodeNo, _np: INodeNo, _nn: &OsStr, reply: ReplyEntry) {
        reply.error(fuser::Errno::EROFS);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _data: &[u8],
        _wf: WriteFlags,
        _flags: OpenFlags,
        _lo: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        reply.error(fuser::Errno::EROFS);
    }

    fn create(
        &self,
        _req: &Request,
        _p: INodeNo,
        _n: &OsStr,
        _m: u32,
        _u: u32,
        _f: i32,
        reply: ReplyCreate,
    ) {
        reply.error(fuser::Errno::EROFS);
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _n: &OsStr,
        _v: &[u8],
        _f: i32,
        _p: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(fuser::Errno::EROFS);
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _n: &OsStr, reply: ReplyEmpty) {
        reply.error(fuser::Errno::EROFS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_follows_the_mode_bits() {
        let fs = Arc::new(NovelFs::new(
            novelfs_library::Library::open(Path::new("/")).unwrap(),
            Default::default(),
        ));
        let adapter = FuseAdapter::new(fs);
        let node = |kind| Attr {
            ino: 2,
            kind,
            size: 1,
            mtime: SystemTime::UNIX_EPOCH,
            ttl: std::time::Duration::ZERO,
        };
        let page = adapter.attr(&node(Kind::File));
        let dir = adapter.attr(&node(Kind::Directory));
        let (r, x) = (AccessFlags::R_OK, AccessFlags::X_OK);
        let stranger = (page.uid.wrapping_add(1), page.gid.wrapping_add(1));
        for (uid, gid) in [(0, 0), (page.uid, page.gid), stranger] {
            assert!(permits(&page, uid, gid, r), "uid {uid} reads a page");
            assert!(permits(&page, uid, gid, AccessFlags::F_OK));
            assert!(!permits(&page, uid, gid, x), "uid {uid} executes a page");
            assert!(!permits(&page, uid, gid, r | x));
            assert!(permits(&dir, uid, gid, r | x), "uid {uid} enters a dir");
        }
        let owner_only = FileAttr {
            perm: 0o400,
            ..page
        };
        assert!(permits(&owner_only, page.uid, page.gid, r));
        assert!(!permits(&owner_only, stranger.0, stranger.1, r));
        assert!(permits(&owner_only, 0, 0, r));
    }

    /// The handler panic planted below prints nothing in the test log.
    #[test]
    fn planted_panics_stay_out_of_the_test_log() {
        novelfs_fs::test_util::assert_planted_panics_stay_quiet(&[(
            "a_panic_in_a_handler_becomes_eio",
            "boom",
        )]);
    }

    #[test]
    fn a_panic_in_a_handler_becomes_eio() {
        novelfs_fs::test_util::quiet_panics("boom");
        let r: Result<(), fuser::Errno> = guarded(
            || "read /书/第1章.md/offset-1.txt".into(),
            || panic!("boom"),
        );
        assert_eq!(r, Err(fuser::Errno::EIO));
        let r: Result<u8, fuser::Errno> =
            guarded(|| unreachable!("only built on panic"), || Err(libc::ENOENT));
        assert_eq!(r, Err(fuser::Errno::ENOENT));
        assert_eq!(guarded(String::new, || Ok(7)), Ok(7));
    }
}
