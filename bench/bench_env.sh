# Sourced by the bench scripts (bench/SCRIPT.sh [BUILD_DIR] [FIXTURE_DIR]): where the build, the
# fixtures and ONNX Runtime are, and the run settings every comparison shares (REPS, FRAMES,
# WARMUP from the environment). Defines `die` (one line, exit 1) and `set_networks`.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-${root}/build}
fixtures=${2:-${build}/onnx-fixtures}
co_up=${build}/co_up
python=/usr/bin/python3
ort_dir=${root}/bench/ort
cluster=${root}/platforms/host-2core-cluster.json
reps=${REPS:-5}
frames=${FRAMES:-50}
warmup=${WARMUP:-3}
bench_script=$(basename "$0")

die() { echo "${bench_script}: $*" >&2; exit 1; }

# set_networks VAR NAME...: the array `nets` from the comma-separated list in $VAR, or NAME... .
set_networks() {
  local var=$1
  shift
  if [[ -n ${!var:-} ]]; then IFS=, read -r -a nets <<<"${!var}"; else nets=("$@"); fi
}
