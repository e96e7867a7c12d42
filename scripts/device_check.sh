#!/usr/bin/env bash
# scripts/device_check.sh: the checks that need a GPU, run once per session on the device
# machine (an H200, through the session's `device` tool), in a few minutes.
#
# The device image has CUDA, PyTorch and CMake but not Kiln's Debian dependencies (oneDNN,
# HDF5, LLVM 15), so Kiln's binaries are built here and carried with their libraries:
#   bash scripts/pack_device_check.sh    # here: device_bin.tar.xz
#   device run: bash scripts/device_check.sh device_cases   (carry: device_bin.tar.xz)
# The PTX cases are made on the device by the carried make_ptx_cases when device_cases/ is not
# there (carrying them, 15 MiB of random inputs, would not fit beside the libraries).
# What it runs:
#   1. the machine: GPU, driver, CUDA, PyTorch;
#   2. run_ptx_cases (CUDA driver API only, built here with the toolkit's g++/nvcc): the code
#      generator's PTX for random fused loops against the CPU interpreter's outputs (exact
#      cases bit for bit), and GB/s on the large cases;
#   3. the CUDA backend's tests (ctest label cuda: kiln_cuda_tests, with the op conformance
#      table on the GPU, values and f64 gradients; kiln_cuda_keras_tests is not carried),
#      built here and carried in device_bin.tar.xz with the libraries they need), one summary
#      line: generated kernels, cuBLASLt, cuDNN convolutions and pooling, NCCL all_reduce and a
#      MirroredStrategy over GPUs and NCCL joined as two processes' ranks (the *TwoGpus* tests,
#      only where nvidia-smi lists two GPUs or more), copies in flight read by programs (the
#      compute stream waiting for each copy's CUevent, the staging ring's reuse), the seed MLP's and the convnet's whole train steps against the CPU, and
#      prefetch_to_device feeding the MLP's steps. cuDNN and NCCL are opened with dlopen and
#      too large to carry (hundreds of MiB): the image's copies are used (the toolkit's, or the
#      nvidia-cudnn / nvidia-nccl wheels PyTorch brings), found below;
#   4. PyTorch's bandwidth on the same GPU (a copy and a fused-free elementwise chain), the
#      figure the generated kernels are compared with;
#   5. PyTorch's W1, W2 and W3 train steps on the same GPU (bench/torch_gpu_steps.py; W3 in f32
#      and bf16 with its fraction of the GPU's peak), or one JSON line saying the image has no
#      CUDA PyTorch; then Kiln's (bench/train_step_gpu, carried: the same workloads on the CUDA
#      backend) and one line per workload with both samples/s and Kiln's over PyTorch's.
# The cuda tests include the seed MLP's and the convnet's MNIST accuracy bars on the GPU
# (CudaMnistAccuracyTest): the MNIST files travel in device_bin.tar.xz, KILN_DATA points there.
# Output: JSON lines; files under $OUT when set. Exit status: non-zero if a case failed.
set -uo pipefail
cd "$(dirname "$0")/.."
cases=${1:-device_cases}
out=${OUT:-/tmp/device_check}
mkdir -p "$out"
status=0

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader || status=1
command -v nvcc >/dev/null && nvcc --version | tail -n 2
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())' || true

# Kiln's binaries and the libraries they need (pack_device_check.sh).
bin=""
if [ -f device_bin.tar.xz ]; then
  bin=$(mktemp -d)
  tar -C "$bin" -xJf device_bin.tar.xz
fi
# cuDNN 9 and NCCL 2 on the image, for the backend's dlopen: the toolkit, then PyTorch's wheels.
find_lib() {
  local roots="${CUDA_HOME:-/usr/local/cuda}/lib64 ${CUDA_HOME:-/usr/local/cuda}/lib /usr/lib/x86_64-linux-gnu"
  roots="$roots $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)"
  for r in $roots; do
    [ -d "$r" ] && find "$r" -maxdepth 4 -name "$1" 2>/dev/null | head -n 1
  done | head -n 1
}
extra=""
for lib in libcudnn.so.9 libnccl.so.2; do
  found=$(find_lib "$lib")
  echo "$lib: ${found:-not found (its tests fail, naming it)}"
  [ -n "$found" ] && extra="$extra:$(dirname "$found")"
done
# KILN_DATA: the carried MNIST (datasets::mnist::default_dir() is $KILN_DATA/mnist).
run_carried() { KILN_DATA="$bin/device_bin/data" LD_LIBRARY_PATH="$bin/device_bin/lib$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)

echo "== generated PTX against the CPU interpreter"
if [ ! -f "$cases/case_0/meta.txt" ] && [ -n "$bin" ]; then
  run_carried "$bin/device_bin/make_ptx_cases" "$cases" 60 || status=1
fi
if [ ! -f "$cases/case_0/meta.txt" ]; then
  echo "device_check: no cases in $cases (make them with build/tests/runtime/make_ptx_cases $cases, or carry device_bin.tar.xz)" >&2
  exit 2
fi
cxx=$(command -v g++ || command -v c++ || true)
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ -n "$cxx" ]; then
  "$cxx" -O2 -std=c++17 -I"$cuda/include" tests/runtime/cuda/run_ptx_cases.cpp -L"$cuda/lib64/stubs" -lcuda -o "$out/run_ptx_cases"
else
  nvcc -O2 -std=c++17 tests/runtime/cuda/run_ptx_cases.cpp -lcuda -o "$out/run_ptx_cases"
fi || { echo "device_check: cannot build run_ptx_cases" >&2; exit 2; }
"$out/run_ptx_cases" "$cases" | tee "$out/ptx_cases.jsonl" || status=1

echo "== the CUDA backend's tests (label cuda)"
if [ -n "$bin" ]; then
  # gtest's own JSON per binary, and one summary line over them; a failed, skipped or
  # unstartable test fails the check.
  # CudaCoverageTest needs no GPU (CI runs it: every op lowered and checked by ptxas); here it
  # would only spend the device's time.
  filter="-CudaCoverageTest.*"
  if [ "$gpus" -lt 2 ]; then
    filter="-CudaCoverageTest.*:*TwoGpus*"
    echo "NCCL's two-GPU tests not run: $gpus GPU(s)"
  fi
  for t in "$bin"/device_bin/kiln_*_tests; do
    name=$(basename "$t")
    run_carried timeout 420 "$t" --gtest_filter="$filter" --gtest_output="json:$out/$name.json" > "$out/$name.log" 2>&1 ||
      status=1
    tail -n 20 "$out/$name.log"
  done
  python3 - "$out"/kiln_*_tests.json <<'EOF' || status=1
import json, sys
tests = []
for path in sys.argv[1:]:
    try:
        r = json.load(open(path))
    except Exception as e:
        print(json.dumps({"bench": "cuda_tests", "error": "no gtest report %s: %s" % (path, e)})); sys.exit(1)
    tests += [t for s in r["testsuites"] for t in s["testsuite"]]
skipped = [t["name"] for t in tests if t.get("result") == "SKIPPED"]
failed = [t["name"] for t in tests if "failures" in t]
print(json.dumps({"bench": "cuda_tests", "tests": len(tests), "failed": len(failed), "skipped": len(skipped),
                  "failed_names": failed, "skipped_names": skipped}))
sys.exit(1 if failed or skipped or not tests else 0)
EOF
else
  echo "device_check: no device_bin.tar.xz (make it here with scripts/pack_device_check.sh)" >&2
  status=1
fi

echo "== PyTorch on the same GPU (bandwidth reference)"
python3 - <<'EOF' | tee "$out/torch.jsonl" || true
import json, torch
x = torch.randn(1000, 1000, device="cuda"); y = torch.randn_like(x); z = torch.randn_like(x)
def median_us(fn, n=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) * 1e3)
    return sorted(ts)[n // 2]
copy = median_us(lambda: y.copy_(x))
chain = median_us(lambda: torch.tanh(x * y + z))
big = torch.empty(256 << 20, dtype=torch.uint8, device="cuda"); big2 = torch.empty_like(big)
bw = median_us(lambda: big2.copy_(big))
print(json.dumps({"bench": "torch_reference", "gpu": torch.cuda.get_device_name(),
                  "copy_1M_f32_us": copy, "tanh_xy_plus_z_1M_f32_us": chain,
                  "copy_256MiB_gb_per_s": 2 * (256 << 20) / (bw * 1e-6) / 1e9}))
EOF
# Dense bf16 peak of an H100/H200 SXM, for W3's fraction of it (both benches are given it).
peak_tflops=989
echo "== PyTorch train steps on the same GPU (W1, W2, W3)"
python3 bench/torch_gpu_steps.py --peak-tflops $peak_tflops | tee "$out/torch_steps.jsonl" || true
echo "== Kiln's train steps on the same GPU (W1, W2, W3: bench/train_step_gpu)"
if [ -n "$bin" ]; then
  run_carried timeout 240 "$bin/device_bin/train_step_gpu" --peak-tflops $peak_tflops | tee "$out/kiln_steps.jsonl" ||
    status=1
else
  : > "$out/kiln_steps.jsonl"
fi
# One line per workload: Kiln's and PyTorch's samples/s (the batch over the median step) and
# Kiln's over PyTorch's. A workload Kiln has no figure for on the GPU fails the check (a
# missing CUDA PyTorch does not: the image's, not Kiln's).
python3 - "$out/kiln_steps.jsonl" "$out/torch_steps.jsonl" <<'EOF' || status=1
import json, sys
def lines(path):
    out = []
    for text in open(path):
        try:
            out.append(json.loads(text))
        except ValueError:
            pass
    return out
kiln, torch = lines(sys.argv[1]), lines(sys.argv[2])
key = lambda r: (r.get("workload"), r.get("dtype"))
torch_by = {key(r): r for r in torch if "samples_per_s_median_step" in r}
ok = bool(kiln)
for r in kiln:
    if "samples_per_s" not in r:
        print(json.dumps({"bench": "gpu_steps_vs_torch", "workload": r.get("workload"), "dtype": r.get("dtype"),
                          "kiln_error": r.get("error", "no figure")}))
        ok = False
        continue
    t = torch_by.get(key(r))
    line = {"bench": "gpu_steps_vs_torch", "workload": r["workload"], "dtype": r["dtype"], "batch": r["batch"],
            "kiln_samples_per_s": r["samples_per_s"],
            "torch_samples_per_s": t["samples_per_s_median_step"] if t else None,
            "kiln_over_torch": r["samples_per_s"] / t["samples_per_s_median_step"] if t else None}
    if "fraction_of_peak" in r:
        line["kiln_fraction_of_peak"] = r["fraction_of_peak"]
        line["torch_fraction_of_peak"] = t.get("fraction_of_peak") if t else None
    if not t:
        line["torch"] = next((x["error"] for x in torch if "error" in x), "no figure")
    print(json.dumps(line))
sys.exit(0 if ok else 1)
EOF

echo "== device_check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
