#!/usr/bin/env bash
# Installs novelfs the way FUSE tools are installed: the binary, its man page,
# bash/zsh/fish completions, the mount(8) helpers that make a fuse.novelfs
# line in /etc/fstab (or a systemd .mount unit) work, and the example units.
# `--uninstall` removes exactly what the install wrote (it keeps a list).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/install.sh [--prefix DIR] [--helper-dir DIR] [--no-helpers] [--binary FILE]
       scripts/install.sh --uninstall [--prefix DIR]

  --prefix DIR      where bin/, share/man, share/bash-completion ... go (default /usr/local)
  --helper-dir DIR  where the links mount.novelfs and mount.fuse.novelfs go. mount(8) looks
                    for helpers only in /sbin, so that is the default when it can be written
                    (root), whatever the prefix; otherwise it is PREFIX/sbin.
  --no-helpers      do not install the mount(8) helpers
  --binary FILE     install this binary instead of building one (cargo build --release --locked)
  --uninstall       remove what an earlier install into PREFIX wrote
EOF
}

prefix=/usr/local
helper_dir=
helpers=1
binary=
uninstall=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --helper-dir) helper_dir=${2:?--helper-dir needs a directory}; shift 2 ;;
    --no-helpers) helpers=0; shift ;;
    --binary) binary=${2:?--binary needs a file}; shift 2 ;;
    --uninstall) uninstall=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
prefix=${prefix%/}
# The helpers go where mount(8) looks for them, /sbin, whenever this can
# write there, whatever the prefix: they link to this install's binary, so
# an fstab line of type fuse.novelfs runs it wherever it lives.
if [ -z "$helper_dir" ]; then
  if [ -w /sbin/ ]; then helper_dir=/sbin; else helper_dir="$prefix/sbin"; fi
fi

docdir="$prefix/share/doc/novelfs"
manifest="$docdir/installed-files"

if [ "$uninstall" = 1 ]; then
  if [ ! -f "$manifest" ]; then
    echo "install.sh: nothing to uninstall: $manifest does not exist" >&2
    exit 1
  fi
  dirs=()
  while read -r kind path; do
    case "$kind" in
      dir) dirs=("$path" "${dirs[@]}") ;;
      link)
        # A helper link (often in /sbin) is removed only while it is ours.
        if [ -L "$path" ] && [ "$(readlink "$path")" = "$prefix/bin/novelfs" ]; then
          rm -f "$path"
        fi ;;
      file) rm -f "$path" ;;
    esac
  done < "$manifest"
  rm -f "$manifest"
  # Only the directories the install created, deepest first, once empty.
  for dir in "${dirs[@]}"; do
    rmdir "$dir" 2>/dev/null || true
  done
  echo "novelfs uninstalled from $prefix"
  exit 0
fi

# Say so before a long build rather than after it.
for dir in "$prefix" "$helper_dir"; do
  probe=$dir
  while [ ! -e "$probe" ]; do probe=$(dirname "$probe"); done
  if [ "$helpers" = 1 ] || [ "$dir" = "$prefix" ]; then
    [ -w "$probe" ] || {
      echo "install.sh: cannot write to $probe: run as root, or choose --prefix ~/.local" >&2
      exit 1
    }
  fi
done

here=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$binary" ]; then
  command -v cargo >/dev/null || {
    echo "install.sh: cargo is missing: install Rust 1.85 or newer (https://rustup.rs)" >&2
    exit 1
  }
  echo "building novelfs (cargo build --release; the first build takes about 2 minutes on 2 cores)"
  (cd "$here" && cargo build --release --locked)
  binary="$here/target/release/novelfs"
fi
[ -x "$binary" ] || { echo "install.sh: $binary is not an executable" >&2; exit 1; }

manifest_lines=()
# Installing over an earlier install keeps its list, so that one uninstall
# still removes the directories that first install created.
if [ -f "$manifest" ]; then
  mapfile -t manifest_lines < "$manifest"
fi
made_dir() { # records the directories mkdir -p is about to create
  local d=$1 missing=()
  while [ ! -e "$d" ]; do
    missing=("$d" "${missing[@]}")
    d=$(dirname "$d")
  done
  mkdir -p "$1"
  for d in "${missing[@]}"; do manifest_lines+=("dir $d"); done
}
put() { # put MODE DEST COMMAND...: what COMMAND prints becomes DEST
  local mode=$1 dest=$2
  shift 2
  made_dir "$(dirname "$dest")"
  "$@" > "$dest.tmp.$$"
  chmod "$mode" "$dest.tmp.$$"
  mv -f "$dest.tmp.$$" "$dest"
  manifest_lines+=("file $dest")
}

bin="$prefix/bin/novelfs"
put 755 "$bin" cat "$binary"
put 644 "$prefix/share/man/man1/novelfs.1" "$bin" man
put 644 "$prefix/share/bash-completion/completions/novelfs" "$bin" completions bash
put 644 "$prefix/share/zsh/site-functions/_novelfs" "$bin" completions zsh
put 644 "$prefix/share/fish/vendor_completions.d/novelfs.fish" "$bin" completions fish
# The documents --help and the man page name under SEE ALSO, and the
# fleet guide mounting.md links to.
for doc in contract mounting agents fleet; do
  put 644 "$docdir/$doc.md" cat "$here/docs/$doc.md"
done
for unit in "$here"/examples/systemd/*; do
  put 644 "$docdir/examples/$(basename "$unit")" sed "s|/usr/local/bin/novelfs|$bin|g" "$unit"
done
if [ "$helpers" = 1 ]; then
  made_dir "$helper_dir"
  for helper in mount.novelfs mount.fuse.novelfs; do
    ln -sfn "$bin" "$helper_dir/$helper"
    manifest_lines+=("link $helper_dir/$helper")
  done
  case "$helper_dir" in
    /sbin|/usr/sbin|/sbin/fs.d|/sbin/fs) ;;
    *) echo "note: mount(8) looks for helpers only in /sbin; with $helper_dir, fuse.novelfs fstab lines need mount.fuse3 (package fuse3) and novelfs on PATH" ;;
  esac
fi
made_dir "$docdir"
printf '%s\n' "${manifest_lines[@]}" | awk '!seen[$0]++' > "$manifest"

echo "novelfs installed into $prefix:"
grep -v '^dir ' "$manifest" | sed 's/^[a-z]* /  /'
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "note: $prefix/bin is not on PATH" ;;
esac
