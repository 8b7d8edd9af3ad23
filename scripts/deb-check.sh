#!/usr/bin/env bash
# Checks a novelfs .deb as a new machine meets it (CI runs it, as root):
# dpkg -i, the sample library mounted from an fstab line through the
# package's mount(8) helper, a page read and compared with `novelfs read`,
# unmount, dpkg -r, and nothing of the package left behind.
# usage: scripts/deb-check.sh PACKAGE.deb
set -euo pipefail
cd "$(dirname "$0")/.."
deb=${1:?usage: scripts/deb-check.sh PACKAGE.deb}
[ "$(id -u)" = 0 ] || { echo "deb-check.sh: needs root (dpkg -i, mount)" >&2; exit 1; }
if dpkg-query -W -f='${Status}' novelfs 2>/dev/null | grep -q installed; then
  echo "deb-check.sh: a novelfs package is installed already; not touching it" >&2
  exit 1
fi
# The machine-wide change is made under the tests' lock (tests/it/common/machine.rs).
lock=/run/lock/novelfs-tests.lock
[ -d /run/lock ] || lock=/tmp/novelfs-tests.lock
exec 9> "$lock"
flock 9

tmp=$(mktemp -d /tmp/novelfs-deb-check.XXXXXX)
mnt=$tmp/mnt
cleanup() {
  set +e
  if grep -qF " $mnt " /proc/self/mountinfo; then umount -l "$mnt"; fi
  if dpkg-query -W -f='${Status}' novelfs 2>/dev/null | grep -q installed; then dpkg -r novelfs >/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$mnt"
lib=$(cd examples/library && pwd)

dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|; s| ->.*||' > "$tmp/contents"
# The directories that exist before the install stay after the removal.
while read -r path; do
  case "$path" in */) [ -d "$path" ] && echo "$path" ;; esac
done < "$tmp/contents" > "$tmp/dirs-before"

dpkg -i "$deb"
for want in /usr/bin/novelfs /usr/share/man/man1/novelfs.1.gz \
            /usr/share/bash-completion/completions/novelfs /usr/share/zsh/vendor-completions/_novelfs \
            /usr/share/fish/vendor_completions.d/novelfs.fish /usr/share/doc/novelfs/contract.md \
            /usr/share/doc/novelfs/mounting.md /usr/share/doc/novelfs/agents.md \
            /usr/share/doc/novelfs/examples/novelfs.service /usr/share/doc/novelfs/copyright \
            /usr/share/doc/novelfs/CHANGELOG.md; do
  [ -e "$want" ] || { echo "deb-check.sh: the package lacks $want" >&2; exit 1; }
done
[ "$(readlink /sbin/mount.fuse.novelfs)" = /usr/bin/novelfs ] || {
  echo "deb-check.sh: /sbin/mount.fuse.novelfs is not the package's link" >&2; exit 1; }
man -w novelfs > /dev/null

# The fstab line, as docs/mounting.md writes it; the log and the index in
# this check's folder. mount(8) finds the helper by the type.
echo "$lib $mnt fuse.novelfs ro,allow_other,ttl=1,log_file=$tmp/novelfs.log,index_dir=$tmp/index 0 0" > "$tmp/fstab"
mount -T "$tmp/fstab" "$mnt"
grep -F " $mnt " /proc/self/mountinfo | grep -q " - fuse.novelfs $lib " || {
  echo "deb-check.sh: not mounted as fuse.novelfs:" >&2; grep -F " $mnt " /proc/self/mountinfo >&2; exit 1; }
page=西游记/1/offset-1.txt
/usr/bin/novelfs read --root "$lib" --state-file /nonexistent/state.json 西游记 1 > "$tmp/want"
cmp "$mnt/$page" "$tmp/want"
umount "$mnt"
grep -q "unmounted $mnt" "$tmp/novelfs.log" || sleep 1

dpkg -r novelfs
if dpkg-query -W -f='${Status}' novelfs 2>/dev/null | grep -q .; then
  status=$(dpkg-query -W -f='${Status}' novelfs)
  [ "$status" = "unknown ok not-installed" ] || { echo "deb-check.sh: dpkg still lists novelfs: $status" >&2; exit 1; }
fi
left=0
while read -r path; do
  case "$path" in
    */) [ -d "$path" ] && ! grep -qxF "$path" "$tmp/dirs-before" && { echo "left behind: $path" >&2; left=1; } ;;
    *) { [ -e "$path" ] || [ -L "$path" ]; } && { echo "left behind: $path" >&2; left=1; } ;;
  esac
done < "$tmp/contents"
[ "$left" = 0 ] || exit 1
echo "deb-check.sh: $(basename "$deb"): installed, mounted from fstab, page read, removed without a trace"
