#!/usr/bin/env bash
# Cross-builds co_up and its tests for aarch64 and runs the NEON paths under qemu-user.
#
#   scripts/aarch64.sh            # toolchain + sysroot (cached) + cross-build + tests under qemu
#   scripts/aarch64.sh build      # stop after the cross-build
#
# 1. Installs crossbuild-essential-arm64 and qemu-user (skipped when present).
# 2. Builds an arm64 sysroot in .aarch64/sysroot (git-ignored, reused): `apt-get download PKG:arm64`
#    + `dpkg -x`, with a private apt state in .aarch64/apt, so the host's dpkg architectures and
#    package lists are left alone (libcpuinfo-dev and friends cannot be co-installed via multiarch).
# 3. Configures build-aarch64/ with cmake/aarch64-linux-gnu.cmake and builds the plugins and the
#    backend tests (benchmarks off).
# 4. Runs under `qemu-aarch64` (~500x slower than native) what fits in a few minutes:
#    - xnnpack_conformance_test: every operator (XnnpackConformance.*), pool pinning and device
#      options (XnnpackPool.*, XnnpackDevice.*), and every zoo network at 64x64
#      (Zoo/XnnpackNetwork.*): cpu-xnnpack (XNNPACK's NEON kernels) against cpu-reference, and
#      bit-exact across a B|L split and 1 vs 2 threads. About 100 s under qemu on the 2-core host
#      (SqueezeNet alone, Zoo/XnnpackNetwork.*/4, about 10 s);
#    - xnnpack_tensor_ops_test, xnnpack_split_invariance_test: the rank-N (transformer) operators
#      on their portable paths against cpu-reference, and bit-identical across sub-graph cuts;
#    - reference_plugin_test: the reference plugin's ABI tests (its portable NEON-width GEMM);
#    - int8_kernels_test, int8_plugin_test (Int8Ops.*, Int8Plugin.*): npu-int8 on XNNPACK's NEON
#      int8 kernels, every operator int8 vs f32;
#    - executor_test (frame order, switch/pipeline, stop, NHWC edges) and the co_up binary running
#      SqueezeNet pipelined over B|L and over B|N|L.
#    A run fails when its filter selects no test or a test skips without a line in
#    tests/optional-skips.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=${CO_UP_AARCH64_CACHE:-${root}/.aarch64}
sysroot=${cache}/sysroot
build=${root}/build-aarch64
jobs=$(nproc)
start=${SECONDS}

readonly kHostPackages=(crossbuild-essential-arm64 qemu-user)
# Everything the build links or includes, plus the shared objects those need at run time.
readonly kTargetPackages=(
  libxnnpack-dev libxnnpack0 libpthreadpool-dev libpthreadpool0 libcpuinfo0 libcpuinfo-dev
  libgtest-dev libgmock-dev
  libpng-dev libpng16-16 libjpeg62-turbo-dev libjpeg62-turbo zlib1g zlib1g-dev
  nlohmann-json3-dev libgpiod-dev libgpiod2
)

SUDO=()
[[ "$(id -u)" -eq 0 ]] || SUDO=(sudo)

missing=()
for p in "${kHostPackages[@]}"; do
  dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "=== aarch64: installing ${missing[*]}"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

stamp=${sysroot}/.co_up-packages
want="${kTargetPackages[*]}"
if [[ ! -f ${stamp} || "$(cat "${stamp}")" != "${want}" ]]; then
  echo "=== aarch64: building the arm64 sysroot in ${sysroot}"
  apt_dir=${cache}/apt
  mkdir -p "${apt_dir}/state/lists/partial" "${apt_dir}/cache/archives/partial" "${cache}/debs"
  touch "${apt_dir}/status"
  apt_opts=(-o "Dir::State=${apt_dir}/state" -o "Dir::Cache=${apt_dir}/cache"
            -o "Dir::State::status=${apt_dir}/status" -o APT::Architecture=arm64
            -o APT::Architectures::=arm64 -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
  apt-get "${apt_opts[@]}" update >/dev/null
  (cd "${cache}/debs" && apt-get "${apt_opts[@]}" download "${kTargetPackages[@]/%/:arm64}")
  rm -rf "${sysroot}"
  mkdir -p "${sysroot}"
  for deb in "${cache}"/debs/*.deb; do dpkg -x "${deb}" "${sysroot}"; done
  echo "${want}" > "${stamp}"
fi

echo "=== aarch64: configure and cross-build (${build})"
cmake -S . -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="${root}/cmake/aarch64-linux-gnu.cmake" -DCO_UP_AARCH64_SYSROOT="${sysroot}" \
  -DCO_UP_BUILD_BENCH=OFF -DCO_UP_OPTIONAL_TEST_FOLDERS="onnx;rknn;backends/opencl" >/dev/null
# (The sysroot has no libonnx or OpenCL: those test folders are left out here on purpose; the
# x86-64 suites run them.)
ninja -C "${build}" -j"${jobs}" co_up co_up_backend_reference co_up_backend_xnnpack \
  xnnpack_conformance_test xnnpack_tensor_ops_test xnnpack_split_invariance_test reference_plugin_test \
  co_up_backend_int8 int8_kernels_test int8_plugin_test co_up_backend_rknn executor_test
file "${build}/plugins/libco_up_cpu_xnnpack.so" | grep -q 'ARM aarch64' ||
  { echo "aarch64.sh: the plugin is not an aarch64 binary" >&2; exit 1; }
[[ "${1:-}" == build ]] && { echo "=== aarch64: built in $((SECONDS - start)) s"; exit 0; }

qemu=(qemu-aarch64 -L /usr/aarch64-linux-gnu
      -E "LD_LIBRARY_PATH=${sysroot}/usr/lib/aarch64-linux-gnu:${sysroot}/lib/aarch64-linux-gnu")
export CO_UP_PLUGIN_PATH=${build}/plugins
log_dir=${build}/qemu-logs
rm -rf "${log_dir}"
mkdir -p "${log_dir}"
# Runs a test binary under qemu; fails when it fails, when the filter selects no test (a renamed
# test would otherwise pass silently), or when a test skipped that tests/optional-skips.txt does
# not allow for the aarch64 suite.
run_test() {  # binary, gtest filter
  echo "=== aarch64: qemu ${1} --gtest_filter=${2}"
  local t=${SECONDS} log=${log_dir}/$1.log
  (cd "${build}" && timeout 480 "${qemu[@]}" "tests/$1" --gtest_filter="$2" --gtest_brief=1) 2>&1 |
    tee "${log}"
  local ran
  ran=$(sed -n 's/^\[==========\] \([0-9]*\) tests\? from .* ran\..*/\1/p' "${log}" | tail -n 1)
  if [[ -z ${ran} || ${ran} -eq 0 ]]; then
    echo "aarch64.sh: ${1} --gtest_filter='${2}' ran no test" >&2
    exit 1
  fi
  scripts/check-skips.py aarch64 "${log}"
  echo "=== aarch64: ${1} passed ${ran} tests in $((SECONDS - t)) s"
}
# The co_up binary under qemu; its stdout must hold `expect` (a fixed string).
run_co_up() {  # expected output, co_up arguments...
  local expect=$1
  shift
  echo "=== aarch64: qemu co_up $*"
  local t=${SECONDS} out
  out=$(cd "${build}" && timeout 300 "${qemu[@]}" ./co_up "$@")
  echo "${out}"
  grep -qF -- "${expect}" <<<"${out}" ||
    { echo "aarch64.sh: co_up $* did not print '${expect}'" >&2; exit 1; }
  echo "=== aarch64: co_up passed in $((SECONDS - t)) s"
}
run_test xnnpack_conformance_test \
  'XnnpackConformance.*:XnnpackPool.*:XnnpackDevice.*:Zoo/XnnpackNetwork.*'
# The rank-N (transformer) operators on their portable / NEON-width paths: batched GEMM with
# folded Transposes, broadcast binaries, erf/tanh/exp/GELU, LayerNorm, Softmax, strided copies,
# against cpu-reference; and the same bits whatever sub-graph cut (attention at batch 1).
run_test xnnpack_tensor_ops_test '*'
run_test xnnpack_split_invariance_test '*'
run_test reference_plugin_test '*'
# npu-int8 on XNNPACK's int8 NEON kernels (no VNNI here: those tests skip): quantisation, every
# operator int8 vs f32 through the ABI, the accelerator contract. A few seconds under qemu.
run_test int8_kernels_test '*'
run_test int8_plugin_test 'Int8Ops.*:Int8Plugin.*'
# The executor's threads and receivers on arm64 (frame order, switch vs pipeline, stop), and the
# CLI running one network pipelined over B|L on cpu-xnnpack, with npu-int8 as N.
run_test executor_test \
  'ExecutorTest.ThousandFramesThroughSkipEdgePipelineArriveInOrderWithoutStalls:ExecutorTest.SwitchModeKeepsOneFrameInFlight:ExecutorTest.PipelineModeOverlapsFrames:ExecutorTest.StopRequestEndsRunEarlyWithConsistentProfile:ExecutorTest.EdgesBetweenNhwcBackendsTravelInNhwc'
run_co_up "order BBBBBLLLLL, mode pipeline, platform host: 4/4 frames" \
  --graph=squeezenet --image-size=32 --order=BBBBBLLLLL --mode=pipeline --n=4
run_co_up "order BBBNNNNNLL, mode pipeline, platform host: 4/4 frames" \
  --graph=squeezenet --image-size=32 --order=BBBNNNNNLL --mode=pipeline --n=4 --calibration=2
echo "=== aarch64: passed in $((SECONDS - start)) s"
