#!/usr/bin/env bash
# co_up vs ONNX Runtime's CPU execution provider (MLAS kernels) on the same ONNX exports:
# torchvision alexnet, googlenet, mobilenet_v2, resnet50, squeezenet1_0, batch 1,
# 224x224, seeded weights; and the transformers vit_b_16 (torchvision ViT-B/16, 224x224) and
# bert_base (a BERT-base encoder over 128 token embeddings), bench/export_transformers.py.
#
#   bench/ort_compare.sh [BUILD_DIR] [FIXTURE_DIR]
#
# BUILD_DIR (default build/) holds co_up and its plugins (and co_up_bench_xnnpack for the peak,
# optional); FIXTURE_DIR (default BUILD_DIR/onnx-fixtures) the exported models, made by
# tests/fixtures/make_fixtures.py --full (CNNs) or bench/export_transformers.py (vit_b_16,
# bert_base) when missing (Debian python3-torch, -torchvision, -onnx).
# ONNX Runtime comes from npm: (cd bench/ort && npm install --ignore-scripts).
#
# Per network, in one session:
#   1. MACs and unit counts from `co_up --list-layers` (layers and --units=ops).
#   2. Per-unit times from an all-B run at --profile=2, for three granularities: --units=layers,
#      --units=ops, and "split": --units=ops plus --split=U:P of the op whose split balances a
#      2-stage boundary best (P = SPLIT_PARTS but slices of at least 32 output channels; a
#      grouped convolution cannot be split, the next best op is taken), so that the boundary can
#      fall inside that op (data parallelism; AlexNet's fc6 is 40 % of its time). Every contiguous split
#      B^k L^(n-k) is scored as the slower of its two stages (boundary copies are under 1 % of a
#      stage here, see bench/README.md; L is as fast as B on this host); the best CANDIDATES
#      splits of each granularity are measured.
#   3. REPS repetitions; in each, back to back: ORT intraOpNumThreads=1 on core 0 (taskset -c 0),
#      co_up all-B (B = core 0, one thread), ORT intraOpNumThreads=2 on cores 0-1, and every
#      pipeline candidate (B = core 0, L = core 1). co_up fps is 1e9 / the median interval
#      between consecutive frame completions (profile JSON frames.end_ns), ORT fps 1000 / the
#      median ms of its timed runs after warm-up: the same statistic (a sequential run's interval
#      is its run time), robust to the host's stalls alike. (The mean rate, summary.throughput_fps,
#      goes to results.json as fps_mean: a single stalled frame moves it.) The fps columns are medians over reps;
#      the pipeline column is the candidate with the best median. Each ratio is the median over
#      reps of the ratio of two runs of the same rep: this VM's speed drifts by tens of percent
#      over minutes, and runs seconds apart see the same speed.
# Fraction of peak: 2 x MACs x fps / peak, where the peak is one core's f32 peak as
# co_up_bench_xnnpack prints it (an AVX-512 FMA loop in registers where the CPU has AVX-512, else
# XNNPACK's f32 GEMM 1024^3; median of 3 invocations); the pipeline and ORT-2 columns are
# against two cores' peak (2 x peak).
#
# Contention: for every run, other processes' CPU use (cores, from /proc/stat minus the run's own
# CPU time) is recorded as others_cores and shown in [brackets] per rep; ORT's own CPU/wall too.
#
# Environment: NETS=a,b (subset), REPS (default 3), CANDIDATES (per granularity, default 2),
# SPLIT_PARTS (at most this many slices of the split op, default 8: with 4, AlexNet's boundary
# inside fc6 could only fall at quarters, a 0.87 balance and 1.82x; eighths measured 2.08x),
# SECONDS_PER_RUN (target length of one timed run, default 2), OUT_DIR (kept results; default a
# new directory under /tmp). Everything measured goes to OUT_DIR/results.json.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-${root}/build}
fixtures=${2:-${build}/onnx-fixtures}
co_up=${build}/co_up
python=/usr/bin/python3
ort_dir=${root}/bench/ort
reps=${REPS:-3}
candidates=${CANDIDATES:-2}
split_parts=${SPLIT_PARTS:-8}
seconds_per_run=${SECONDS_PER_RUN:-2}
nets=(alexnet googlenet mobilenet_v2 resnet50 squeezenet1_0 vit_b_16 bert_base)
transformers=(vit_b_16 bert_base)  # exported by bench/export_transformers.py
if [[ -n ${NETS:-} ]]; then IFS=, read -r -a nets <<<"${NETS}"; fi

die() { echo "ort_compare.sh: $*" >&2; exit 1; }
[[ -x ${co_up} ]] || die "${co_up} not found (build co_up and its plugins first)"
[[ -d ${ort_dir}/node_modules/onnxruntime-node ]] ||
  die "onnxruntime-node missing: (cd ${ort_dir} && npm install --ignore-scripts)"
command -v node >/dev/null || die "node not found"
command -v taskset >/dev/null || die "taskset not found (util-linux)"
[[ $(nproc --all) -ge 2 ]] || die "needs two cores (B = core 0, L = core 1)"

missing_cnn=() missing_transformers=()
for net in "${nets[@]}"; do
  [[ -f ${fixtures}/${net}.onnx ]] && continue
  if [[ " ${transformers[*]} " == *" ${net} "* ]]; then missing_transformers+=("${net}"); else missing_cnn+=("${net}"); fi
done
if [[ ${#missing_cnn[@]} -gt 0 || ${#missing_transformers[@]} -gt 0 ]]; then
  echo "=== exporting fixtures to ${fixtures}"
  "${python}" -c "import torch, torchvision, onnx" 2>/dev/null ||
    die "needs python3-torch python3-torchvision python3-onnx (apt-get install)"
  if [[ ${#missing_cnn[@]} -gt 0 ]]; then
    CO_UP_FIXTURES=$(IFS=,; echo "${missing_cnn[*]}") "${python}" "${root}/tests/fixtures/make_fixtures.py" --full "${fixtures}" 2>&1 |
      grep -v -i warn | grep -v '^ ' || true
  fi
  if [[ ${#missing_transformers[@]} -gt 0 ]]; then
    "${python}" "${root}/bench/export_transformers.py" "${fixtures}" "$(IFS=,; echo "${missing_transformers[*]}")" 2>&1 |
      grep -v -i warn | grep -v '^ ' || true
  fi
fi

out=${OUT_DIR:-$(mktemp -d /tmp/ort_compare.XXXXXX)}
mkdir -p "${out}"
results=${out}/runs.jsonl   # one JSON line per measured run
: >"${results}"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "ort_compare: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc --all) CPUs, load average ${load_before}; results in ${out}"

# Peak f32 FLOP/s of one core (co_up_bench_xnnpack), median of 3 invocations; 0 when the bench is
# absent.
peak=0
if [[ -x ${build}/co_up_bench_xnnpack ]]; then
  peaks=()
  for _ in 1 2 3; do
    p=$(taskset -c 0 "${build}/co_up_bench_xnnpack" --networks= 2>/dev/null |
        sed -n 's/^peak:.*: \([0-9.]*\) GFLOP\/s.*/\1/p' || true)
    [[ -n ${p} ]] && peaks+=("${p}")
  done
  if [[ ${#peaks[@]} -gt 0 ]]; then
    peak=$(printf '%s\n' "${peaks[@]}" | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}')
  fi
  echo "peak: one core's f32 peak (co_up_bench_xnnpack), core 0: ${peak} GFLOP/s (runs: ${peaks[*]:-none})"
else
  echo "peak: ${build}/co_up_bench_xnnpack not built, fraction of peak not reported"
fi

# Runs "$@" and sets ${contention}: other processes' CPU use during the run, in cores (system-wide
# busy time from /proc/stat minus this command's own user+sys, over wall time), and hypervisor
# steal in cores. A quiet host reads ~0; 1.0 means a whole core went to someone else.
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

repeat() { local s=""; for ((i = 0; i < $2; ++i)); do s+=$1; done; printf '%s' "${s}"; }

# co_up's arguments for a granularity: layers, ops, or split (ops with the network's ${split_arg}).
unit_args() {
  case $1 in
    split) printf '%s\n' --units=ops "--split=${split_arg}" ;;
    *) printf '%s\n' "--units=$1" ;;
  esac
}

# co_up run: sets ${fps} (median completion interval) and ${fps_mean} from the profile JSON.
# Args: model units order frames json cores.
run_co_up() {
  local model=$1 units=$2 order=$3 frames=$4 json=$5 taskset_cores=$6
  local args; mapfile -t args < <(unit_args "${units}")
  measured taskset -c "${taskset_cores}" "${co_up}" --model="${model}" "${args[@]}" --order="${order}" \
    --mode=pipeline --n="${frames}" --profile=1 --profile-out="${json}" >/dev/null
  read -r fps fps_mean < <("${python}" -c '
import json, statistics, sys
d = json.load(open(sys.argv[1]))
end = d["frames"]["end_ns"]
gaps = [b - a for a, b in zip(end, end[1:])]
print(1e9 / statistics.median(gaps), d["summary"]["throughput_fps"])' "${json}")
}

record() {  # net config units order rep fps [extra json]
  printf '{"net":"%s","config":"%s","units":"%s","order":"%s","rep":%s,"fps":%s%s}\n' \
    "$1" "$2" "$3" "$4" "$5" "$6" "${7:-}" >>"${results}"
}

for net in "${nets[@]}"; do
  model=${fixtures}/${net}.onnx
  echo "=== ${net}"
  "${co_up}" --model="${model}" --list-layers >"${out}/${net}.layers.txt"
  "${co_up}" --model="${model}" --units=ops --list-layers >"${out}/${net}.ops.txt"
  n_layers=$(tail -1 "${out}/${net}.layers.txt" | awk '{print $1}')
  n_ops=$(tail -1 "${out}/${net}.ops.txt" | awk '{print $1}')
  gmacs=$(tail -1 "${out}/${net}.layers.txt" | awk '{print $3}')

  # Profile all-B per unit, both granularities (frames: enough for a stable median).
  for units in layers ops; do
    n=${n_layers}; [[ ${units} == ops ]] && n=${n_ops}
    taskset -c 0 "${co_up}" --model="${model}" --units="${units}" --order="$(repeat B "${n}")" \
      --mode=pipeline --n=6 --profile=2 --profile-out="${out}/${net}.profile-${units}.json" >/dev/null
  done
  # Data parallelism: the op whose split gives the best-balanced 2-stage boundary (the all-B
  # profile's op times, slices of equal time), or failing that (a grouped convolution) the next
  # best, in up to SPLIT_PARTS slices of at least 32 output channels (narrower slices would leave
  # co_up's AVX-512 convolution for XNNPACK's; 32 instead of 64 since 2026-11-23: GoogLeNet's
  # inception3b 3x3 in 6 instead of 3); profiled as a third granularity "split".
  split_arg=""
  for choice in $("${python}" - "${out}/${net}.profile-ops.json" "${out}/${net}.ops.txt" "${split_parts}" <<'PY'
import json, re, sys
t = [l["exec_ms_median"] for l in json.load(open(sys.argv[1]))["layers"]]
shapes = [re.search(r"\[([0-9,]+)\]", l) for l in open(sys.argv[2]) if re.match(r"^\s*\d+\s", l)]
channels = [int(m.group(1).split(",")[1]) if m and "," in m.group(1) else 0 for m in shapes]
parts = lambda i: max(2, min(int(sys.argv[3]), channels[i] // 32 if i < len(channels) else 2))
def best_balance(i):  # of a 2-stage split with op i in parts(i) slices of equal time
    u = t[:i] + [t[i] / parts(i)] * parts(i) + t[i + 1:]
    total = sum(u)
    return max(min(a, total - a) / max(a, total - a) for a in (sum(u[:k]) for k in range(1, len(u))))
for i in sorted(range(len(t)), key=lambda i: -best_balance(i))[:3]:
    print(f"{i}:{parts(i)}")
PY
  ); do
    if "${co_up}" --model="${model}" --units=ops --split="${choice}" --list-layers \
         >"${out}/${net}.split.txt" 2>/dev/null; then
      split_arg=${choice}
      break
    fi
  done
  profiles=("${out}/${net}.profile-layers.json" "${out}/${net}.profile-ops.json")
  if [[ -n ${split_arg} ]]; then
    n_split=$(tail -1 "${out}/${net}.split.txt" | awk '{print $1}')
    taskset -c 0 "${co_up}" --model="${model}" --units=ops --split="${split_arg}" \
      --order="$(repeat B "${n_split}")" --mode=pipeline --n=6 --profile=2 \
      --profile-out="${out}/${net}.profile-split.json" >/dev/null
    profiles+=("${out}/${net}.profile-split.json")
  fi
  # Candidate splits: "units order predicted_ms balance" lines, best CANDIDATES per granularity.
  "${python}" - "${candidates}" "${profiles[@]}" >"${out}/${net}.candidates.txt" <<'PY'
import json, sys
count = int(sys.argv[1])
for units, path in zip(("layers", "ops", "split"), sys.argv[2:]):
    layers = json.load(open(path))["layers"]
    t = [l["exec_ms_median"] for l in layers]
    n, total = len(t), sum(t)
    scored = []
    prefix = 0.0
    for k in range(1, n):
        prefix += t[k - 1]
        a, b = prefix, total - prefix
        scored.append((max(a, b), min(a, b) / max(a, b), "B" * k + "L" * (n - k)))
    scored.sort()
    for slow, balance, order in scored[:count]:
        print(units, order, f"{slow:.3f}", f"{balance:.3f}", f"{total:.3f}")
PY
  cat "${out}/${net}.candidates.txt" | awk '{printf "  candidate %-6s %-60s predicted %s ms of %s (balance %s)\n", $1, $2, $3, $5, $4}'
  total_ms=$(head -1 "${out}/${net}.candidates.txt" | awk '{print $5}')
  # Frames per run: about SECONDS_PER_RUN of all-B work, 8..40.
  frames=$(awk -v t="${total_ms}" -v s="${seconds_per_run}" 'BEGIN {f = int(s * 1000 / t) + 1; if (f < 8) f = 8; if (f > 40) f = 40; print f}')
  echo "  ${n_layers} layers / ${n_ops} ops, ${gmacs} GMACs, all-B ${total_ms} ms/frame (profile), ${frames} frames per run" \
       "${split_arg:+, split: op ${split_arg%:*} in ${split_arg#*:}}"

  mapfile -t cand_lines <"${out}/${net}.candidates.txt"
  for ((rep = 1; rep <= reps; ++rep)); do
    # ORT-1 and co_up-1 back to back, then ORT-2 and the pipelines: each ratio pairs runs
    # seconds apart (this VM's speed drifts by tens of percent over minutes).
    for threads in 1 2; do
      cores=0; [[ ${threads} == 2 ]] && cores=0-1
      measured taskset -c "${cores}" node "${ort_dir}/ort_bench.js" "${model}" --threads="${threads}" \
               --warmup=3 --runs="${frames}" >"${out}/ort.json"
      line=$(cat "${out}/ort.json")
      fps=$(echo "${line}" | "${python}" -c 'import json,sys; print(json.load(sys.stdin)["fps"])')
      cpw=$(echo "${line}" | "${python}" -c 'import json,sys; print(json.load(sys.stdin)["cpu_per_wall"])')
      record "${net}" "ort-${threads}" "" "" "${rep}" "${fps}" ",\"cpu_per_wall\":${cpw}${contention}"
      if [[ ${threads} == 1 ]]; then
        run_co_up "${model}" layers "$(repeat B "${n_layers}")" "${frames}" "${out}/${net}.run.json" 0
        record "${net}" "co_up-1" layers "all-B" "${rep}" "${fps}" ",\"fps_mean\":${fps_mean}${contention}"
      fi
    done
    for c in "${cand_lines[@]}"; do
      read -r units order _ <<<"${c}"
      run_co_up "${model}" "${units}" "${order}" "${frames}" "${out}/${net}.run.json" 0-1
      record "${net}" "pipeline" "${units}" "${order}" "${rep}" "${fps}" ",\"fps_mean\":${fps_mean}${contention}"
    done
    echo "  rep ${rep}: $(grep "\"net\":\"${net}\"" "${results}" | grep "\"rep\":${rep}," |
      "${python}" -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l); print(r["config"] + ("/" + r["units"] if r["config"] == "pipeline" else ""), "%.2f [%.1f]" % (r["fps"], r["others_cores"]), end="  ")')"
  done
  printf '{"net":"%s","config":"meta","layers":%s,"ops":%s,"gmacs":%s,"frames":%s,"profile_ms":%s}\n' \
    "${net}" "${n_layers}" "${n_ops}" "${gmacs}" "${frames}" "${total_ms}" >>"${results}"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

"${python}" - "${results}" "${peak}" "${load_before}" "${load_after}" "${out}/results.json" <<'PY'
import json, math, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
peak = float(sys.argv[2])
nets = list(dict.fromkeys(r["net"] for r in runs))
med = statistics.median
table = []
for net in nets:
    meta = next(r for r in runs if r["net"] == net and r["config"] == "meta")
    fps = lambda cfg: med([r["fps"] for r in runs if r["net"] == net and r["config"] == cfg])
    ort1, ort2, one = fps("ort-1"), fps("ort-2"), fps("co_up-1")
    cands = {}
    for r in runs:
        if r["net"] == net and r["config"] == "pipeline":
            cands.setdefault((r["units"], r["order"]), []).append(r["fps"])
    (units, order), best = max(((k, med(v)) for k, v in cands.items()), key=lambda kv: kv[1])
    # Ratios of runs in the same rep (seconds apart), then their median over reps.
    def per_rep(config, units_=None, order_=None):
        return {r["rep"]: r["fps"] for r in runs if r["net"] == net and r["config"] == config
                and (units_ is None or (r["units"], r["order"]) == (units_, order_))}
    o1, o2, c1, pb = per_rep("ort-1"), per_rep("ort-2"), per_rep("co_up-1"), per_rep("pipeline", units, order)
    paired = lambda a, b: med([a[k] / b[k] for k in a if k in b])
    flop = 2e9 * meta["gmacs"]  # FLOP per frame
    frac = lambda f, cores: (flop * f / (peak * 1e9 * cores)) if peak > 0 else None
    table.append({
        "net": net, "gmacs": meta["gmacs"], "layers": meta["layers"], "ops": meta["ops"],
        "frames_per_run": meta["frames"], "ort1_fps": ort1, "ort2_fps": ort2, "co_up1_fps": one,
        "pipeline_fps": best, "pipeline_units": units, "pipeline_order": order,
        "k": order.count("B"), "n": len(order),
        "candidates": {f"{u}:{o}": med(v) for (u, o), v in cands.items()},
        "co_up1_vs_ort1": paired(c1, o1), "pipeline_vs_co_up1": paired(pb, c1), "pipeline_vs_ort2": paired(pb, o2),
        "peak_frac_ort1": frac(ort1, 1), "peak_frac_co_up1": frac(one, 1),
        "peak_frac_ort2": frac(ort2, 2), "peak_frac_pipeline": frac(best, 2),
        "others_cores_median": {c: med([r["others_cores"] for r in runs if r["net"] == net and r["config"] == c])
                                 for c in ("ort-1", "ort-2", "co_up-1", "pipeline")},
        "ort_cpu_per_wall": {c: med([r["cpu_per_wall"] for r in runs if r["net"] == net and r["config"] == c])
                             for c in ("ort-1", "ort-2")},
    })
json.dump({"peak_gflops": peak, "load_before": sys.argv[3], "load_after": sys.argv[4],
           "rows": table, "runs": runs}, open(sys.argv[5], "w"), indent=1)

pct = lambda x: "-" if x is None else f"{100 * x:.0f}%"
mark = lambda x, t: f"{math.floor(x * 100) / 100:.2f}x" + ("" if x >= t else " (miss)")  # floor: 0.998 is not 1.00
print()
print(f"fps: per run 1e9 / median frame-completion interval (co_up) or 1000 / median run ms (ORT), then medians over reps; ratios: medians over reps of the ratio within each rep; peak {peak} GFLOP/s per core; load average before {sys.argv[3]}, after {sys.argv[4]}")
print("| network | GMACs | ORT-1 | ORT-2 | co_up-1 | co_up pipeline (order) | co_up-1/ORT-1 (>=1.0) "
      "| pipe/co_up-1 (>=1.9) | pipe/ORT-2 (>=1.0) | %peak ORT-1 / co_up-1 / ORT-2 / pipe |")
print("|---|---|---|---|---|---|---|---|---|---|")
for t in table:
    order = f"{t['pipeline_units']} B×{t['k']} L×{t['n'] - t['k']}"
    print(f"| {t['net']} | {t['gmacs']:.3f} | {t['ort1_fps']:.2f} | {t['ort2_fps']:.2f} | {t['co_up1_fps']:.2f} "
          f"| {t['pipeline_fps']:.2f} ({order}) | {mark(t['co_up1_vs_ort1'], 1.0)} "
          f"| {mark(t['pipeline_vs_co_up1'], 1.9)} | {mark(t['pipeline_vs_ort2'], 1.0)} "
          f"| {pct(t['peak_frac_ort1'])} / {pct(t['peak_frac_co_up1'])} / {pct(t['peak_frac_ort2'])} / {pct(t['peak_frac_pipeline'])} |")
print()
for t in table:
    print(f"{t['net']}: candidates " + ", ".join(
        f"{k.split(':')[0]} B×{k.split(':')[1].count('B')}/L×{k.split(':')[1].count('L')} {v:.2f}"
        for k, v in t["candidates"].items()) +
        f"; ORT cpu/wall 1t {t['ort_cpu_per_wall']['ort-1']:.2f}, 2t {t['ort_cpu_per_wall']['ort-2']:.2f}"
        "; other tenants' cores during ORT-1/ORT-2/co_up-1/pipeline runs " +
        "/".join(f"{t['others_cores_median'][c]:.2f}" for c in ("ort-1", "ort-2", "co_up-1", "pipeline")))
PY
