#!/usr/bin/env bash
# Several networks at once, one command: co_up --workload against the one-core baseline and
# against ONNX Runtime running the same networks side by side.
#
#   bench/workload_bench.sh [BUILD_DIR] [IMAGE_SIZE] [FRAMES]
#
# BUILD_DIR (default build/) holds co_up and its plugins; IMAGE_SIZE (default 224) every
# network's input size; FRAMES (default 50) requests per network. The mix: resnet50, squeezenet,
# mobilenet and googlenet (zoo graphs, seeded weights) and vit_tiny, a ViT-Tiny transformer at the
# same image size (an ONNX model, seeded weights, exported by bench/export_transformers.py into
# BUILD_DIR/onnx-fixtures when missing; docs/multi_network.md says why this one); every network
# its own request stream.
#   1. Plan: co_up profile --workload (B and L) then co_up plan --workload; the hetero2pipe plan
#      is the "planned" arrangement.
#   2. Throughput, ROUNDS rounds (forward, then reversed, ...) of: the baseline (each network
#      alone on B, one after another), the planned arrangement (hetero2pipe: pipelines, or whole
#      networks with replicas on B and L, each request where a processor frees first, when its
#      pipelines are not clearly faster), the same file without "affinity" (each processor
#      interleaving the networks request by request), the balanced plan with and without it,
#      hetero2pipe-h's pipelines (no replicas), two arrangements
#      without a planner (whole networks on B and L alternately; first half B, second half L), and ONNX
#      Runtime (each network one session with one intra-op thread, its own process, all of them
#      side by side on both cores; the same network exported by co_up --export-partitions, the
#      transformer's own ONNX file, and the same .npy input). Aggregate throughput = all requests / (last completion - first arrival);
#      the baseline's = all requests / the sum of the networks' walls. Ratios within a round, then
#      median [min-max]. Then where planned and the pipelines lose against 2.0x: waiting (bubble and
#      idle), work inflation over the one-core time (co-run slowdown, hand-offs; also in CPU time),
#      the hand-off transfers, the B-L imbalance, the tail and the network switches per processor;
#      and measured / predicted per round.
#   3. Latency: every network at an equal share of LOAD % (default 80) of the planned
#      arrangement's measured capacity, co_up (planned) and ONNX Runtime at the same rates;
#      per-request p99 from arrival, all networks' requests together.
# Every run records the other processes' CPU use (cores) from /proc/stat: on a shared host the
# numbers are only comparable within one run of this script.
# Environment: ROUNDS (3), NETS (comma list of zoo graphs and vit_tiny), LOAD (80), ORT (auto: when bench/ort has
# onnxruntime-node, `cd bench/ort && npm install --ignore-scripts`; 0: skip; 1: required),
# OUT_DIR (kept results; default a new directory under /tmp).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec python3 "${root}/bench/workload_bench.py" "${1:-build}" "${2:-224}" "${3:-50}"
