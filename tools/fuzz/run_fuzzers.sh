#!/usr/bin/env bash
# Builds the decoders' libFuzzer targets with clang and AddressSanitizer (in build-fuzz/) and
# runs each for SECONDS (default 60), seeded with the test fixtures (PIL's PNG and JPEG files,
# tests/fixtures/images/make_image_fixtures.py). Prints libFuzzer's closing lines per target;
# exits non-zero if a target found a crash, a leak, a timeout (10 s) or an allocation over
# 2 GiB (libFuzzer's default malloc limit).
#   tools/fuzz/run_fuzzers.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
build="${KILN_FUZZ_BUILD_DIR:-build-fuzz}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DKILN_BUILD_FUZZERS=ON -DKILN_SANITIZE=address \
  -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_EXAMPLES=OFF -DKILN_BUILD_BENCH=OFF -DKILN_CUDA=OFF -DKILN_MPI=OFF \
  ${KILN_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" --target kiln_png_fuzzer kiln_jpeg_fuzzer
seeds="$build/fuzz-seeds"
rm -rf "$seeds" && mkdir -p "$seeds/png" "$seeds/jpeg"
/usr/bin/python3 tests/fixtures/images/make_image_fixtures.py "$seeds/all" >/dev/null
cp "$seeds"/all/*.png "$seeds/png/" && cp "$seeds"/all/*.jpg "$seeds/jpeg/"
status=0
for name in png jpeg; do
  corpus="$build/fuzz-corpus/$name"
  mkdir -p "$corpus"
  echo "== kiln_${name}_fuzzer, ${seconds} s"
  if ! "$build/tools/fuzz/kiln_${name}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 "$corpus" "$seeds/$name" >"$build/fuzz-$name.log" 2>&1; then
    status=1
  fi
  grep -E "^(#[0-9]+.*DONE|Done [0-9]+ runs|stat::|==[0-9]+==ERROR|SUMMARY)" "$build/fuzz-$name.log" || tail -20 "$build/fuzz-$name.log"
done
exit $status
