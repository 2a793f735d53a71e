#!/usr/bin/env bash
# Installs the packages co_up needs to build, test and run on Debian 12 (bookworm).
# Idempotent: packages already installed are skipped, and `apt-get update` runs only when something
# is missing, so a re-run on a provisioned machine does no network access.
# Runs as root, or through sudo when not root.
set -euo pipefail

readonly kPackages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git ca-certificates
  lld  # links the test suites faster (CMakeLists.txt: CO_UP_USE_LLD)
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # platform descriptions and model files; ONNX import (generated onnx-ml.pb.h + libonnx_proto)
  nlohmann-json3-dev libonnx-dev libprotobuf-dev
  # OpenCL backend: ICD loader, headers, a CPU implementation (PoCL) for tests, CLBlast
  ocl-icd-opencl-dev opencl-headers clinfo pocl-opencl-icd libclblast-dev
  # power measurement triggers
  libgpiod-dev
  # image input
  libpng-dev libjpeg-dev
  # CPU backend
  libxnnpack-dev libpthreadpool-dev
  # aarch64 cross-build and tests under emulation (scripts/aarch64.sh)
  crossbuild-essential-arm64 qemu-user
  # sanitizer and fuzz builds
  clang
  python3
  python3-matplotlib  # scripts/co_up-report plots
  python3-onnx  # onnx_export_test runs the ONNX checker on exported files
  # the Python package co_up (python/) and its tests
  python3-dev pybind11-dev python3-numpy python3-pytest
  # Map-and-Conquer training data (scripts/train_map_and_conquer.py; /usr/share/datasets/fashion-mnist)
  dataset-fashion-mnist
)

die() {
  echo "setup-debian.sh: $*" >&2
  exit 1
}

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
  die "apt-get/dpkg-query not found: this script supports Debian 12 only; install the packages listed in it by hand"
fi
if [[ -r /etc/os-release ]]; then
  # shellcheck disable=SC1091 # a system file, not part of the repository
  . /etc/os-release
  if [[ "${ID:-}" != "debian" && "${ID_LIKE:-}" != *debian* ]]; then
    die "this is '${PRETTY_NAME:-${ID:-unknown}}', not Debian: install the packages listed in this script by hand"
  fi
  if [[ "${ID:-}" == "debian" && "${VERSION_ID:-}" != "12" ]]; then
    echo "setup-debian.sh: warning: tested on Debian 12, this is ${PRETTY_NAME:-Debian ${VERSION_ID:-unknown}}" >&2
  fi
else
  die "/etc/os-release not readable: cannot tell whether this is Debian 12"
fi

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || die "not root and sudo is not installed: run this script as root"
  SUDO=(sudo)
fi

is_installed() {
  # `dpkg-query -s` succeeds for removed-but-configured packages too; check the status word.
  local status
  status="$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" || return 1
  [[ "${status}" == "installed" ]]
}

missing=()
for package in "${kPackages[@]}"; do
  if ! is_installed "${package}"; then
    missing+=("${package}")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup-debian.sh: all ${#kPackages[@]} packages already installed"
  exit 0
fi

echo "setup-debian.sh: installing ${#missing[@]} package(s): ${missing[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
echo "setup-debian.sh: done"
