#!/usr/bin/env bash
# The README's second command (and what CI runs): set up the machine, build, and run every test —
# the Release suite, then the same suite under AddressSanitizer+UBSan, the tests of threaded code
# under ThreadSanitizer, then the aarch64 cross-build with operator tests and one network under qemu (scripts/aarch64.sh),
# then a bounded libFuzzer run of the ONNX loader (scripts/fuzz.sh). A suite fails when a test did
# not run (skipped, disabled) unless tests/optional-skips.txt allows it there with a reason, when
# ctest finds no tests, and when the configure would leave out a test folder.
#   scripts/test.sh            # everything
#   scripts/test.sh release    # one of: release asan tsan aarch64 fuzz
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup-debian.sh

jobs=$(nproc)
# BUILD_TARGET and CTEST_ARGS (environment) narrow a suite to some targets and tests.
run_suite() {  # name, build dir, extra cmake arguments...
  local name=$1 dir=$2
  shift 2
  echo "=== ${name}: configure and build (${dir})"
  cmake -S . -B "${dir}" -G Ninja "$@" >/dev/null
  # shellcheck disable=SC2086 # BUILD_TARGET is a list of targets, empty for all
  ninja -C "${dir}" ${BUILD_TARGET:-}
  echo "=== ${name}: tests"
  local start=${SECONDS}
  # --no-tests=error: a configure that registered nothing fails instead of passing. The output is
  # kept so that every test that did not run (GTEST_SKIP, disabled, not built) can be checked
  # against tests/optional-skips.txt: a skip that is not allowed there fails the suite.
  # shellcheck disable=SC2086 # CTEST_ARGS is a list of arguments
  ctest --test-dir "${dir}" -j"${jobs}" --output-on-failure --timeout 600 --no-tests=error ${CTEST_ARGS:-} \
    | tee "${dir}/ctest-output.log"
  scripts/check-skips.py "${name}" "${dir}/ctest-output.log"
  echo "=== ${name}: passed in $((SECONDS - start)) s"
}

# A configure that would leave out a test folder (a missing package) is an error in CI
# (tests/CMakeLists.txt: co_up_test_folder_dropped); this script is what CI runs, so it says so.
export CI=${CI:-true}

# Sanitizer builds: -O1 with line tables only (-g1). Enough for sanitizer stack traces, and it
# compiles in 55-70 % of the time -O2 -g takes (the four builds are most of this script's time).
sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1"
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" -DCO_UP_BUILD_BENCH=OFF)

suites=("$@")
[[ ${#suites[@]} -gt 0 ]] || suites=(release asan tsan aarch64 fuzz)
for suite in "${suites[@]}"; do
  case "${suite}" in
    release) run_suite release build -DCMAKE_BUILD_TYPE=Release ;;
    # Sanitizer builds skip the benchmarks; they test behaviour, not speed.
    # intercept_tls_get_addr=0 (ASan and TSan): GCC 12's sanitizer runtimes misread a dynamic TLS
    # block that happens to start at a page offset equal to glibc 2.19's TLS header size. ASan
    # hands LeakSanitizer a bogus range and its tracer dies at exit ("Tracer caught signal 11");
    # TSan tries to map shadow for a ~375 TB range and aborts ("failed to allocate") when PoCL's
    # ICD loader first touches TLS. Either depends only on allocation layout.
    asan)
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        run_suite asan build-asan "${sanitizer_flags[@]}" -DCO_UP_SANITIZE=address
      ;;
    # ThreadSanitizer checks what shares data between threads: the tests labelled "threads"
    # (tests/CMakeLists.txt: pipelines, thread pools, the co_up binary in pipeline mode on every
    # shipped backend, signals during runs). The Release and ASan suites run everything.
    # atexit_sleep_ms=0: by default TSan sleeps 1 s at exit in every process that still has another
    # thread, to give that thread time to race with exit-time destructors. co_up joins every thread
    # it starts before main returns (no detached threads); the threads still there at exit are
    # PoCL's idle workers (started when the OpenCL plugin first queries its platforms, never
    # joined), uninstrumented and waiting on a condition variable. The sleep watched them, at 1 s
    # per test process and per co_up a test spawns.
    tsan)
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:intercept_tls_get_addr=0:atexit_sleep_ms=0 BUILD_TARGET=co_up_thread_tests \
        CTEST_ARGS="-L threads" run_suite tsan build-tsan "${sanitizer_flags[@]}" -DCO_UP_SANITIZE=thread
      ;;
    # Cross-build for arm64, run the NEON paths under qemu-aarch64 (see scripts/aarch64.sh).
    aarch64)
      echo "=== aarch64: cross-build and qemu tests"
      scripts/aarch64.sh
      ;;
    fuzz)
      echo "=== fuzz: the ONNX loader under libFuzzer + ASan/UBSan, 45 s"
      scripts/fuzz.sh 45
      ;;
    *) echo "test.sh: unknown suite '${suite}' (use release, asan, tsan, aarch64, fuzz)" >&2; exit 2 ;;
  esac
done
echo "=== all suites passed: ${suites[*]}"
