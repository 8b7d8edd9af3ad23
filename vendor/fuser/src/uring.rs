//! FUSE over io_uring (Linux 6.14 and later, `CONFIG_FUSE_IO_URING`, switched
//! on by `/sys/module/fuse/parameters/enable_uring`).
//!
//! The kernel keeps one queue per possible CPU and hands a request to the
//! queue of the CPU its caller runs on. Each queue here is served by threads
//! pinned to that CPU, each with its own ring (created with 128-byte SQEs)
//! and a few entries: a header buffer and a payload buffer registered with
//! `FUSE_IO_URING_CMD_REGISTER`. A request arrives as the completion of an
//! entry's command; its reply is written into the same buffers and sent back
//! with `FUSE_IO_URING_CMD_COMMIT_AND_FETCH`, which also re-arms the entry.
//! The request travels from the caller's CPU to a thread on the same CPU, so
//! no other (possibly halted) CPU has to be woken: that is the gain over the
//! `/dev/fuse` read/write loop.
//!
//! `/dev/fuse` stays in use for what the kernel still sends there (INIT,
//! FORGET, BATCH_FORGET, INTERRUPT) and for notifications.
//!
//! The kernel holds every request while the flag is accepted and a queue has
//! no entry yet, so the rings are built (and their threads started and
//! pinned) before INIT is answered; the flag is only accepted when all of
//! them are ready. Entries are registered once the filesystem is served
//! (`Session::run`): the kernel refuses registration before INIT is answered.

use std::fs;
use std::io;
use std::io::IoSlice;
use std::os::fd::AsFd;
use std::os::fd::AsRawFd;
use std::os::fd::RawFd;
use std::panic::AssertUnwindSafe;
use std::panic::catch_unwind;
use std::ptr;
use std::sync::Arc;
use std::sync::Condvar;
use std::sync::Mutex;
use std::sync::mpsc;
use std::thread;
use std::thread::JoinHandle;

use io_uring::IoUring;
use io_uring::cqueue;
use io_uring::opcode;
use io_uring::squeue;
use io_uring::types;
use log::debug;
use log::error;
use log::info;
use log::warn;

use crate::Filesystem;
use crate::channel::Channel;
use crate::ll::fuse_abi::FUSE_IO_URING_CMD_COMMIT_AND_FETCH as CMD_COMMIT_AND_FETCH;
use crate::ll::fuse_abi::FUSE_IO_URING_CMD_REGISTER as CMD_REGISTER;
use crate::ll::fuse_abi::consts::FUSE_MIN_READ_BUFFER;
use crate::ll::fuse_abi::fuse_in_header;
use crate::ll::fuse_abi::fuse_opcode;
use crate::ll::fuse_abi::fuse_out_header;
use crate::ll::fuse_abi::fuse_uring_req_header as RingHeader;
use crate::request::RequestWithSender;
use crate::session::SessionEventLoop;

/// Whether a session serves requests through FUSE over io_uring.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum IoUringMode {
    /// Only the `/dev/fuse` read/write loop.
    #[default]
    Off,
    /// io_uring when the kernel offers it and the rings can be set up;
    /// otherwise the `/dev/fuse` loop.
    Auto,
    /// io_uring or no session: the handshake fails when the kernel does not
    /// offer it or the rings cannot be set up.
    On,
}

/// How to turn FUSE over io_uring on, for error messages.
pub(crate) const ENABLE_HINT: &str = "enable it as root with `echo Y > /sys/module/fuse/parameters/enable_uring` \
     (or boot with fuse.enable_uring=1)";

const IN_HEADER_LEN: usize = size_of::<fuse_in_header>();
const OUT_HEADER_LEN: usize = size_of::<fuse_out_header>();
/// The kernel's minimum payload buffer.
const MIN_PAYLOAD: usize = FUSE_MIN_READ_BUFFER;
const PAGE: usize = 4096;
/// Byte offset of `len` in `struct io_uring_sqe`.
const SQE_LEN_OFFSET: usize = 24;
/// Entries (outstanding commands) per ring. A thread serves one request
/// at a time, and the kernel hands a request to any available entry of the
/// caller's queue: a second entry of a busy thread would make a request
/// wait behind a slow one while another thread of the queue is idle. With
/// one entry per thread, requests that find every thread busy wait in the
/// kernel for the first entry committed.
const DEPTH: usize = 1;

/// Logs why `IoUringMode::Auto` serves through `/dev/fuse`: offered but
/// not to be had is worth a warning; not offered (the kernel switch off)
/// is the usual case, told at debug level only (the mounted line names
/// the transport).
pub(crate) fn not_used(e: &io::Error, offered: bool) {
    if offered {
        warn!("FUSE over io_uring not used ({e}): serving through /dev/fuse");
    } else {
        debug!("FUSE over io_uring not used ({e}): serving through /dev/fuse");
    }
}

/// The number of queues the kernel makes: one per possible CPU. Unknown
/// (no sysfs) means no io_uring: a queue left unregistered would hold every
/// request.
pub(crate) fn possible_cpus() -> io::Result<usize> {
    const POSSIBLE: &str = "/sys/devices/system/cpu/possible";
    let list = fs::read_to_string(POSSIBLE)?;
    count_cpu_list(list.trim()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{POSSIBLE} holds {list:?}"),
        )
    })
}

/// Counts the CPUs of a kernel CPU list such as `0-3,5`.
fn count_cpu_list(s: &str) -> Option<usize> {
    let mut n = 0;
    for part in s.split(',') {
        n += match part.split_once('-') {
            Some((a, b)) => b.parse::<usize>().ok()?.checked_sub(a.parse().ok()?)? + 1,
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
    }
    (n > 0).then_some(n)
}

/// The payload buffer the kernel requires of every entry (`max_payload_sz`
/// in `fs/fuse/dev_uring.c`), from what INIT is answered with.
pub(crate) fn payload_size(max_write: u32, max_pages: u16) -> usize {
    MIN_PAYLOAD
        .max(max_write as usize)
        .max(max_pages as usize * PAGE)
}

/// One registered entry: a private anonymous mapping holding the header
/// (first page) and the payload buffer. Pages are only backed once touched.
struct Ent {
    base: *mut u8,
    map_len: usize,
    payload_cap: usize,
    /// What REGISTER points the kernel at; must stay put while registered.
    iov: Box<[libc::iovec; 2]>,
    slot: ReplySlot,
}

// SAFETY: the mapping is owned by the entry and used by one thread at a time
// (the ring thread, or a reply sender while the ring thread waits for it).
unsafe impl Send for Ent {}

impl Ent {
    fn new(payload_cap: usize) -> io::Result<Ent> {
        let map_len = PAGE + payload_cap.div_ceil(PAGE) * PAGE;
        // SAFETY: a fresh private anonymous mapping, checked below.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = base.cast::<u8>();
        let iov = Box::new([
            libc::iovec {
                iov_base: base.cast(),
                iov_len: size_of::<RingHeader>(),
            },
            libc::iovec {
                // SAFETY: within the mapping.
                iov_base: unsafe { base.add(PAGE) }.cast(),
                iov_len: payload_cap,
            },
        ]);
        // SAFETY: within the mapping (PAGE bytes of header, then the payload).
        let slot = ReplySlot::new(base.cast(), unsafe { base.add(PAGE) }, payload_cap);
        Ok(Ent {
            base,
            map_len,
            payload_cap,
            iov,
            slot,
        })
    }

    fn header(&self) -> *mut RingHeader {
        self.base.cast()
    }

    fn payload(&self) -> *mut u8 {
        // SAFETY: within the mapping.
        unsafe { self.base.add(PAGE) }
    }
}

impl Drop for Ent {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; the ring using it is gone.
        unsafe { libc::munmap(self.base.cast(), self.map_len) };
    }
}

struct SlotState {
    header: *mut RingHeader,
    payload: *mut u8,
    payload_cap: usize,
    /// The request being served; a reply for another is refused.
    unique: u64,
    replied: bool,
    /// The ring thread waits for a reply sent from elsewhere (waking it
    /// costs a futex call, which a reply made while serving does not need).
    waiting: bool,
}

/// Where the reply to a request served through io_uring goes: the buffers
/// of its entry. A reply sent from another thread is written there while
/// the ring thread waits for it.
#[derive(Clone)]
pub(crate) struct ReplySlot(Arc<(Mutex<SlotState>, Condvar)>);

// SAFETY: the raw pointers are only dereferenced under the mutex, and the
// ring thread does not touch the buffers between `arm` and `wait`.
unsafe impl Send for SlotState {}

impl std::fmt::Debug for ReplySlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplySlot")
    }
}

impl ReplySlot {
    fn new(header: *mut RingHeader, payload: *mut u8, payload_cap: usize) -> ReplySlot {
        ReplySlot(Arc::new((
            Mutex::new(SlotState {
                header,
                payload,
                payload_cap,
                unique: 0,
                replied: true,
                waiting: false,
            }),
            Condvar::new(),
        )))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.0.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn arm(&self, unique: u64) {
        let mut s = self.lock();
        s.unique = unique;
        s.replied = false;
    }

    fn replied(&self) -> bool {
        self.lock().replied
    }

    fn wait(&self) {
        let mut s = self.lock();
        while !s.replied {
            s.waiting = true;
            s = self.0.1.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.waiting = false;
    }

    /// Writes a reply (`fuse_out_header` then its payload, as one list of
    /// slices) into the entry.
    pub(crate) fn send(&self, data: &[IoSlice<'_>]) -> io::Result<()> {
        let mut s = self.lock();
        if s.replied {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a reply for an io_uring request that was already answered",
            ));
        }
        let total: usize = data.iter().map(|d| d.len()).sum();
        let bytes = || data.iter().flat_map(|d| d.iter().copied());
        let mut out = [0u8; OUT_HEADER_LEN];
        for (o, b) in out.iter_mut().zip(bytes()) {
            *o = b;
        }
        let unique = u64::from_ne_bytes(out[8..16].try_into().unwrap());
        if total < OUT_HEADER_LEN || unique != s.unique {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("reply for request {unique} on the entry of {}", s.unique),
            ));
        }
        let payload_sz = total - OUT_HEADER_LEN;
        if payload_sz > s.payload_cap {
            error!("io_uring reply of {total} bytes does not fit the entry; answering EIO");
            out = errno_header(unique, libc::EIO);
        } else {
            let mut at = 0;
            for d in data {
                let skip = OUT_HEADER_LEN.saturating_sub(at).min(d.len());
                let rest = &d[skip..];
                let off = (at + skip) - OUT_HEADER_LEN.min(at + skip);
                // SAFETY: off + rest.len() <= payload_sz <= payload_cap.
                unsafe {
                    ptr::copy_nonoverlapping(rest.as_ptr(), s.payload.add(off), rest.len());
                }
                at += d.len();
            }
        }
        let payload_sz = if payload_sz > s.payload_cap {
            0
        } else {
            payload_sz
        };
        // SAFETY: the header is the entry's, not read by the ring thread now.
        unsafe {
            let h = &mut *s.header;
            h.in_out[..OUT_HEADER_LEN].copy_from_slice(&out);
            h.ring_ent_in_out.payload_sz = payload_sz as u32;
        }
        s.replied = true;
        if s.waiting {
            self.0.1.notify_all();
        }
        Ok(())
    }
}

/// Builds the 128-byte SQE of a FUSE io_uring command.
fn command(
    fd: RawFd,
    cmd_op: u32,
    qid: u16,
    commit_id: u64,
    ent: &Ent,
    idx: usize,
) -> squeue::Entry128 {
    // struct fuse_uring_cmd_req { u64 flags; u64 commit_id; u16 qid; u8 pad[6]; }
    let mut cmd = [0u8; 80];
    cmd[8..16].copy_from_slice(&commit_id.to_ne_bytes());
    cmd[16..18].copy_from_slice(&qid.to_ne_bytes());
    let mut op = opcode::UringCmd80::new(types::Fd(fd), cmd_op).cmd(cmd);
    if cmd_op == CMD_REGISTER {
        op = op.addr(Some(ent.iov.as_ptr() as u64));
    }
    let mut sqe = op.build().user_data(idx as u64);
    if cmd_op == CMD_REGISTER {
        // REGISTER wants the iovec count in sqe->len, which the builder of
        // UringCmd80 has no field for. Entry128 is repr(C): the 64-byte
        // struct io_uring_sqe, then the second half of the command area.
        // SAFETY: SQE_LEN_OFFSET + 4 is within the first 64 bytes.
        unsafe {
            let p = ptr::from_mut(&mut sqe).cast::<u8>();
            p.add(SQE_LEN_OFFSET).cast::<u32>().write_unaligned(2);
        }
    }
    sqe
}

fn pin_to(cpu: usize) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET stays in its bounds for
    // cpu < CPU_SETSIZE, checked first.
    unsafe {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

enum Start<FS: Filesystem> {
    Serve(SessionEventLoop<FS>),
}

/// The rings of a session, built before INIT is answered, their threads
/// waiting to be told to register and serve.
pub(crate) struct Rings<FS: Filesystem> {
    starts: Vec<mpsc::Sender<Start<FS>>>,
    threads: Vec<JoinHandle<()>>,
    queues: usize,
    per_queue: usize,
}

impl<FS: Filesystem> std::fmt::Debug for Rings<FS> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Rings({} queues x {} threads)",
            self.queues, self.per_queue
        )
    }
}

impl<FS: Filesystem> Rings<FS> {
    /// Builds one ring per thread, `per_queue` threads per possible CPU, each
    /// pinned to its CPU (a CPU this process may not run on leaves its
    /// threads unpinned; its queue still has to be registered). Fails if any
    /// ring or buffer cannot be made: then none is left.
    pub(crate) fn prepare(ch: &Channel, per_queue: usize, payload_cap: usize) -> io::Result<Self> {
        let queues = possible_cpus()?;
        let per_queue = per_queue.max(1);
        if queues > usize::from(u16::MAX) {
            return Err(io::Error::other(format!("{queues} CPUs: too many queues")));
        }
        let fd = ch.as_fd().as_raw_fd();
        let (ready_tx, ready_rx) = mpsc::channel::<io::Result<()>>();
        let mut starts = Vec::new();
        let mut threads = Vec::new();
        let mut failure = None;
        'spawn: for qid in 0..queues {
            for t in 0..per_queue {
                let (start_tx, start_rx) = mpsc::channel::<Start<FS>>();
                let ready = ready_tx.clone();
                let spawned = thread::Builder::new()
                    .name(format!("fuser-uring-{qid}.{t}"))
                    .spawn(move || queue_thread(fd, qid as u16, payload_cap, ready, start_rx));
                match spawned {
                    Ok(h) => {
                        starts.push(start_tx);
                        threads.push(h);
                    }
                    Err(e) => {
                        failure = Some(e);
                        break 'spawn;
                    }
                }
            }
        }
        drop(ready_tx);
        for _ in 0..threads.len() {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    failure.get_or_insert(e);
                }
                Err(_) => {
                    failure.get_or_insert(io::Error::other("an io_uring thread ended"));
                }
            }
        }
        let rings = Rings {
            starts,
            threads,
            queues,
            per_queue,
        };
        match failure {
            // Dropping the rings tells every thread to free its ring and end.
            Some(e) => Err(e),
            None => Ok(rings),
        }
    }

    pub(crate) fn queues(&self) -> usize {
        self.queues
    }

    /// Registers every entry and serves; `event_loop` makes each thread's
    /// view of the session.
    pub(crate) fn start(&mut self, mut event_loop: impl FnMut(String) -> SessionEventLoop<FS>) {
        for (i, tx) in self.starts.drain(..).enumerate() {
            let name = format!("fuser-uring-{}.{}", i / self.per_queue, i % self.per_queue);
            // A thread that already ended has said why.
            let _ = tx.send(Start::Serve(event_loop(name)));
        }
        info!(
            "FUSE over io_uring: {} queues, {} thread(s) each",
            self.queues, self.per_queue
        );
    }

    /// Waits for every ring thread to end (the connection has gone).
    pub(crate) fn join(&mut self) {
        self.starts.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl<FS: Filesystem> Drop for Rings<FS> {
    fn drop(&mut self) {
        self.join();
    }
}

fn queue_thread<FS: Filesystem>(
    fuse_fd: RawFd,
    qid: u16,
    payload_cap: usize,
    ready: mpsc::Sender<io::Result<()>>,
    start: mpsc::Receiver<Start<FS>>,
) {
    if let Err(e) = pin_to(usize::from(qid)) {
        debug!("io_uring queue {qid}: not pinned to its CPU: {e}");
    }
    // Only this thread submits (a reply made elsewhere is handed to it), so
    // the ring can defer the kernel's completion work to this thread's own
    // wait: a request then wakes it without signalled task work.
    let built = IoUring::<squeue::Entry128, cqueue::Entry>::builder()
        .setup_cqsize(2 * DEPTH as u32)
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(DEPTH as u32)
        .and_then(|ring| {
            let ents = (0..DEPTH)
                .map(|_| Ent::new(payload_cap))
                .collect::<io::Result<Vec<_>>>()?;
            Ok((ring, ents))
        });
    let (ring, ents) = match built {
        Ok(b) => {
            let _ = ready.send(Ok(()));
            b
        }
        Err(e) => {
            let _ = ready.send(Err(io::Error::new(
                e.kind(),
                format!("cannot set up an io_uring for queue {qid}: {e}"),
            )));
            return;
        }
    };
    drop(ready);
    let Ok(Start::Serve(se)) = start.recv() else {
        return;
    };
    let mut q = Queue {
        fuse_fd,
        qid,
        ring,
        ents,
        scratch: Vec::with_capacity(IN_HEADER_LEN + 128 + PAGE),
        se,
    };
    // A panic serving one request is answered EIO inside `serve`; one in
    // the loop itself would leave the queue unserved, like an error.
    let served = catch_unwind(AssertUnwindSafe(|| q.serve()))
        .unwrap_or_else(|_| Err(io::Error::other("the ring loop panicked")));
    match served {
        Ok(()) => debug!("io_uring queue {qid}: connection gone, thread ends"),
        Err(e) => {
            // Requests on this CPU would wait for this queue forever; ending
            // the process makes the kernel abort the connection instead.
            error!("io_uring queue {qid}: {e}; aborting so that no request hangs");
            std::process::abort();
        }
    }
}

struct Queue<FS: Filesystem> {
    fuse_fd: RawFd,
    qid: u16,
    ring: IoUring<squeue::Entry128, cqueue::Entry>,
    ents: Vec<Ent>,
    /// The request rebuilt as `/dev/fuse` delivers it, for the parser.
    scratch: Vec<u8>,
    se: SessionEventLoop<FS>,
}

impl<FS: Filesystem> Queue<FS> {
    fn push(&mut self, sqe: squeue::Entry128) -> io::Result<()> {
        // SAFETY: the SQE points at buffers and an iovec owned by self.ents,
        // which outlive the ring.
        unsafe { self.ring.submission().push(&sqe) }
            .map_err(|_| io::Error::other("submission queue full"))
    }

    fn serve(&mut self) -> io::Result<()> {
        for idx in 0..self.ents.len() {
            let sqe = command(
                self.fuse_fd,
                CMD_REGISTER,
                self.qid,
                0,
                &self.ents[idx],
                idx,
            );
            self.push(sqe)?;
        }
        // Entries that have carried a request, and entries lost.
        let mut served = vec![false; self.ents.len()];
        let mut lost = 0;
        loop {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => return Err(e),
            }
            // At most the CQ's size; what does not fit waits in the CQ.
            let mut done = [(0usize, 0i32); 2 * DEPTH];
            let mut n = 0;
            for c in self.ring.completion().take(done.len()) {
                done[n] = (c.user_data() as usize, c.result());
                n += 1;
            }
            for &(idx, res) in &done[..n] {
                if idx >= self.ents.len() {
                    continue;
                }
                if res < 0 {
                    let err = io::Error::from_raw_os_error(-res);
                    match -res {
                        // Unmounted, aborted, or the ring is going away.
                        libc::ENOTCONN | libc::ECONNABORTED | libc::ECANCELED | libc::ENODEV => {
                            return Ok(());
                        }
                        _ if !served[idx] => {
                            // A refused registration turns io_uring off for
                            // the connection (or leaves the other entries
                            // serving): nothing waits on this entry.
                            warn!(
                                "io_uring queue {}: registration refused ({err}); \
                                 requests go through /dev/fuse",
                                self.qid
                            );
                        }
                        _ => warn!("io_uring queue {}: entry {idx} failed: {err}", self.qid),
                    }
                    lost += 1;
                    if lost == self.ents.len() {
                        if served.iter().any(|s| *s) {
                            return Err(io::Error::new(
                                err.kind(),
                                format!("every entry failed, the last with: {err}"),
                            ));
                        }
                        return Ok(());
                    }
                    continue;
                }
                served[idx] = true;
                let commit_id = self.answer(idx);
                let sqe = command(
                    self.fuse_fd,
                    CMD_COMMIT_AND_FETCH,
                    self.qid,
                    commit_id,
                    &self.ents[idx],
                    idx,
                );
                self.push(sqe)?;
            }
        }
    }

    /// Serves the request in entry `idx`, leaves the reply in it, and
    /// returns the commit id to send it back with.
    fn answer(&mut self, idx: usize) -> u64 {
        let ent = &self.ents[idx];
        // SAFETY: the kernel has written the entry and handed it to us; the
        // ring thread is its only user until the reply is committed.
        let h = unsafe { &*ent.header() };
        let commit_id = h.ring_ent_in_out.commit_id;
        let len = u32::from_ne_bytes(h.in_out[0..4].try_into().unwrap()) as usize;
        let opcode = u32::from_ne_bytes(h.in_out[4..8].try_into().unwrap());
        let unique = u64::from_ne_bytes(h.in_out[8..16].try_into().unwrap());
        let payload_sz = (h.ring_ent_in_out.payload_sz as usize).min(ent.payload_cap);
        // The first argument went to op_in, the rest to the payload; the
        // header's len counts them all.
        let op_in_len = len.checked_sub(IN_HEADER_LEN + payload_sz);
        ent.slot.arm(unique);
        let mut dispatched = false;
        match op_in_len {
            Some(n) if n <= h.op_in.len() => {
                self.scratch.clear();
                self.scratch.extend_from_slice(&h.in_out[..IN_HEADER_LEN]);
                self.scratch.extend_from_slice(&h.op_in[..n]);
                // SAFETY: payload_sz <= payload_cap, within the mapping.
                self.scratch.extend_from_slice(unsafe {
                    std::slice::from_raw_parts(ent.payload(), payload_sz)
                });
                let slot = ent.slot.clone();
                let sender = self.se.ch.sender();
                let scratch = &self.scratch;
                let se = &self.se;
                let served =
                    catch_unwind(AssertUnwindSafe(|| {
                        match RequestWithSender::new_uring(sender, slot, scratch) {
                            Some(req) => {
                                req.dispatch(se);
                                true
                            }
                            None => false,
                        }
                    }));
                match served {
                    Ok(true) => dispatched = true,
                    Ok(false) => error!("io_uring queue {}: unparsable request {unique}", self.qid),
                    Err(_) => error!(
                        "io_uring queue {}: panic serving request {unique}",
                        self.qid
                    ),
                }
            }
            _ => error!(
                "io_uring queue {}: request {unique} (opcode {opcode}) of length {len} with {payload_sz} payload bytes",
                self.qid
            ),
        }
        let ent = &self.ents[idx];
        // A parsed request's reply object answers it, now or from wherever
        // the filesystem keeps it (an unsent one answers EIO when dropped);
        // the forgets have none, nor has a request that does not parse or
        // panics in dispatch.
        let no_reply_object = opcode == fuse_opcode::FUSE_FORGET as u32
            || opcode == fuse_opcode::FUSE_BATCH_FORGET as u32
            || !dispatched;
        if no_reply_object && !ent.slot.replied() {
            let _ = ent
                .slot
                .send(&[IoSlice::new(&errno_header(unique, libc::EIO))]);
        }
        ent.slot.wait();
        commit_id
    }
}

fn errno_header(unique: u64, errno: i32) -> [u8; OUT_HEADER_LEN] {
    let mut out = [0u8; OUT_HEADER_LEN];
    out[..4].copy_from_slice(&(OUT_HEADER_LEN as u32).to_ne_bytes());
    out[4..8].copy_from_slice(&(-errno).to_ne_bytes());
    out[8..16].copy_from_slice(&unique.to_ne_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(count_cpu_list("0-1"), Some(2));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-3,5,7-8"), Some(7));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("x"), None);
    }

    #[test]
    fn payload_follows_the_kernel() {
        assert_eq!(payload_size(4096, 1), MIN_PAYLOAD);
        assert_eq!(payload_size(128 * 1024, 32), 128 * 1024);
        assert_eq!(payload_size(4096, 256), 1024 * 1024);
    }

    #[test]
    fn header_layout() {
        assert_eq!(size_of::<RingHeader>(), 128 + 128 + 32);
    }

    #[test]
    fn register_sqe_bytes() {
        let ent = Ent::new(MIN_PAYLOAD).unwrap();
        let sqe = command(7, CMD_REGISTER, 3, 0, &ent, 1);
        // SAFETY: Entry128 is 128 plain bytes.
        let b: [u8; 128] = unsafe { std::mem::transmute(sqe) };
        assert_eq!(b[0], 46, "IORING_OP_URING_CMD");
        assert_eq!(i32::from_ne_bytes(b[4..8].try_into().unwrap()), 7, "fd");
        assert_eq!(
            u32::from_ne_bytes(b[8..12].try_into().unwrap()),
            CMD_REGISTER
        );
        let addr = u64::from_ne_bytes(b[16..24].try_into().unwrap());
        assert_eq!(addr, ent.iov.as_ptr() as u64);
        assert_eq!(
            u32::from_ne_bytes(b[24..28].try_into().unwrap()),
            2,
            "iovec count"
        );
        assert_eq!(
            u64::from_ne_bytes(b[32..40].try_into().unwrap()),
            1,
            "user_data"
        );
        // cmd (struct fuse_uring_cmd_req) starts at byte 48: qid at +16.
        assert_eq!(u16::from_ne_bytes(b[64..66].try_into().unwrap()), 3, "qid");
        let commit = command(7, CMD_COMMIT_AND_FETCH, 1, 99, &ent, 0);
        // SAFETY: Entry128 is 128 plain bytes.
        let b: [u8; 128] = unsafe { std::mem::transmute(commit) };
        assert_eq!(u32::from_ne_bytes(b[24..28].try_into().unwrap()), 0);
        assert_eq!(
            u64::from_ne_bytes(b[56..64].try_into().unwrap()),
            99,
            "commit_id"
        );
    }

    #[test]
    fn reply_lands_in_the_entry() {
        let ent = Ent::new(MIN_PAYLOAD).unwrap();
        ent.slot.arm(5);
        let mut hdr = errno_header(5, 0);
        hdr[..4].copy_from_slice(&(16u32 + 6).to_ne_bytes());
        ent.slot
            .send(&[
                IoSlice::new(&hdr[..10]),
                IoSlice::new(&hdr[10..]),
                IoSlice::new(b"abc"),
                IoSlice::new(b"def"),
            ])
            .unwrap();
        // SAFETY: the entry's own mapping; no ring uses it.
        let h = unsafe { &*ent.header() };
        assert_eq!(&h.in_out[..16], &hdr);
        assert_eq!(h.ring_ent_in_out.payload_sz, 6);
        // SAFETY: 6 <= MIN_PAYLOAD, within the payload buffer.
        let p = unsafe { std::slice::from_raw_parts(ent.payload(), 6) };
        assert_eq!(p, b"abcdef");
        assert!(
            ent.slot.send(&[IoSlice::new(&hdr)]).is_err(),
            "second reply"
        );
        ent.slot.arm(6);
        assert!(
            ent.slot.send(&[IoSlice::new(&errno_header(5, 2))]).is_err(),
            "wrong unique"
        );
    }
}
