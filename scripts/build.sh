#!/usr/bin/env bash
# Configures and builds Kiln into ${KILN_BUILD_DIR:-build} (Release, Ninja). In CI (CI=true)
# warnings are errors.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${KILN_BUILD_DIR:-build}"
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${KILN_BUILD_TYPE:-Release}" \
  -DKILN_WERROR="$werror" ${KILN_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$(nproc)" "$@"
