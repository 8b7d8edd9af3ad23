#!/usr/bin/env bash
# novelfs benchmark: builds the release binary, generates a seeded
# library, and compares novelfs against plain files. Prints one table.
#
#   scripts/bench.sh [--quick] [--books N] [--chapters N] [--big-book N]
#                    [--small-book N] [--runs N] [--ttl S] [--lookups N]
#                    [--seed S] [--small-cache-timeout S] [--profile] [--keep]
#                    [--scale] [--scale-only] [--no-main] [--scale-books N]
#                    [--scale-chapters N] [--scale-reads N] [--perf]
#                    [--big] [--big-only] [--big-mb N] [--huge-mb N] [--bin PATH]
#                    [--transport classic|io_uring|both] [--rtt-calls N]
#                    [--wholelib] [--stat-calls N] [--persist]
#                    [--bucket] [--bucket-chapters N] [--s3fs-cap S] [--no-s3fs]
#                    [--bucket-tools]
#                    [--failover] [--results-dir DIR]
#                    [--fleet] [--mounts N] [--fleet-period S] [--fleet-duration S]
#                    [--fleet-server moto|s3s-fs]
#
# --quick: a small library for a smoke run. --profile: afterwards, count the
# FUSE requests of each workload on a foreground mount (RUST_LOG=fuser=debug).
# --keep: keep the temp dir (library, copies, results.tsv).
# --scale: also the scale library (2,000 books x 100 small chapters; with
# --quick 200 x 100); --scale-only: only it; --no-main: no figures of the
# main library (the reference library and --scale still run). --perf: afterwards, perf
# record/stat the daemon during the scale find and the reference cold pass
# (reports in the kept temp dir; implies --keep). --big: also the big
# chapters (a small page's latency while two --big-mb (230) MB chapters
# load; the daemon's VmHWM after the first and last page of a --huge-mb
# (600) MB chapter); --big-only: only them. --bin: bench this novelfs
# binary instead of building the repository's (to measure another commit).
# (reports in the kept temp dir; implies --keep).
# --wholelib: only the whole-library figures (below; 2,000 books x 100
# chapters, with --quick 200 x 100; --scale-books/--scale-chapters shape it;
# --stat-calls N stats of a missing name, default 1000), then compared with
# the last committed result of the same command run quiet (load < 1.5):
# REGRESSED, and exit 3, where a figure's ratio (to its baseline: the
# sources, the zero-work floor or another tool; and the cold grep's to the
# floor) grew by more than 20%, the run-to-run
# spread's bound (scripts/bench_regress.py). --persist: with
# them, the persistent index's figures (implies --wholelib). Every mount but
# those of --persist runs with --no-index, so no figure depends on what an
# earlier mount left in an index.
# --transport: how the mounts of the reference, scale, whole-library and round-trip figures
# are served (default both, each figure measured with each in the same run;
# classic only when the kernel has no FUSE over io_uring). The main figures
# use the classic /dev/fuse loop. io_uring mounts switch
# /sys/module/fuse/parameters/enable_uring on while mounting and set it back.
# --results-dir: where the run's result file goes (default bench/results in
# the repository; see "Result file" below).
# --bucket: only the bucket figures (below): --bucket-chapters (20,000) in
# moto, novelfs s3:// vs novelfs over s3fs, each workload of the s3fs side
# cut at --s3fs-cap seconds (default auto: 21x the s3:// side's median of
# the same workload, at least 30 s); --no-s3fs: not that side.
# --bucket-tools: (with --bucket, after its figures; alone, only them) rg -l
# and grep -r -l of a 2,000-chapter bucket library at 20 ms, each in a
# bubblewrap sandbox on a fresh mount, with the requests of each (below).
# --failover: only the failover figures: the failover tests of tests/it
# (failover::killed::, failover::upgrade::, failover::sandbox_failover::) built in the release profile and
# run --runs times one at a time; each prints its readers' longest pause
# (the longest single read or listing of 16 readers checking every byte),
# failed reads and wrong bytes, and the holder's VmRSS, which the table holds
# against the issue's targets (kills and a sandbox: 1 s, upgrades: 200 ms,
# holder: 4 MiB). The tests themselves fail on a failed read or wrong byte.
# --fleet: only the fleet figures (scripts/bench_fleet.sh): a published
# bucket of 2,000 chapters in moto, 1 and --mounts (8) fresh mounts of it
# running agent rounds every --fleet-period (2) s for --fleet-duration (60;
# --quick 12) s, an in-order reader and a grep -r, at 0 and 20 ms, with
# --freshness published and listing; requests by kind, the day's bill.
# --fleet --chapters N: instead, the fleet at scale (scripts/bench_fleetscale.sh):
# N chapters (books of 100) published in moto at 20 ms a request against
# the targets of a fleet of 200,000 chapters: a fresh mount's first page
# and the bytes before it, novel_books.txt, 16 fresh mounts at once, one
# chapter replaced and published (the publisher's bytes, two mounts'),
# the publisher's first run and a round with nothing changed, the agents'
# requests a round and the day's bill; requests by kind and bytes each way.
# --fleet-server s3s-fs: served by s3s-fs from the generated folder (no
# upload: for a large N), skipped with a note when it is not installed.
# Needs root (mounting, dropping the page cache) and /dev/fuse.
# Exit status: 0 when every figure was measured (FAILs included: this is a
# report); non-zero when something crashed (a command failed, a daemon died).
#
# Method (each figure is the median of --runs runs, default 3):
#   cold   find MNT -name 'offset-*.txt' (lists each chapter dir = its chain)
#          | xargs cat, through a FRESH mount, source page cache dropped
#          (sync; echo 3 > /proc/sys/vm/drop_caches) right before the run;
#          baseline: find ROOT/novels -type f | xargs cat, caches dropped too.
#   warm   the same read again on the last cold run's mount (its own caches
#          and the kernel's are warm); baseline: the same find|cat over
#          byte-identical copies of every listed page (.txt and .json, copied
#          once with cp -r from a separate mount), read once untimed first.
#   ls -l  ls -l of the big book's directory on that mount vs of its source.
#   lookups  --lookups (10,000) os.stat(MNT/BOOK/<n>/offset-1.txt) for random n,
#          big book vs small book, on a separate mount with --ttl 0 so that no
#          run is served by the kernel's dentry/attribute cache; every alias
#          is stat'ed once untimed first, so both books are compared with the
#          daemon's chapter/page caches warm (the cost measured is name
#          resolution, not decoding). The two books alternate in blocks of
#          500 stats. Figure = per-op time ratio.
#   grep   grep -r WORD over the whole mount vs over the copies (one untimed
#          pass each first: the mount renders .json pages for the first time).
#   cached cold  the cold read again, but with the sources in the page cache
#          (the CPU-bound cost): a fresh mount, the sources read once right
#          before; baseline: cat of the (cached) sources.
#   python the same reads from Python (scripts/bench_lib.py pyread: list every
#          chapter dir, open() + read() every offset-N.txt; the default open()
#          probes isatty(), an IOCTL per file): cold = fresh mount, sources
#          cached, vs Python reading the cached sources; warm = median of 5
#          passes on a warm mount vs on the page copies.
#   reference  the library of tests/golden/make_library.py (the reference
#          shape): cold pass from Python through a fresh mount with the
#          sources cached vs Python reading the sources; warm pass (median of
#          20) vs plain copies of the same tree.
#   scale  (--scale) BOOKS x CHAPTERS small chapters, sources cached: `find
#          MNT -name offset-1.txt` through a fresh mount (cold) vs find over
#          the sources and vs reading every source once (find | xargs cat,
#          cached; ≤ 3×); the daemon's CPU time per chapter dir during that
#          cold find (≤ 20 us); the find again (warm) vs find over the
#          sources; then cat of --scale-reads (50,000) listed pages and the
#          daemon's VmHWM.
#   big    (--big) a library of two --big-mb MB UTF-8 chapters in one book
#          and a two-line chapter in another, sources cached. Each run, on
#          a fresh mount (default options): cat the first page of both big
#          chapters in the background, 0.3 s later cat the small page; the
#          figure is the median time of that cat (≤ 0.3 s), with a note when
#          a big load had already ended. Then, the big chapters deleted, a
#          --huge-mb MB chapter through a mount with --max-chapter-bytes
#          1GiB: its first page, then its listing and last listed page; the
#          daemon's VmHWM (≤ cache + 64 MiB).
#   rtt    (both transports) --rtt-calls (20,000) IOCTLs (TCGETS, what
#          Python's open() sends and the kernel always forwards) on one open
#          page of a --ttl 0 mount, from a C loop (compiled with cc; Python's
#          when there is no compiler); median per call, runs alternating the
#          transports; target: io_uring median <= 15 us.
#   floor  (with the reference or the scale figures, each transport) the
#          same readers over a FUSE server that does no work
#          (scripts/floor/tree.c, built with cc and liburing): Python's warm
#          pass over as many one-page chapters as the reference library has
#          pages vs plain copies of them, and the cold find over the scale
#          library's shape vs reading every source once. No target: what
#          any FUSE server pays on this machine, under novelfs's figures.
#          The server runs in a session of its own, as novelfs's daemon
#          does (FLOOR_SESSION=bench: in the bench's session).
#   wholelib  (--wholelib, each transport) BOOKS x CHAPTERS small chapters,
#          sources cached (read once before each baseline). grep: `grep -r
#          WORD MNT` (a word found nowhere) through a fresh mount (cold) vs
#          the same grep over the sources (≤ 8×), again on that mount (warm,
#          ≤ 2×); the daemon's CPU (utime + stime, every thread) during the
#          cold grep per page file (every file it lists: pages and index
#          files) vs the floor server's (≤ 2×); VmHWM after the greps. books:
#          the first `cat MNT/novel_books.txt` on a fresh mount vs a cat of
#          every source (≤ 1.2×); VmHWM after it. rg: on the grep's mount,
#          warm `rg --files MNT` vs warm `find MNT -type f` (≤ 2×; each run
#          once untimed first; skipped with a note without rg); stat:
#          --stat-calls (1000) os.stat of CHAPTER/.gitignore (missing: what
#          ripgrep probes in every directory) vs of CHAPTER/offset-1.txt, in
#          alternating blocks, per op (≤ 2×; the same on the sources as a
#          note). Then --cache-size 64M: the cold grep and, on another fresh
#          mount, novel_books.txt, each with its VmHWM (≤ 128 MiB; times as
#          notes). floor: the cold and warm grep over scripts/floor/tree.c
#          serving the same shape (index files included) with each file the
#          mean size of its kind on the novelfs mount and names kept an hour
#          (as novelfs keeps what it watches), vs the same grep over the
#          sources; its CPU per page file is the wcpu baseline.
#          tools: the tools agents search with, each cold (on a fresh
#          mount) and warm (the same command again on that mount) vs the
#          same on a fresh mount of the floor serving that shape (≤ 1.5×
#          each): rg -l WORD (found nowhere), rg --files, rg --files -g
#          '*.json', fd -t f . (fdfind or fd), find MNT -name offset-1.txt,
#          Python os.walk counting files, ls -R, du -s (rg and fd skipped
#          with a note when not on PATH). That floor keeps its missing names
#          an hour too (tree.c -N 3600), as novelfs keeps ripgrep's probes
#          (.gitignore, .ignore, .rgignore, .git) in a chapter directory and
#          the missing names it records in the directories it watches.
#          Within novelfs: cold rg -l vs cold grep -r -l WORD, each on a
#          fresh mount (≤ 1.2×); cold rg --files vs cold find -name (≤
#          1.2×); the first rg --files right after the cold find vs that
#          find again, warm (≤ 2×; the same on the floor, its own row, no
#          target); warm rg --files vs warm find is the rg
#          figure above. A note gives the lines each tool printed cold
#          (novelfs/floor), which says both walked the same tree.
#   persist  (--persist, with --wholelib, each transport) index: `novelfs
#          index ROOT` into an empty --index-dir vs a cat of every source
#          (both cached; ≤ 1.5×). books: the first `cat MNT/novel_books.txt`
#          on a fresh mount with that index vs `find SRC -printf '%s %T@ %C@
#          %i'` (≤ 1.5×); VmHWM after it. find: cold `find MNT -name
#          offset-1.txt` on a fresh mount with the index vs the same find
#          over scripts/floor/tree.c serving the same shape (≤ 1.2×); VmHWM
#          after it. size: the index's files vs the library's bytes (≤ 5%).
#   bucket (--bucket; classic transport) moto_server on 127.0.0.1 (the
#          venv .ci/run makes, ~/.cache/novelfs/moto) behind tests/s3/proxy.py
#          (added latency, requests counted by kind), a bucket holding the
#          wholelib generator's library (100 chapters a book) put straight to
#          moto 8 at once. At 0 and 20 ms per request, --runs runs each of:
#          first: mount s3://BUCKET + cat of one page (the bench's own
#          pgrep for the daemon's pid after the timing); books: first cat
#          novel_books.txt on a fresh mount; grep: cold grep -r WORD (found
#          nowhere) on a fresh mount, VmHWM after it, then the same grep
#          again (warm). Requests by kind (LIST, GET, RANGED_GET, HEAD) are
#          counted by the proxy: first's with its mount, the others' from
#          their mount's end (the mount's own are noted). Then once each, the same workloads
#          through novelfs over s3fs of the same bucket through the same
#          proxy (a fresh s3fs mount for each but the warm grep; -o
#          ro,use_path_request_style,stat_cache_expire=1; novelfs with
#          --source-timeout 3600: over a local source it bounds a whole
#          request, so 120 cut novel_books.txt at 20 ms with EIO), each cut
#          at --s3fs-cap. At 0 ms, a
#          --cache-size 64M cold grep for the memory. The server's own rate
#          (GETs/s of 16 clients straight through the proxy, measured once
#          before the workloads) is printed. Every mount has --no-index.
#   bucket tools (--bucket-tools; classic transport) the same servers, a
#          bucket of the wholelib generator's library, 20 books x 100
#          chapters, at 20 ms per request. Each of --runs runs: rg -l WORD
#          (found nowhere) and grep -r -l WORD, each on a fresh mount of
#          s3://BUCKET (--freshness listing, --no-index) and run in a
#          bubblewrap sandbox that sees the mount read-only at /library (as
#          tests/it/agents.rs runs agents: /usr, /proc, /dev, --unshare-all,
#          --new-session), its requests counted by kind from its mount's
#          end (a note gives each run's LISTs by prefix, from the proxy's
#          log). Targets: rg -l ≤ 1.2× grep -r -l (medians), rg -l's GETs ≤
#          1.05 a chapter, its LISTs no more than grep -r -l's (each the most
#          of the runs).
#   load   the 1-minute load average is recorded with every timed run.
#   RSS    VmHWM of the main mount's daemon (default cache size) after the
#          cold, warm, ls -l and grep runs (the lookups use their own --ttl 0
#          mount; its VmHWM is printed as a note), and of a --cache-size 16M
#          mount after a full cold read from dropped caches (cut after
#          --small-cache-timeout seconds, default 600: see the notes).
#
# Result file: every run that gets to its table also writes it, with what
# it was measured on, to RESULTS_DIR/YYYY-MM-DD-HHMM-COMMIT.txt (the run's
# start, UTC; COMMIT the repository's short commit, +dirty with uncommitted
# changes to tracked files, -bin when --bin measured another binary), so a
# figure of any build can be read back beside the build that made it. The
# file is plain text: `key: value` lines (source, commit, binary, command,
# start, end, load at start and end as `uptime` gives it, machine, kernel,
# sched), a blank line, then the table and the runs exactly as printed.
set -euo pipefail
export LC_ALL=C

BOOKS="" CHAPTERS="" BIG="" SMALL="" QUICK="" RUNS=3 TTL=1 LOOKUPS=10000 SEED=42 PROFILE=0 KEEP=0
SMALL_CACHE_TIMEOUT=600 SCALE=0 MAIN_FIGURES=1 REF_FIGURES=1 SCALE_BOOKS="" SCALE_CHAPTERS=100 SCALE_READS=50000
PERF=0 BIG_FIGURES=0 BIG_MB=230 HUGE_MB=600 BIN_GIVEN="" TRANSPORTS="" RTT_CALLS=20000
WHOLE=0 STAT_CALLS=1000 WHOLE_WORD=玄铁剑 PERSIST=0 RESULTS_DIR=""
FAILOVER=0 BUCKET=0 BUCKET_CHAPTERS=20000 S3FS_CAP=auto S3FS_SIDE=1 BK_BASE="" BUCKET_TOOLS=0
FLEET=0 FLEET_MOUNTS=8 FLEET_PERIOD=2 FLEET_DURATION="" FLEET_SERVER=moto
ARGS="$*"
usage() { sed -n '2,/^# report); non-zero/p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --books) BOOKS=$2; shift 2 ;;
        --chapters) CHAPTERS=$2; shift 2 ;;
        --big-book) BIG=$2; shift 2 ;;
        --small-book) SMALL=$2; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --runs) RUNS=$2; shift 2 ;;
        --ttl) TTL=$2; shift 2 ;;
        --lookups) LOOKUPS=$2; shift 2 ;;
        --seed) SEED=$2; shift 2 ;;
        --profile) PROFILE=1; shift ;;
        --keep) KEEP=1; shift ;;
        --small-cache-timeout) SMALL_CACHE_TIMEOUT=$2; shift 2 ;;
        --scale) SCALE=1; shift ;;
        --scale-only) SCALE=1; MAIN_FIGURES=0; REF_FIGURES=0; shift ;;
        --no-main) MAIN_FIGURES=0; shift ;;
        --scale-books) SCALE_BOOKS=$2; shift 2 ;;
        --scale-chapters) SCALE_CHAPTERS=$2; shift 2 ;;
        --scale-reads) SCALE_READS=$2; shift 2 ;;
        --perf) PERF=1; KEEP=1; shift ;;
        --big) BIG_FIGURES=1; shift ;;
        --big-only) BIG_FIGURES=1; MAIN_FIGURES=0; REF_FIGURES=0; shift ;;
        --big-mb) BIG_MB=$2; shift 2 ;;
        --huge-mb) HUGE_MB=$2; shift 2 ;;
        --bin) BIN_GIVEN=$2; shift 2 ;;
        --transport) TRANSPORTS=$2; shift 2 ;;
        --rtt-calls) RTT_CALLS=$2; shift 2 ;;
        --wholelib) WHOLE=1; MAIN_FIGURES=0; REF_FIGURES=0; shift ;;
        --stat-calls) STAT_CALLS=$2; shift 2 ;;
        --persist) PERSIST=1; WHOLE=1; MAIN_FIGURES=0; REF_FIGURES=0; shift ;;
        --results-dir) RESULTS_DIR=$2; shift 2 ;;
        --bucket) BUCKET=1; MAIN_FIGURES=0; REF_FIGURES=0; shift ;;
        --bucket-tools) BUCKET_TOOLS=1; MAIN_FIGURES=0; REF_FIGURES=0; shift ;;
        --failover) FAILOVER=1; MAIN_FIGURES=0; REF_FIGURES=0; shift ;;
        --fleet) FLEET=1; MAIN_FIGURES=0; REF_FIGURES=0; shift ;;
        --mounts) FLEET_MOUNTS=$2; shift 2 ;;
        --fleet-period) FLEET_PERIOD=$2; shift 2 ;;
        --fleet-duration) FLEET_DURATION=$2; shift 2 ;;
        --fleet-server) FLEET_SERVER=$2; shift 2 ;;
        --bucket-chapters) BUCKET_CHAPTERS=$2; shift 2 ;;
        --s3fs-cap) S3FS_CAP=$2; shift 2 ;;
        --no-s3fs) S3FS_SIDE=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
LIB="python3 $HERE/bench_lib.py"
FLEET_PY="python3 $HERE/bench_fleet.py"
[ -n "$FLEET_DURATION" ] || { FLEET_DURATION=60; [ -z "$QUICK" ] || FLEET_DURATION=12; }
START=$EPOCHREALTIME
START_UTC=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
RESULT_NAME=$(date -u '+%Y-%m-%d-%H%M')
START_UPTIME=$(uptime)
RESULTS_DIR=${RESULTS_DIR:-$REPO/bench/results}

[ "$(id -u)" = 0 ] || { echo "bench.sh: run as root (mounts, drop_caches)" >&2; exit 2; }
[ -e /dev/fuse ] || { echo "bench.sh: /dev/fuse is missing" >&2; exit 2; }

if [ -n "$BIN_GIVEN" ]; then
    BIN=$(realpath "$BIN_GIVEN")
else
    echo "== build"
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
    (cd "$REPO" && cargo build --release --quiet)
    BIN=$CARGO_TARGET_DIR/release/novelfs
fi

WORK=$(mktemp -d /tmp/novelfs-bench.XXXXXX)
ROOT=$WORK/lib
COPIES=$WORK/copies
RES=$WORK/results.tsv
: > "$RES"
MOUNTED=()   # mountpoints currently mounted by this script
URING_SWITCH=/sys/module/fuse/parameters/enable_uring
# The lock the tests take for machine-wide changes (tests/it/common/machine.rs).
URING_LOCK=/run/lock/novelfs-tests.lock; [ -d /run/lock ] || URING_LOCK=/tmp/novelfs-tests.lock
URING_PREV=""   # the switch's value while this script holds it on
TRANSPORT=classic   # how mount_lib's mounts are served
case "${TRANSPORTS:-both}" in
    both) if [ -e "$URING_SWITCH" ]; then TRANSPORTS="classic io_uring"; else
              echo "note: this kernel has no FUSE over io_uring ($URING_SWITCH is missing): classic only"
              TRANSPORTS=classic; fi ;;
    classic) TRANSPORTS=classic ;;
    io_uring) [ -e "$URING_SWITCH" ] || { echo "bench.sh: this kernel has no FUSE over io_uring" >&2; exit 2; }
              TRANSPORTS=io_uring ;;
    *) echo "bench.sh: --transport takes classic, io_uring or both" >&2; exit 2 ;;
esac
FG_PIDS=()   # foreground daemons started by this script (--profile)

# The kernel decides a connection's transport at INIT (which the mount
# command waits for), so the switch is on only while mounting.
uring_on() {
    exec 9> "$URING_LOCK"
    flock 9
    URING_PREV=$(cat "$URING_SWITCH")
    echo Y > "$URING_SWITCH"
}
uring_restore() {
    [ -z "$URING_PREV" ] || echo "$URING_PREV" > "$URING_SWITCH"
    URING_PREV=""
    exec 9>&-
}

cleanup() {
    local rc=$? m p
    set +e
    uring_restore
    for m in "${MOUNTED[@]}"; do
        if mountpoint -q "$m" 2>/dev/null || [ -n "$(findmnt -n "$m" 2>/dev/null)" ]; then
            "$BIN" unmount "$m" 2>/dev/null || "$BIN" unmount --lazy "$m" 2>/dev/null || umount -l "$m"
        fi
    done
    for p in "${FG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
    [ "$BUCKET$BUCKET_TOOLS$FLEET" = 000 ] || ! declare -F bucket_cleanup > /dev/null || bucket_cleanup
    if [ "$KEEP" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

DROP_OK=0
drop_caches() {
    sync
    if echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then DROP_OK=1; else DROP_OK=0; fi
}

# The daemon serving mountpoint $1 (the forked child keeps the command line;
# every mountpoint is a unique path in $WORK).
# The process serving the mount at $1: with a holder (failover, on by
# default) its child `novelfs-server`, which the figures of a daemon's CPU
# and memory are about; else the daemon itself.
daemon_pid() {
    local pids p
    pids=$(pgrep -f -- "novelfs mount [^ ]+ $1( |\$)")
    for p in $pids; do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = novelfs-server ] && { echo "$p"; return 0; }
    done
    [ -z "$pids" ] || echo "$pids" | head -n1
}
# daemon_cpu PID: the CPU time of every thread of the daemon so far
# (user + system, in clock ticks).
daemon_cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# mount_fs MNT [novelfs options...]: mounts the main library; sets DPID.
mount_fs() { mount_lib "$ROOT" "$@"; }

# has_no_index: sets HAS_NO_INDEX (once): whether $BIN takes --no-index (a
# binary from before the persistent index, --bin, has none).
has_no_index() {
    [ -n "${HAS_NO_INDEX:-}" ] && return
    HAS_NO_INDEX=no
    "$BIN" mount --help 2>/dev/null | grep -q -- '--no-index' && HAS_NO_INDEX=yes
}

# mount_lib LIBROOT MNT [novelfs options...]; sets DPID, but with NO_DPID=1
# (a timed mount: the bench's own pgrep is no part of its figure). Without
# an --index-dir among the options, the mount uses no persistent index.
mount_lib() {
    local lib=$1 mnt=$2; shift 2
    mkdir -p "$mnt"
    has_no_index
    case " $* " in
        *" --index-dir "*) ;;
        *) [ "$HAS_NO_INDEX" = yes ] && set -- "$@" --no-index ;;
    esac
    if [ "$TRANSPORT" = io_uring ]; then
        uring_on
        "$BIN" mount "$lib" "$mnt" --io-uring on "$@"
        uring_restore
    else
        "$BIN" mount "$lib" "$mnt" --io-uring off "$@"
    fi
    MOUNTED+=("$mnt")
    [ "${NO_DPID:-0}" = 1 ] && return
    DPID=$(daemon_pid "$mnt")
    [ -n "$DPID" ] || { echo "bench.sh: no daemon for $mnt" >&2; exit 1; }
}

unmount_fs() {
    local mnt=$1 pid i keep=()
    pid=$(daemon_pid "$mnt" || true)
    alive "$mnt"
    # A reader killed mid-request (the 16M timeout) can keep it busy briefly.
    for i in $(seq 20); do "$BIN" unmount "$mnt" 2>/dev/null && break; sleep 0.5; done
    if mountpoint -q "$mnt"; then "$BIN" unmount --lazy "$mnt"; fi
    for m in "${MOUNTED[@]}"; do [ "$m" = "$mnt" ] || keep+=("$m"); done
    MOUNTED=("${keep[@]}")
    for i in $(seq 100); do
        [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
}

# Fails (so the script stops with non-zero status) if the daemon of $1 died.
alive() {
    if [ -z "$(daemon_pid "$1")" ] || ! stat "$1" > /dev/null 2>&1; then
        echo "bench.sh: the novelfs daemon of $1 died" >&2
        exit 1
    fi
}

elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }

load1() { cut -d' ' -f1 /proc/loadavg; }

# timed KIND FIGURE CMD...: runs CMD, appends its wall time (and the load)
# to the results.
timed() {
    local kind=$1 fig=$2; shift 2
    local t0=$EPOCHREALTIME
    "$@"
    local t1=$EPOCHREALTIME
    printf '%s\t%s\t%s\t%s\n' "$kind" "$fig" "$(elapsed "$t0" "$t1")" "$(load1)" >> "$RES"
}

# pytimed KIND FIGURE DIR pages|files PASSES: the Python reader, timed
# inside Python (interpreter start-up excluded).
pytimed() {
    local kind=$1 fig=$2 secs n bytes
    read -r secs n bytes < <($LIB pyread "$3" "$4" --passes "$5")
    [ "$n" -gt 0 ] || { echo "bench.sh: the Python reader found nothing in $3" >&2; exit 1; }
    printf '%s\t%s\t%s\t%s\n' "$kind" "$fig" "$secs" "$(load1)" >> "$RES"
}

read_chains() { # every offset-N.txt listed in every chapter dir
    find "$1" -mindepth 3 -maxdepth 3 -type f -name 'offset-*.txt' -print0 | xargs -0 -r cat > /dev/null
}
cat_source() { find "$ROOT/novels" -type f -print0 | xargs -0 -r cat > /dev/null; }
cat_tree() { find "$1" -type f -print0 | xargs -0 -r cat > /dev/null; }
# find_first_pages DIR [OUT]: every chapter's first page (lists every chapter dir).
find_first_pages() { find "$1" -name offset-1.txt > "${2:-/dev/null}"; }
ls_l() { ls -l "$1" > /dev/null; }
# Not to /dev/null: GNU grep stops at the first match when its output is /dev/null.
grep_r() { grep -r -- "$WORD" "$1" > "$WORK/grep.out"; }

F_COLD=cold F_WARM=warm F_LS=ls F_LOOK=lookup F_GREP=grep
label() { printf 'label\t%s\t%s\n' "$1" "$2" >> "$RES"; }

echo "== machine"
echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "host:    nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ {printf "%.1f GiB RAM", $2/1048576}' /proc/meminfo)"
echo "kernel:  $(uname -srm)"
echo "sched:   autogroups $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo "?") (1: readers in another session than the daemon's are often woken on the other CPU; docs/performance.md)"
echo "novelfs: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?') ($BIN)"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg)"

main_figures() {
echo "== library"
GEN=(gen "$ROOT" --seed "$SEED")
[ -n "$QUICK" ] && GEN+=(--quick)
[ -n "$BOOKS" ] && GEN+=(--books "$BOOKS")
[ -n "$CHAPTERS" ] && GEN+=(--chapters "$CHAPTERS")
[ -n "$BIG" ] && GEN+=(--big-book "$BIG")
[ -n "$SMALL" ] && GEN+=(--small-book "$SMALL")
$LIB "${GEN[@]}"
# shellcheck disable=SC1091
. "$ROOT/bench-meta"   # big_book big_count small_book small_count grep_word
WORD=$grep_word
echo "on disk: $(du -sh "$ROOT/novels" | cut -f1) in $WORK"
label cold "cold read of every chain vs cat of the source (median of $RUNS)"
label warm "warm read of every chain vs the page copies"
label ls "ls -l of the ${big_count}-chapter book vs its source dir"
label lookup "alias stat, per op: ${big_count}-ch book vs ${small_count}-ch book"
label grep "grep -r over the mount vs over the page copies"
label coldc "cold read, sources cached, vs cat of the cached sources"
label pycold "Python cold read, sources cached, vs Python reading the sources"
label pywarm "Python warm read vs Python reading the page copies"

echo "== page copies"
mount_fs "$WORK/copy-mnt" --ttl "$TTL"
t0=$EPOCHREALTIME
mkdir -p "$COPIES"
cp -r "$WORK/copy-mnt/." "$COPIES/"
alive "$WORK/copy-mnt"
unmount_fs "$WORK/copy-mnt"
echo "copied every listed page in $(elapsed "$t0" "$EPOCHREALTIME") s: $($LIB walk "$COPIES")"
if find "$COPIES" -name ERROR | grep -q .; then echo "bench.sh: the generated library has undecodable chapters" >&2; exit 1; fi

echo "== cold read ($RUNS runs, fresh mount each)"
MAIN=$WORK/mnt
for r in $(seq "$RUNS"); do
    drop_caches
    timed base "$F_COLD" cat_source
    mount_fs "$MAIN" --ttl "$TTL"
    drop_caches
    timed nfs "$F_COLD" read_chains "$MAIN"
    alive "$MAIN"
    [ "$r" = "$RUNS" ] || unmount_fs "$MAIN"
done
[ "$DROP_OK" = 1 ] || echo "note	page cache could NOT be dropped: cold figures are not cold" >> "$RES"

MAIN_DPID=$DPID
echo "== cold read, sources cached ($RUNS runs, fresh mount each)"
CMNT=$WORK/mnt-cached
for r in $(seq "$RUNS"); do
    cat_source
    timed base coldc cat_source
    mount_fs "$CMNT" --ttl "$TTL"
    timed nfs coldc read_chains "$CMNT"
    alive "$CMNT"
    unmount_fs "$CMNT"
done

echo "== Python cold read, sources cached ($RUNS runs, fresh mount each)"
for r in $(seq "$RUNS"); do
    $LIB pyread "$ROOT/novels" files > /dev/null
    pytimed base pycold "$ROOT/novels" files 1
    mount_fs "$CMNT" --ttl "$TTL"
    pytimed nfs pycold "$CMNT" pages 1
    alive "$CMNT"
    unmount_fs "$CMNT"
done
DPID=$MAIN_DPID

echo "== warm read (same mount)"
read_chains "$COPIES"   # the copies were evicted by the drops above
for r in $(seq "$RUNS"); do
    timed nfs "$F_WARM" read_chains "$MAIN"
    timed base "$F_WARM" read_chains "$COPIES"
done
alive "$MAIN"

echo "== Python warm read (same mount, median of 5 passes a run)"
for r in $(seq "$RUNS"); do
    pytimed nfs pywarm "$MAIN" pages 5
    pytimed base pywarm "$COPIES" pages 5
done
alive "$MAIN"

echo "== ls -l of the ${big_count}-chapter book"
ls_l "$ROOT/novels/$big_book"
for r in $(seq "$RUNS"); do
    timed nfs "$F_LS" ls_l "$MAIN/$big_book"
    timed base "$F_LS" ls_l "$ROOT/novels/$big_book"
done
alive "$MAIN"

echo "== grep -r"
grep_r "$COPIES"; base_hits=$(wc -l < "$WORK/grep.out")
grep_r "$MAIN"; nfs_hits=$(wc -l < "$WORK/grep.out")
[ "$base_hits" = "$nfs_hits" ] || { echo "bench.sh: grep found $nfs_hits lines on the mount, $base_hits in the copies" >&2; exit 1; }
for r in $(seq "$RUNS"); do
    timed nfs "$F_GREP" grep_r "$MAIN"
    timed base "$F_GREP" grep_r "$COPIES"
done
alive "$MAIN"
read -r hwm rss < <($LIB rss "$DPID")
printf 'rss\t%s\t%s\t%s\n' "default cache 256M, after cold+warm+ls+grep" "$hwm" $((256 << 20)) >> "$RES"
unmount_fs "$MAIN"

echo "== alias lookups ($LOOKUPS per run, --ttl 0)"
LMNT=$WORK/lookup-mnt
mount_fs "$LMNT" --ttl 0
$LIB prewarm "$LMNT" "$big_book" "$big_count"
$LIB prewarm "$LMNT" "$small_book" "$small_count"
for r in $(seq "$RUNS"); do
    read -r ta tb < <($LIB lookups "$LMNT" "$LOOKUPS" "$r" "$big_book" "$big_count" "$small_book" "$small_count")
    printf 'nfs\t%s\t%s\nbase\t%s\t%s\n' "$F_LOOK" "$ta" "$F_LOOK" "$tb" >> "$RES"
done
alive "$LMNT"
read -r lhwm lrss < <($LIB rss "$DPID")
echo "note	lookup mount (--ttl 0) VmHWM $((lhwm / 1024)) MiB" >> "$RES"
unmount_fs "$LMNT"

echo "== --cache-size 16M (full cold read, at most ${SMALL_CACHE_TIMEOUT}s)"
SMNT=$WORK/small-cache-mnt
mount_fs "$SMNT" --ttl "$TTL" --cache-size 16M
drop_caches
t0=$EPOCHREALTIME
status=0
timeout "$SMALL_CACHE_TIMEOUT" bash -c "$(declare -f read_chains); read_chains '$SMNT'" || status=$?
t1=$EPOCHREALTIME
alive "$SMNT"
read -r hwm rss < <($LIB rss "$DPID")
if [ "$status" = 124 ]; then
    printf 'rss\t%s\t%s\t%s\n' "--cache-size 16M, cold read CUT at ${SMALL_CACHE_TIMEOUT}s" "$hwm" $((16 << 20)) >> "$RES"
    echo "note	16M mount: the cold read did not finish within ${SMALL_CACHE_TIMEOUT}s" >> "$RES"
    # Let the daemon drain what the killed reader left before unmounting.
    sleep 1
elif [ "$status" != 0 ]; then
    echo "bench.sh: the cold read on the 16M mount failed ($status)" >&2
    exit 1
else
    printf 'rss\t%s\t%s\t%s\n' "--cache-size 16M, after a full cold read" "$hwm" $((16 << 20)) >> "$RES"
    label cold16 "cold read with --cache-size 16M vs cat (info, 1 run)"
    printf 'nfs\tcold16\t%s\n' "$(elapsed "$t0" "$t1")" >> "$RES"
    awk -F'\t' '$1 == "base" && $2 == "cold" { print "base\tcold16\t" $3 }' "$RES" >> "$RES.tmp"
    cat "$RES.tmp" >> "$RES"
fi
unmount_fs "$SMNT"

if [ "$PROFILE" = 1 ]; then
    echo "== profile: FUSE requests per workload (RUST_LOG=fuser=debug; times inflated by the logging)"
    PMNT=$WORK/profile-mnt
    PLOG=$WORK/profile.log
    # profile LABEL TTL SETUP MEASURE: on a fresh foreground mount, runs SETUP
    # (a function, or "true"), then counts the requests and time of MEASURE.
    profile() {
        local label=$1 ttl=$2 setup=$3 measure=$4
        mkdir -p "$PMNT"
        : > "$PLOG"
        RUST_LOG=fuser=debug "$BIN" mount "$ROOT" "$PMNT" -f $([ "${HAS_NO_INDEX:-yes}" = yes ] && echo --no-index) --ttl "$ttl" 2>> "$PLOG" &
        local pid=$!
        FG_PIDS+=("$pid")
        MOUNTED+=("$PMNT")
        for _ in $(seq 100); do mountpoint -q "$PMNT" && break; sleep 0.05; done
        mountpoint -q "$PMNT" || { echo "bench.sh: profile mount failed" >&2; exit 1; }
        "$setup"
        [ "$label" != "cold read (chains)" ] || drop_caches
        : > "$PLOG"
        local t0=$EPOCHREALTIME
        "$measure"
        local t1=$EPOCHREALTIME
        local ops
        ops=$($LIB ops "$PLOG")
        "$BIN" unmount "$PMNT"
        wait "$pid" || true
        MOUNTED=()
        FG_PIDS=()
        printf '  %-40s %8.3f s  %s\n' "$label" "$(elapsed "$t0" "$t1")" "$ops"
    }
    p_read() { read_chains "$PMNT"; }
    p_ls() { ls_l "$PMNT/$big_book"; }
    p_grep() { grep_r "$PMNT"; }
    p_prewarm() { $LIB prewarm "$PMNT" "$big_book" "$big_count"; }
    p_look() { $LIB lookups "$PMNT" 1000 1 "$big_book" "$big_count" "$big_book" "$big_count" > /dev/null; }
    profile "cold read (chains)" "$TTL" true p_read
    profile "warm read (second pass)" "$TTL" p_read p_read
    profile "ls -l ${big_count}-chapter book (after a read)" "$TTL" p_read p_ls
    profile "grep -r (second pass)" "$TTL" p_grep p_grep
    profile "2000 alias stats, ${big_count}-ch book, ttl 0" 0 p_prewarm p_look
fi

}

# The reference shape: the library the golden cases are made from.
reference_figures() {
    echo "== reference-shaped library (tests/golden/make_library.py)"
    REF=$WORK/ref
    [ -d "$REF/novels" ] || python3 "$REPO/tests/golden/make_library.py" "$REF"
    label refcold "reference library, cold pass from Python, sources cached, vs Python reading the sources"
    label refwarm "reference library, warm pass from Python vs plain copies"
    local rmnt=$WORK/ref-mnt r
    mount_lib "$REF" "$rmnt" --ttl "$TTL"
    rm -rf "$WORK/ref-copies"
    mkdir -p "$WORK/ref-copies"
    cp -r "$rmnt/." "$WORK/ref-copies/"
    unmount_fs "$rmnt"
    echo "sources: $($LIB walk "$REF/novels"); pages: $($LIB walk "$WORK/ref-copies")"
    for r in $(seq "$RUNS"); do
        $LIB pyread "$REF/novels" files > /dev/null
        pytimed base refcold "$REF/novels" files 1
        mount_lib "$REF" "$rmnt" --ttl "$TTL"
        pytimed nfs refcold "$rmnt" pages 1
        alive "$rmnt"
        [ "$r" = "$RUNS" ] || unmount_fs "$rmnt"
    done
    $LIB pyread "$WORK/ref-copies" pages > /dev/null
    for r in $(seq "$RUNS"); do
        pytimed nfs refwarm "$rmnt" pages 20
        pytimed base refwarm "$WORK/ref-copies" pages 20
    done
    alive "$rmnt"
    unmount_fs "$rmnt"
}

# The scale library: many books of small chapters, sources cached.
scale_figures() {
    local books=${SCALE_BOOKS:-2000} chapters
    [ -n "$SCALE_BOOKS" ] || [ -z "$QUICK" ] || books=200
    chapters=$((books * SCALE_CHAPTERS))
    echo "== scale library: $books books x $SCALE_CHAPTERS chapters"
    SROOT=$WORK/scale SCALE_SHAPE_BOOKS=$books
    # Made once, for the first transport measured.
    [ -d "$SROOT/novels" ] || $LIB gen-scale "$SROOT" --books "$books" --chapters "$SCALE_CHAPTERS" --seed "$SEED"
    label scfind "scale: find -name offset-1.txt, cold (fresh mount, sources cached), vs find over the sources"
    label sccat "scale: the same cold find vs reading every source once (find | xargs cat, cached)"
    label scwarm "scale: the same find again (warm) vs find over the sources"
    cat_tree "$SROOT/novels"
    find_first_pages "$SROOT/novels"
    timed base scfind find_first_pages "$SROOT/novels"
    timed base sccat cat_tree "$SROOT/novels"
    local smnt=$WORK/scale-mnt n reads every cpu0 cpu1 ticks
    mount_lib "$SROOT" "$smnt" --ttl "$TTL"
    ticks=$(getconf CLK_TCK)
    cpu0=$(daemon_cpu "$DPID")
    timed nfs scfind find_first_pages "$smnt" "$WORK/scale-pages"
    cpu1=$(daemon_cpu "$DPID")
    alive "$smnt"
    n=$(wc -l < "$WORK/scale-pages")
    [ "$n" = "$chapters" ] || { echo "bench.sh: find saw $n offset-1.txt, expected $chapters" >&2; exit 1; }
    awk -F'\t' '$1 == "nfs" && $2 == "scfind" { print "nfs\tsccat\t" $3 "\t" $4 }' "$RES" | tail -n 1 >> "$RES"
    # The daemon's CPU time (user + system, all its threads) during the cold
    # find, per chapter directory; the wall time per directory is a note.
    printf 'limit\tscale: daemon CPU per chapter directory listed cold\t%s\t0.000020\t%s\n' \
        "$(awk -v a="$cpu0" -v b="$cpu1" -v t="$ticks" -v n="$chapters" 'BEGIN { printf "%.9f", (b - a) / t / n }')" "$(load1)" >> "$RES"
    awk -F'\t' '$1 == "nfs" && $2 == "scfind" { printf "note\tscale: wall time per chapter directory listed cold %.1f us\n", $3 / '"$chapters"' * 1e6 }' "$RES" | tail -n 1 >> "$RES"
    timed nfs scwarm find_first_pages "$smnt"
    timed base scwarm find_first_pages "$SROOT/novels"
    reads=$SCALE_READS
    [ "$reads" -le "$chapters" ] || reads=$chapters
    every=$((chapters / reads))
    t0=$EPOCHREALTIME
    awk -v k="$every" -v m="$reads" 'NR % k == 0 && c < m { print; c++ }' "$WORK/scale-pages" | tr '\n' '\0' | xargs -0 -r cat > /dev/null
    echo "note	scale: cat of $reads listed pages took $(elapsed "$t0" "$EPOCHREALTIME") s (load $(load1))" >> "$RES"
    alive "$smnt"
    read -r hwm rss < <($LIB rss "$DPID")
    printf 'rss\t%s\t%s\t%s\n' "scale, default cache 256M, after listing $chapters chapters and reading $reads pages" "$hwm" $((256 << 20)) >> "$RES"
    echo "note	scale mount: VmRSS at the end $((rss / 1024)) MiB" >> "$RES"
    unmount_fs "$smnt"
}

# perf on the daemon: where the cold time goes (scale find, reference cold
# pass). Not timed figures: perf slows the daemon.
perf_figures() {
    command -v perf > /dev/null || { echo "bench.sh: --perf needs perf" >&2; return; }
    local out=$WORK/perf pmnt=$WORK/perf-mnt
    mkdir -p "$out"
    # perf_run NAME LIBROOT FREQ CMD...: a fresh mount of LIBROOT, CMD run
    # with perf record (dwarf call graphs: no frame pointers) and perf stat
    # attached to its daemon.
    perf_run() {
        local name=$1 lib=$2 freq=$3; shift 3
        mount_lib "$lib" "$pmnt" --ttl "$TTL"
        perf record -q -F "$freq" --call-graph dwarf,16384 -p "$DPID" -o "$out/$name.data" 2> /dev/null &
        local rec=$!
        perf stat -e task-clock,page-faults,minor-faults,major-faults,context-switches,cpu-migrations -p "$DPID" -o "$out/$name.stat" &
        local st=$!
        sleep 1
        local t0=$EPOCHREALTIME
        "$@"
        echo "$name: $(elapsed "$t0" "$EPOCHREALTIME") s under perf (load $(load1))" | tee -a "$out/summary.txt"
        kill -INT "$rec" "$st"
        wait "$rec" "$st" || true
        read -r hwm rss < <($LIB rss "$DPID")
        echo "$name: daemon VmHWM $((hwm / 1024)) MiB, VmRSS $((rss / 1024)) MiB" | tee -a "$out/summary.txt"
        unmount_fs "$pmnt"
        perf report -i "$out/$name.data" --stdio --no-children --sort symbol -g none --percent-limit 0.3 2> /dev/null > "$out/$name.self.txt" || true
        perf report -i "$out/$name.data" --stdio --children --sort symbol -g none --percent-limit 1 2> /dev/null > "$out/$name.children.txt" || true
        perf report -i "$out/$name.data" --stdio --no-children --sort symbol -g caller,0.5,callee --percent-limit 2 2> /dev/null > "$out/$name.graph.txt" || true
    }
    p_scale_find() { find "$pmnt" -name offset-1.txt > /dev/null; }
    p_ref_cold() { $LIB pyread "$pmnt" pages > /dev/null; }
    [ -z "${SROOT:-}" ] || perf_run scale-find "$SROOT" 199 p_scale_find
    [ -z "${REF:-}" ] || perf_run ref-cold "$REF" 4999 p_ref_cold
    echo "perf data and reports in $out"
}

# Big chapters: does a small page wait for big loads, and does reading a
# chapter bigger than the cache hold it whole?
big_figures() {
    local broot=$WORK/big bmnt=$WORK/big-mnt run p1 p2 t0 t1 small ended vals=() dir last
    echo "== big chapters: two of $BIG_MB MB, then one of $HUGE_MB MB"
    $LIB gen-big "$broot/novels/大书/第1章.md" --mb "$BIG_MB" --seed 1
    $LIB gen-big "$broot/novels/大书/第2章.md" --mb "$BIG_MB" --seed 2
    mkdir -p "$broot/novels/小书"
    printf '短短的一行\n第二行\n' > "$broot/novels/小书/第1章 短.md"
    cat "$broot/novels/大书/"* > /dev/null
    for run in $(seq "$RUNS"); do
        mount_lib "$broot" "$bmnt"
        ls "$bmnt/小书" "$bmnt/大书" > /dev/null
        t0=$EPOCHREALTIME
        cat "$bmnt/大书/第1章.md/offset-1.txt" > /dev/null & p1=$!
        cat "$bmnt/大书/第2章.md/offset-1.txt" > /dev/null & p2=$!
        sleep 0.3
        ended=""
        kill -0 "$p1" 2> /dev/null && kill -0 "$p2" 2> /dev/null || ended=" (a big load had ended before: not a stall measure)"
        t1=$EPOCHREALTIME
        cat "$bmnt/小书/第1章 短.md/offset-1.txt" > /dev/null
        small=$(elapsed "$t1" "$EPOCHREALTIME")
        wait "$p1" "$p2"
        vals+=("$small")
        echo "note	big: run $run: small page ${small} s while two $BIG_MB MB chapters loaded; their first pages took $(elapsed "$t0" "$EPOCHREALTIME") s (load $(load1))$ended" >> "$RES"
        alive "$bmnt"
        unmount_fs "$bmnt"
    done
    printf 'limit\tbig: a small page while two %s MB chapters load (median of %s)\t%s\t0.3\t%s\n' \
        "$BIG_MB" "$RUNS" "$(printf '%s\n' "${vals[@]}" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')" "$(load1)" >> "$RES"
    rm -f "$broot/novels/大书/"*
    $LIB gen-big "$broot/novels/大书/第1章.md" --mb "$HUGE_MB" --seed 3
    mount_lib "$broot" "$bmnt" --max-chapter-bytes 1GiB
    dir="$bmnt/大书/第1章.md"
    t0=$EPOCHREALTIME
    cat "$dir/offset-1.txt" > /dev/null
    t1=$EPOCHREALTIME
    last=$(ls "$dir" | sed -n 's/^offset-\([0-9]*\)\.txt$/\1/p' | sort -n | tail -n1)
    cat "$dir/offset-$last.txt" > /dev/null
    echo "note	big: $HUGE_MB MB chapter: first page $(elapsed "$t0" "$t1") s, listing and last page (offset $last) $(elapsed "$t1" "$EPOCHREALTIME") s (load $(load1))" >> "$RES"
    alive "$bmnt"
    read -r hwm rss < <($LIB rss "$DPID")
    printf 'rss\t%s\t%s\t%s\n' "$HUGE_MB MB chapter, default cache 256M, after its first and last page" "$hwm" $((256 << 20)) >> "$RES"
    unmount_fs "$bmnt"
    rm -rf "$broot"
}

# in_transport T FUNC: FUNC with its mounts served by transport T; the
# figures it adds are marked with T.
in_transport() {
    local t=$1 from
    from=$(wc -l < "$RES")
    TRANSPORT=$t
    echo "== transport: $t"
    "$2"
    TRANSPORT=classic
    awk -F'\t' -v OFS='\t' -v from="$from" -v t="$t" '
        NR > from && ($1 == "label" || $1 == "nfs" || $1 == "base") { $2 = $2 "@" t }
        NR > from && $1 == "label" { $3 = "[" t "] " $3 }
        NR > from && ($1 == "limit" || $1 == "rss" || $1 == "size" || $1 == "note") { $2 = "[" t "] " $2 }
        { print }' "$RES" > "$RES.tmp"
    mv "$RES.tmp" "$RES"
}

# The round trip: IOCTLs on one open page, the transports alternating.
rtt_figures() {
    echo "== round trip: $RTT_CALLS IOCTLs on one open page (--ttl 0), $RUNS runs per transport"
    local rlib=$WORK/rtt-lib rmnt=$WORK/rtt-mnt r t med mean
    mkdir -p "$rlib/novels/书"
    printf '第一行。\n' > "$rlib/novels/书/第1章.md"
    local -A meds=()
    # The client: a C loop when a compiler is here (the round trip itself),
    # else Python's (which adds its own 3-5 us a call: an OSError per ENOTTY).
    local rtt=($LIB rtt) client=Python
    if command -v cc > /dev/null && cc -O2 -x c -o "$WORK/rtt" - 2> /dev/null <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    int n = atoi(argv[2]), fd = open(argv[1], O_RDONLY);
    if (fd < 0 || n < 1) return 1;
    double *t = malloc(n * sizeof *t), sum = 0;
    struct termios tio;
    for (int i = 0; i < n; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        ioctl(fd, TCGETS, &tio);
        clock_gettime(CLOCK_MONOTONIC, &b);
        t[i] = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
        sum += t[i];
    }
    qsort(t, n, sizeof *t, cmp);
    printf("%.9f %.9f\n", t[n / 2], sum / n);
    return 0;
}
C
    then
        rtt=("$WORK/rtt") client=C
    fi
    echo "   client: $client"
    # What the same call costs the client on a local file (ENOTTY at once):
    # the part of each figure below that is not the round trip.
    read -r med mean < <("${rtt[@]}" "$rlib/novels/书/第1章.md" "$RTT_CALLS")
    printf 'note\tround trip (%s client): the same IOCTL on a local file takes a median %s us (no FUSE)\n' \
        "$client" "$(awk -v x="$med" 'BEGIN { printf "%.1f", x * 1e6 }')" >> "$RES"
    for r in $(seq "$RUNS"); do
        for t in $TRANSPORTS; do
            TRANSPORT=$t
            mount_lib "$rlib" "$rmnt" --ttl 0
            read -r med mean < <("${rtt[@]}" "$rmnt/书/1/offset-1.txt" "$RTT_CALLS")
            alive "$rmnt"
            unmount_fs "$rmnt"
            TRANSPORT=classic
            meds[$t]+="$med "
            printf 'note\tround trip, %s, run %s: median %s us, mean %s us (load %s)\n' "$t" "$r" \
                "$(awk -v x="$med" 'BEGIN { printf "%.1f", x * 1e6 }')" \
                "$(awk -v x="$mean" 'BEGIN { printf "%.1f", x * 1e6 }')" "$(load1)" >> "$RES"
            [ "$t" = classic ] && printf 'base\trtt\t%s\t%s\n' "$med" "$(load1)" >> "$RES"
            [ "$t" = io_uring ] && printf 'nfs\trtt\t%s\t%s\n' "$med" "$(load1)" >> "$RES"
        done
    done
    if [ -n "${meds[io_uring]:-}" ]; then
        label rtt "round trip (IOCTL, $client client), median per call: io_uring (novelfs column) vs classic (baseline)"
        printf 'limit\tround trip through io_uring (%s client), median of the runs\t%s\t0.000015\t%s\n' "$client" \
            "$(echo "${meds[io_uring]}" | tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')" \
            "$(load1)" >> "$RES"
    fi
}

# The floor: the same readers over a FUSE server that does no work at all
# (scripts/floor/tree.c answers a tree of the same shape from arithmetic).
# What a figure costs there, any FUSE server pays on this machine; what
# novelfs costs above it is its own.
floor_figures() {
    floor_build || return 0
    echo "== the floor: a FUSE server that does no work (scripts/floor/tree.c)"
    for t in $TRANSPORTS; do
        in_transport "$t" floor_transport
    done
}

# floor_build: compiles the zero-work server once into $WORK/floor-tree;
# fails with a note when it cannot be built.
floor_build() {
    [ ! -x "$WORK/floor-tree" ] || return 0
    [ ! -e "$WORK/floor-cc.log" ] || return 1
    if ! cc -O2 -pthread -I"$REPO/scripts/floor" -o "$WORK/floor-tree" "$REPO/scripts/floor/tree.c" \
        -luring 2> "$WORK/floor-cc.log"; then
        printf 'note\tfloor: not measured (scripts/floor/tree.c needs cc and liburing-dev: %s)\n' \
            "$(grep -m1 -i error "$WORK/floor-cc.log")" >> "$RES"
        return 1
    fi
}

# floor_mount BOOKS CHAPTERS [tree.c options...]: the zero-work server at
# $FMNT; sets FPID.
floor_mount() {
    local mode=classic log=$WORK/floor.log books=$1 chapters=$2
    shift 2
    [ "$TRANSPORT" = io_uring ] && mode=uring
    mkdir -p "$FMNT"
    MOUNTED+=("$FMNT")
    : > "$log"
    [ "$mode" = classic ] || uring_on
    # In a session of its own, as FUSE servers run once daemonized (libfuse's
    # fuse_daemonize, `novelfs mount`): with the scheduler's autogroups on, a
    # server in its reader's session keeps the reader on one CPU over
    # io_uring, one in a session of its own does not (docs/performance.md,
    # "What the machine does to a round trip"). FLOOR_SESSION=bench runs it in
    # the bench's session instead. setsid execs in place here (a background
    # job of a script is no process group leader), so $! is the server.
    local own=setsid
    [ "${FLOOR_SESSION:-own}" = bench ] && own=
    $own "$WORK/floor-tree" "$FMNT" "$mode" -B "$books" -C "$chapters" "$@" 2>> "$log" &
    FPID=$!
    # Its first request makes it INIT; io_uring queues register after it,
    # and only while the switch is on.
    for _ in $(seq 100); do mountpoint -q "$FMNT" && break; sleep 0.02; done
    stat "$FMNT" > /dev/null 2>&1
    if [ "$mode" = uring ]; then
        for _ in $(seq 100); do grep -q 'queues x' "$log" && break; sleep 0.02; done
        uring_restore
        grep -q 'queues x' "$log" || { echo "bench.sh: the floor server registered no io_uring queue: $(cat "$log")" >&2; exit 1; }
    fi
    mountpoint -q "$FMNT" || { echo "bench.sh: the floor server did not mount: $(cat "$log")" >&2; exit 1; }
}
floor_unmount() { umount "$FMNT"; wait "$FPID" 2> /dev/null; }

floor_transport() {
    local r cpu0 cpu1 pages
    FMNT=$WORK/floor-mnt
    if [ "$REF_FIGURES" = 1 ] && [ -d "$WORK/ref-copies" ]; then
        # As many one-page chapters as the reference library has pages.
        pages=$(find "$WORK/ref-copies" -name 'offset-*.txt' | wc -l)
        label flwarm "floor: warm pass from Python over a FUSE server doing no work ($pages pages), vs plain copies"
        floor_mount 1 "$pages"
        rm -rf "$WORK/floor-copies"
        mkdir -p "$WORK/floor-copies"
        cp -r "$FMNT/." "$WORK/floor-copies/"
        $LIB pyread "$FMNT" pages > /dev/null
        $LIB pyread "$WORK/floor-copies" pages > /dev/null
        for r in $(seq "$RUNS"); do
            pytimed nfs flwarm "$FMNT" pages 20
            pytimed base flwarm "$WORK/floor-copies" pages 20
        done
        floor_unmount
    fi
    if [ "$SCALE" = 1 ] && [ -n "${SROOT:-}" ]; then
        label flscale "floor: cold find -name offset-1.txt over a FUSE server doing no work, the scale library's shape, vs reading every source once (find | xargs cat, cached)"
        for r in $(seq "$RUNS"); do
            floor_mount "$SCALE_SHAPE_BOOKS" "$SCALE_CHAPTERS"
            cpu0=$(daemon_cpu "$FPID")
            timed nfs flscale find_first_pages "$FMNT"
            cpu1=$(daemon_cpu "$FPID")
            floor_unmount
            timed base flscale cat_tree "$SROOT/novels"
        done
        printf 'note\tfloor: the zero-work server'"'"'s CPU per chapter directory listed cold (last run): %s us\n' \
            "$(awk -v a="$cpu0" -v b="$cpu1" -v t="$(getconf CLK_TCK)" -v n="$((SCALE_SHAPE_BOOKS * SCALE_CHAPTERS))" 'BEGIN { printf "%.1f", (b - a) / t / n * 1e6 }')" >> "$RES"
    fi
}

# Whole-library work: grep -r of everything, novel_books, ripgrep's walk and
# its probes of missing names, and the daemon's memory meanwhile, with the
# floor's grep beside them.
wholelib_figures() {
    local books=${SCALE_BOOKS:-2000} chapters r wmnt=$WORK/whole-mnt cpu0 cpu1 ticks hwm rss
    local grep_hwm=0 books_hwm=0 chapter_dir source_file tm te t0 rg_ok=1
    [ -n "$SCALE_BOOKS" ] || [ -z "$QUICK" ] || books=200
    chapters=$((books * SCALE_CHAPTERS))
    ticks=$(getconf CLK_TCK)
    echo "== whole library: $books books x $SCALE_CHAPTERS chapters"
    WROOT=$WORK/whole
    # Made once, for the first transport measured.
    [ -d "$WROOT/novels" ] || $LIB gen-scale "$WROOT" --books "$books" --chapters "$SCALE_CHAPTERS" --seed "$SEED"
    command -v rg > /dev/null || rg_ok=0
    label wgrep "whole library ($chapters chapters): grep -r WORD (found nowhere), cold (fresh mount, sources cached), vs the same grep over the sources"
    label wgrepwarm "whole library: the same grep again on that mount (warm) vs over the sources"
    label wcpu "whole library: daemon CPU per page file during the cold grep, novelfs (novelfs column) vs the zero-work server (baseline)"
    label wbooks "whole library: first cat MNT/novel_books.txt on a fresh mount vs a cat of every source (cached)"
    label wrg "whole library: warm rg --files MNT vs warm find MNT -type f on the same mount"
    label wstat "whole library: stat of a missing name in a chapter dir (.gitignore) vs of an existing page, per op"
    for r in $(seq "$RUNS"); do
        cat_tree "$WROOT/novels"
        timed base wgrep grep_nowhere "$WROOT/novels"
        mount_lib "$WROOT" "$wmnt" --ttl "$TTL"
        cpu0=$(daemon_cpu "$DPID")
        timed nfs wgrep grep_nowhere "$wmnt"
        cpu1=$(daemon_cpu "$DPID")
        alive "$wmnt"
        timed nfs wgrepwarm grep_nowhere "$wmnt"
        timed base wgrepwarm grep_nowhere "$WROOT/novels"
        alive "$wmnt"
        read -r hwm rss < <($LIB rss "$DPID")
        [ "$hwm" -le "$grep_hwm" ] || grep_hwm=$hwm
        # What the grep read: every listed file (pages and index files), and
        # the mean size of each kind, which the floor's files take.
        [ -n "${WHOLE_FILES:-}" ] || whole_shape "$wmnt" "$books"
        printf 'nfs\twcpu\t%s\t%s\n' "$(awk -v a="$cpu0" -v b="$cpu1" -v t="$ticks" -v n="$WHOLE_FILES" \
            'BEGIN { printf "%.9f", (b - a) / t / n }')" "$(load1)" >> "$RES"
        if [ "$rg_ok" = 1 ]; then
            find "$wmnt" -type f > /dev/null
            rg --files "$wmnt" > /dev/null
            timed nfs wrg rg_files "$wmnt"
            timed base wrg find_files "$wmnt"
        fi
        chapter_dir=$(find "$wmnt" -mindepth 2 -maxdepth 2 -type d -print -quit)
        read -r tm te < <($LIB statloop "$chapter_dir/.gitignore" "$chapter_dir/offset-1.txt" "$STAT_CALLS")
        printf 'nfs\twstat\t%s\t%s\nbase\twstat\t%s\t%s\n' "$tm" "$(load1)" "$te" "$(load1)" >> "$RES"
        alive "$wmnt"
        unmount_fs "$wmnt"
        cat_tree "$WROOT/novels"
        timed base wbooks cat_tree "$WROOT/novels"
        mount_lib "$WROOT" "$wmnt" --ttl "$TTL"
        timed nfs wbooks cat_books "$wmnt"
        alive "$wmnt"
        read -r hwm rss < <($LIB rss "$DPID")
        [ "$hwm" -le "$books_hwm" ] || books_hwm=$hwm
        unmount_fs "$wmnt"
    done
    [ "$rg_ok" = 1 ] || echo "note	whole library: rg --files not measured (no rg on PATH; apt-get install ripgrep)" >> "$RES"
    source_file=$(find "$WROOT/novels" -mindepth 2 -maxdepth 2 -type f -print -quit)
    read -r tm te < <($LIB statloop "$(dirname "$source_file")/.gitignore" "$source_file" "$STAT_CALLS")
    printf 'note\twhole library: on the sources, a stat of a missing name takes %.1f us, of an existing file %.1f us (load %s)\n' \
        "$(awk -v x="$tm" 'BEGIN { print x * 1e6 }')" "$(awk -v x="$te" 'BEGIN { print x * 1e6 }')" "$(load1)" >> "$RES"
    printf 'rss\t%s\t%s\t%s\n' "whole library, default cache 256M, after the cold and warm grep -r" "$grep_hwm" $((256 << 20)) >> "$RES"
    printf 'rss\t%s\t%s\t%s\n' "whole library, default cache 256M, after novel_books.txt" "$books_hwm" $((256 << 20)) >> "$RES"

    # --cache-size 64M: the same two workloads, once, for the memory.
    cat_tree "$WROOT/novels"
    mount_lib "$WROOT" "$wmnt" --ttl "$TTL" --cache-size 64M
    t0=$EPOCHREALTIME
    grep_nowhere "$wmnt"
    echo "note	whole library, --cache-size 64M: the cold grep -r took $(elapsed "$t0" "$EPOCHREALTIME") s (load $(load1))" >> "$RES"
    alive "$wmnt"
    read -r hwm rss < <($LIB rss "$DPID")
    printf 'rss\t%s\t%s\t%s\n' "whole library, --cache-size 64M, after the cold grep -r" "$hwm" $((64 << 20)) >> "$RES"
    unmount_fs "$wmnt"
    mount_lib "$WROOT" "$wmnt" --ttl "$TTL" --cache-size 64M
    t0=$EPOCHREALTIME
    cat_books "$wmnt"
    echo "note	whole library, --cache-size 64M: the first novel_books.txt took $(elapsed "$t0" "$EPOCHREALTIME") s (load $(load1))" >> "$RES"
    alive "$wmnt"
    read -r hwm rss < <($LIB rss "$DPID")
    printf 'rss\t%s\t%s\t%s\n' "whole library, --cache-size 64M, after novel_books.txt" "$hwm" $((64 << 20)) >> "$RES"
    unmount_fs "$wmnt"

    [ "$PERSIST" = 0 ] || persist_figures "$books" "$wmnt"
    wholelib_tools "$books" "$wmnt"

    # The floor: the same grep over a server that does no work.
    floor_build || return 0
    label flgrep "floor: cold grep -r over a FUSE server doing no work, the same files and bytes, vs the grep over the sources"
    label flgrepwarm "floor: the same grep again (warm) vs the grep over the sources"
    FMNT=$WORK/floor-mnt
    for r in $(seq "$RUNS"); do
        cat_tree "$WROOT/novels"
        timed base flgrep grep_nowhere "$WROOT/novels"
        floor_mount "$books" "$SCALE_CHAPTERS" "${WHOLE_FLOOR_SIZES[@]}" -T 3600
        cpu0=$(daemon_cpu "$FPID")
        timed nfs flgrep grep_nowhere "$FMNT"
        cpu1=$(daemon_cpu "$FPID")
        timed nfs flgrepwarm grep_nowhere "$FMNT"
        timed base flgrepwarm grep_nowhere "$WROOT/novels"
        floor_unmount
        printf 'base\twcpu\t%s\t%s\n' "$(awk -v a="$cpu0" -v b="$cpu1" -v t="$ticks" -v n="$WHOLE_FLOOR_FILES" \
            'BEGIN { printf "%.9f", (b - a) / t / n }')" "$(load1)" >> "$RES"
    done
}

# The tools agents search with (issue #51), each on a fresh mount (cold)
# and again on it (warm), against the same over a fresh mount of the
# zero-work server serving the same shape; and ripgrep against grep and
# find within novelfs.
WTOOLS=(rgl rgfiles rgjson fd find walk lsr du)
declare -A WTOOL_TEXT=(
    [rgl]="rg -l WORD (found nowhere)" [rgfiles]="rg --files" [rgjson]="rg --files -g '*.json'"
    [fd]="fd -t f ." [find]="find MNT -name offset-1.txt" [walk]="Python os.walk counting files"
    [lsr]="ls -R" [du]="du -s")

# tool NAME DIR: runs tool NAME over DIR, its output to $WORK/tool.out;
# stops the bench when it fails (rg -l and grep -r -l must find nothing).
tool() {
    local rc=0 want=0
    case "$1" in
        rgl) want=1; rg -l -- "$WHOLE_WORD" "$2" > "$WORK/tool.out" || rc=$? ;;
        grepl) want=1; grep -r -l -- "$WHOLE_WORD" "$2" > "$WORK/tool.out" || rc=$? ;;
        rgfiles) rg --files "$2" > "$WORK/tool.out" || rc=$? ;;
        rgjson) rg --files -g '*.json' "$2" > "$WORK/tool.out" || rc=$? ;;
        fd) "$FD" -t f . "$2" > "$WORK/tool.out" || rc=$? ;;
        find) find "$2" -name offset-1.txt > "$WORK/tool.out" || rc=$? ;;
        walk) python3 -c 'import os, sys; print(sum(len(f) for _, _, f in os.walk(sys.argv[1])))' "$2" \
                  > "$WORK/tool.out" || rc=$? ;;
        lsr) ls -R "$2" > "$WORK/tool.out" || rc=$? ;;
        du) du -s "$2" > "$WORK/tool.out" || rc=$? ;;
    esac
    [ "$rc" = "$want" ] || { echo "bench.sh: the tool $1 over $2 exited $rc ($want expected)" >&2; exit 1; }
}
# also KIND FIGURE: the run just timed, also as KIND's run of FIGURE.
also() { tail -n 1 "$RES" | awk -F'\t' -v OFS='\t' -v k="$1" -v f="$2" '{ $1 = k; $2 = f; print }' >> "$RES"; }

# wholelib_tools BOOKS MNT: the tools' figures over the whole library
# (its shape known from whole_shape). Each tool: a fresh novelfs mount,
# the tool timed (cold) and again (warm); then a fresh mount of the floor,
# the same two. find's mount also times the first rg --files right after
# the cold find, and the find again is its warm figure. Then grep -r -l on
# a fresh mount, the baseline of the cold rg -l.
wholelib_tools() {
    local books=$1 wmnt=$2 r t floor_ok=1 lines
    local tools=()
    local -A out_nfs=() out_floor=()
    FD=$(command -v fdfind || command -v fd || true)
    floor_build || floor_ok=0
    for t in "${WTOOLS[@]}"; do
        case "$t" in
            rg*) command -v rg > /dev/null || continue ;;
            fd) [ -n "$FD" ] || continue ;;
        esac
        tools+=("$t")
        label "wtc_$t" "whole library: cold ${WTOOL_TEXT[$t]} on a fresh mount vs on a fresh mount of the zero-work server"
        label "wtw_$t" "whole library: warm ${WTOOL_TEXT[$t]} (again on that mount) vs again on the zero-work server"
    done
    command -v rg > /dev/null || echo "note	whole library: the rg tools not measured (no rg on PATH; apt-get install ripgrep)" >> "$RES"
    [ -n "$FD" ] || echo "note	whole library: fd not measured (neither fdfind nor fd on PATH; apt-get install fd-find)" >> "$RES"
    [ "$floor_ok" = 1 ] || echo "note	whole library: the tools' floor not measured (scripts/floor/tree.c not built): no tool row has a baseline" >> "$RES"
    if command -v rg > /dev/null; then
        label wrgl "whole library: cold rg -l WORD vs cold grep -r -l WORD, each on a fresh mount"
        label wrgfind "whole library: cold rg --files vs cold find MNT -name offset-1.txt, each on a fresh mount"
        label wrgafind "whole library: the first rg --files right after a cold find vs that find again (warm), same mount"
        [ "$floor_ok" = 0 ] ||
            label flrgafind "floor: the first rg --files right after a cold find vs that find again (warm), on the zero-work server"
    fi
    echo "== whole library: the tools agents search with (${tools[*]}), novelfs vs the zero-work server"
    FMNT=$WORK/floor-mnt
    for r in $(seq "$RUNS"); do
        cat_tree "$WROOT/novels"
        for t in "${tools[@]}"; do
            mount_lib "$WROOT" "$wmnt" --ttl "$TTL"
            timed nfs "wtc_$t" tool "$t" "$wmnt"
            out_nfs[$t]=$(wc -l < "$WORK/tool.out")
            case "$t" in
                rgl) also nfs wrgl ;;
                rgfiles) also nfs wrgfind ;;
                find) also base wrgfind
                      [ -z "$(command -v rg)" ] || timed nfs wrgafind tool rgfiles "$wmnt" ;;
            esac
            timed nfs "wtw_$t" tool "$t" "$wmnt"
            [ "$t" != find ] || [ -z "$(command -v rg)" ] || also base wrgafind
            alive "$wmnt"
            unmount_fs "$wmnt"
            [ "$floor_ok" = 1 ] || continue
            # The floor keeps names an hour (-T) and its missing names too
            # (-N): novelfs keeps 3600 s the names no change can make
            # resolve in a chapter directory (ripgrep's .gitignore, .ignore,
            # .rgignore and .git probes; fd's .fdignore) and the missing
            # names it records in the directories it watches (books, the
            # root), so neither side asks twice.
            floor_mount "$books" "$SCALE_CHAPTERS" "${WHOLE_FLOOR_SIZES[@]}" -T 3600 -N 3600
            timed base "wtc_$t" tool "$t" "$FMNT"
            out_floor[$t]=$(wc -l < "$WORK/tool.out")
            # As on novelfs's mount: an rg --files between the two finds
            # (what a FUSE server pays for it, the floor's own row).
            [ "$t" != find ] || [ -z "$(command -v rg)" ] || timed nfs flrgafind tool rgfiles "$FMNT"
            timed base "wtw_$t" tool "$t" "$FMNT"
            [ "$t" != find ] || [ -z "$(command -v rg)" ] || also base flrgafind
            floor_unmount
        done
        if command -v rg > /dev/null; then
            mount_lib "$WROOT" "$wmnt" --ttl "$TTL"
            timed base wrgl tool grepl "$wmnt"
            alive "$wmnt"
            unmount_fs "$wmnt"
        fi
    done
    lines=""
    for t in "${tools[@]}"; do lines+=" ${WTOOL_TEXT[$t]}: ${out_nfs[$t]}/${out_floor[$t]:-none};"; done
    echo "note	whole library: lines each tool printed cold (novelfs/floor):${lines%;}" >> "$RES"
}

# persist_figures BOOKS MNT: the persistent index over the whole library
# (the wholelib library, its shape known from whole_shape).
persist_figures() {
    local books=$1 wmnt=$2 idir=$WORK/index r hwm rss books_hwm=0 find_hwm=0 floor_ok=1
    local index_bytes library_bytes
    floor_build || floor_ok=0
    label pindex "whole library: novelfs index into an empty --index-dir vs a cat of every source (cached)"
    label pbooks "whole library, with an index: first cat MNT/novel_books.txt on a fresh mount vs find SRC -printf '%s %T@ %C@ %i' (cached)"
    label pfind "whole library, with an index: cold find MNT -name offset-1.txt on a fresh mount vs the same find over the zero-work server"
    for r in $(seq "$RUNS"); do
        rm -rf "$idir"
        cat_tree "$WROOT/novels"
        timed base pindex cat_tree "$WROOT/novels"
        timed nfs pindex index_lib "$WROOT" "$idir"
        stat_tree "$WROOT/novels"
        timed base pbooks stat_tree "$WROOT/novels"
        mount_lib "$WROOT" "$wmnt" --ttl "$TTL" --index-dir "$idir"
        timed nfs pbooks cat_books "$wmnt"
        alive "$wmnt"
        read -r hwm rss < <($LIB rss "$DPID")
        [ "$hwm" -le "$books_hwm" ] || books_hwm=$hwm
        unmount_fs "$wmnt"
        mount_lib "$WROOT" "$wmnt" --ttl "$TTL" --index-dir "$idir"
        timed nfs pfind find_first_pages "$wmnt"
        alive "$wmnt"
        read -r hwm rss < <($LIB rss "$DPID")
        [ "$hwm" -le "$find_hwm" ] || find_hwm=$hwm
        unmount_fs "$wmnt"
        if [ "$floor_ok" = 1 ]; then
            FMNT=$WORK/floor-mnt
            floor_mount "$books" "$SCALE_CHAPTERS" "${WHOLE_FLOOR_SIZES[@]}" -T 3600
            timed base pfind find_first_pages "$FMNT"
            floor_unmount
        fi
    done
    index_bytes=$(find "$idir" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
    library_bytes=$(find "$WROOT/novels" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
    printf 'size\t%s\t%s\t%s\n' "whole library: the persistent index's files vs 5% of the library's $library_bytes bytes" \
        "$index_bytes" $((library_bytes * 5 / 100)) >> "$RES"
    printf 'rss\t%s\t%s\t%s\n' "whole library, with an index, default cache 256M, after novel_books.txt" "$books_hwm" $((256 << 20)) >> "$RES"
    printf 'rss\t%s\t%s\t%s\n' "whole library, with an index, default cache 256M, after the cold find" "$find_hwm" $((256 << 20)) >> "$RES"
}

# index_lib ROOT DIR: novelfs index of ROOT into DIR (its lines to a log).
index_lib() {
    "$BIN" index "$1" --index-dir "$2" >> "$WORK/index.log" 2>&1 ||
        { echo "bench.sh: novelfs index failed: $(tail -n 3 "$WORK/index.log")" >&2; exit 1; }
}
# stat_tree DIR: what a stat of every source gives (novelfs's stamp of it).
stat_tree() { find "$1" -printf '%s %T@ %C@ %i\n' > /dev/null; }

# grep_nowhere DIR: grep -r for a word found nowhere (it reads every file);
# fails if the word is found or grep fails.
grep_nowhere() {
    local rc=0
    grep -r -- "$WHOLE_WORD" "$1" > "$WORK/grep.out" || rc=$?
    [ "$rc" = 1 ] || { echo "bench.sh: grep -r $WHOLE_WORD $1 exited $rc (1: found nowhere)" >&2; exit 1; }
}
cat_books() { cat "$1/novel_books.txt" > /dev/null; }
rg_files() { rg --files "$1" > /dev/null; }
find_files() { find "$1" -type f > /dev/null; }

# whole_shape MNT BOOKS: sets WHOLE_FILES (the files listed on MNT), and
# WHOLE_FLOOR_SIZES and WHOLE_FLOOR_FILES (tree.c's size options: the mean
# size of each kind of file on MNT, and how many files it then serves).
whole_shape() {
    local shape pages chapters_index books_index
    shape=$(find "$1" -type f -printf '%s %f\n' | awk '
        { n++; k = $2 ~ /^offset-.*\.txt$/ ? "pt" : $2 ~ /^offset-.*\.json$/ ? "pj" : $2; s[k] += $1; c[k]++ }
        function mean(k) { return c[k] ? int(s[k] / c[k] + 0.5) : 0 }
        END { printf "%d %d,%d %d,%d %d,%d", n, mean("pt"), mean("pj"), mean("novel_chapters.txt"),
              mean("novel_chapters.json"), mean("novel_books.txt"), mean("novel_books.json") }')
    read -r WHOLE_FILES pages chapters_index books_index <<< "$shape"
    WHOLE_FLOOR_SIZES=(-P "$pages" -I "$chapters_index" -L "$books_index")
    WHOLE_FLOOR_FILES=$(($2 * (SCALE_CHAPTERS * 2 + 2) + 2))
    echo "note	whole library: the grep reads $WHOLE_FILES files through novelfs, $WHOLE_FLOOR_FILES through the floor (tree.c ${WHOLE_FLOOR_SIZES[*]})" >> "$RES"
}

# ---------------------------------------------------------------------------
# --bucket: a library in a bucket (moto behind tests/s3/proxy.py).

BK_SERVER_PIDS=()   # moto and the proxy, killed by cleanup
S3FS_FIRST_RUNS=3   # runs of the first page over s3fs (its median is shown)
S3FS_PID=""         # the s3fs of the s3fs side while mounted
S3FS_MNT=""

bucket_cleanup() {
    local p
    if [ -n "$S3FS_MNT" ] && mountpoint -q "$S3FS_MNT" 2>/dev/null; then
        umount "$S3FS_MNT" 2>/dev/null || umount -l "$S3FS_MNT"
    fi
    [ -z "$S3FS_PID" ] || { kill "$S3FS_PID" 2>/dev/null; wait "$S3FS_PID" 2>/dev/null || true; }
    for p in "${BK_SERVER_PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    BK_SERVER_PIDS=()
    S3FS_PID=""
    return 0
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# bucket_servers: moto on 127.0.0.1 and the proxy in front of it; sets
# MOTO_PORT, PROXY_PORT, EP (the proxy's URL).
bucket_servers() {
    local moto=${NOVELFS_MOTO_VENV:-$HOME/.cache/novelfs/moto}/bin/moto_server i
    [ -x "$moto" ] || moto=$(command -v moto_server || true)
    [ -n "$moto" ] || { echo "bench.sh: moto_server is not installed (.ci/run installs it in ~/.cache/novelfs/moto)" >&2; exit 1; }
    MOTO_PORT=$(free_port)
    "$moto" -H 127.0.0.1 -p "$MOTO_PORT" > "$WORK/moto.log" 2>&1 &
    BK_SERVER_PIDS+=($!)
    for i in $(seq 600); do
        curl -s -o /dev/null "http://127.0.0.1:$MOTO_PORT/" && break
        kill -0 "${BK_SERVER_PIDS[-1]}" 2>/dev/null || { echo "bench.sh: moto_server exited: $(tail -3 "$WORK/moto.log")" >&2; exit 1; }
        sleep 0.1
    done
    python3 "$REPO/tests/s3/proxy.py" --upstream-port "$MOTO_PORT" > "$WORK/proxy.out" 2> "$WORK/proxy.log" &
    BK_SERVER_PIDS+=($!)
    for i in $(seq 100); do grep -q '^PORT ' "$WORK/proxy.out" && break; sleep 0.1; done
    PROXY_PORT=$(sed -n 's/^PORT //p' "$WORK/proxy.out")
    [ -n "$PROXY_PORT" ] || { echo "bench.sh: proxy.py did not start: $(cat "$WORK/proxy.log")" >&2; exit 1; }
    EP=http://127.0.0.1:$PROXY_PORT
}
proxy_ctl() { curl -sf -X POST -o /dev/null "$EP/__proxy/$1" || { echo "bench.sh: proxy control $1 failed" >&2; exit 1; }; }
proxy_counts() { $LIB s3-counts "$PROXY_PORT"; }   # LIST GET RANGED_GET HEAD max_in_flight

# s3fs_mount: the bucket through s3fs, through the proxy; sets S3FS_PID.
s3fs_mount() {
    local i
    mkdir -p "$S3FS_MNT"
    s3fs "$BUCKET_NAME" "$S3FS_MNT" -f \
        -o "ro,url=$EP,use_path_request_style,stat_cache_expire=1,passwd_file=$WORK/s3fs.passwd" \
        > "$WORK/s3fs.log" 2>&1 &
    S3FS_PID=$!
    for i in $(seq 1500); do
        mountpoint -q "$S3FS_MNT" && return 0
        kill -0 "$S3FS_PID" 2>/dev/null || break
        sleep 0.02
    done
    echo "bench.sh: s3fs did not mount: $(tail -3 "$WORK/s3fs.log")" >&2
    exit 1
}
s3fs_unmount() {
    local i
    for i in $(seq 20); do umount "$S3FS_MNT" 2>/dev/null && break; sleep 0.5; done
    if mountpoint -q "$S3FS_MNT"; then umount -l "$S3FS_MNT"; fi
    kill "$S3FS_PID" 2>/dev/null || true
    wait "$S3FS_PID" 2>/dev/null || true
    S3FS_PID=""
}

# bk_timed CAP WANT_RC CMD...: runs CMD (cut after CAP s when CAP > 0),
# output to $WORK/bk.out; sets BK_SECS and BK_FLAG (cut, err or empty).
bk_timed() {
    local cap=$1 want=$2 rc=0 t0; shift 2
    t0=$EPOCHREALTIME
    if [ "$cap" -gt 0 ]; then timeout "$cap" "$@" > "$WORK/bk.out" 2> "$WORK/bk.err" || rc=$?
    else "$@" > "$WORK/bk.out" 2> "$WORK/bk.err" || rc=$?; fi
    BK_SECS=$(elapsed "$t0" "$EPOCHREALTIME")
    BK_FLAG=""
    if [ "$rc" = 124 ]; then BK_FLAG=cut
    elif [ "$rc" != "$want" ]; then
        BK_FLAG=err
        echo "note	bucket: $* exited $rc ($want expected): $(head -c 300 "$WORK/bk.err" | tr '\n\t' '  ')" >> "$RES"
    fi
}
# bk_record SIDE LAT WORKLOAD: BK_SECS and the proxy's counts since its
# reset, less BK_BASE (counts taken after the workload's mount; emptied).
bk_record() {
    local l g rg h mif l0=0 g0=0 rg0=0 h0=0
    read -r l g rg h mif < <(proxy_counts)
    [ -z "$BK_BASE" ] || read -r l0 g0 rg0 h0 _ <<< "$BK_BASE"
    BK_BASE=""
    l=$((l - l0)) g=$((g - g0)) rg=$((rg - rg0)) h=$((h - h0))
    printf 'bkt\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$BK_SECS" "$l" "$g" "$rg" "$h" "$(load1)" "$BK_FLAG" >> "$RES"
    [ "$1" != s3 ] || [ "$mif" -le "${BK_MAX_IN_FLIGHT:-0}" ] || BK_MAX_IN_FLIGHT=$mif
}
bk_note_mount() { # the requests of a mount alone (BK_BASE)
    local l g rg h
    read -r l g rg h _ <<< "$BK_BASE"
    echo "note	bucket, $1 ms: the mount of $2 alone: LIST $l, GET $g, RANGED_GET $rg, HEAD $h" >> "$RES"
}
# s3fs_cap LAT WORKLOAD: --s3fs-cap, or (auto) 21x the median of the s3://
# side's runs of the same workload (at least 30 s), so that a cut run
# still decides the >= 20x target.
s3fs_cap() {
    [ "$S3FS_CAP" = auto ] || { echo "$S3FS_CAP"; return; }
    awk -F'\t' -v lat="$1" -v wl="$2" '$1 == "bkt" && $2 == "s3" && $3 == lat && $4 == wl { print $5 }' "$RES" |
        sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                                             c = int(21 * m) + 1; print c < 30 ? 30 : c }'
}

bucket_figures() {
    local per=100 books chapters keys lat r hwm rss rate page t0 l g rg h mif cap
    local bmnt=$WORK/bucket-mnt nmnt=$WORK/s3fs-novelfs-mnt url objects bytes secs put_rate
    [ "$BUCKET_CHAPTERS" -ge 100 ] || per=$BUCKET_CHAPTERS
    books=$(( (BUCKET_CHAPTERS + per - 1) / per ))
    chapters=$((books * per))
    echo "== bucket: $books books x $per chapters"
    BROOT=$WORK/bucket-lib
    $LIB gen-scale "$BROOT" --books "$books" --chapters "$per" --seed "$SEED"
    page=$(find "$BROOT/novels" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort | head -n1)/1/offset-1.txt
    BUCKET_NAME=novelfs-bench
    url=s3://$BUCKET_NAME
    S3FS_MNT=$WORK/s3fs-mnt
    echo "== bucket: moto and the proxy"
    bucket_servers
    read -r objects bytes secs put_rate < <($LIB s3-put "$BROOT" "$MOTO_PORT" "$BUCKET_NAME" --jobs 8)
    keys=$objects
    echo "note	bucket: $objects objects ($((bytes / 1024)) KiB) put straight to moto, 8 at once, in $secs s ($put_rate PUTs/s, load $(load1))" >> "$RES"
    rate=$($LIB s3-rate "$PROXY_PORT" "$BUCKET_NAME" "$BROOT" 2000 --jobs 16)
    echo "note	bucket: the server's rate: $rate GETs/s (16 clients, straight through the proxy at 0 ms, load $(load1)): at that rate a GET of every chapter takes $(awk -v c="$chapters" -v r="$rate" 'BEGIN { printf "%.1f", c / r }') s (measured once: it moves with the load)" >> "$RES"
    read -r lists lsecs lrate < <($LIB s3-list-rate "$PROXY_PORT" "$BUCKET_NAME" "$BROOT" --jobs 16)
    echo "note	bucket: the server's LIST rate: $lrate LISTs/s (a LIST of each of the $lists books, 16 at once, straight through the proxy at 0 ms, load $(load1)): $lsecs s for them all (measured once)" >> "$RES"
    printf 'bktlist\t%s\t%s\n' "$lists" "$lsecs" >> "$RES"
    printf 'bktinfo\t%s\t%s\t%s\t%s\t%s\n' "$books" "$chapters" "$keys" "$RUNS" "$S3FS_CAP" >> "$RES"
    [ "$S3FS_SIDE" = 1 ] || echo "note	bucket: novelfs over s3fs not measured (--no-s3fs)" >> "$RES"
    # moto takes any credentials; the daemon finds these in its environment.
    export AWS_ACCESS_KEY_ID=novelfs-bench AWS_SECRET_ACCESS_KEY=novelfs-bench-secret AWS_REGION=us-east-1
    printf 'novelfs-bench:novelfs-bench-secret\n' > "$WORK/s3fs.passwd"
    chmod 600 "$WORK/s3fs.passwd"
    local S3OPTS=(--ttl "$TTL" --endpoint-url "$EP")
    # The workloads measure a mount that lists (the published index's own
    # row measures one that follows the snapshot): once the index is
    # published, a mount follows it by default, and its conditional GET of
    # the snapshot's head per TTL would count among a workload's GETs.
    "$BIN" mount --help 2>/dev/null | grep -q -- '--freshness' &&
        S3OPTS+=(--freshness listing)
    TRANSPORT=classic
    BK_MAX_IN_FLIGHT=0
    has_no_index
    for lat in 0 20; do
        proxy_ctl "set?latency_ms=$lat"
        echo "== bucket, $lat ms: novelfs s3:// ($RUNS runs)"
        for r in $(seq "$RUNS"); do
            proxy_ctl reset
            t0=$EPOCHREALTIME
            NO_DPID=1 mount_lib "$url" "$bmnt" "${S3OPTS[@]}"
            bk_timed 0 0 cat "$bmnt/$page"
            BK_SECS=$(elapsed "$t0" "$EPOCHREALTIME")
            bk_record s3 "$lat" first
            alive "$bmnt"
            unmount_fs "$bmnt"

            proxy_ctl reset
            mount_lib "$url" "$bmnt" "${S3OPTS[@]}"
            BK_BASE=$(proxy_counts)
            [ "$r" != 1 ] || bk_note_mount "$lat" "$url"
            bk_timed 0 0 cat "$bmnt/novel_books.txt"
            bk_record s3 "$lat" books
            alive "$bmnt"
            unmount_fs "$bmnt"

            # A fresh machine's mount of a bucket with a published index:
            # an empty index folder, the index taken at mount.
            if [ "$r" = 1 ] && [ "$lat" = 0 ]; then
                "$BIN" index "$url" --endpoint-url "$EP" --index-dir "$WORK/idx-built" --publish \
                    > /dev/null 2> "$WORK/bk.err" ||
                    echo "note	bucket: novelfs index --publish failed: $(head -c 300 "$WORK/bk.err" | tr '\n\t' '  ')" >> "$RES"
            fi
            rm -rf "$WORK/idx-fresh"
            proxy_ctl reset
            mount_lib "$url" "$bmnt" --ttl "$TTL" --endpoint-url "$EP" --index-dir "$WORK/idx-fresh"
            BK_BASE=$(proxy_counts)
            [ "$r" != 1 ] || echo "note	bucket, $lat ms: the mount taking the published index: LIST $(cut -d' ' -f1 <<< "$BK_BASE"), GET $(cut -d' ' -f2 <<< "$BK_BASE")" >> "$RES"
            bk_timed 0 0 cat "$bmnt/novel_books.txt"
            bk_record s3 "$lat" published
            alive "$bmnt"
            unmount_fs "$bmnt"

            proxy_ctl reset
            mount_lib "$url" "$bmnt" "${S3OPTS[@]}"
            BK_BASE=$(proxy_counts)
            bk_timed 0 1 grep -r -- "$WHOLE_WORD" "$bmnt"
            bk_record s3 "$lat" grep
            alive "$bmnt"
            read -r hwm rss < <($LIB rss "$DPID")
            [ "$hwm" -le "${BK_HWM[$lat]:-0}" ] || BK_HWM[$lat]=$hwm
            proxy_ctl reset
            bk_timed 0 1 grep -r -- "$WHOLE_WORD" "$bmnt"
            bk_record s3 "$lat" grepwarm
            alive "$bmnt"
            unmount_fs "$bmnt"
        done
        printf 'bktrss\t%s\t%s\t%s\n' "$lat ms, default cache 256M, after the cold grep -r" "${BK_HWM[$lat]}" $((256 << 20)) >> "$RES"
        if [ "$lat" = 0 ]; then
            mount_lib "$url" "$bmnt" "${S3OPTS[@]}" --cache-size 64M
            bk_timed 0 1 grep -r -- "$WHOLE_WORD" "$bmnt"
            alive "$bmnt"
            read -r hwm rss < <($LIB rss "$DPID")
            printf 'bktrss\t%s\t%s\t%s\n' "0 ms, --cache-size 64M, after the cold grep -r" "$hwm" $((64 << 20)) >> "$RES"
            echo "note	bucket, 0 ms, --cache-size 64M: the cold grep -r took $BK_SECS s${BK_FLAG:+ ($BK_FLAG)} (load $(load1))" >> "$RES"
            unmount_fs "$bmnt"
        fi
        [ "$S3FS_SIDE" = 1 ] || continue
        echo "== bucket, $lat ms: novelfs over s3fs (1 run, the first page $S3FS_FIRST_RUNS; each workload cut at --s3fs-cap $S3FS_CAP)"
        # The first page over s3fs swings from run to run (s3fs's own
        # start): the median of S3FS_FIRST_RUNS, a couple of seconds each.
        cap=$(s3fs_cap "$lat" first)
        for r in $(seq "$S3FS_FIRST_RUNS"); do
            proxy_ctl reset
            t0=$EPOCHREALTIME
            s3fs_mount
            NO_DPID=1 mount_lib "$S3FS_MNT" "$nmnt" --ttl "$TTL" --source-timeout 3600
            bk_timed "$cap" 0 cat "$nmnt/$page"
            BK_SECS=$(elapsed "$t0" "$EPOCHREALTIME")
            bk_record s3fs "$lat" first
            unmount_fs "$nmnt"
            s3fs_unmount
        done

        proxy_ctl reset
        s3fs_mount
        mount_lib "$S3FS_MNT" "$nmnt" --ttl "$TTL" --source-timeout 3600
        BK_BASE=$(proxy_counts)
        bk_timed "$(s3fs_cap "$lat" books)" 0 cat "$nmnt/novel_books.txt"
        bk_record s3fs "$lat" books
        unmount_fs "$nmnt"
        s3fs_unmount

        proxy_ctl reset
        s3fs_mount
        mount_lib "$S3FS_MNT" "$nmnt" --ttl "$TTL" --source-timeout 3600
        BK_BASE=$(proxy_counts)
        bk_timed "$(s3fs_cap "$lat" grep)" 1 grep -r -- "$WHOLE_WORD" "$nmnt"
        bk_record s3fs "$lat" grep
        if [ "$BK_FLAG" = cut ]; then
            echo "note	bucket, $lat ms: over s3fs, the warm grep -r not measured (the cold one was cut)" >> "$RES"
        else
            proxy_ctl reset
            bk_timed "$(s3fs_cap "$lat" grepwarm)" 1 grep -r -- "$WHOLE_WORD" "$nmnt"
            bk_record s3fs "$lat" grepwarm
        fi
        unmount_fs "$nmnt"
        s3fs_unmount
    done
    proxy_ctl "set?latency_ms=0"
    echo "note	bucket: the most requests in flight at once from novelfs s3:// (the proxy's max_in_flight): $BK_MAX_IN_FLIGHT" >> "$RES"
    unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION
    bucket_cleanup
}
declare -A BK_HWM=()

# in_sandbox MNT CMD...: CMD in a bubblewrap sandbox as tests/it/agents.rs
# makes it: /usr and the system's links read-only, MNT read-only at
# /library, its own /proc and /dev, every namespace unshared.
in_sandbox() {
    local mnt=$1 dir target
    shift
    local args=(--ro-bind /usr /usr)
    # Merged-/usr systems link these; others have real directories.
    for dir in /bin /sbin /lib /lib64 /lib32; do
        if target=$(readlink "$dir"); then args+=(--symlink "$target" "$dir")
        elif [ -d "$dir" ]; then args+=(--ro-bind "$dir" "$dir"); fi
    done
    bwrap "${args[@]}" --proc /proc --dev /dev --ro-bind "$mnt" /library \
        --unshare-all --die-with-parent --new-session "$@"
}

# bt_lists LOG: the LISTs of a proxy log, by prefix.
bt_lists() {
    python3 - "$1" <<'PY'
import collections, sys, urllib.parse
c = collections.Counter()
for line in open(sys.argv[1], encoding="utf-8"):
    f = line.rstrip("\n").split("\t")
    if f[0] == "LIST":
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(f[4]).query)
        c[q.get("prefix", [""])[0]] += 1
top = ", ".join(f"{p or '(none)'} {n}" for p, n in c.most_common(3))
print(f"{sum(c.values())} LISTs of {len(c)} prefixes, the most listed: {top}")
PY
}

# --bucket-tools: rg -l and grep -r -l of a bucket library, each in a
# sandbox on a fresh mount, with the requests each sends.
BT_CHAPTERS=2000 BT_LATENCY=20
bucket_tools_figures() {
    local per=100 books chapters r t objects bytes secs put_rate l g rg h mif l0 g0 rg0 h0
    local bmnt=$WORK/bt-mnt url n0
    books=$((BT_CHAPTERS / per)) chapters=$((BT_CHAPTERS / per * per))
    echo "== bucket tools: $books books x $per chapters at $BT_LATENCY ms, rg -l and grep -r -l in a bubblewrap sandbox ($RUNS runs)"
    command -v bwrap > /dev/null ||
        { echo "note	bucket tools: not measured (no bwrap on PATH; apt-get install bubblewrap)" >> "$RES"; return 0; }
    command -v rg > /dev/null ||
        { echo "note	bucket tools: not measured (no rg on PATH; apt-get install ripgrep)" >> "$RES"; return 0; }
    BTROOT=$WORK/bt-lib
    [ -d "$BTROOT/novels" ] || $LIB gen-scale "$BTROOT" --books "$books" --chapters "$per" --seed "$SEED"
    BUCKET_NAME=novelfs-bench-tools
    url=s3://$BUCKET_NAME
    bucket_servers
    read -r objects bytes secs put_rate < <($LIB s3-put "$BTROOT" "$MOTO_PORT" "$BUCKET_NAME" --jobs 8)
    echo "note	bucket tools: $objects objects ($((bytes / 1024)) KiB) put straight to moto in $secs s" >> "$RES"
    printf 'bttinfo\t%s\t%s\t%s\n' "$chapters" "$BT_LATENCY" "$RUNS" >> "$RES"
    export AWS_ACCESS_KEY_ID=novelfs-bench AWS_SECRET_ACCESS_KEY=novelfs-bench-secret AWS_REGION=us-east-1
    local S3OPTS=(--ttl "$TTL" --endpoint-url "$EP")
    # As the bucket figures: a mount that lists the bucket.
    "$BIN" mount --help 2>/dev/null | grep -q -- '--freshness' && S3OPTS+=(--freshness listing)
    TRANSPORT=classic
    proxy_ctl "set?latency_ms=$BT_LATENCY"
    for r in $(seq "$RUNS"); do
        for t in rgl grepl; do
            proxy_ctl reset
            mount_lib "$url" "$bmnt" "${S3OPTS[@]}"
            read -r l0 g0 rg0 h0 _ < <(proxy_counts)
            n0=$(curl -sf "$EP/__proxy/log" | wc -l)
            if [ "$t" = rgl ]; then bk_timed 0 1 in_sandbox "$bmnt" rg -l -- "$WHOLE_WORD" /library
            else bk_timed 0 1 in_sandbox "$bmnt" grep -r -l -- "$WHOLE_WORD" /library; fi
            read -r l g rg h mif < <(proxy_counts)
            # Found nowhere is also what a tool that saw no file says: a
            # cold read of every chapter GETs each at least once.
            if [ -z "$BK_FLAG" ] && [ $((g - g0 + rg - rg0)) -lt "$chapters" ]; then
                BK_FLAG=err
                echo "note	bucket tools: $t sent $((g - g0 + rg - rg0)) GETs for $chapters chapters: it did not read them all" >> "$RES"
            fi
            # Which prefixes the tool's LISTs were of (from the proxy's log).
            curl -sf "$EP/__proxy/log" | tail -n +$((n0 + 1)) > "$WORK/bt-$t-$r.log"
            echo "note	bucket tools: $t, run $r: $(bt_lists "$WORK/bt-$t-$r.log")" >> "$RES"
            printf 'btt\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$BK_SECS" $((l - l0)) $((g - g0)) \
                $((rg - rg0)) $((h - h0)) "$(load1)" "$BK_FLAG" >> "$RES"
            alive "$bmnt"
            unmount_fs "$bmnt"
        done
    done
    proxy_ctl "set?latency_ms=0"
    unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION
    bucket_cleanup
}

# shellcheck source=scripts/bench_fleet.sh
. "$HERE/bench_fleet.sh"
# shellcheck source=scripts/bench_fleetscale.sh
. "$HERE/bench_fleetscale.sh"

# failover_figures: the failover tests in a release build (see --failover).
failover_figures() {
    echo "== failover: tests/it failover::killed::, failover::upgrade::, failover::sandbox_failover:: (release), $RUNS runs"
    local tests="failover::killed::readers_see_no_error_and_no_wrong_byte_while_the_server_is_killed
        failover::killed::the_holder_stays_small_and_holds_nothing_of_the_library
        failover::upgrade::readers_see_no_error_while_the_server_is_upgraded_in_place
        failover::sandbox_failover::readers_in_a_sandbox_see_no_error_while_the_server_is_killed"
    (cd "$REPO" && cargo test --release --quiet --test it --no-run)
    local r out
    for r in $(seq "$RUNS"); do
        out=$WORK/failover-$r.txt
        # shellcheck disable=SC2086
        (cd "$REPO" && cargo test --release --quiet --test it -- --exact $tests \
            --test-threads 1 --nocapture) > "$out" 2>&1 ||
            { cat "$out"; echo "bench.sh: a failover test failed (run $r)" >&2; return 1; }
        $LIB failover "$out" "$(cut -d' ' -f1 /proc/loadavg)" >> "$RES"
    done
}

# write_result: the run's result file (see "Result file" in the header).
write_result() {
    local commit bin_note="" name out
    # As root in a checkout someone else owns, git asks to be told it is safe.
    commit=$(git -c safe.directory="$REPO" -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
    [ -z "$(git -c safe.directory="$REPO" -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null)" ] ||
        commit=$commit+dirty
    name=$RESULT_NAME-$commit
    if [ -n "$BIN_GIVEN" ]; then
        name=$name-bin
        bin_note=" (--bin: not necessarily the build of the commit above)"
    fi
    mkdir -p "$RESULTS_DIR"
    out=$RESULTS_DIR/$name.txt
    {
        echo "source:  measured by scripts/bench.sh"
        echo "commit:  $commit"
        echo "binary:  $BIN$bin_note"
        echo "command: scripts/bench.sh $ARGS"
        echo "start:   $START_UTC"
        echo "end:     $(date -u '+%Y-%m-%d %H:%M:%S UTC') (total $(elapsed "$START" "$EPOCHREALTIME") s)"
        echo "load:    start:$START_UPTIME"
        echo "load:    end:  $(uptime)"
        echo "machine: nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ {printf "%.1f GiB RAM", $2/1048576}' /proc/meminfo)"
        echo "kernel:  $(uname -srm)"
        echo "sched:   autogroups $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo "?")"
        echo
        cat "$WORK/table.txt"
    } > "$out"
    # The bench runs as root; the file belongs to whoever owns the repository.
    chown --reference="$REPO" "$RESULTS_DIR" "$out" 2>/dev/null || true
    RESULT_FILE=$out
    echo "result file: $out"
}

[ "$MAIN_FIGURES" = 0 ] || main_figures
for t in $TRANSPORTS; do
    [ "$REF_FIGURES" = 0 ] || in_transport "$t" reference_figures
done
for t in $TRANSPORTS; do
    [ "$SCALE" = 0 ] || in_transport "$t" scale_figures
done
# With the main or the reference figures (not for --scale-only, --big-only).
[ "$MAIN_FIGURES$REF_FIGURES" = 00 ] || rtt_figures
[ "$REF_FIGURES$SCALE" = 00 ] || floor_figures
for t in $TRANSPORTS; do
    [ "$WHOLE" = 0 ] || in_transport "$t" wholelib_figures
done
[ "$PERF" = 0 ] || perf_figures
[ "$BIG_FIGURES" = 0 ] || big_figures
[ "$BUCKET" = 0 ] || bucket_figures
[ "$BUCKET_TOOLS" = 0 ] || bucket_tools_figures
[ "$FAILOVER" = 0 ] || failover_figures
if [ "$FLEET" = 1 ]; then
    if [ -n "$CHAPTERS" ]; then fleetscale_figures; else fleet_figures; fi
fi

echo
echo "== results ($(date -u '+%Y-%m-%d %H:%M UTC'), nproc $(nproc), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), total $(elapsed "$START" "$EPOCHREALTIME") s)"
$LIB table "$RES" | tee "$WORK/table.txt"
write_result
# The whole-library figures against the last committed quiet result of
# the same command: REGRESSED (and exit 3) where a ratio grew past the
# run-to-run spread (scripts/bench_regress.py).
if [ "$WHOLE" = 1 ]; then
    python3 "$REPO/scripts/bench_regress.py" "$RESULT_FILE" "$RESULTS_DIR" || exit $?
fi
