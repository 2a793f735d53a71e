#!/usr/bin/env bash
# Map-and-Conquer on the trained Fashion-MNIST fixtures: (1) the stage planner's runtime latency
# model against measured latency, fitted on some orders and reported on the others (held out),
# both ways round; (2) the dynamic (early-exit) plan against the static CNN and the static width
# split on the same processors: mean latency, accuracy and modelled energy per frame.
#
#   bench/map_and_conquer_bench.sh [BUILD_DIR] [FRAMES]
#
# BUILD_DIR (default build/) holds co_up and its plugins; FRAMES (default 1000) test images per
# run (tests/fixtures/map_and_conquer/test_images.npy, the first 1000 of the test set).
# Method: every run is switch mode (one frame in flight: latency is a frame's own, from its first
# sub-graph's start to its completion, no queueing behind other frames), on the platform
# platforms/host-2core-simulated-power.json: B and L are the two cores of this host, G OpenCL
# (PoCL on the same cores); their POWER IS SIMULATED (the RK3399Pro big, LITTLE and GPU power
# model constants at one fixed level; no sensor), so energy is modelled: per sub-graph, its
# measured busy time x the simulated power, summed over the run and divided by the frames
# (a skipped sub-graph costs nothing). The dynamic plan's thresholds are the ones
# scripts/train_map_and_conquer.py chose on the validation split (accuracy.json, "policy"), not
# on these test images. Part 2 runs its four configurations REPS times (default 3), forward on
# odd repetitions and reversed on even ones; it reports medians over the repetitions and, for the
# comparisons, the median [min-max] of the per-repetition ratios. The one-processor rows map every
# stage to B (BBB: each stage a sub-graph on B's one thread, no hand-off between threads; a frame
# that stops at an exit runs no later stage) against the static CNN on B alone (BBBB); their
# thresholds are the same validation-chosen policy. Part 1 fits on an order with repeated letters too (BBB,
# then LBB, for the next-stage cost of stages sharing a processor; with LBB the planner's BBB
# points are held out). Ratios are taken within this
# one invocation. Works from any directory (paths are the tree's that holds this script).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$root/build}
FRAMES=${2:-1000}
REPS=${REPS:-3}
[[ $REPS =~ ^[1-9][0-9]*$ ]] || { echo "map_and_conquer_bench.sh: REPS=$REPS: a positive integer" >&2; exit 2; }
CO_UP="$BUILD/co_up"
F=$root/tests/fixtures/map_and_conquer
PLATFORM=$root/platforms/host-2core-simulated-power.json
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
mkdir -p "$OUT/sys"  # an empty sysfs root: no DVFS is read or set, levels are the platform's defaults
COMMON=(--platform="$PLATFORM" --plugins="$BUILD/plugins" --sysfs-root="$OUT/sys")
LABELLED=(--input="$F/test_images.npy" --input-scale=1/255 --labels="$F/test_labels.npy" --n="$FRAMES")
POLICY=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["policy"]["exit"])' "$F/accuracy.json")

echo "# Map-and-Conquer bench: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'), host $(uname -n)"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $FRAMES test frames per run, switch mode; part 2: $REPS repetitions"
echo

echo "## 1. Runtime latency model: fitted on three rotations and BBB (then LBB), without and with the compute scale, predicted for the others (co_up plan --stage-timing=runtime --verify)"
"$CO_UP" profile "${COMMON[@]}" --model="$F/multi_exit.onnx" --units=ops --processors=BLG \
  --profile-out="$OUT/ops.json" > /dev/null
# The second fit set has LBB instead of BBB: B's next-stage cost comes from LBB, so the planner's
# one-processor points (BBB) are held out there. Each fit set twice: the fixed costs alone
# (--profiled-compute), then with each processor's compute scale (the default).
for fit in BLG,LGB,GBL,BBB BGL,GLB,LBG,LBB; do
  for scale in --profiled-compute ""; do
    echo
    if [[ -n $scale ]]; then what="$scale (fixed costs only)"; else what="with the compute scale (default)"; fi
    echo "### fit orders $fit $what"
    "$CO_UP" plan "${COMMON[@]}" --model="$F/multi_exit.onnx" --stage-plan="$F/stage_plan.json" \
      --profile="$OUT/ops.json" --exit-logits="$F/val_exit_logits.npy" --exit-labels="$F/val_labels.npy" \
      --objective=latency --top=3 --stage-timing=runtime --fit-orders="$fit" ${scale} --verify "${LABELLED[@]}" |
      sed -n -e '/^runtime model/,/^  fitted/p' -e "/^  .'s compute scale fitted at/p" -e '/^verify:/,$p'
  done
done
echo

echo "## 2. Dynamic plans against the static networks on the same processors (B, L, G; and B alone)"
run() {  # name, rep: one configuration's run
  local name=$1 rep=$2 args
  case $name in
    static_cnn_blgg) args=(--model="$F/static.onnx" --order=BLGG) ;;
    static_cnn_bbbb) args=(--model="$F/static.onnx" --order=BBBB) ;;
    static_split_blg) args=(--model="$F/multi_exit.onnx" --stage-plan="$F/stage_plan.json" --order=BLG --exit=none) ;;
    dynamic_blg) args=(--model="$F/multi_exit.onnx" --stage-plan="$F/stage_plan.json" --order=BLG --exit="$POLICY") ;;
    dynamic_bbb) args=(--model="$F/multi_exit.onnx" --stage-plan="$F/stage_plan.json" --order=BBB --exit="$POLICY") ;;
  esac
  "$CO_UP" "${COMMON[@]}" "${args[@]}" --mode=switch "${LABELLED[@]}" --power \
    --profile-out="$OUT/$name.$rep.json" > /dev/null
}
CONFIGS=(static_cnn_blgg static_cnn_bbbb static_split_blg dynamic_blg dynamic_bbb)
for ((rep = 1; rep <= REPS; ++rep)); do
  order=("${CONFIGS[@]}")
  if ((rep % 2 == 0)); then
    order=(); for ((i = ${#CONFIGS[@]} - 1; i >= 0; --i)); do order+=("${CONFIGS[i]}"); done
  fi
  for name in "${order[@]}"; do run "$name" "$rep"; done
done
python3 - "$OUT" "$POLICY" "$REPS" "$F/accuracy.json" <<'PY'
import json, os, statistics, sys
out, policy, reps, accuracy_json = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
med = statistics.median
rows = [("static CNN, BLGG", "static_cnn_blgg"), ("static CNN, BBBB (one core)", "static_cnn_bbbb"),
        ("static width split, BLG (--exit=none)", "static_split_blg"),
        (f"dynamic, BLG ({policy})", "dynamic_blg"), (f"dynamic, BBB: every stage on B ({policy})", "dynamic_bbb")]
res = {}  # name -> per repetition (latency ms, accuracy, energy mJ/frame, exit shares)
for label, name in rows:
    res[name] = []
    for rep in range(1, reps + 1):
        with open(os.path.join(out, f"{name}.{rep}.json")) as f:
            j = json.load(f)
        frames = j["frames_completed"]
        energy = sum(l["total_energy_mj"] for p in j["power"] for l in p["layers"]) / frames
        shares = [e["frames"] / frames for e in j["exits"].get("exits", [])]
        res[name].append((j["summary"]["latency_mean_ms"], j["exits"]["accuracy"], energy, shares,
                          j["summary"]["latency_median_ms"]))
print(f"medians over {reps} repetitions (alternating order)")
print()
print("| run | mean latency ms | median latency ms | accuracy | modelled energy mJ/frame (simulated power) | exit shares |")
print("|---|---|---|---|---|---|")
for label, name in rows:
    r = res[name]
    lat, acc, e = (med(x[k] for x in r) for k in range(3))
    lat_median = med(x[4] for x in r)
    shares = r[0][3]  # the same images and thresholds every repetition
    print(f"| {label} | {lat:.3f} | {lat_median:.3f} | {100 * acc:.1f} % | {e:.3f} | {' / '.join(f'{100 * s:.0f} %' for s in shares) or '-'} |")
spread = lambda v: f"{med(v):.2f}x [{min(v):.2f}-{max(v):.2f}]"
for dyn, label, name in (("dynamic_blg", "static CNN BLGG", "static_cnn_blgg"),
                         ("dynamic_blg", "static width split BLG", "static_split_blg"),
                         ("dynamic_bbb", "static CNN BBBB (one core)", "static_cnn_bbbb")):
    d, s = res[dyn], res[name]
    lat = [s[i][0] / d[i][0] for i in range(reps)]
    lat_median = [s[i][4] / d[i][4] for i in range(reps)]
    energy = [s[i][2] / d[i][2] for i in range(reps)]
    acc = med(d[i][1] - s[i][1] for i in range(reps))
    print(f"{dyn} vs {label}: latency {spread(lat)} lower (median latency {spread(lat_median)}), modelled energy {spread(energy)} lower, "
          f"accuracy {100 * acc:+.1f} points")
# The runs above count the first FRAMES test images; the whole test set's accuracy is the
# training script's (PyTorch, the same models), recorded with the fixtures.
with open(accuracy_json) as f:
    a = json.load(f)
p = a["policy"]
print()
print(f"accuracy on all {a['test_images']} test images (accuracy.json, from the training script): static CNN "
      f"{100 * a['static']:.2f} %, last exit alone {100 * a['exits'][-1]:.2f} % ({100 * (a['exits'][-1] - a['static']):+.2f} points), "
      f"dynamic {p['exit']} {100 * p['test_accuracy']:.2f} % ({100 * (p['test_accuracy'] - a['static']):+.2f} points; "
      f"chosen on {a['validation_images']} validation images, target met there: {'yes' if p['target_met_on_validation'] else 'no'})")
PY
