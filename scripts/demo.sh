#!/usr/bin/env bash
# The README's first command: install what is missing, fetch MNIST, build, run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/fetch_mnist.sh
bash scripts/build.sh
build="${KILN_BUILD_DIR:-build}"
# The seed's program: the device report and strategy, Sequential MLP, Adam, fit 5 epochs with
# validation, evaluate, save and reload (files under kiln_output/, which git ignores).
"$build/examples/mnist_mlp"
