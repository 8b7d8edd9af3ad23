#!/usr/bin/env bash
# novelfs benchmark (issue 4): builds the release binary, generates a seeded
# library, and compares novelfs against plain files. Prints one table.
#
#   scripts/bench.sh [--quick] [--books N] [--chapters N] [--big-book N]
#                    [--small-book N] [--runs N] [--ttl S] [--lookups N]
#                    [--seed S] [--small-cache-timeout S] [--profile] [--keep]
#
# --quick: a small library for a smoke run. --profile: afterwards, count the
# FUSE requests of each workload on a foreground mount (RUST_LOG=fuser=debug).
# --keep: keep the temp dir (library, copies, results.tsv).
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
#   RSS    VmHWM of the main mount's daemon (default cache size) after the
#          cold, warm, ls -l and grep runs (the lookups use their own --ttl 0
#          mount; its VmHWM is printed as a note), and of a --cache-size 16M
#          mount after a full cold read from dropped caches (cut after
#          --small-cache-timeout seconds, default 600: see the notes).
set -euo pipefail
export LC_ALL=C

BOOKS="" CHAPTERS="" BIG="" SMALL="" QUICK="" RUNS=3 TTL=1 LOOKUPS=10000 SEED=42 PROFILE=0 KEEP=0
SMALL_CACHE_TIMEOUT=600
usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }
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
        -h|--help) usage; exit 0 ;;
        *) echo "bench.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
LIB="python3 $HERE/bench_lib.py"
START=$EPOCHREALTIME

[ "$(id -u)" = 0 ] || { echo "bench.sh: run as root (mounts, drop_caches)" >&2; exit 2; }
[ -e /dev/fuse ] || { echo "bench.sh: /dev/fuse is missing" >&2; exit 2; }

echo "== build"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
(cd "$REPO" && cargo build --release --quiet)
BIN=$CARGO_TARGET_DIR/release/novelfs

WORK=$(mktemp -d /tmp/novelfs-bench.XXXXXX)
ROOT=$WORK/lib
COPIES=$WORK/copies
RES=$WORK/results.tsv
: > "$RES"
MOUNTED=()   # mountpoints currently mounted by this script
FG_PIDS=()   # foreground daemons started by this script (--profile)

cleanup() {
    local rc=$? m p
    set +e
    for m in "${MOUNTED[@]}"; do
        if mountpoint -q "$m" 2>/dev/null || [ -n "$(findmnt -n "$m" 2>/dev/null)" ]; then
            "$BIN" unmount "$m" 2>/dev/null || "$BIN" unmount --lazy "$m" 2>/dev/null || umount -l "$m"
        fi
    done
    for p in "${FG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
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

# The daemon serving mountpoint $1 (the forked child keeps the command line).
daemon_pid() { pgrep -f -- "novelfs mount $ROOT $1( |\$)" | head -n1; }

# mount_fs MNT [novelfs options...]; sets DPID.
mount_fs() {
    local mnt=$1; shift
    mkdir -p "$mnt"
    "$BIN" mount "$ROOT" "$mnt" "$@"
    MOUNTED+=("$mnt")
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

# timed KIND FIGURE CMD...: runs CMD, appends its wall time to the results.
timed() {
    local kind=$1 fig=$2; shift 2
    local t0=$EPOCHREALTIME
    "$@"
    local t1=$EPOCHREALTIME
    printf '%s\t%s\t%s\n' "$kind" "$fig" "$(elapsed "$t0" "$t1")" >> "$RES"
}

read_chains() { # every offset-N.txt listed in every chapter dir
    find "$1" -mindepth 3 -maxdepth 3 -type f -name 'offset-*.txt' -print0 | xargs -0 -r cat > /dev/null
}
cat_source() { find "$ROOT/novels" -type f -print0 | xargs -0 -r cat > /dev/null; }
ls_l() { ls -l "$1" > /dev/null; }
# Not to /dev/null: GNU grep stops at the first match when its output is /dev/null.
grep_r() { grep -r -- "$WORD" "$1" > "$WORK/grep.out"; }

F_COLD=cold F_WARM=warm F_LS=ls F_LOOK=lookup F_GREP=grep
label() { printf 'label\t%s\t%s\n' "$1" "$2" >> "$RES"; }

echo "== machine"
echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "host:    nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ {printf "%.1f GiB RAM", $2/1048576}' /proc/meminfo)"
echo "kernel:  $(uname -srm)"
echo "novelfs: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?') ($BIN)"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg)"

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

echo "== warm read (same mount)"
read_chains "$COPIES"   # the copies were evicted by the drops above
for r in $(seq "$RUNS"); do
    timed nfs "$F_WARM" read_chains "$MAIN"
    timed base "$F_WARM" read_chains "$COPIES"
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
        RUST_LOG=fuser=debug "$BIN" mount "$ROOT" "$PMNT" -f --ttl "$ttl" 2>> "$PLOG" &
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

echo
echo "== results ($(date -u '+%Y-%m-%d %H:%M UTC'), nproc $(nproc), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), total $(elapsed "$START" "$EPOCHREALTIME") s)"
$LIB table "$RES"
