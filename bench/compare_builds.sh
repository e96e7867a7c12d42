#!/usr/bin/env bash
# bench/compare_builds.sh: the portable build (default KILN_ARCH=x86-64-v3) against a native one
# (-DKILN_ARCH=native) on bench/train_step_mlp and bench/train_step_cnn.
#
#   bench/compare_builds.sh [N] [PORTABLE_BUILD_DIR] [NATIVE_BUILD_DIR]
#   (defaults: 5, build-v3, build-native; or KILN_PORTABLE_BUILD / KILN_NATIVE_BUILD)
#
# Runs are sequential, never two at once, and alternate ABBA per round (portable, native,
# native, portable, ...) so a drift in machine load falls on both builds alike. Every bench
# JSON line is printed with a "build" field added, then one summary line:
#   {"bench": "portable_vs_native", "train_step_mlp": r1, "train_step_cnn": r2, "runs": N, ...}
# r = median over rounds of (native ms_per_step / portable ms_per_step), i.e. the portable
# build's throughput as a fraction of the native one's: 1.0 is parity, below 0.95 misses the
# "within 5%" target. The environment passes through (OMP_NUM_THREADS=1 makes a loaded
# machine's figures steadier). Builds: see bench/RESULTS.md, section "Portable vs native build".
set -euo pipefail

cd "$(dirname "$0")/.."
runs=${1:-5}
portable=${2:-${KILN_PORTABLE_BUILD:-build-v3}}
native=${3:-${KILN_NATIVE_BUILD:-build-native}}
benches=(train_step_mlp train_step_cnn)

for dir in "$portable" "$native"; do
  for b in "${benches[@]}"; do
    if [[ ! -x "$dir/bench/$b" ]]; then
      echo "compare_builds.sh: $dir/bench/$b is missing; build it first, e.g." >&2
      echo "  cmake -S . -B $dir -DCMAKE_BUILD_TYPE=Release$([[ $dir == "$native" ]] && echo ' -DKILN_ARCH=native') && cmake --build $dir --target ${benches[*]}" >&2
      exit 2
    fi
  done
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One bench run: prints its first JSON line (the figures) tagged with the build, and appends
# its ms_per_step to $tmp/<bench>.<build>.
run_one() {
  local build=$1 dir=$2 bench=$3 line
  line=$("$dir/bench/$bench" | grep -m1 "\"bench\": \"$bench\"")
  echo "${line%\}}, \"build\": \"$build\", \"dir\": \"$dir\"}"
  echo "$line" | sed -E 's/.*"ms_per_step": ([0-9.eE+-]+).*/\1/' >> "$tmp/$bench.$build"
}

for ((r = 0; r < runs; ++r)); do
  for b in "${benches[@]}"; do
    if ((r % 2 == 0)); then
      run_one portable "$portable" "$b"
      run_one native "$native" "$b"
    else
      run_one native "$native" "$b"
      run_one portable "$portable" "$b"
    fi
  done
done

python3 - "$tmp" "$runs" "${benches[@]}" <<'EOF'
import json, statistics, subprocess, sys
tmp, runs, benches = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
out = {"bench": "portable_vs_native"}
for b in benches:
    p = [float(x) for x in open(f"{tmp}/{b}.portable").read().split()]
    n = [float(x) for x in open(f"{tmp}/{b}.native").read().split()]
    out[b] = round(statistics.median(nn / pp for pp, nn in zip(p, n)), 4)
    out[b + "_ms_portable"] = round(statistics.median(p), 4)
    out[b + "_ms_native"] = round(statistics.median(n), 4)
out["runs"] = runs
out["load_avg_1m"] = float(open("/proc/loadavg").read().split()[0])
print(json.dumps(out))
EOF
