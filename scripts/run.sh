#!/usr/bin/env bash
# The README's first command: set up a fresh Debian 12 machine, build co_up, and run AlexNet split
# over the two CPU clusters in pipeline mode with per-layer profiling.
#   scripts/run.sh                      # the default job
#   scripts/run.sh --graph=resnet50 ... # any co_up options instead
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup-debian.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build co_up

if [[ $# -eq 0 ]]; then
  set -- --graph=alexnet --order=BBBBLLLL --mode=pipeline --profile=2 --n=30 \
         --profile-out=build/alexnet_profile.json
fi
echo "+ build/co_up $*"
exec build/co_up "$@"
