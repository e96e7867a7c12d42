# shellcheck shell=bash
# Sourced by the e2e scripts that run an example on MNIST written as image files: skips the
# test (exit 77, ctest's SKIP_RETURN_CODE) when MNIST is absent, and gives a temporary folder
# `$tmp` (removed on exit) and `fail <message>`.
mnist="${KILN_DATA:-$HOME/.cache/kiln}/mnist"
if [ ! -f "$mnist/train-images-idx3-ubyte" ]; then
  echo "MNIST is absent from $mnist (scripts/fetch_mnist.sh): skipped"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }
