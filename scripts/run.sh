#!/usr/bin/env bash
# The README's first command: set up a fresh Debian 12 machine, build co_up, and run AlexNet split
# over every processor kind in pipeline mode with per-layer profiling: conv1-2 on the big CPU
# cluster, conv3 on the LITTLE one, conv4-5 on the OpenCL GPU (PoCL when no GPU is present), fc6-8 on
# the NPU (the npu-int8 accelerator when no vendor NPU plugin loads).
#   scripts/run.sh                      # the default job
#   scripts/run.sh --graph=resnet50 ... # any co_up options instead
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup-debian.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build co_up_runtime

if [[ $# -eq 0 ]]; then
  set -- --graph=alexnet --order=BBLGGNNN --mode=pipeline --profile=2 --n=30 \
         --profile-out=build/alexnet_profile.json
fi
echo "+ build/co_up $*"
exec build/co_up "$@"
