#!/usr/bin/env bash
# The main job in one command: build novelfs, mount the bundled sample library
# (examples/library) and show what the mount serves.
#
#   scripts/demo.sh              build, mount at $NOVELFS_DEMO_MNT (default /tmp/novelfs-demo),
#                                show some pages, and leave it mounted for you to explore
#   scripts/demo.sh --unmount    the same, then unmount at the end (or NOVELFS_DEMO_UNMOUNT=1)
#
# Needs: cargo (Rust >= 1.85, edition 2024) and /dev/fuse; as a non-root user also
# fusermount3 (Debian/Ubuntu package fuse3). Honours CARGO_TARGET_DIR.
set -euo pipefail

MNT="${NOVELFS_DEMO_MNT:-/tmp/novelfs-demo}"
case "$MNT" in /*) ;; *) MNT="$PWD/$MNT" ;; esac
cd "$(dirname "$0")/.."
UNMOUNT="${NOVELFS_DEMO_UNMOUNT:-0}"
for arg in "$@"; do
  case "$arg" in
    --unmount) UNMOUNT=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown argument: $arg (try --help)" >&2; exit 2 ;;
  esac
done

die() { printf 'demo.sh: %s\n' "$@" >&2; exit 1; }

# --- prerequisites ---------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    die "cargo (the Rust toolchain) is not installed." \
        "Install it with rustup, then run this script again:" \
        "    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y" \
        "    . \"\$HOME/.cargo/env\"" \
        "(see https://rustup.rs; novelfs needs Rust 1.85 or newer)"
  fi
fi
rustc_minor=$(rustc --version 2>/dev/null | sed -n 's/^rustc 1\.\([0-9]*\).*/\1/p')
if [ -n "$rustc_minor" ] && [ "$rustc_minor" -lt 85 ]; then
  die "$(rustc --version) is too old: novelfs uses edition 2024 (Rust 1.85+)." \
      "Update with:  rustup update stable"
fi
if [ ! -c /dev/fuse ]; then
  die "/dev/fuse is missing, so no FUSE filesystem can be mounted here." \
      "On a Linux host: sudo modprobe fuse   (and install the fuse3 package)." \
      "In a container: start it with  --device /dev/fuse --cap-add SYS_ADMIN" \
      "(without FUSE you can still read pages: target/release/novelfs read --root examples/library 西游记 1)"
fi
if [ "$(id -u)" -ne 0 ] && ! command -v fusermount3 >/dev/null 2>&1 && ! command -v fusermount >/dev/null 2>&1; then
  die "mounting as a non-root user needs fusermount3: sudo apt-get install fuse3 (or your distribution's fuse3)"
fi

# --- build -------------------------------------------------------------------
echo '$ cargo build --release'
cargo build --release
BIN="${CARGO_TARGET_DIR:-target}/release/novelfs"
[ -x "$BIN" ] || die "build finished but $BIN is missing"

# --- mount ---------------------------------------------------------------------
# The file system type of MNT if it is a mount point ("" otherwise), from /proc/self/mounts
# (where a space in a path is written \040).
mount_type() {
  local esc=${1// /\\040}
  awk -v m="$esc" '$2 == m { t = $3 } END { print t }' /proc/self/mounts
}

type=$(mount_type "$MNT")
if [ -n "$type" ]; then
  case "$type" in
    fuse|fuse.*)
      echo "\$ $BIN unmount $MNT        # a previous mount is still there"
      "$BIN" unmount "$MNT" || fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT" \
        || die "could not unmount the previous mount at $MNT"
      ;;
    *) die "$MNT is already a mount point of type $type; choose another with NOVELFS_DEMO_MNT=/some/dir" ;;
  esac
fi
mkdir -p "$MNT"

echo "\$ $BIN mount examples/library $MNT"
"$BIN" mount examples/library "$MNT"

# --- show ----------------------------------------------------------------------
failed=0
# show 'COMMAND': print "$ COMMAND" (with $MNT written out), run it, and keep going on failure.
show() {
  printf '\n$ %s\n' "${1//\$MNT/$MNT}"
  local rc=0
  eval "$1" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "(exit status $rc)"
    failed=1
  fi
}

B='$MNT/西游记'
show "ls \"\$MNT\""
show "ls -l \"$B\""
show "ls \"$B/第01回 灵根孕育源流出 心性修持大道生.md\"     # 446 lines: a chain of 2 pages"
show "readlink \"$B/1\""
show "head -n 20 \"$B/1/offset-1.txt\""
show "tail -n 3 \"$B/1/offset-1.txt\"     # the footer names the next page"
show "tail -n 5 \"$B/1/offset-401.txt\"     # the last page of the chain"
show "head -n 8 \"$B/2/offset-1.txt\"     # stored as GBK with CRLF"
show "head -n 8 \"$B/3/offset-1.txt\"     # stored as UTF-16LE without BOM"
show "head -n 16 \"$B/2/offset-1.json\"     # the same page as JSON"
show "ls \"$B/4\""
show "cat \"$B/4/ERROR\"     # two files share chapter number 4"
show "cat \"\$MNT/唐诗选/静夜思/offset-1.txt\"     # a piece of the title works too"

echo
if [ "$UNMOUNT" = 1 ]; then
  echo "\$ $BIN unmount $MNT"
  "$BIN" unmount "$MNT"
else
  echo "The sample library stays mounted at $MNT — explore it with ls/cat."
  echo "Unmount it with:"
  echo "    $BIN unmount $MNT"
fi
exit "$failed"
