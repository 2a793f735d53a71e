# Shared by bench/ort_compare.sh, bench/ort_intraop.sh and bench/pool_ab.sh (sourced, not run):
# the checks they need, the contention record of a run, one timed ONNX Runtime run, and the
# alternating run order.
# The sourcing script sets ${root}, ${co_up}, ${ort_dir}, ${python}, ${warmup}, ${frames} and
# ${out} (and defines die) before calling these.

# Prerequisites of ort_compare.sh and ort_intraop.sh: co_up built, onnxruntime-node installed, node, taskset, 2 cores.
ort_check_prerequisites() {
  [[ -x ${co_up} ]] || die "${co_up} not found (build co_up and its plugins first)"
  [[ -d ${ort_dir}/node_modules/onnxruntime-node ]] ||
    die "onnxruntime-node missing: (cd ${ort_dir} && npm install --ignore-scripts)"
  command -v node >/dev/null || die "node not found"
  command -v taskset >/dev/null || die "taskset not found (util-linux)"
  [[ $(nproc --all) -ge 2 ]] || die "needs two cores (B = core 0, L = core 1)"
}

# Runs "$@" and sets ${contention}: other processes' CPU use during the run, in cores (system-wide
# busy time from /proc/stat minus this command's own user+sys, over wall time), and hypervisor
# steal in cores, as JSON fields to append to a run's record. A quiet host reads ~0; 1.0 means a
# whole core went to someone else.
clk_tck=$(getconf CLK_TCK)
contention=""
measured() {
  local s0 s1 tfile=${out}/time.txt
  s0=$(head -1 /proc/stat)
  /usr/bin/time -f '%e %U %S' -o "${tfile}" "$@"
  s1=$(head -1 /proc/stat)
  contention=$(awk -v a="${s0}" -v b="${s1}" -v hz="${clk_tck}" -v t="$(cat "${tfile}")" 'BEGIN {
    split(a, x, " "); split(b, y, " "); split(t, w, " ")
    busy = 0; for (i = 2; i <= 9; ++i) if (i != 5 && i != 6 && i != 9) busy += y[i] - x[i]
    steal = y[9] - x[9]
    others = (busy / hz - w[2] - w[3]) / w[1]; if (others < 0) others = 0
    printf ",\"others_cores\":%.2f,\"steal_cores\":%.2f,\"wall_s\":%.2f,\"cpu_s\":%.2f", others, steal / hz / w[1], w[1], w[2] + w[3] }')
}

# One ONNX Runtime session timed by ort_bench.js: ${warmup} untimed runs, then ${frames} timed
# ones on the .npy input, pinned with taskset. Args: model threads taskset_cores input.
# Sets ${ort_fps}, ${ort_ms} (median session.run() ms), ${ort_cpw} (CPU / wall) and ${contention};
# the whole JSON line is left in ${out}/ort.json.
ort_run() {
  measured taskset -c "$3" node "${ort_dir}/ort_bench.js" "$1" --threads="$2" --warmup="${warmup}" \
    --runs="${frames}" --input="$4" >"${out}/ort.json"
  read -r ort_fps ort_ms ort_cpw < <("${python}" -c 'import json,sys; d = json.load(open(sys.argv[1])); print(d["fps"], d["median_ms"], d["cpu_per_wall"])' "${out}/ort.json")
}

# The configurations of repetition REP in the order they run: as given on odd reps, reversed on
# even ones, so that a drift of the host's speed over a rep does not always favour the same side.
# Args: rep config... ; sets the array ${seq_configs}.
rep_order() {
  local rep=$1; shift
  seq_configs=("$@")
  if ((rep % 2 == 0)); then
    seq_configs=(); local i; for ((i = $#; i >= 1; --i)); do seq_configs+=("${!i}"); done
  fi
}
