#!/usr/bin/env bash
# Validates co_up against PyTorch on the full-size modern networks: torchvision's
# mobilenet_v3_large, efficientnet_b0, shufflenet_v2_x1_0, regnet_y_400mf, densenet121,
# convnext_tiny, swin_t and vit_b_16, a BERT-base encoder, a YOLOv5s-style detector at 320x320
# and Inception-v4 (bench/export_networks.py, seeded weights, BatchNorm calibrated).
#
#   bench/validate_modern.sh [BUILD_DIR] [FIXTURE_DIR]
#
# BUILD_DIR (default build/) holds co_up and its plugins; FIXTURE_DIR (default
# BUILD_DIR/onnx-fixtures) the exports, made by bench/export_networks.py when missing (Debian's
# python3-torch, python3-torchvision, python3-onnx; about 1.3 GB of files).
# Platform: B = cpu-reference on core 0, L = cpu-xnnpack on core 1, G = opencl (PoCL or a GPU)
# hosted by B. Per network: all-L (cpu-xnnpack alone, layer units), all-B (cpu-reference alone),
# --units=ops alternating B/L in pipeline mode (both CPU backends in one frame, two frames in
# flight), and, when the opencl plugin loads and OPENCL is not 0, --units=ops cycling B/L/G in
# switch mode. Every run checks max |co_up - PyTorch| <= 1e-3 * (PyTorch's output range) and the
# same argmax. Exit status: 0 when every check passes, 1 otherwise.
# NETS=a,b limits the set; OPENCL=0 skips the opencl runs.
set -euo pipefail

source "$(dirname "$0")/bench_env.sh"
[[ -x ${co_up} ]] || die "${co_up} not found (build co_up and its plugins first)"
set_networks NETS mobilenet_v3_large efficientnet_b0 shufflenet_v2_x1_0 regnet_y_400mf densenet121 \
  convnext_tiny vit_b_16 swin_t bert_base yolo_320 inception_v4

missing=()
for net in "${nets[@]}"; do [[ -f ${fixtures}/${net}.onnx ]] || missing+=("${net}"); done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "=== exporting ${missing[*]} to ${fixtures}"
  "${python}" -c "import torch, torchvision, onnx" 2>/dev/null ||
    { echo "validate_modern.sh: needs python3-torch python3-torchvision python3-onnx (apt-get install)" >&2; exit 1; }
  "${python}" "${root}/bench/export_networks.py" "${fixtures}" "$(IFS=,; echo "${missing[*]}")" 2>&1 |
    grep -v -i warn | grep -v '^ ' || true
fi

tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
cat >"${tmp}/platform.json" <<'JSON'
{
  "name": "validate-mixed",
  "description": "B = cpu-reference, L = cpu-xnnpack, G = opencl: every backend in one mapping",
  "processors": [
    {"letter": "B", "name": "cpu-reference, core 0", "kind": "cpu", "backend": "cpu-reference", "cores": [0], "threads": 1},
    {"letter": "L", "name": "cpu-xnnpack, core 1", "kind": "cpu", "backend": "cpu-xnnpack", "cores": [1], "threads": 1},
    {"letter": "G", "name": "OpenCL device (PoCL or a GPU)", "kind": "gpu", "backend": "opencl", "host": "B"}
  ]
}
JSON
opencl=0
if [[ ${OPENCL:-1} != 0 ]] && "${co_up}" --list-plugins 2>/dev/null | grep -q '^ *loaded *opencl'; then opencl=1; fi
echo "validate_modern: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "${root}" rev-parse --short HEAD 2>/dev/null || echo '?')," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg); opencl runs: $([[ ${opencl} == 1 ]] && echo yes || echo no)"

repeat() { local s=""; for ((i = 0; i < $2; ++i)); do s+=$1; done; printf '%s' "${s}"; }
cycle() {  # letters of $1 cycled over $2 units
  local s="" i; for ((i = 0; i < $2; ++i)); do s+=${1:i % ${#1}:1}; done; printf '%s' "${s}"; }

failures=0
printf '%-19s %-28s %-6s %-9s %9s %10s %9s  %s\n' network run units mode "time s" "max|diff|" rel argmax
for net in "${nets[@]}"; do
  model=${fixtures}/${net}.onnx
  layers=$("${co_up}" --model="${model}" --platform="${tmp}/platform.json" --list-layers | tail -1 | awk '{print $1}')
  ops=$("${co_up}" --model="${model}" --platform="${tmp}/platform.json" --units=ops --list-layers | tail -1 | awk '{print $1}')
  runs=("xnnpack-alone layers switch $(repeat L "${layers}")"
        "reference-alone layers switch $(repeat B "${layers}")"
        "reference/xnnpack-ops ops pipeline $(cycle BL "${ops}")")
  [[ ${opencl} == 1 ]] && runs+=("reference/xnnpack/opencl-ops ops switch $(cycle BLG "${ops}")")
  for run in "${runs[@]}"; do
    read -r name units mode order <<<"${run}"
    start=$(date +%s%N)
    if ! "${co_up}" --model="${model}" --platform="${tmp}/platform.json" --units="${units}" --order="${order}" \
         --mode="${mode}" --n=2 --input="${fixtures}/${net}_input.npy" --output="${tmp}/out.npy" \
         >/dev/null 2>"${tmp}/err.txt"; then
      printf '%-19s %-28s %-6s %-9s %9s  FAILED: %s\n' "${net}" "${name}" "${units}" "${mode}" - "$(tail -1 "${tmp}/err.txt")"
      failures=$((failures + 1))
      continue
    fi
    secs=$(awk -v a="${start}" -v b="$(date +%s%N)" 'BEGIN {printf "%.1f", (b - a) / 1e9}')
    result=$("${python}" "${root}/bench/compare_output.py" "${tmp}/out.npy" "${fixtures}/${net}_output.npy")
    read -r diff rel argmax ok <<<"${result}"
    printf '%-19s %-28s %-6s %-9s %9s %10s %9s  %s\n' "${net}" "${name}" "${units}" "${mode}" "${secs}" "${diff}" "${rel}" "${argmax}"
    [[ ${ok} == 1 ]] || failures=$((failures + 1))
  done
done
if [[ ${failures} -ne 0 ]]; then
  echo "validate_modern.sh: ${failures} check(s) FAILED" >&2
  exit 1
fi
echo "validate_modern.sh: all checks passed"
