#!/usr/bin/env bash
# cpu-xnnpack's thread pool, A/B: single-frame latency of one network on one cluster of two cores
# with two threads (platforms/host-2core-cluster.json) with this tree's cpu-xnnpack plugin (the
# claiming pool) against the plugin built from BASE (the pthreadpool-only pool), in the same run,
# alternating; with ONNX Runtime at two intra-op threads where the network is an ONNX fixture, and
# both plugins at one thread on core 0 for their scaling.
#
#   bench/pool_ab.sh [BUILD_DIR] [FIXTURE_DIR]
#
# Per rep, five runs, forward on odd reps and reversed on even ones:
#   base-2   all layers on B of the cluster platform, two threads, BASE's cpu-xnnpack plugin
#   new-2    the same with this tree's plugin
#   ort-2    ONNX Runtime, two intra-op threads, taskset cores 0-1 (ONNX fixtures only)
#   new-1    this tree's plugin, one thread, B of the detected host platform (core 0)
#   base-1   the same with BASE's plugin (each side's own scaling from one thread to two)
# every run: WARMUP (3) untimed frames then FRAMES (50) timed, switch mode; a latency is the run's
# median frame time (co_up: profile JSON frames.start_ns/end_ns, ORT: session.run()). Ratios are
# taken within a rep, then median [min-max] over REPS reps. Other processes' CPU use during each
# run is recorded (others' cores, out of 2): a two-thread run is only as good as its second core.
#
# Environment: NETS=a,b (zoo names, or names of FIXTURE_DIR/NAME.onnx with NAME_input.npy; default
# the zoo's alexnet, googlenet, mobilenet, resnet50, squeezenet), REPS (5), FRAMES (50), WARMUP (3),
# BASE (git ref of the baseline; default the parent of the commit that added the claiming pool),
# BASE_PLUGIN (a cpu-xnnpack plugin file built elsewhere, e.g. this tree with one change undone:
# the baseline instead of BASE, nothing is built; BASE_NAME labels it, default the file's path),
# OUT_DIR (default a new directory under /tmp; results.json there).
# The baseline plugin is built from `git archive BASE` in OUT_DIR/base (cmake + ninja, ccache if
# present): a few minutes the first time; kept for later runs with the same OUT_DIR while BASE
# names the same commit (OUT_DIR/base/commit). The other plugins are this tree's, copied every run.
set -euo pipefail

source "$(dirname "$0")/bench_env.sh"
set_networks NETS alexnet googlenet mobilenet resnet50 squeezenet

[[ -x ${co_up} ]] || die "${co_up} not found (build co_up and co_up_runtime first)"
[[ -f ${build}/plugins/libco_up_cpu_xnnpack.so ]] || die "${build}/plugins/libco_up_cpu_xnnpack.so not found (build co_up_runtime)"
command -v taskset >/dev/null || die "taskset not found (util-linux)"
[[ $(nproc --all) -ge 2 ]] || die "needs two cores (0 and 1)"
base=${BASE:-}
base_plugin=${BASE_PLUGIN:-}
if [[ -n ${base_plugin} ]]; then
  [[ -f ${base_plugin} ]] || die "BASE_PLUGIN=${base_plugin} not found (a built libco_up_cpu_xnnpack.so)"
  [[ -z ${base} ]] || die "BASE and BASE_PLUGIN both set: give one baseline"
  base=HEAD  # unused: the baseline is the given file
elif [[ -z ${base} ]]; then
  added=$(git -C "${root}" log --diff-filter=A --format=%H -- backends/xnnpack/xnn_claim_pool.cpp | tail -1)
  [[ -n ${added} ]] || die "cannot find the commit that added the claiming pool; set BASE=<git ref>"
  base=${added}^
fi
base_commit=$(git -C "${root}" rev-parse --short "${base}^{commit}") || die "BASE=${base} is not a commit"
base_full=$(git -C "${root}" rev-parse "${base}^{commit}")
[[ -n ${base_plugin} ]] && base_commit=${BASE_NAME:-${base_plugin}}
have_ort=0
if [[ -d ${ort_dir}/node_modules/onnxruntime-node ]] && command -v node >/dev/null; then have_ort=1; fi

out=${OUT_DIR:-$(mktemp -d /tmp/pool_ab.XXXXXX)}
mkdir -p "${out}"
results=${out}/runs.jsonl
: >"${results}"

# The baseline plugin: BASE's source, this machine's compiler, the same build type. Rebuilt when
# the stamp names another commit (a reused OUT_DIR with another BASE).
base_plugins=${out}/base/plugins
base_so=${out}/base/build/plugins/libco_up_cpu_xnnpack.so
if [[ -n ${base_plugin} ]]; then
  base_so=${base_plugin}
elif [[ ! -f ${base_so} || $(cat "${out}/base/commit" 2>/dev/null) != "${base_full}" ]]; then
  echo "building the cpu-xnnpack plugin of ${base_commit} in ${out}/base (log: ${out}/base/build.log)"
  rm -rf "${out}/base" && mkdir -p "${out}/base/src"
  git -C "${root}" archive "${base}" | tar -x -C "${out}/base/src"
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  { cmake -S "${out}/base/src" -B "${out}/base/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" &&
    ninja -C "${out}/base/build" co_up_backend_xnnpack; } >"${out}/base/build.log" 2>&1 ||
    die "building ${base_commit}'s plugin failed: see ${out}/base/build.log"
  echo "${base_full}" >"${out}/base/commit"
fi
# Every other plugin is this tree's, as built now: only cpu-xnnpack differs between the two sides.
rm -rf "${base_plugins}" && mkdir -p "${base_plugins}"
cp "${build}"/plugins/*.so "${base_plugins}/"
cp "${base_so}" "${base_plugins}/"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git -C "${root}" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "pool_ab: $(date -u '+%Y-%m-%d %H:%M UTC'), commit ${commit} against ${base_commit}, $(nproc --all) CPUs, load average ${load_before}; results in ${out}"

# measured (the contention record of a run), ort_run and rep_order: the runner ort_compare.sh uses.
source "${root}/bench/ort/ort_runner.sh"

run_co_up() {  # plugins_dir cores [platform]: sets ${lat_ms}
  local plugins=$1 cores=$2 platform=${3:-}
  local args=("${source_args[@]}")
  [[ -n ${platform} ]] && args+=("--platform=${platform}")
  measured taskset -c "${cores}" "${co_up}" "${args[@]}" --plugins="${plugins}" --order="${order}" \
    --mode=switch --n=$((warmup + frames)) --profile=1 --profile-out="${out}/run.json" >/dev/null
  lat_ms=$("${python}" -c '
import json, statistics, sys
d = json.load(open(sys.argv[1]))
w = int(sys.argv[2])
start, end = d["frames"]["start_ns"], d["frames"]["end_ns"]
print(statistics.median((b - a) / 1e6 for a, b in zip(start[w:], end[w:])))' "${out}/run.json" "${warmup}")
}

run_ort() {  # model input: sets ${lat_ms}
  ort_run "$1" 2 0-1 "$2"
  lat_ms=${ort_ms}
}

for net in "${nets[@]}"; do
  configs=(base-2 new-2 new-1 base-1)
  if [[ -f ${fixtures}/${net}.onnx && -f ${fixtures}/${net}_input.npy ]]; then
    source_args=("--model=${fixtures}/${net}.onnx" "--input=${fixtures}/${net}_input.npy")
    ((have_ort)) && configs=(base-2 new-2 ort-2 new-1 base-1)
  else
    source_args=("--graph=${net}")
  fi
  layers=$("${co_up}" "${source_args[0]}" --list-layers | tail -1 | awk '{print $1}')
  [[ ${layers} =~ ^[0-9]+$ ]] || die "${net}: neither a zoo network nor ${fixtures}/${net}.onnx"
  order=$(printf 'B%.0s' $(seq "${layers}"))
  echo "=== ${net}: ${layers} layers, all on B; ${warmup} + ${frames} frames per run"
  for ((rep = 1; rep <= reps; ++rep)); do
    rep_order "${rep}" "${configs[@]}"  # sets seq_configs: forward on odd reps, reversed on even
    line=""
    for cfg in "${seq_configs[@]}"; do
      case ${cfg} in
        base-2) run_co_up "${base_plugins}" 0-1 "${cluster}" ;;
        new-2) run_co_up "${build}/plugins" 0-1 "${cluster}" ;;
        new-1) run_co_up "${build}/plugins" 0 ;;
        base-1) run_co_up "${base_plugins}" 0 ;;
        ort-2) run_ort "${fixtures}/${net}.onnx" "${fixtures}/${net}_input.npy" ;;
      esac
      printf '{"net":"%s","config":"%s","rep":%s,"latency_ms":%s%s}\n' \
        "${net}" "${cfg}" "${rep}" "${lat_ms}" "${contention}" >>"${results}"
      line+="${cfg} $(printf '%.2f' "${lat_ms}") ms [$(sed 's/.*"others_cores":\([0-9.]*\).*/\1/' <<<"${contention}")]  "
    done
    echo "  rep ${rep}: ${line}"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

"${python}" - "${results}" "${out}/results.json" "${load_before}" "${load_after}" "${commit}" "${base_commit}" "${frames}" "${warmup}" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
med = statistics.median
nets = list(dict.fromkeys(r["net"] for r in runs))
spread = lambda v: {"median": med(v), "min": min(v), "max": max(v), "n": len(v)} if v else None
rows = []
for net in nets:
    by = lambda cfg: {r["rep"]: r["latency_ms"] for r in runs if r["net"] == net and r["config"] == cfg}
    b2, n2, o2, n1, b1 = by("base-2"), by("new-2"), by("ort-2"), by("new-1"), by("base-1")
    paired = lambda a, b: spread([a[k] / b[k] for k in a if k in b])
    # None where the configuration did not run (no ORT for a zoo network or without onnxruntime-node).
    others = {c: med(v) if (v := [r["others_cores"] for r in runs if r["net"] == net and r["config"] == c]) else None
              for c in ("base-2", "new-2", "ort-2")}
    rows.append({"net": net, "base2_ms": spread(list(b2.values())), "new2_ms": spread(list(n2.values())),
                 "ort2_ms": spread(list(o2.values())), "new1_ms": spread(list(n1.values())),
                 "base1_ms": spread(list(b1.values())),
                 "base2_vs_new2": paired(b2, n2), "ort2_vs_new2": paired(o2, n2), "new_scaling": paired(n1, n2),
                 "ort2_vs_base2": paired(o2, b2), "base_scaling": paired(b1, b2),
                 "others_cores_median": others})
json.dump({"commit": sys.argv[5], "base": sys.argv[6], "load_before": sys.argv[3], "load_after": sys.argv[4],
           "rows": rows, "runs": runs}, open(sys.argv[2], "w"), indent=1)
r = lambda s: f"{s['median']:.2f} [{s['min']:.2f}-{s['max']:.2f}]" if s else "-"
x = lambda s: f"{s['median']:.2f}x [{s['min']:.2f}-{s['max']:.2f}]" if s else "-"
c = lambda v: "-" if v is None else f"{v:.2f}"
n = rows[0]["new2_ms"]["n"] if rows else 0
print()
print(f"Commit {sys.argv[5]} (after) against {sys.argv[6]} (before); medians over {n} reps [min-max], "
      f"ratios per rep then median [min-max]; {sys.argv[8]} warm-up + {sys.argv[7]} timed frames per run, switch mode; "
      f"load average before {sys.argv[3]}, after {sys.argv[4]}.")
print()
print("| network | before, 2 threads (ms) | after, 2 threads (ms) | before / after | ORT 2 threads (ms) | ORT / before | ORT / after | before, 1 thread (ms) | after, 1 thread (ms) | before 1->2 threads | after 1->2 threads | others' cores (before / after / ORT) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for t in rows:
    o = t["others_cores_median"]
    print(f"| {t['net']} | {r(t['base2_ms'])} | {r(t['new2_ms'])} | {x(t['base2_vs_new2'])} | {r(t['ort2_ms'])} | "
          f"{x(t['ort2_vs_base2'])} | {x(t['ort2_vs_new2'])} | {r(t['base1_ms'])} | {r(t['new1_ms'])} | "
          f"{x(t['base_scaling'])} | {x(t['new_scaling'])} | "
          f"{c(o['base-2'])} / {c(o['new-2'])} / {c(o['ort-2'])} |")
PY
