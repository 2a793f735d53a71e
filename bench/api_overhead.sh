#!/bin/sh
# The public API's cost, in one command: per-frame overhead of the C++ Session over the Executor
# and streaming throughput through the API against the Executor and the co_up command line
# (build/co_up_bench_api), then the Python package's per-frame overhead over the C++ API
# (bench/python_overhead.py). Prints date, commit, host load and the method with the tables.
#
#   bench/api_overhead.sh [BUILD_DIR] [--quick]
#
# Targets: C++ overhead < 20 µs, Python < 50 µs (excluding the numpy copy where one is needed),
# streaming through the API >= 0.98x. Since the co_up command line is itself a Session client
# (its --n frames go through the Session's frame run: one fixed request, Executor::run), the
# streaming comparison is made two ways so that it is not the same code against itself:
#   API / Executor::run   the API's submit/callback streaming against the Executor running the
#                         same frames as one request, in the same process (the CLI's inner path);
#   API / co_up binary    the API's streaming rate against the co_up binary's, end to end through
#                         its Session (the rate its profile reports).
set -eu
build=build
quick=""
for arg in "$@"; do
  case "$arg" in
    --quick) quick=--quick ;;
    *) build=$arg ;;
  esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
echo "# co_up API overhead — $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo
echo "method: build/co_up_bench_api (Session::run vs Executor::run of one frame, alternating, medians;"
echo "streaming: 3-stage B L B pipeline; each repetition runs Executor::run, Executor::run_stream with"
echo "the API's window, the API, the API with the former window (2 x sub-graphs) and the co_up binary"
echo "back to back in a rotating order; ratios within a repetition, median, quartiles and range over"
echo "repetitions; CPU time and context switches per frame from getrusage);"
echo "bench/python_overhead.py (the same Session driven by a C++ loop and by Python, interleaved,"
echo "medians and minimums)."
echo
"$build/co_up_bench_api" $quick
echo
if [ -n "$quick" ]; then py_args="--frames 300 --repeats 3"; else py_args=""; fi
# The Python the package was built for (its numpy too), else python3 on the PATH; $PYTHON overrides.
python=${PYTHON:-$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)}
python=${python:-python3}
PYTHONPATH="$build/python" CO_UP_PLUGIN_PATH="$build/plugins" "$python" "$here/bench/python_overhead.py" $py_args
