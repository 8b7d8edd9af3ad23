#!/usr/bin/env bash
# Prints who can read a novelfs mount, for each access option, mounted by root
# and by an unprivileged user: the owner, root and a third user, on a fresh
# mount and again after root and the owner have read pages (so the kernel has
# them cached). Usage: scripts/access-matrix.sh [NOVELFS_BINARY]
# Needs root and fusermount3; creates the users novelfs-test and
# novelfs-other; sets /dev/fuse to 0666 and user_allow_other in
# /etc/fuse.conf for the run and restores both.
set -euo pipefail
BIN=${1:-target/debug/novelfs}
[ "$(id -u)" -eq 0 ] || { echo "access-matrix.sh: needs root" >&2; exit 2; }
command -v fusermount3 >/dev/null || { echo "access-matrix.sh: needs fusermount3 (fuse3)" >&2; exit 2; }
for u in novelfs-test novelfs-other; do
  id "$u" >/dev/null 2>&1 || useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "$u"
done
WS=$(mktemp -d /tmp/novelfs-matrix.XXXXXX)
chmod 755 "$WS"
cp "$BIN" "$WS/novelfs"; chmod 755 "$WS/novelfs"
cp -r "$(dirname "$0")/../examples/library" "$WS/lib"; chmod -R a+rX "$WS/lib"
OLD_MODE=$(stat -c %a /dev/fuse)
cp -p /etc/fuse.conf "$WS/fuse.conf.orig" 2>/dev/null || true
restore() {
  for m in "$WS"/mnt-*; do mountpoint -q "$m" 2>/dev/null && umount -l "$m"; done
  chmod "$OLD_MODE" /dev/fuse
  if [ -e "$WS/fuse.conf.orig" ]; then cp -p "$WS/fuse.conf.orig" /etc/fuse.conf; else rm -f /etc/fuse.conf; fi
  rm -rf "$WS"
}
trap restore EXIT
chmod 666 /dev/fuse
{ grep -v '^user_allow_other$' "$WS/fuse.conf.orig" 2>/dev/null || true; echo user_allow_other; } > /etc/fuse.conf

reads() { # user mnt -> yes/no
  local who=$1 mnt=$2 page="$2/唐诗选/1/offset-1.txt"
  if runuser -u "$who" -- sh -c 'ls "$1" && cat "$2"' sh "$mnt" "$page" >/dev/null 2>&1; then echo yes; else echo no; fi
}

printf '| mounted by | options | owner | root | third user | owner, after root+owner read | root, after | third user, after | type, source, options |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
n=0
for owner in root novelfs-test; do
  for opts in "" allow_other allow_root auto_unmount; do
    n=$((n + 1)); mnt="$WS/mnt-$n"; mkdir "$mnt"; chown "$owner:" "$mnt"
    args=(mount "$WS/lib" "$mnt" --state-file /nonexistent/state.json)
    [ -n "$opts" ] && args+=(-o "$opts")
    if ! out=$(cd / && runuser -u "$owner" -- "$WS/novelfs" "${args[@]}" 2>&1); then
      printf '| %s | %s | mount failed: %s |||||||\n' "$owner" "${opts:-(none)}" "$(echo "$out" | head -1 | cut -c1-80)"
      continue
    fi
    # The third user goes first: before anyone has filled the caches.
    third=$(reads novelfs-other "$mnt"); by_root=$(reads root "$mnt")
    before="$(reads "$owner" "$mnt") | $by_root | $third"
    # Fill the kernel's caches the way an owner and root would.
    reads root "$mnt" >/dev/null; reads "$owner" "$mnt" >/dev/null
    after="$(reads "$owner" "$mnt") | $(reads root "$mnt") | $(reads novelfs-other "$mnt")"
    shows=$(awk -v m="$mnt" '$5 == m { split($0, a, " - "); split(a[2], f, " "); print f[1] " " f[2] " " f[3] }' /proc/self/mountinfo | tail -1)
    shows=${shows//$WS/WS}
    printf '| %s | %s | %s | %s | %s |\n' "$owner" "${opts:-(none)}" "$before" "$after" "$shows"
    umount -l "$mnt"
  done
done
