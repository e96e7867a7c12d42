#!/usr/bin/env bash
# The README's second command: install what is missing, fetch MNIST, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh --test   # the build's packages and the test-only ones (chromium)
bash scripts/fetch_mnist.sh
bash scripts/build.sh
ctest --test-dir "${KILN_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
