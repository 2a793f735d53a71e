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
# on these test images. Ratios are taken within this one invocation.
set -euo pipefail

BUILD=${1:-build}
FRAMES=${2:-1000}
CO_UP="$BUILD/co_up"
F=tests/fixtures/map_and_conquer
PLATFORM=platforms/host-2core-simulated-power.json
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
mkdir -p "$OUT/sys"  # an empty sysfs root: no DVFS is read or set, levels are the platform's defaults
COMMON=(--platform="$PLATFORM" --plugins="$BUILD/plugins" --sysfs-root="$OUT/sys")
LABELLED=(--input="$F/test_images.npy" --input-scale=1/255 --labels="$F/test_labels.npy" --n="$FRAMES")
POLICY=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["policy"]["exit"])' "$F/accuracy.json")

echo "# Map-and-Conquer bench: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), host $(uname -n)"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $FRAMES test frames per run, switch mode"
echo

echo "## 1. Runtime latency model: fitted on three orders, predicted for the others (co_up plan --stage-timing=runtime --verify)"
"$CO_UP" profile "${COMMON[@]}" --model="$F/multi_exit.onnx" --units=ops --processors=BLG \
  --profile-out="$OUT/ops.json" > /dev/null
for fit in BLG,LGB,GBL BGL,GLB,LBG; do
  echo
  echo "### fit orders $fit"
  "$CO_UP" plan "${COMMON[@]}" --model="$F/multi_exit.onnx" --stage-plan="$F/stage_plan.json" \
    --profile="$OUT/ops.json" --exit-logits="$F/val_exit_logits.npy" --exit-labels="$F/val_labels.npy" \
    --objective=latency --top=3 --stage-timing=runtime --fit-orders="$fit" --verify "${LABELLED[@]}" |
    sed -n -e '/^runtime model/,/^  fitted/p' -e '/^verify:/,$p'
done
echo

echo "## 2. Dynamic plan against the static networks on the same processors (B, L, G)"
run() {  # name, model, extra args...
  local name=$1 model=$2
  shift 2
  "$CO_UP" "${COMMON[@]}" --model="$model" --mode=switch "${LABELLED[@]}" --power \
    --profile-out="$OUT/$name.json" "$@" > /dev/null
}
run static_cnn_blgg "$F/static.onnx" --order=BLGG
run static_cnn_bbbb "$F/static.onnx" --order=BBBB
run static_split_blg "$F/multi_exit.onnx" --stage-plan="$F/stage_plan.json" --order=BLG --exit=none
run dynamic_blg "$F/multi_exit.onnx" --stage-plan="$F/stage_plan.json" --order=BLG --exit="$POLICY"
python3 - "$OUT" "$POLICY" <<'PY'
import json, os, sys
out, policy = sys.argv[1], sys.argv[2]
rows = [("static CNN, BLGG", "static_cnn_blgg"), ("static CNN, BBBB (one core)", "static_cnn_bbbb"),
        ("static width split, BLG (--exit=none)", "static_split_blg"),
        (f"dynamic, BLG ({policy})", "dynamic_blg")]
res = {}
for label, name in rows:
    j = json.load(open(os.path.join(out, name + ".json")))
    frames = j["frames_completed"]
    energy = sum(l["total_energy_mj"] for p in j["power"] for l in p["layers"]) / frames
    shares = [e["frames"] / frames for e in j["exits"].get("exits", [])]
    res[name] = (j["summary"]["latency_mean_ms"], j["exits"]["accuracy"], energy, shares)
print("| run | mean latency ms | accuracy | modelled energy mJ/frame (simulated power) | exit shares |")
print("|---|---|---|---|---|")
for label, name in rows:
    lat, acc, e, shares = res[name]
    print(f"| {label} | {lat:.3f} | {100 * acc:.1f} % | {e:.3f} | {' / '.join(f'{100 * s:.0f} %' for s in shares) or '-'} |")
d = res["dynamic_blg"]
for label, name in (("static CNN BLGG", "static_cnn_blgg"), ("static width split BLG", "static_split_blg")):
    s = res[name]
    print(f"dynamic vs {label}: latency {s[0] / d[0]:.2f}x lower, modelled energy {s[2] / d[2]:.2f}x lower, "
          f"accuracy {100 * (d[1] - s[1]):+.1f} points")
PY
