#!/usr/bin/env bash
# Intra-op threads, co_up vs ONNX Runtime: single-frame latency of one network on one CPU cluster
# of two cores with two threads (platforms/host-2core-cluster.json: B = cores 0 and 1, a
# two-thread cpu-xnnpack pool) against ONNX Runtime with two intra-op threads; and both at one
# thread on core 0, for each side's scaling from one thread to two.
#
#   bench/ort_intraop.sh [BUILD_DIR] [FIXTURE_DIR]
#
# The method is bench/ort_compare.sh's (same fixtures, same ort_bench.js, same statistics), reduced
# to the four runs this comparison needs, so it fits in minutes:
#   per rep, four runs, forward on odd reps and reversed on even ones:
#     ort-1    one session, intraOpNumThreads=1, taskset core 0
#     co_up-1  all layers on B of the detected host platform (B = core 0), one thread, switch mode
#     ort-2    one session, two intra-op threads, taskset cores 0-1
#     co_up-2  all layers on B of platforms/host-2core-cluster.json (two threads), switch mode,
#              taskset cores 0-1
#   every run: WARMUP (3) untimed frames, then FRAMES (50) timed ones, the fixture's
#   NAME_input.npy as input on both sides. A latency is the run's median frame time (ORT:
#   session.run(); co_up: start to end of a frame, profile JSON frames.start_ns/end_ns, the warm-up
#   frames dropped). Ratios are taken within a rep, then their median and [min-max] over REPS
#   reps are reported. Other processes' CPU use during each run is recorded (others_cores, cores;
#   /proc/stat minus the run's own CPU time): on a shared host a two-thread run whose second thread
#   is preempted stalls at every barrier, so read the two-thread rows with that column.
#
# Environment: NETS=a,b (default the five zoo networks' torchvision exports and the transformers
# vit_b_16, bert_base), REPS (default 5), FRAMES (50), WARMUP (3), OUT_DIR (default a new directory
# under /tmp; everything measured goes to OUT_DIR/results.json).
# Fixtures: tests/fixtures/make_fixtures.py --full DIR (CNNs), bench/export_transformers.py DIR
# (transformers); ONNX Runtime: (cd bench/ort && npm install --ignore-scripts).
set -euo pipefail

source "$(dirname "$0")/bench_env.sh"
set_networks NETS alexnet googlenet mobilenet_v2 resnet50 squeezenet1_0 vit_b_16 bert_base

source "${ort_dir}/ort_runner.sh"  # ort_check_prerequisites, measured, ort_run, rep_order
ort_check_prerequisites
for net in "${nets[@]}"; do
  [[ -f ${fixtures}/${net}.onnx && -f ${fixtures}/${net}_input.npy ]] ||
    die "${fixtures}/${net}.onnx or its _input.npy missing (tests/fixtures/make_fixtures.py --full, bench/export_transformers.py)"
done

out=${OUT_DIR:-$(mktemp -d /tmp/ort_intraop.XXXXXX)}
mkdir -p "${out}"
results=${out}/runs.jsonl
: >"${results}"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git -C "${root}" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "ort_intraop: $(date -u '+%Y-%m-%d %H:%M UTC'), commit ${commit}, $(nproc --all) CPUs, load average ${load_before}; results in ${out}"

# co_up all-B in switch mode: sets ${lat_ms} (median start-to-end of the frames after warm-up).
# Args: model order taskset_cores input [platform file].
run_co_up() {
  local model=$1 order=$2 cores=$3 input=$4 platform=${5:-}
  local args=()
  [[ -n ${platform} ]] && args+=("--platform=${platform}")
  measured taskset -c "${cores}" "${co_up}" --model="${model}" "${args[@]}" --order="${order}" \
    --mode=switch --n=$((warmup + frames)) --input="${input}" --profile=1 \
    --profile-out="${out}/run.json" >/dev/null
  lat_ms=$("${python}" -c '
import json, statistics, sys
d = json.load(open(sys.argv[1]))
w = int(sys.argv[2])
start, end = d["frames"]["start_ns"], d["frames"]["end_ns"]
print(statistics.median((b - a) / 1e6 for a, b in zip(start[w:], end[w:])))' "${out}/run.json" "${warmup}")
}

run_ort() {  # model threads taskset_cores input: sets ${lat_ms}, ${cpw}
  ort_run "$@"
  lat_ms=${ort_ms} cpw=${ort_cpw}
}

for net in "${nets[@]}"; do
  model=${fixtures}/${net}.onnx
  input=${fixtures}/${net}_input.npy
  layers=$("${co_up}" --model="${model}" --list-layers | tail -1 | awk '{print $1}')
  order=$(printf 'B%.0s' $(seq "${layers}"))
  echo "=== ${net}: ${layers} layers, all on B; ${warmup} + ${frames} frames per run"
  for ((rep = 1; rep <= reps; ++rep)); do
    rep_order "${rep}" ort-1 co_up-1 ort-2 co_up-2
    line=""
    for cfg in "${seq_configs[@]}"; do
      extra=""
      case ${cfg} in
        ort-1) run_ort "${model}" 1 0 "${input}"; extra=",\"cpu_per_wall\":${cpw}" ;;
        ort-2) run_ort "${model}" 2 0-1 "${input}"; extra=",\"cpu_per_wall\":${cpw}" ;;
        co_up-1) run_co_up "${model}" "${order}" 0 "${input}" ;;
        co_up-2) run_co_up "${model}" "${order}" 0-1 "${input}" "${cluster}" ;;
      esac
      printf '{"net":"%s","config":"%s","rep":%s,"latency_ms":%s%s%s}\n' \
        "${net}" "${cfg}" "${rep}" "${lat_ms}" "${extra}" "${contention}" >>"${results}"
      line+="${cfg} $(printf '%.2f' "${lat_ms}") ms [$(sed 's/.*"others_cores":\([0-9.]*\).*/\1/' <<<"${contention}")]  "
    done
    echo "  rep ${rep}: ${line}"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

"${python}" - "${results}" "${out}/results.json" "${load_before}" "${load_after}" "${commit}" "${frames}" "${warmup}" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
med = statistics.median
nets = list(dict.fromkeys(r["net"] for r in runs))
def spread(v):
    return {"median": med(v), "min": min(v), "max": max(v), "n": len(v)}
rows = []
for net in nets:
    by = lambda cfg: {r["rep"]: r["latency_ms"] for r in runs if r["net"] == net and r["config"] == cfg}
    o1, c1, o2, c2 = by("ort-1"), by("co_up-1"), by("ort-2"), by("co_up-2")
    if not (o1 and c1 and o2 and c2):
        continue  # an interrupted run: summarise the networks it finished
    paired = lambda a, b: spread([a[k] / b[k] for k in a if k in b])
    rows.append({"net": net, "ort1_ms": spread(list(o1.values())), "co_up1_ms": spread(list(c1.values())),
                 "ort2_ms": spread(list(o2.values())), "co_up2_ms": spread(list(c2.values())),
                 "ort2_vs_co_up2": paired(o2, c2), "ort1_vs_co_up1": paired(o1, c1),
                 "co_up_scaling": paired(c1, c2), "ort_scaling": paired(o1, o2),
                 "others_cores_median": {c: med([r["others_cores"] for r in runs if r["net"] == net and r["config"] == c])
                                         for c in ("ort-1", "co_up-1", "ort-2", "co_up-2")}})
json.dump({"commit": sys.argv[5], "load_before": sys.argv[3], "load_after": sys.argv[4], "rows": rows, "runs": runs},
          open(sys.argv[2], "w"), indent=1)
r = lambda s: f"{s['median']:.2f} [{s['min']:.2f}-{s['max']:.2f}]"
x = lambda s: f"{s['median']:.2f}x [{s['min']:.2f}-{s['max']:.2f}]"
n = rows[0]["ort2_ms"]["n"] if rows else 0
print()
print(f"Commit {sys.argv[5]}; medians over {n} reps [min-max], ratios per rep then median [min-max]; "
      f"{sys.argv[7]} warm-up + {sys.argv[6]} timed frames per run; load average before {sys.argv[3]}, after {sys.argv[4]}.")
print()
print("Latency, one frame at a time, one cluster of two cores with two threads (ms):")
print("| network | ORT 2 intra-op threads | co_up B, 2 threads | ORT ms / co_up ms | others' cores (ORT-2 / co_up-2) |")
print("|---|---|---|---|---|")
for t in rows:
    o = t["others_cores_median"]
    print(f"| {t['net']} | {r(t['ort2_ms'])} | {r(t['co_up2_ms'])} | {x(t['ort2_vs_co_up2'])} | {o['ort-2']:.2f} / {o['co_up-2']:.2f} |")
print()
print("One thread on core 0 (ms), and each side's speed-up from one thread to two:")
print("| network | ORT 1 thread | co_up 1 thread | ORT ms / co_up ms | ORT 1->2 threads | co_up 1->2 threads |")
print("|---|---|---|---|---|---|")
for t in rows:
    print(f"| {t['net']} | {r(t['ort1_ms'])} | {r(t['co_up1_ms'])} | {x(t['ort1_vs_co_up1'])} | {x(t['ort_scaling'])} | {x(t['co_up_scaling'])} |")
PY
