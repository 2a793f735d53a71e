#!/usr/bin/env bash
# Validates co_up's ONNX import against PyTorch on the full torchvision set:
# alexnet, googlenet, mobilenet_v2, resnet50, squeezenet1_0, inception_v3, resnet18, vgg16,
# mobilenet_v3_large, efficientnet_b0, regnet_y_400mf, densenet121.
#
#   bench/validate.sh [BUILD_DIR] [FIXTURE_DIR]
#
# BUILD_DIR (default build/) holds co_up; FIXTURE_DIR (default BUILD_DIR/onnx-fixtures) the
# exported models — made by tests/fixtures/make_fixtures.py --full when missing (needs Debian's
# python3-torch, python3-torchvision, python3-onnx; about 1 GB of files).
# For every network and several mappings (all on B, a B/L split, --units=ops alternating B/L), in
# pipeline and switch mode, it checks: max |co_up - PyTorch| <= 1e-3 * (PyTorch's output range)
# and the same argmax; it prints the numbers and the load time (--list-layers, i.e. parse + fold +
# passes + units). Exit status: 0 when every check passes, 1 otherwise.
# CO_UP_FIXTURES=resnet50,alexnet limits the set (also passed on to make_fixtures.py).
set -euo pipefail

source "$(dirname "$0")/bench_env.sh"
[[ -x ${co_up} ]] || die "${co_up} not found (build co_up first)"
set_networks CO_UP_FIXTURES alexnet googlenet mobilenet_v2 resnet50 squeezenet1_0 inception_v3 resnet18 vgg16 \
  mobilenet_v3_large efficientnet_b0 regnet_y_400mf densenet121

missing=0
for net in "${nets[@]}"; do [[ -f ${fixtures}/${net}.onnx ]] || missing=1; done
if [[ ${missing} -eq 1 ]]; then
  echo "=== exporting fixtures to ${fixtures}"
  "${python}" -c "import torch, torchvision, onnx" 2>/dev/null ||
    { echo "validate.sh: needs python3-torch python3-torchvision python3-onnx (apt-get install)" >&2; exit 1; }
  CO_UP_FIXTURES=$(IFS=,; echo "${nets[*]}") "${python}" "${root}/tests/fixtures/make_fixtures.py" --full "${fixtures}" 2>&1 |
    grep -v -i warn | grep -v '^ ' || true
fi

tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
failures=0
printf '%-14s %-6s %-9s %-26s %10s %12s %8s  %s\n' network units mode order "load ms" "max|diff|" "rel" argmax
for net in "${nets[@]}"; do
  model=${fixtures}/${net}.onnx
  start=$(date +%s%N)
  "${co_up}" --model="${model}" --list-layers >"${tmp}/layers.txt"
  load_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  layers=$(tail -1 "${tmp}/layers.txt" | awk '{print $1}')
  ops=$("${co_up}" --model="${model}" --units=ops --list-layers | tail -1 | awk '{print $1}')
  half=$(( layers / 2 ))
  split=$(printf 'B%.0s' $(seq 1 "${half}"))$(printf 'L%.0s' $(seq 1 $(( layers - half ))))
  alternating=$(for ((i = 0; i < ops; ++i)); do (( i % 3 == 2 )) && printf L || printf B; done)
  for run in "layers pipeline B" "layers pipeline ${split}" "layers switch ${split}" \
             "ops pipeline ${alternating}" "ops switch ${alternating}"; do
    read -r units mode order <<<"${run}"
    [[ ${order} == B ]] && order=$(printf 'B%.0s' $(seq 1 "${layers}"))
    "${co_up}" --model="${model}" --units="${units}" --order="${order}" --mode="${mode}" --n=2 \
      --input="${fixtures}/${net}_input.npy" --output="${tmp}/out.npy" >/dev/null
    result=$("${python}" "${root}/bench/compare_output.py" "${tmp}/out.npy" "${fixtures}/${net}_output.npy")
    read -r diff rel argmax ok <<<"${result}"
    shown=${order}
    (( ${#shown} > 26 )) && shown="${shown:0:23}..."
    printf '%-14s %-6s %-9s %-26s %10s %12s %8s  %s\n' "${net}" "${units}" "${mode}" "${shown}" "${load_ms}" "${diff}" "${rel}" "${argmax}"
    [[ ${ok} == 1 ]] || failures=$((failures + 1))
  done
done
if [[ ${failures} -ne 0 ]]; then
  echo "validate.sh: ${failures} check(s) FAILED" >&2
  exit 1
fi
echo "validate.sh: all checks passed"
