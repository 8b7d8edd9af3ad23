#!/usr/bin/env bash
# Builds the Debian package with cargo-deb (`cargo install cargo-deb
# --locked`): the binary, its man page, the bash/zsh/fish completions, the
# mount(8) helpers (links in /sbin to /usr/bin/novelfs), the documents
# --help names and the example systemd units. Prints the .deb's path.
# The generated files are staged under TARGET/release/deb-assets, a path
# cargo-deb maps to the target folder in use (CARGO_TARGET_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-deb >/dev/null || {
  echo "deb.sh: cargo-deb is missing: cargo install cargo-deb --locked" >&2
  exit 1
}
target=${CARGO_TARGET_DIR:-target}
cargo build --release --locked >&2
bin=$target/release/novelfs
stage=$target/release/deb-assets
rm -rf "$stage"
mkdir -p "$stage/completions" "$stage/sbin" "$stage/examples"
"$bin" man | gzip -9n > "$stage/novelfs.1.gz"
"$bin" completions bash > "$stage/completions/novelfs"
"$bin" completions zsh > "$stage/completions/_novelfs"
"$bin" completions fish > "$stage/completions/novelfs.fish"
# mount(8) looks for helpers in /sbin only; they are the binary itself.
ln -s /usr/bin/novelfs "$stage/sbin/mount.novelfs"
ln -s /usr/bin/novelfs "$stage/sbin/mount.fuse.novelfs"
for unit in examples/systemd/*; do
  sed 's|/usr/local/bin/novelfs|/usr/bin/novelfs|g' "$unit" > "$stage/examples/$(basename "$unit")"
done
cargo deb --no-build --locked --output "$target/debian/" >&2
ls -t "$target"/debian/novelfs_*.deb | head -1
