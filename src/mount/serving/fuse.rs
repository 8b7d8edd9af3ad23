//! The `fuser::Filesystem` wrapper around `NovelFs`: it translates
//! requests into calls of the tree and its plain values into replies, and
//! nothing else. How a request runs (thread, deadline, panic guard) is
//! `runner`'s; what a listing's pieces hold is the tree's
//! (`NovelFs::send_listing`); who may do what is `access`'s.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use fuser::{
    AccessFlags, FileAttr, FileHandle, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    IoctlFlags, KernelConfig, LockOwner, OpenAccMode, OpenFlags, ReplyAttr, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyIoctl, ReplyOpen, ReplyStatfs,
    Request,
};

use super::deadline::Armed;
use super::pusher::send_store;
use super::replies::{Filling, ListingReply, Owner};
use super::runner::{Fails, Runner, answer, guarded};
use crate::mount::access::permits;
use novelfs_fs::{Attr, Detail, DirCache, Entry, Error, Kind, NovelFs, ROOT_INO};
use novelfs_kit::lock;

/// Cloned into the requests that run on a spare thread (see `runner`).
#[derive(Clone)]
pub(crate) struct FuseAdapter {
    fs: Arc<NovelFs>,
    runner: Runner,
    /// The root's attributes as last given: what `stat MNT` gets at once
    /// while the source does not answer.
    root_attr: Arc<Mutex<Option<Attr>>>,
    /// Whose the nodes are and which mode bits they keep.
    owner: Owner,
    /// How pages are stored into the kernel's page cache on a request's
    /// thread (on a page's IOCTL, at the end of a chapter directory's
    /// listing); set once the session has one.
    notifier: Arc<OnceLock<fuser::Notifier>>,
}

impl FuseAdapter {
    /// Served by `workers` fuser threads, each request waiting at most
    /// `source_timeout` for the library's filesystem.
    pub(crate) fn new(fs: Arc<NovelFs>, workers: usize, source_timeout: Duration) -> Self {
        let source = fs.library().display_dir(None);
        FuseAdapter {
            fs,
            runner: Runner::new(source, workers, source_timeout),
            root_attr: Arc::default(),
            owner: Owner::mounting_user(),
            notifier: Arc::default(),
        }
    }

    pub(crate) fn with_mode_mask(mut self, mask: u16) -> Self {
        self.owner.mode_mask = mask;
        self
    }

    /// Where the session's notifier goes once there is one.
    pub(crate) fn notifier_slot(&self) -> Arc<OnceLock<fuser::Notifier>> {
        self.notifier.clone()
    }

    /// Runs `job` for a request that asks `what` (see `Runner::run`).
    fn serve<R: Fails>(
        &self,
        reply: R,
        what: impl std::hash::Hash,
        job: impl FnOnce(&FuseAdapter, &Armed<R>) + Send + 'static,
    ) {
        let asks = self.runner.asks(&what);
        self.runner.run(self, reply, None, asks, R::stuck, job);
    }

    /// Runs `f` guarded, then answers with `send` if the reply is still
    /// this request's to give (see `runner::answer`).
    fn answer<T, R: Fails>(
        &self,
        reply: &Armed<R>,
        (op, ino): (&str, INodeNo),
        f: impl FnOnce() -> Result<T, Error>,
        send: impl FnOnce(R, T),
    ) {
        answer(
            reply,
            || format!("{op} {}", self.fs.describe(ino.0)),
            f,
            send,
        )
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

    fn attr(&self, a: &Attr) -> FileAttr {
        self.owner.attr(a)
    }
}

/// How long `stat MNT` waits for the source before it gets the root's
/// last attributes.
const ROOT_ANSWER: Duration = Duration::from_millis(500);

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
            Ok(Entry::Missing(ttl)) if ttl.is_zero() => reply.fail(Error::NotFound),
            // Node id 0: the kernel keeps a negative entry for `ttl`.
            Ok(Entry::Missing(ttl)) => reply.entry(&ttl, &self.owner.missing_attr(), Generation(0)),
            Err(e) => reply.fail(e),
        }
    }

    fn serve_getattr(&self, ino: INodeNo, reply: &Armed<ReplyAttr>) {
        self.answer(
            reply,
            ("getattr", ino),
            || self.fs.getattr(ino.0),
            |r, a| {
                if ino.0 == ROOT_INO {
                    *lock(&self.root_attr) = Some(a);
                }
                r.attr(&a.ttl, &self.attr(&a))
            },
        );
    }

    /// Both listings continue the listing their offset names (see
    /// `NovelFs::listing`) and give each entry an inode only when it is sent.
    fn serve_listing<R: ListingReply>(&self, ino: INodeNo, offset: u64, reply: &Armed<R>) {
        let what = || format!("readdir {}", self.fs.describe(ino.0));
        let listing = guarded(what, || self.fs.listing(ino.0, offset));
        let Some(reply) = reply.take() else { return };
        let listing = match listing {
            Ok(l) => l,
            Err(e) => return reply.fail(e),
        };
        // Past the first reply the reader has it: the pages it reads next are
        // stored now, before it is told the listing ended and goes on to them.
        if R::DETAIL == Detail::Attributes
            && let Some(notifier) = self.notifier.get()
        {
            for store in self.fs.stores_at_listing(ino.0, offset) {
                if !send_store(&self.fs, notifier, store) {
                    break;
                }
            }
        }
        let mut filling = Filling {
            reply,
            owner: self.owner,
        };
        let sent = guarded(what, || {
            self.fs
                .send_listing(ino.0, &listing, R::DETAIL, &mut filling);
            Ok(())
        });
        match sent {
            Ok(()) => filling.reply.done(),
            Err(_) => log::error!("readdir {} failed mid-listing", ino.0),
        }
    }

    fn serve_access(
        &self,
        ino: INodeNo,
        who: (u32, u32),
        mask: AccessFlags,
        reply: &Armed<ReplyEmpty>,
    ) {
        self.answer(
            reply,
            ("access", ino),
            || self.fs.getattr(ino.0),
            |reply, a| {
                if permits(&self.attr(&a), who.0, who.1, mask) {
                    reply.ok()
                } else {
                    reply.fail(Error::Denied)
                }
            },
        );
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
        if let Some(Entry::Missing(ttl)) = self.fs.missing_by_construction(parent.0, name) {
            return reply.entry(&ttl, &self.owner.missing_attr(), Generation(0));
        }
        let name = name.to_owned();
        let asks = ("lookup", parent.0, name.clone());
        self.serve(reply, asks, move |a, r| a.serve_lookup(parent, &name, r));
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.fs.forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        if ino.0 == ROOT_INO {
            // `stat MNT` answers at once, from the last attributes given
            // when the source does not answer in time.
            if self.runner.source_stuck() {
                let a = self.last_root_attr();
                return reply.attr(&a.ttl, &self.attr(&a));
            }
            let me = self.clone();
            let fallback = move |reply: ReplyAttr| {
                let a = me.last_root_attr();
                reply.attr(&a.ttl, &me.attr(&a))
            };
            return self.runner.run(
                self,
                reply,
                Some(ROOT_ANSWER),
                0,
                fallback,
                move |a, reply| a.serve_getattr(ino, reply),
            );
        }
        self.serve(reply, ("getattr", ino.0), move |a, r| {
            a.serve_getattr(ino, r)
        });
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        self.serve(reply, ("readlink", ino.0), move |a, r| {
            a.answer(
                r,
                ("readlink", ino),
                || a.fs.readlink(ino.0),
                |r, t| r.data(t.as_bytes()),
            )
        });
    }

    /// ENOSYS: the kernel then opens every file without asking (and never
    /// sends RELEASE), keeping its page cache: an inode's bytes never
    /// change (see `novelfs_fs::tree`), and everything is read by inode.
    /// Writes never get here: the mount is read-only.
    fn open(&self, _req: &Request, _ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let write = flags.acc_mode() != OpenAccMode::O_RDONLY || flags.0 & libc::O_TRUNC != 0;
        reply.fail(if write {
            Error::ReadOnly
        } else {
            Error::NoHandles
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
        self.serve(reply, ("read", ino.0, offset), move |a, r| {
            let read = || a.fs.read(ino.0, offset, size);
            a.answer(r, ("read", ino), read, |r, bytes| r.data(&bytes))
        });
    }

    /// In a watched mount, ENOSYS: the kernel then opens directories
    /// without asking and keeps their listings, which the watch drops on
    /// change. Otherwise the listing may be kept while it is unchanged.
    fn opendir(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.acc_mode() != OpenAccMode::O_RDONLY {
            return reply.fail(Error::ReadOnly);
        }
        if self.fs.watching() {
            return reply.fail(Error::NoHandles);
        }
        self.serve(reply, ("opendir", ino.0), move |a, r| {
            a.answer(
                r,
                ("opendir", ino),
                || a.fs.opendir(ino.0),
                |r, cache| {
                    let flags = match cache {
                        DirCache::Keep => {
                            FopenFlags::FOPEN_CACHE_DIR | FopenFlags::FOPEN_KEEP_CACHE
                        }
                        DirCache::Refill => FopenFlags::FOPEN_CACHE_DIR,
                        DirCache::Uncached => FopenFlags::empty(),
                    };
                    // No handle: READDIR finds its listing by offset.
                    r.opened(FileHandle(0), flags)
                },
            )
        });
    }

    fn readdir(&self, _: &Request, ino: INodeNo, _: FileHandle, offset: u64, r: ReplyDirectory) {
        self.serve(r, ("readdir", ino.0, offset), move |a, r| {
            a.serve_listing(ino, offset, r)
        });
    }

    fn readdirplus(
        &self,
        _: &Request,
        ino: INodeNo,
        _: FileHandle,
        offset: u64,
        r: ReplyDirectoryPlus,
    ) {
        self.serve(r, ("readdir", ino.0, offset), move |a, r| {
            a.serve_listing(ino, offset, r)
        });
    }

    /// ENOTTY: no page is a terminal. This is the TCGETS of `isatty()`,
    /// which Python's `open()` makes on every file, and on a warm pass the
    /// only request that reaches the daemon; the kernel cannot be told not
    /// to send it (no init flag, and an ENOSYS is not remembered for
    /// ioctls). A page the kernel does not have yet is stored first: the
    /// reader opened it to read it (see `NovelFs::store_on_open`).
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
        self.serve(reply, ("ioctl", ino.0), move |a, reply| {
            if let Some(notifier) = a.notifier.get()
                && let Some(store) = a.fs.store_on_open(ino.0)
            {
                send_store(&a.fs, notifier, store);
            }
            if let Some(reply) = reply.take() {
                reply.fail(Error::NotATerminal);
            }
        });
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        reply.statfs(0, 0, 0, 0, 0, 4096, 255, 4096);
    }

    fn access(&self, req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        if mask.contains(AccessFlags::W_OK) {
            return reply.fail(Error::ReadOnly);
        }
        let who = (req.uid(), req.gid());
        self.serve(reply, ("access", ino.0, mask.bits()), move |a, r| {
            a.serve_access(ino, who, mask, r)
        });
    }

    // getxattr/listxattr stay unimplemented: ENOSYS makes the kernel stop
    // asking (ENODATA would cost `ls -l` three round trips per entry).

    refuse_writes!();
}
