#!/usr/bin/env bash
# Writes MNIST digits as PNG and JPEG files into class folders 0-9 for examples/image_folder:
#   scripts/mnist_image_folder.sh <out_dir> [per_class=100] [build_dir=build]
# Fetches MNIST first (scripts/fetch_mnist.sh); the files are written by Kiln's own encoders
# (tools/mnist_images), so no Python imaging library is needed.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: scripts/mnist_image_folder.sh <out_dir> [per_class=100] [build_dir=build]}"
per_class="${2:-100}"
build="${3:-$here/../build}"

"$here/fetch_mnist.sh"
if [ ! -x "$build/tools/mnist_images" ]; then
  cmake --build "$build" --target mnist_images
fi
"$build/tools/mnist_images" "$out" "$per_class"
