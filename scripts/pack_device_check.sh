#!/usr/bin/env bash
# scripts/pack_device_check.sh [build_dir]: prepares, on this machine, what scripts/device_check.sh
# runs on the device machine, which has CUDA, PyTorch and CMake but not Kiln's Debian libraries
# (oneDNN, LLVM 15, HDF5):
#   device_bin.tar.xz   the cuda tests (kiln_cuda_tests: the runtime's, the op table on the
#                       GPU, the end-to-end steps, MNIST accuracy; not kiln_cuda_keras_tests,
#                       whose HDF5, curl and TLS libraries would not fit),
#                       make_ptx_cases (device_check.sh makes the PTX cases there), the GPU
#                       train-step bench (train_step_gpu), every shared library they need
#                       beyond glibc (ldd), and MNIST (data/mnist, for the GPU accuracy tests:
#                       device_check.sh sets KILN_DATA there), xz-compressed to fit the device
#                       tool's 64 MiB carry
# Then, through the device tool: carry [device_bin.tar.xz] and run
#   bash scripts/device_check.sh device_cases
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
tests="tests/kiln_cuda_tests tests/runtime/make_ptx_cases bench/train_step_gpu"
mnist="${KILN_DATA:-$HOME/.cache/kiln}/mnist"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  [ -f "$mnist/$f" ] || { echo "pack_device_check: no $mnist/$f (fetch it with scripts/fetch_mnist.sh)" >&2; exit 1; }
done
ninja -C "$build" -j2 make_ptx_cases kiln_cuda_tests train_step_gpu
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/device_bin/lib"
for t in $tests; do cp "$build/$t" "$stage/device_bin/"; done
# glibc's own libraries come from the device's system (they cannot be moved between systems);
# everything else travels, libstdc++ included (the device's may be older).
for t in $tests; do ldd "$build/$t"; done | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/device_bin/lib/"; done
strip --strip-unneeded "$stage"/device_bin/lib/*.so* "$stage"/device_bin/kiln_* "$stage"/device_bin/make_ptx_cases \
  "$stage"/device_bin/train_step_gpu 2>/dev/null || true
# The IDX files uncompressed: xz packs them smaller than their .gz copies would be.
mkdir -p "$stage/device_bin/data/mnist"
cp "$mnist"/{train,t10k}-{images-idx3,labels-idx1}-ubyte "$stage/device_bin/data/mnist/"
tar -C "$stage" -cf - device_bin | xz -9 -T2 > device_bin.tar.xz
# The carry holds the working tree too (git's tracked files).
size=$(stat -c %s device_bin.tar.xz)
tree=$(git ls-files -z | xargs -0 cat | wc -c)
echo "pack_device_check: device_bin.tar.xz $((size >> 20)) MiB + working tree $((tree >> 20)) MiB (carry limit 64 MiB)"
[ $((size + tree)) -lt $((64 << 20)) ] || { echo "pack_device_check: over the 64 MiB carry" >&2; exit 1; }
