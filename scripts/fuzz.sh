#!/usr/bin/env bash
# Fuzzes the ONNX loader (graph/onnx/) with libFuzzer + AddressSanitizer + UBSan for a bounded time.
#
#   scripts/fuzz.sh [SECONDS]        # default 60; exit status non-zero on a crash or sanitizer report
#
# Builds tests/onnx/onnx_loader_fuzz with Debian's clang in build-fuzz/ (-DCO_UP_ONNX_FUZZ=ON,
# -DCO_UP_SANITIZE=address, the libraries with -fsanitize=fuzzer-no-link for coverage), seeds the
# corpus with the committed fixtures (tests/fixtures/onnx/*.onnx) and runs one fuzzing process for
# SECONDS (the corpus grows in build-fuzz/fuzz-corpus/ and is reused by the next run).
# A crash leaves its input as build-fuzz/fuzz-artifacts/crash-*; reproduce with
#   build-fuzz/tests/onnx_loader_fuzz build-fuzz/fuzz-artifacts/crash-...
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
build=${root}/build-fuzz
cd "${root}"
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/setup-debian.sh installs clang)" >&2; exit 1; }

cmake -S . -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCO_UP_SANITIZE=address -DCO_UP_ONNX_FUZZ=ON -DCO_UP_BUILD_BENCH=OFF \
  -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link >/dev/null
ninja -C "${build}" -j"$(nproc)" onnx_loader_fuzz

corpus=${build}/fuzz-corpus
artifacts=${build}/fuzz-artifacts
mkdir -p "${corpus}" "${artifacts}"
cp -n tests/fixtures/onnx/*.onnx "${corpus}/" 2>/dev/null || true

echo "=== fuzzing the ONNX loader for ${seconds} s"
# -rss_limit_mb: a model may legitimately hold large weights; 2 GB per input is plenty.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "${build}/tests/onnx_loader_fuzz" "${corpus}" -max_total_time="${seconds}" -max_len=8388608 \
  -rss_limit_mb=2048 -timeout=20 -artifact_prefix="${artifacts}/" -print_final_stats=1 \
  2>&1 | grep -v -E '^#[0-9]+' | tail -n 40
status=${PIPESTATUS[0]}
if ls "${artifacts}"/crash-* "${artifacts}"/leak-* "${artifacts}"/timeout-* "${artifacts}"/oom-* >/dev/null 2>&1; then
  echo "fuzz.sh: FAILED — inputs in ${artifacts}" >&2
  exit 1
fi
[[ ${status} -eq 0 ]] || { echo "fuzz.sh: fuzzer exited with ${status}" >&2; exit "${status}"; }
echo "fuzz.sh: no crash, leak or sanitizer report in ${seconds} s"
