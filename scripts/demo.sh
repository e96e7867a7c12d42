#!/usr/bin/env bash
# The README's first command: install what is missing, fetch MNIST, build, run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/fetch_mnist.sh
bash scripts/build.sh
build="${KILN_BUILD_DIR:-build}"
"$build/tools/kiln/kiln" devices
# The seed's program: Sequential MLP, Adam, fit 5 epochs with validation, evaluate, reload.
"$build/examples/mnist_mlp"
"$build/tools/kiln/kiln" mnist
