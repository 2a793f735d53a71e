#!/usr/bin/env bash
# Aggregate throughput of a mix of networks run together (co_up --workload) against the one-core
# baseline: the same networks one after another, each alone on B.
#
#   bench/workload_bench.sh [BUILD_DIR] [IMAGE_SIZE] [FRAMES]
#
# BUILD_DIR (default build/) holds co_up and its plugins; IMAGE_SIZE (default 224) every
# network's input size; FRAMES (default 50) requests per network. The mix: resnet50, squeezenet,
# mobilenet and googlenet, every network its own request stream (as fast as possible), in two
# arrangements without a planner:
#   alone-per-processor  each network whole on one processor, B and L alternately;
#   split-pipelines      each network's first half on B, second half on L (B/L pipeline).
# (co_up plan --workload, where available, gives planned arrangements to compare as well.)
# Baseline fps = all requests / the sum of the networks' walls alone on B; a mix's fps = all
# requests / its wall (first arrival to last completion), both from the profile JSON. The ratios
# are taken in one invocation; this host's speed drifts, so compare ratios, not fps across runs.
set -euo pipefail

BUILD=${1:-build}
SIZE=${2:-224}
FRAMES=${3:-50}
CO_UP="$BUILD/co_up"
PLUGINS="$BUILD/plugins"
NETS=(resnet50 squeezenet mobilenet googlenet)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

layers() { "$CO_UP" --graph="$1" --image-size="$SIZE" --list-layers | tail -1 | awk '{print $1}'; }
repeat() { printf "%${2}s" "" | tr ' ' "$1"; }
wall_ms() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wall_ms"])' "$1"; }

declare -A COUNT
for net in "${NETS[@]}"; do COUNT[$net]=$(layers "$net"); done

# Baseline: one after another, each alone on B.
baseline_ms=0
for net in "${NETS[@]}"; do
  "$CO_UP" --plugins="$PLUGINS" --profile-out="$OUT/alone_$net.json" \
    --workload="$net:$(repeat B "${COUNT[$net]}"):image_size=$SIZE:frames=$FRAMES" > /dev/null
  ms=$(wall_ms "$OUT/alone_$net.json")
  printf "alone on B  %-11s %9.1f ms  %7.2f fps\n" "$net" "$ms" "$(echo "$FRAMES * 1000 / $ms" | bc -l)"
  baseline_ms=$(echo "$baseline_ms + $ms" | bc -l)
done
total=$(( FRAMES * ${#NETS[@]} ))
baseline_fps=$(echo "$total * 1000 / $baseline_ms" | bc -l)
printf "baseline (one after another on B): %.2f requests/s\n" "$baseline_fps"

run_mix() {  # name, then one group per network
  local name=$1; shift
  local groups
  groups=$(IFS=';'; echo "$*")
  "$CO_UP" --plugins="$PLUGINS" --profile-out="$OUT/$name.json" --workload="$groups" > "$OUT/$name.txt"
  local ms fps
  ms=$(wall_ms "$OUT/$name.json")
  fps=$(echo "$total * 1000 / $ms" | bc -l)
  printf "%-22s %9.1f ms  %7.2f requests/s  %.2fx the baseline\n" "$name" "$ms" "$fps" \
    "$(echo "$fps / $baseline_fps" | bc -l)"
  sed -n '2,$p' "$OUT/$name.txt"
}

groups=()
letter=B
for net in "${NETS[@]}"; do
  groups+=("$net:$(repeat $letter "${COUNT[$net]}"):image_size=$SIZE:frames=$FRAMES")
  letter=$([ $letter = B ] && echo L || echo B)
done
run_mix alone-per-processor "${groups[@]}"

groups=()
for net in "${NETS[@]}"; do
  n=${COUNT[$net]}
  groups+=("$net:$(repeat B $((n / 2)))$(repeat L $((n - n / 2))):image_size=$SIZE:frames=$FRAMES")
done
run_mix split-pipelines "${groups[@]}"
