// tree.c - the floor under a cold `find` or `grep -r` through FUSE: a server
// that does no work at all, answering from arithmetic a tree of the scale
// library's shape (books of chapter directories of two pages, optionally with
// the index files novelfs lists in the root and in every book). Pages hold
// filler text (lowercase ASCII lines) of the sizes given, so a `grep -r` over
// it reads as many bytes in as many files as over novelfs. What a walk costs
// over it is what any FUSE server of that tree costs on this machine;
// bench.sh runs it beside novelfs. Derived from the fuse-rtt yardstick (fb.c): same two
// transports, same options, `-B BOOKS -C CHAPTERS` for the shape.
// Transport: classic /dev/fuse read()/writev() loop (optionally busy-polling an
// O_NONBLOCK fd), or FUSE-over-io_uring (one queue per possible CPU, one thread
// per queue pinned to that CPU, like libfuse's lib/fuse_uring.c).
//
// usage: tree MNT MODE [options]
//   MODE: classic | uring
//   -t N        classic: N reader threads (default 1)
//   -c CPU[,CPU] classic: pin reader thread i to the i-th CPU listed (default: free)
//   -s US       classic: busy-poll O_NONBLOCK read() for up to US microseconds before poll()
//   -q DEPTH    uring: entries per queue (default 2)
//   -S US       uring: busy-poll the CQ (io_uring_peek_cqe + io_uring_enter(GETEVENTS=0)) up to US before blocking
//   -B N, -C N  the tree: N books (default 40) of N chapter directories (default 100)
//   -P TXT,JSON sizes in bytes of every offset-1.txt and offset-1.json (default 3000,4000)
//   -I TXT,JSON list novel_chapters.txt and .json of these sizes in every book (default: none)
//   -L TXT,JSON list novel_books.txt and .json of these sizes in the root (default: none)
//   -T S        entries and attributes live S seconds (default 1; novelfs gives 3600 to what
//               it watches, --ttl to the rest)
//   -N S        a missing name is a negative entry the kernel keeps S seconds (default 0: a
//               plain ENOENT, asked again at every lookup); novelfs keeps 3600 s the names no
//               change can make resolve in a chapter directory (ripgrep's `.gitignore` probe)
//               and the missing names it records in the directories it watches
// OPEN and OPENDIR are answered ENOSYS (the kernel then stops sending them, as
// with novelfs), IOCTL ENOTTY.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "fuse_kernel.h"

#define MAX_WRITE (128 * 1024)
#define BUFSZ (MAX_WRITE + 4096)

static int fuse_fd;
static int mode_uring;
static int nthreads = 1;
static int cpus[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
static int spin_us;
static int qdepth = 2;
static int uspin_us;
static atomic_long nreq[64];
static atomic_long via_uring[8];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void pin(int cpu) {
    if (cpu < 0) return;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s)) perror("sched_setaffinity");
}

// The tree: BOOKS books of CHAPTERS chapter directories, each holding
// offset-1.txt and offset-1.json, named as novelfs names them; with -I every
// book lists its novel_chapters.txt and .json after its chapters, with -L the
// root lists novel_books.txt and .json after the books. An inode number says
// where it is: kind << 40 | book << 20 | chapter << 1 | file, where file is 0
// for the .txt and 1 for the .json.
static int books = 40, chapters = 100;
enum { ROOT = 1, BOOK = 1, CHAPTER = 2, FILE_KIND = 3, BOOK_INDEX = 4, ROOT_INDEX = 5 };
static uint64_t ttl_s = 1;
static uint64_t negative_ttl_s;
// File sizes by kind, [0] the .txt and [1] the .json; an index size of 0
// leaves those index files out.
static uint64_t page_bytes[2] = {3000, 4000};
static uint64_t book_index_bytes[2];
static uint64_t root_index_bytes[2];

static uint64_t ino_of(int kind, int b, int c, int f) {
    if (kind == 0) return ROOT;
    return ((uint64_t)kind << 40) | ((uint64_t)b << 20) | ((uint64_t)c << 1) | (uint64_t)f;
}
static int kind_of(uint64_t ino) { return ino == ROOT ? 0 : (int)(ino >> 40); }
static int book_of(uint64_t ino) { return (int)((ino >> 20) & 0xfffff); }
static int chapter_of(uint64_t ino) { return (int)((ino >> 1) & 0x7ffff); }

static int is_file(uint64_t ino) { return kind_of(ino) >= FILE_KIND; }

static uint64_t size_of(uint64_t ino) {
    switch (kind_of(ino)) {
    case FILE_KIND: return page_bytes[ino & 1];
    case BOOK_INDEX: return book_index_bytes[ino & 1];
    case ROOT_INDEX: return root_index_bytes[ino & 1];
    }
    return 0;
}

static void fill_attr(uint64_t ino, struct fuse_attr *a) {
    memset(a, 0, sizeof *a);
    a->ino = ino;
    if (!is_file(ino)) {
        a->mode = S_IFDIR | 0555;
        a->nlink = 2;
    } else {
        a->mode = S_IFREG | 0444;
        a->nlink = 1;
        a->size = size_of(ino);
        a->blocks = (a->size + 511) / 512;
    }
    a->blksize = 4096;
}

// The bytes of every file: lines of 63 lowercase letters and a newline, the
// same at the same offset of any file. Copied from at offset % 64, so one
// read of up to MAX_WRITE bytes is a single memcpy.
#define FILLER_LINE 64
static char filler[MAX_WRITE + FILLER_LINE];
static void make_filler(void) {
    for (size_t k = 0; k < sizeof filler; k++)
        filler[k] = k % FILLER_LINE == FILLER_LINE - 1 ? '\n' : 'a' + (char)(k % FILLER_LINE % 26);
}

// The name of entry i of directory ino and its inode; 0 past the end.
static uint64_t entry(uint64_t dir, int i, char *name) {
    switch (kind_of(dir)) {
    case 0:
        if (i < books) {
            sprintf(name, "网文%04d", i);
            return ino_of(BOOK, i, 0, 0);
        }
        if (!root_index_bytes[0] || i >= books + 2) return 0;
        strcpy(name, i > books ? "novel_books.json" : "novel_books.txt");
        return ino_of(ROOT_INDEX, 0, 0, i - books);
    case BOOK:
        if (i < chapters) {
            sprintf(name, "第%03d章 章名.md", i + 1);
            return ino_of(CHAPTER, book_of(dir), i, 0);
        }
        if (!book_index_bytes[0] || i >= chapters + 2) return 0;
        strcpy(name, i > chapters ? "novel_chapters.json" : "novel_chapters.txt");
        return ino_of(BOOK_INDEX, book_of(dir), 0, i - chapters);
    case CHAPTER:
        if (i >= 2) return 0;
        strcpy(name, i ? "offset-1.json" : "offset-1.txt");
        return ino_of(FILE_KIND, book_of(dir), chapter_of(dir), i);
    }
    return 0;
}

static void fill_entry(struct fuse_entry_out *o, uint64_t ino) {
    memset(o, 0, sizeof *o);
    o->nodeid = ino;
    o->entry_valid = ttl_s;
    o->attr_valid = ttl_s;
    fill_attr(ino, &o->attr);
}

#define NOREPLY INT32_MIN
static int serve(const struct fuse_in_header *ih, const void *op_in, const void *payload,
                 size_t payload_len, char *out) {
    (void)payload_len;
    switch (ih->opcode) {
    case FUSE_INIT: {
        const struct fuse_init_in *in = op_in;
        struct fuse_init_out *o = (void *)out;
        memset(o, 0, sizeof *o);
        o->major = 7;
        o->minor = 45;
        o->max_readahead = in->max_readahead;
        uint64_t want = FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_MAX_PAGES | FUSE_INIT_EXT |
                        FUSE_DO_READDIRPLUS | FUSE_PARALLEL_DIROPS;
        if (mode_uring) want |= FUSE_OVER_IO_URING;
        uint64_t offered = in->flags | ((uint64_t)in->flags2 << 32);
        want &= offered;
        o->flags = (uint32_t)want;
        o->flags2 = (uint32_t)(want >> 32);
        o->max_background = 16;
        o->congestion_threshold = 12;
        o->max_write = MAX_WRITE;
        o->time_gran = 1;
        o->max_pages = MAX_WRITE / 4096;
        return sizeof *o;
    }
    case FUSE_LOOKUP: {
        const char *want = payload ? payload : op_in;
        char name[64];
        uint64_t ino;
        for (int i = 0; (ino = entry(ih->nodeid, i, name)); i++)
            if (!strcmp(name, want)) {
                fill_entry((void *)out, ino);
                return sizeof(struct fuse_entry_out);
            }
        if (!negative_ttl_s) return -ENOENT;
        // Node id 0: no such name, and the kernel keeps that answer entry_valid seconds.
        struct fuse_entry_out *o = (void *)out;
        memset(o, 0, sizeof *o);
        o->entry_valid = negative_ttl_s;
        return sizeof *o;
    }
    case FUSE_GETATTR: {
        struct fuse_attr_out *o = (void *)out;
        memset(o, 0, sizeof *o);
        o->attr_valid = ttl_s;
        fill_attr(ih->nodeid, &o->attr);
        return sizeof *o;
    }
    case FUSE_OPEN:
    case FUSE_OPENDIR:
        // As novelfs: no OPEN or OPENDIR is needed, the kernel stops sending them.
        return -ENOSYS;
    case FUSE_READ: {
        const struct fuse_read_in *in = op_in;
        uint64_t size = size_of(ih->nodeid);
        if (in->offset >= size) return 0;
        size_t n = size - in->offset;
        if (n > in->size) n = in->size;
        if (n > MAX_WRITE) n = MAX_WRITE;
        memcpy(out, filler + in->offset % FILLER_LINE, n);
        return n;
    }
    case FUSE_READDIRPLUS:
    case FUSE_READDIR: {
        const struct fuse_read_in *in = op_in;
        int plus = ih->opcode == FUSE_READDIRPLUS;
        size_t used = 0;
        char name[64];
        uint64_t ino;
        for (int i = in->offset; (ino = entry(ih->nodeid, i, name)); i++) {
            size_t len = strlen(name);
            struct fuse_dirent *d;
            size_t size;
            if (plus) {
                size = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET_DIRENTPLUS + len);
                if (used + size > in->size) break;
                struct fuse_direntplus *dp = (void *)(out + used);
                fill_entry(&dp->entry_out, ino);
                d = &dp->dirent;
            } else {
                size = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + len);
                if (used + size > in->size) break;
                d = (void *)(out + used);
            }
            memset(d, 0, size - (plus ? sizeof(struct fuse_entry_out) : 0));
            d->ino = ino;
            d->off = i + 1;
            d->namelen = len;
            d->type = (is_file(ino) ? S_IFREG : S_IFDIR) >> 12;
            memcpy(d->name, name, len);
            used += size;
        }
        return used;
    }
    case FUSE_IOCTL:
        return -ENOTTY;
    case FUSE_STATFS: {
        struct fuse_statfs_out *o = (void *)out;
        memset(o, 0, sizeof *o);
        o->st.bsize = 4096;
        o->st.namelen = 255;
        return sizeof *o;
    }
    case FUSE_RELEASE:
    case FUSE_RELEASEDIR:
    case FUSE_DESTROY:
        return 0;
    case FUSE_FORGET:
    case FUSE_BATCH_FORGET:
    case FUSE_INTERRUPT:
        return NOREPLY;
    default:
        return -ENOSYS;
    }
}

// ---------------- classic /dev/fuse loop ----------------
static ssize_t read_req(char *buf) {
    if (!spin_us) return read(fuse_fd, buf, BUFSZ);
    uint64_t deadline = 0;
    for (;;) {
        ssize_t n = read(fuse_fd, buf, BUFSZ);
        if (n >= 0 || errno != EAGAIN) return n;
        uint64_t t = now_ns();
        if (!deadline) deadline = t + (uint64_t)spin_us * 1000;
        if (t > deadline) {
            struct pollfd p = {.fd = fuse_fd, .events = POLLIN};
            poll(&p, 1, -1);
            deadline = 0;
        }
    }
}

static void *classic_thread(void *arg) {
    long idx = (long)arg;
    pin(cpus[idx]);
    char *buf = aligned_alloc(4096, BUFSZ);
    char *out = aligned_alloc(4096, BUFSZ);
    for (;;) {
        ssize_t n = read_req(buf);
        if (n < 0) {
            if (errno == EINTR || errno == ENOENT) continue;
            if (errno != ENODEV) perror("read /dev/fuse");
            exit(0);
        }
        struct fuse_in_header *ih = (void *)buf;
        atomic_fetch_add(&nreq[ih->opcode & 63], 1);
        const char *args = buf + sizeof *ih;
        int r = serve(ih, args, NULL, n - sizeof *ih, out);
        if (r == NOREPLY) continue;
        struct fuse_out_header oh = {.unique = ih->unique};
        struct iovec iov[2] = {{&oh, sizeof oh}, {out, r > 0 ? r : 0}};
        oh.error = r < 0 ? r : 0;
        oh.len = sizeof oh + (r > 0 ? r : 0);
        if (writev(fuse_fd, iov, r > 0 ? 2 : 1) < 0 && errno != ENOENT) perror("writev");
        if (ih->opcode == FUSE_INIT && mode_uring) {
            extern void start_uring(void);
            start_uring();
        }
    }
    return NULL;
}

// ---------------- io_uring transport ----------------
struct ent {
    struct fuse_uring_req_header *hdr;
    char *payload;
    struct iovec iov[2];
    uint64_t commit_id;
};
struct queue {
    int qid;
    struct io_uring ring;
    struct ent *ents;
    pthread_t tid;
};
static int nr_queues;
static struct queue *queues;
static atomic_int queues_ready;

static void prep_cmd(struct io_uring_sqe *sqe, struct queue *q, int idx, uint32_t op) {
    memset(sqe, 0, 128);
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = fuse_fd;
    sqe->cmd_op = op;
    sqe->user_data = idx;
    struct fuse_uring_cmd_req *req = (void *)&sqe->cmd[0];
    req->qid = q->qid;
    if (op == FUSE_IO_URING_CMD_REGISTER) {
        sqe->addr = (uint64_t)(uintptr_t)q->ents[idx].iov;
        sqe->len = 2;
    } else {
        req->commit_id = q->ents[idx].commit_id;
    }
}

static void *uring_thread(void *arg) {
    struct queue *q = arg;
    pin(q->qid);
    struct io_uring_params p = {0};
    p.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE;
    p.cq_entries = qdepth * 2;
    int rc = io_uring_queue_init_params(qdepth, &q->ring, &p);
    if (rc) {
        fprintf(stderr, "io_uring_queue_init_params: %s\n", strerror(-rc));
        exit(1);
    }
    q->ents = calloc(qdepth, sizeof *q->ents);
    for (int i = 0; i < qdepth; i++) {
        struct ent *e = &q->ents[i];
        e->hdr = aligned_alloc(4096, 4096);
        memset(e->hdr, 0, 4096);
        e->payload = aligned_alloc(4096, BUFSZ);
        memset(e->payload, 0, BUFSZ);
        e->iov[0] = (struct iovec){e->hdr, sizeof *e->hdr};
        e->iov[1] = (struct iovec){e->payload, BUFSZ};
        prep_cmd(io_uring_get_sqe(&q->ring), q, i, FUSE_IO_URING_CMD_REGISTER);
    }
    rc = io_uring_submit(&q->ring);
    if (rc != qdepth) fprintf(stderr, "q%d register submit: %d\n", q->qid, rc);
    atomic_fetch_add(&queues_ready, 1);
    for (;;) {
        struct io_uring_cqe *cqe;
        if (uspin_us) {
            uint64_t deadline = now_ns() + (uint64_t)uspin_us * 1000;
            rc = -EAGAIN;
            // io_uring_peek_cqe only looks at the CQ ring; task work that
            // posts the CQE runs when this task enters the kernel, so enter
            // with min_complete=0 to run it (GETEVENTS flushes task work).
            while ((rc = io_uring_peek_cqe(&q->ring, &cqe)) == -EAGAIN && now_ns() < deadline)
                io_uring_get_events(&q->ring);
            if (rc == -EAGAIN) rc = io_uring_wait_cqe(&q->ring, &cqe);
        } else {
            rc = io_uring_wait_cqe(&q->ring, &cqe);
        }
        if (rc == -EINTR) continue;
        if (rc) {
            fprintf(stderr, "q%d wait_cqe: %s\n", q->qid, strerror(-rc));
            exit(1);
        }
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&q->ring, head, cqe) {
            seen++;
            int idx = cqe->user_data;
            if (cqe->res < 0) {
                if (cqe->res == -ENOTCONN || cqe->res == -ECANCELED) exit(0);
                fprintf(stderr, "q%d cqe res %d (%s)\n", q->qid, cqe->res, strerror(-cqe->res));
                exit(1);
            }
            struct ent *e = &q->ents[idx];
            struct fuse_in_header *ih = (void *)e->hdr->in_out;
            e->commit_id = e->hdr->ring_ent_in_out.commit_id;
            atomic_fetch_add(&nreq[ih->opcode & 63], 1);
            atomic_fetch_add(&via_uring[q->qid & 7], 1);
            static char tmp[BUFSZ] __attribute__((aligned(64)));
            (void)tmp;
            int r = serve(ih, e->hdr->op_in, e->payload, e->hdr->ring_ent_in_out.payload_sz,
                          e->payload);
            struct fuse_out_header *oh = (void *)e->hdr->in_out;
            uint64_t unique = ih->unique;
            memset(oh, 0, sizeof *oh);
            oh->unique = unique;
            oh->error = r < 0 ? r : 0;
            oh->len = sizeof *oh + (r > 0 ? r : 0);
            e->hdr->ring_ent_in_out.payload_sz = r > 0 ? r : 0;
            prep_cmd(io_uring_get_sqe(&q->ring), q, idx, FUSE_IO_URING_CMD_COMMIT_AND_FETCH);
        }
        io_uring_cq_advance(&q->ring, seen);
        io_uring_submit(&q->ring);
    }
    return NULL;
}

void start_uring(void) {
    nr_queues = sysconf(_SC_NPROCESSORS_CONF);
    queues = calloc(nr_queues, sizeof *queues);
    for (int i = 0; i < nr_queues; i++) {
        queues[i].qid = i;
        pthread_create(&queues[i].tid, NULL, uring_thread, &queues[i]);
    }
    while (atomic_load(&queues_ready) < nr_queues) usleep(1000);
    fprintf(stderr, "io_uring: %d queues x %d entries registered\n", nr_queues, qdepth);
}

static void on_usr1(int sig) {
    (void)sig;
    static const char *names[64] = {[FUSE_LOOKUP] = "LOOKUP", [FUSE_GETATTR] = "GETATTR",
                                    [FUSE_IOCTL] = "IOCTL", [FUSE_READ] = "READ",
                                    [FUSE_OPEN] = "OPEN", [FUSE_FLUSH] = "FLUSH",
                                    [FUSE_FORGET] = "FORGET", [FUSE_INIT] = "INIT",
                                    [FUSE_STATFS] = "STATFS", [FUSE_BATCH_FORGET] = "BATCH_FORGET",
                                    [FUSE_OPENDIR] = "OPENDIR", [FUSE_RELEASEDIR] = "RELEASEDIR",
                                    [FUSE_READDIRPLUS] = "READDIRPLUS", [FUSE_ACCESS] = "ACCESS",
                                    [FUSE_GETXATTR] = "GETXATTR", [FUSE_DESTROY] = "DESTROY"};
    char line[2048];
    int n = 0;
    for (int i = 0; i < 64; i++) {
        long c = atomic_load(&nreq[i]);
        if (c) n += snprintf(line + n, sizeof line - n, "%s=%ld ", names[i] ? names[i] : "op", c);
    }
    n += snprintf(line + n, sizeof line - n, "| via uring q0=%ld q1=%ld", atomic_load(&via_uring[0]), atomic_load(&via_uring[1]));
    line[n++] = '\n';
    write(2, line, n);
}

// "TXT,JSON" into sizes[0] and sizes[1].
static void sizes(const char *arg, uint64_t *sizes) {
    char *end;
    sizes[0] = strtoull(arg, &end, 10);
    sizes[1] = *end == ',' ? strtoull(end + 1, NULL, 10) : sizes[0];
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: tree MNT classic|uring [-t N] [-c cpu,cpu] [-s us] [-q depth] [-S us]"
                         " [-B books] [-C chapters] [-P txt,json] [-I txt,json] [-L txt,json] [-T ttl] [-N ttl]\n");
        return 2;
    }
    const char *mnt = argv[1];
    mode_uring = !strcmp(argv[2], "uring");
    int opt;
    optind = 3;
    while ((opt = getopt(argc, argv, "t:c:s:q:S:B:C:P:I:L:T:N:")) != -1) {
        switch (opt) {
        case 't': nthreads = atoi(optarg); break;
        case 'c': {
            int i = 0;
            for (char *t = strtok(optarg, ","); t && i < 8; t = strtok(NULL, ",")) cpus[i++] = atoi(t);
            break;
        }
        case 's': spin_us = atoi(optarg); break;
        case 'q': qdepth = atoi(optarg); break;
        case 'S': uspin_us = atoi(optarg); break;
        case 'B': books = atoi(optarg); break;
        case 'C': chapters = atoi(optarg); break;
        case 'P': sizes(optarg, page_bytes); break;
        case 'I': sizes(optarg, book_index_bytes); break;
        case 'L': sizes(optarg, root_index_bytes); break;
        case 'T': ttl_s = strtoull(optarg, NULL, 10); break;
        case 'N': negative_ttl_s = strtoull(optarg, NULL, 10); break;
        }
    }
    make_filler();
    signal(SIGUSR1, on_usr1);
    fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC | (spin_us ? O_NONBLOCK : 0));
    if (fuse_fd < 0) { perror("open /dev/fuse"); return 1; }
    char opts[256];
    snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other,default_permissions",
             fuse_fd);
    if (mount("tree", mnt, "fuse.tree", MS_NOSUID | MS_NODEV | MS_RDONLY, opts)) {
        perror("mount");
        return 1;
    }
    fprintf(stderr, "mounted %s mode=%s threads=%d spin=%dus qdepth=%d uspin=%dus\n", mnt, argv[2],
            nthreads, spin_us, qdepth, uspin_us);
    pthread_t t[8];
    for (long i = 1; i < nthreads; i++) pthread_create(&t[i], NULL, classic_thread, (void *)i);
    classic_thread((void *)0);
    return 0;
}
