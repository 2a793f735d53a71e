#!/usr/bin/env bash
# Regenerates the measured tables of README.md and bench/README.md (and of the docs/ pages those
# point to) on the current commit, one bench after another, and writes each table as markdown
# into a new output directory with the date, commit, host load and method beside it.
#
#   bench/tables.sh [--quick|--full] [--only=NAME,...] [--list] [--build=DIR] [--out=DIR]
#
# --full (default) is the run whose tables go into the READMEs: repetitions chosen so that the
#   whole set takes about 32 minutes on this project's 2-core host when nothing else runs (the
#   estimate per table: --list; the total is printed first). The ORT comparison alone is 10 of
#   them (5 reps x 50 frames, the least the method allows); ort_intraop runs 3 reps, not 5.
# --quick is a smoke check of this script and of every bench it calls (one network, one rep, few
#   frames; about 4 minutes): its numbers are not for the READMEs.
# --only=a,b runs just those tables (also the long ones that --full leaves out, see --list).
# --build=DIR (default build/) must already hold co_up, its plugins and the bench programs: this
#   script builds nothing (the targets it needs are listed when one is missing).
# --out=DIR (default bench-tables/<UTC date>-<commit>); an existing directory is never reused.
#
# bench/paste_tables.py OUT then replaces each table's "<!-- measured: NAME -->" block in README.md,
# bench/README.md and docs/ (full-mode runs only); its --check says every table here has one.
#
# Every table file says which README section it replaces, the command that made it, the UTC time,
# the commit (with "+dirty" when the tree had changes), `uptime` before and after, and the
# method; the bench's own output follows (its markdown tables as they are, other text fenced).
# OUT/index.md lists every table with its status and time, and the tables NOT regenerated and why.
# Run it with nothing else on the machine: the benches measure the host, not co_up alone.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mode=full
only=""
build=${root}/build
out=""
list=0
for arg in "$@"; do
  case ${arg} in
    --quick) mode=quick ;;
    --full) mode=full ;;
    --only=*) only=${arg#--only=} ;;
    --build=*) build=$(cd "${arg#--build=}" && pwd) || exit 2 ;;
    --out=*) out=${arg#--out=} ;;
    --list) list=1 ;;
    -h | --help) sed -n "2,26p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "tables.sh: unknown argument ${arg} (see --help)" >&2; exit 2 ;;
  esac
done
quick() { [[ ${mode} == quick ]]; }

# The tables: name | quick s | full s | in --full | where it goes | what measures it.
# Estimates are wall seconds on the 2-core host, idle; a loaded host takes longer.
tables=(
  "pipeline|20|240|yes|README.md \"Performance\"; bench/README.md \"Latest: co_up_bench_pipeline\"|co_up_bench_pipeline: B-only vs best B/L split per zoo network, Sender/Receiver transfers vs memcpy"
  "run_example|20|60|yes|README.md \"The two commands\" (the scripts/run.sh output block)|co_up --graph=alexnet --order=BBLGGNNN --mode=pipeline --profile=2 (B, L, G on PoCL, N npu-int8)"
  "ort_compare|30|600|yes|bench/README.md \"co_up vs ONNX Runtime (CPU EP)\", Latest; README.md Status row \"XNNPACK CPU backend\"|bench/ort_compare.sh on the five torchvision CNNs"
  "planner_accuracy|60|300|yes|bench/README.md \"Planner accuracy\": held out vs fit, and per network|co_up_bench_planner with B, L, G (PoCL), N (npu-int8)"
  "power|12|15|yes|bench/README.md \"Power manager overheads\" (the paced DVFS table)|co_up_bench_power"
  "meter_mismatch|5|5|yes|bench/README.md \"Per-layer energy ... breaks the estimator's assumptions\"|power_meter_mismatch_test (deterministic seeds)"
  "xnnpack|5|45|yes|bench/README.md \"cpu-xnnpack vs cpu-reference, one core\"|co_up_bench_xnnpack, pinned to core 0"
  "xnnpack_convs|12|70|yes|bench/README.md \"AVX-512 convolutions vs XNNPACK's, per layer\"|co_up_bench_xnnpack --convs, pinned to core 0"
  "onnx_load|3|15|yes|bench/README.md \"ONNX loading and validation\" (load time table)|co_up_bench_onnx_load"
  "npu_overhead|3|15|yes|bench/README.md \"NPU node overhead\"|co_up_bench_npu_overhead"
  "planning|2|30|yes|bench/README.md \"Planning time\"|co_up_bench_planning"
  "int8|3|40|yes|bench/README.md \"int8 accelerator vs f32 CPU, one core\" (invocation table)|co_up_bench_int8, pinned to core 0"
  "workload|20|180|yes|bench/README.md \"Several networks at once\"|bench/workload_bench.sh"
  "workload_verify|20|20|yes|bench/README.md \"Predicted vs measured: co_up plan --workload --verify\"|co_up profile --workload, co_up plan --workload --verify"
  "api|15|80|yes|docs/api.md \"Cost\"|co_up_bench_api, cpu-reference and cpu-xnnpack"
  "python|6|30|yes|docs/python.md (bench/python_overhead.py paragraph)|bench/python_overhead.py"
  "para_pipe|60|600|yes|docs/para_pipe.md \"Measured\"|co_up profile --units=branches --split (GoogLeNet 224, Inception-v3 299), co_up_bench_para_pipe"
  "para_pipe_model|60|900|yes|docs/para_pipe.md \"How close the model is\"|co_up_bench_para_pipe --plans=0: the DAG cost model against 100 random mappings x 2 modes of GoogLeNet 224, Inception-v3 299, ViT-Tiny 224, the Inception-v4-style fixture"
  "exits|5|30|yes|docs/map_and_conquer.md \"Running the fixture end to end\"|co_up on the trained multi-exit fixtures, 1000 test images"
  "ort_modern|30|420|yes|bench/README.md \"Modern CNNs: MobileNetV3-Large, EfficientNet-B0, a YOLOv5s-style detector, ConvNeXt-T\"|bench/ort_compare.sh NETS=mobilenet_v3_large,efficientnet_b0,yolo_320,convnext_tiny"
  "ort_intraop|10|360|yes|docs/intra_op_threads.md \"Numbers\" (bench/README.md \"Intra-op threads only\")|bench/ort_intraop.sh on the five torchvision CNNs and the four modern ones"
  "map_and_conquer|20|180|yes|bench/README.md \"Map-and-Conquer\"|bench/map_and_conquer_bench.sh on the trained Fashion-MNIST fixtures"
  "ort_transformers|0|1800|no|bench/README.md \"Transformers: ViT-B/16 and BERT-base\"|bench/ort_compare.sh NETS=vit_b_16,bert_base"
  "workload_plan|0|240|no|bench/README.md \"Planning several networks\" (regression error, predicted plans)|co_up_bench_workload_plan on a measured workload profile"
  "opencl|0|300|no|bench/README.md \"OpenCL backend on PoCL\" (parts A-D)|co_up_bench_opencl"
  "validate|0|600|no|bench/README.md \"ONNX loading and validation\" (max abs diff vs PyTorch)|bench/validate.sh"
  "validate_modern|0|1500|no|bench/README.md \"ONNX loading and validation\" (the eleven full-size modern networks vs PyTorch)|bench/validate_modern.sh"
)
# Tables of the READMEs that no run regenerates, and why (written to index.md).
not_regenerated=(
  "bench/README.md sections titled \"Earlier ...\", \"Results on a quiet host ...\", \"Results measured here (earlier ...)\", \"The run before ...\", the earlier-method ORT tables and planner runs A-F / 1-3: records of earlier code and methods, kept as history; the current method's tables above replace them as \"Latest\""
  "README.md \"Status\" table: its numbers are quotes of the tables here (ORT ratios, OpenCL, workload, para-pipe, exits); update them from those tables"
  "docs/design.md, docs/early_exits.md, docs/multi_network.md, docs/transformer_ops.md: their tables are options, formats and designs, not measurements"
  "docs/para_pipe.md \"Predicted\" (cost model only) and docs/intra_op_threads.md earlier runs: predictions / history, not measurements of the current code"
  "ort_transformers, workload_plan, opencl, validate, validate_modern: not in --full (estimates above: the transformers alone take ~30 min at 1-2 fps x 5 reps x 6 runs; the workload profile ~4 min; the OpenCL bench ~5 min incl. a cold PoCL kernel cache; validate is a correctness check against PyTorch, ~10 min of exports); run them with --only=NAME in a second quiet window"
)

selected() {  # name in_full
  if [[ -n ${only} ]]; then [[ ",${only}," == *",$1,"* ]]; else [[ $2 == yes ]]; fi
}

if ((list)); then
  printf '%-18s %8s %8s %8s  %s\n' table quick_s full_s in_full "where"
  for t in "${tables[@]}"; do
    IFS='|' read -r name qs fs inf where _ <<<"${t}"
    printf '%-18s %8s %8s %8s  %s\n' "${name}" "${qs}" "${fs}" "${inf}" "${where}"
  done
  exit 0
fi
if [[ -n ${only} ]]; then
  for n in ${only//,/ }; do
    printf '%s\n' "${tables[@]}" | grep -q "^${n}|" || { echo "tables.sh: no table named ${n} (--list)" >&2; exit 2; }
  done
fi

py=/usr/bin/python3
fixtures=${build}/onnx-fixtures
mnc=${root}/tests/fixtures/map_and_conquer
commit=$(git -C "${root}" rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -n $(git -C "${root}" status --porcelain --untracked-files=no 2>/dev/null) ]] && commit+="+dirty"
stamp=$(date -u '+%Y-%m-%dT%H%MZ')
out=${out:-${root}/bench-tables/${stamp}-${commit}-${mode}}
if [[ -e ${out} ]]; then
  echo "tables.sh: ${out} exists; not overwriting it (give another --out)" >&2
  exit 2
fi
mkdir -p "${out}/raw" "${out}/work" || exit 2
out=$(cd "${out}" && pwd)

total=0
for t in "${tables[@]}"; do
  IFS='|' read -r name qs fs inf _ <<<"${t}"
  selected "${name}" "${inf}" || continue
  if quick; then total=$((total + qs)); else total=$((total + fs)); fi
done
# ort_compare exports the torchvision fixtures it lacks first (python3-torch; about 30 s each).
if selected ort_compare yes && ! quick; then
  for net in alexnet googlenet mobilenet_v2 resnet50 squeezenet1_0; do
    [[ -f ${fixtures}/${net}.onnx ]] || total=$((total + 30))
  done
fi
echo "tables.sh: ${mode} mode, commit ${commit}, estimated $((total / 60)) min $((total % 60)) s on an idle 2-core host; now: $(uptime)"
echo "tables.sh: writing to ${out}"

work=${out}/work

need() {  # binaries under ${build} the table needs
  local f
  for f in "$@"; do
    [[ -x ${build}/${f} ]] || { echo "missing ${build}/${f} (ninja -C ${build} ${f##*/} co_up_runtime)"; return 1; }
  done
}

# One function per table: runs the bench, its output on stdout; sets ${method} (how it measured).
t_pipeline() {
  need co_up_bench_pipeline || return 1
  if quick; then
    method="--quick: 6 frames, 1 rep, 2 candidates per granularity, short transfer runs; SqueezeNet only"
    "${build}/co_up_bench_pipeline" --quick --networks=squeezenet --json="${work}/pipeline.json"
  else
    method="--reps=5: medians of 5 repetitions, in each the B-only order and every candidate back to back; candidates from the all-B profile (bench/README.md \"What it measures\")"
    "${build}/co_up_bench_pipeline" --reps=5 --json="${work}/pipeline.json"
  fi
}
t_run_example() {
  need co_up || return 1
  local n=30
  quick && n=6
  method="scripts/run.sh's headline run, --n=${n}, the host's detected platform (G = PoCL, N = npu-int8), first run of the process (PoCL's kernel cache as the host has it); the README quotes the first lines of the report"
  "${build}/co_up" --graph=alexnet --order=BBLGGNNN --mode=pipeline --profile=2 --n="${n}" \
    --profile-out="${work}/alexnet_profile.json"
}
t_ort_compare() {
  need co_up co_up_bench_xnnpack || return 1
  if quick; then
    method="REPS=1 FRAMES=10 WARMUP=2 CANDIDATES=1, squeezenet1_0 only (smoke: below the method's 5 reps x 50 frames)"
    NETS=squeezenet1_0 REPS=1 FRAMES=10 WARMUP=2 CANDIDATES=1 OUT_DIR=${work}/ort_compare \
      "${root}/bench/ort_compare.sh" "${build}" "${fixtures}"
  else
    method="REPS=5 FRAMES=50 WARMUP=3 CANDIDATES=2 on the five CNNs: candidates chosen in a selection run, then 5 timed reps of six pinned runs in alternating order, ratios per rep (script header); a pipeline that cuts inside a split op (spread) is timed in the same reps against the best contiguous cut and the faster is reported, its cut named in the table"
    NETS=alexnet,googlenet,mobilenet_v2,resnet50,squeezenet1_0 REPS=5 FRAMES=50 WARMUP=3 CANDIDATES=2 \
      OUT_DIR=${work}/ort_compare "${root}/bench/ort_compare.sh" "${build}" "${fixtures}"
  fi
}
t_ort_transformers() {
  need co_up co_up_bench_xnnpack || return 1
  method="REPS=5 FRAMES=50 WARMUP=3 CANDIDATES=1 on vit_b_16 and bert_base"
  quick && method="REPS=1 FRAMES=3 WARMUP=1 CANDIDATES=1 (smoke)"
  local reps=5 frames=50 warm=3
  quick && { reps=1; frames=3; warm=1; }
  NETS=vit_b_16,bert_base REPS=${reps} FRAMES=${frames} WARMUP=${warm} CANDIDATES=1 \
    OUT_DIR=${work}/ort_transformers "${root}/bench/ort_compare.sh" "${build}" "${fixtures}"
}
t_ort_modern() {
  need co_up co_up_bench_xnnpack || return 1
  local nets=mobilenet_v3_large,efficientnet_b0,yolo_320,convnext_tiny reps=3 frames=50 warm=3
  quick && { nets=mobilenet_v3_large; reps=1; frames=5; warm=1; }
  method="REPS=${reps} FRAMES=${frames} WARMUP=${warm} CANDIDATES=1 on ${nets} (3 reps, not 5, to keep the whole run near 40 min); a pipeline that cuts inside a split op (spread) is timed in the same reps against the best contiguous cut and the faster is reported, its cut named in the table"
  NETS=${nets} REPS=${reps} FRAMES=${frames} WARMUP=${warm} CANDIDATES=1 \
    OUT_DIR=${work}/ort_modern "${root}/bench/ort_compare.sh" "${build}" "${fixtures}"
}
t_map_and_conquer() {
  need co_up || return 1
  local n=1000
  quick && n=100
  method="bench/map_and_conquer_bench.sh ${build} ${n}: runtime model fitted on three orders and checked on the others, both ways round; dynamic plan vs static CNN and static width split (switch mode, simulated power)"
  "${root}/bench/map_and_conquer_bench.sh" "${build}" "${n}"
}
t_validate_modern() {
  need co_up || return 1
  method="bench/validate_modern.sh: the eleven full-size networks vs PyTorch in four mappings"
  quick && method="NETS=mobilenet_v3_large OPENCL=0 (smoke)"
  if quick; then
    NETS=mobilenet_v3_large OPENCL=0 "${root}/bench/validate_modern.sh" "${build}" "${fixtures}"
  else
    "${root}/bench/validate_modern.sh" "${build}" "${fixtures}"
  fi
}
t_ort_intraop() {
  need co_up || return 1
  if quick; then
    method="REPS=1 FRAMES=10 WARMUP=2, squeezenet1_0 only (smoke)"
    NETS=squeezenet1_0 REPS=1 FRAMES=10 WARMUP=2 OUT_DIR=${work}/ort_intraop \
      "${root}/bench/ort_intraop.sh" "${build}" "${fixtures}"
  else
    method="REPS=3 FRAMES=50 WARMUP=3 on the five CNNs and MobileNetV3-L, EfficientNet-B0, YOLO-320, ConvNeXt-T (3 reps, not 5, to keep the whole run near 30 min; the one-thread and two-thread latencies are also in ort_compare's 5-rep tables)"
    NETS=alexnet,googlenet,mobilenet_v2,resnet50,squeezenet1_0,mobilenet_v3_large,efficientnet_b0,yolo_320,convnext_tiny \
      REPS=3 FRAMES=50 WARMUP=3 OUT_DIR=${work}/ort_intraop "${root}/bench/ort_intraop.sh" "${build}" "${fixtures}"
  fi
}
t_planner_accuracy() {
  need co_up_bench_planner || return 1
  if quick; then
    method="--quick (64x64, no quiet guard, 10x error bound): smoke"
    "${build}/co_up_bench_planner" --quick
  else
    # The quiet-run guard waits up to 30 s before each of ~250 runs for a quiet window: on a busy
    # host that is hours, so it is on only when the host looks idle at the start.
    local load guard=(--max-foreign=0.05 --attempts=2) how="on (--max-foreign=0.05, 2 attempts)"
    load=$(cut -d' ' -f1 /proc/loadavg)
    if awk -v l="${load}" 'BEGIN {exit !(l >= 1.0)}'; then
      guard=(--max-foreign=1 --attempts=1) how="OFF: 1-minute load ${load} at the start, the guard would only wait"
    fi
    method="B, L (cpu-xnnpack, cores 0 and 1), G (PoCL, one worker on core 0), N (npu-int8); 96x96, 6 frames and >= 0.4 s per mapping, 5 profile frames, 1 rep of (b), 6 random orders; quiet-run guard ${how}"
    POCL_MAX_PTHREAD_COUNT=1 POCL_AFFINITY=1 "${build}/co_up_bench_planner" --processors=BLGN \
      --image-size=96 --frames=6 --min-seconds=0.4 --repetitions=5 --reps=1 --random=6 \
      "${guard[@]}" --json="${work}/planner.json" 2>&1 | tee "${work}/planner.out"
    local rc=${PIPESTATUS[0]}
    # Exit 1 with this line is the bench's verdict (held-out error over its bound), not a failed run.
    if ((rc == 1)) && grep -q 'exceeds --max-heldout-error' "${work}/planner.out"; then
      echo "tables.sh: the held-out error is over the bench's bound; the tables above stand as measured"
      return 0
    fi
    return "${rc}"
  fi
}
t_power() {
  need co_up_bench_power || return 1
  method="simulated sysfs tree in /tmp; 20,000 back-to-back DVFS requests and 4,000 paced one per ~50 us layer, applied counts from the worker; sampling 2 sensors at 1 kHz + GPIO tags + spans vs none (one run)"
  "${build}/co_up_bench_power"
}
t_meter_mismatch() {
  need tests/power_meter_mismatch_test || return 1
  method="synthetic meter logs from a 10 us power signal (deterministic seeds), error of each layer's energy per frame vs the signal's integral; the test asserts the bounds"
  "${build}/tests/power_meter_mismatch_test"
}
t_xnnpack() {
  need co_up_bench_xnnpack || return 1
  if quick; then
    method="--frames=2 --networks=squeezenet, taskset -c 0 (smoke)"
    taskset -c 0 "${build}/co_up_bench_xnnpack" --networks=squeezenet --frames=2
  else
    method="--frames=7, all five networks at 224, switch mode, one core (taskset -c 0), median frame time; peak = max(AVX-512 FMA loop, XNNPACK GEMM 1024^3)"
    taskset -c 0 "${build}/co_up_bench_xnnpack" --frames=7
  fi
}
t_xnnpack_convs() {
  need co_up_bench_xnnpack || return 1
  local nets=()
  quick && nets=(--networks=squeezenet)
  method="every distinct non-depthwise convolution shape at 224x224, AVX-512 kernel vs XNNPACK on the same buffers, 15 alternations with a 64 MiB cache flush before each run, medians; taskset -c 0${nets:+; SqueezeNet only (smoke)}"
  taskset -c 0 "${build}/co_up_bench_xnnpack" --convs "${nets[@]}"
}
t_onnx_load() {
  need co_up_bench_onnx_load || return 1
  local net=resnet50 repeat=5
  quick && { net=squeezenet1_0; repeat=2; }
  if [[ ! -f ${fixtures}/${net}.onnx ]]; then  # ort_compare exports it when it runs first
    CO_UP_FIXTURES=${net} "${py}" "${root}/tests/fixtures/make_fixtures.py" --full "${fixtures}" >/dev/null 2>&1 || {
      echo "${fixtures}/${net}.onnx missing and its export failed (tests/fixtures/make_fixtures.py --full needs python3-torch, -torchvision, -onnx)"; return 1; }
  fi
  method="median of ${repeat} loads of the torchvision ${net} export: import, passes, setup (all layers on B)"
  "${build}/co_up_bench_onnx_load" "${fixtures}/${net}.onnx" --repeat="${repeat}"
}
t_npu_overhead() {
  need co_up_bench_npu_overhead || return 1
  if quick; then
    method="--quick: 300 frames (smoke)"; "${build}/co_up_bench_npu_overhead" --quick
  else
    method="rknn shim over the tests' fake librknnrt.so, medians over 3000 frames (300 warm-up dropped)"
    "${build}/co_up_bench_npu_overhead"
  fi
}
t_planning() {
  need co_up_bench_planning || return 1
  if quick; then
    method="--quick: 20 layers, 4 levels, once (smoke)"; "${build}/co_up_bench_planning" --quick
  else
    method="synthetic 50-layer profile, processors B L G N, 8 DVFS levels; median of 5"
    "${build}/co_up_bench_planning" --reps=5
  fi
}
t_int8() {
  need co_up_bench_int8 || return 1
  if quick; then
    method="--networks=mobilenet --frames=1 --reps=1 --image-size=112, taskset -c 0 (smoke)"
    taskset -c 0 "${build}/co_up_bench_int8" --networks=mobilenet --frames=1 --reps=1 --image-size=112
  else
    method="--frames=3 --reps=7 (three configurations interleaved 7 times, median of 21 frames each), 224x224, one core (taskset -c 0)"
    taskset -c 0 "${build}/co_up_bench_int8" --frames=3 --reps=7
  fi
}
t_workload() {
  need co_up || return 1
  # 300 requests per network: every arrangement runs for seconds (30 took 0.3-0.5 s, too short to
  # be stable).
  local size=64 frames=300
  quick && frames=10
  method="bench/workload_bench.sh ${build} ${size} ${frames}: the mix (four CNNs and ViT-Tiny) alone on B one after another vs together in the planned and unplanned arrangements and ONNX Runtime, one invocation"
  "${root}/bench/workload_bench.sh" "${build}" "${size}" "${frames}"
}
t_workload_verify() {
  need co_up || return 1
  local frames=30 reps=6
  quick && { frames=5; reps=2; }
  cat >"${work}/mix.json" <<JSON
{"mode": "pipeline", "policy": "plan", "networks": [
  {"graph": "resnet50", "image_size": 64, "frames": ${frames}},
  {"graph": "squeezenet", "image_size": 64, "frames": ${frames}},
  {"graph": "mobilenet", "image_size": 64, "frames": ${frames}},
  {"graph": "googlenet", "image_size": 64, "frames": ${frames}}]}
JSON
  method="mix of resnet50, squeezenet, mobilenet, googlenet at 64x64, ${frames} requests each; co_up profile --workload --processors=BL --repetitions=${reps}, then co_up plan --workload --verify (each plan run once)"
  "${build}/co_up" profile --workload="${work}/mix.json" --processors=BL --repetitions="${reps}" \
    --profile-out="${work}/mix_profile.json" &&
    "${build}/co_up" plan --workload="${work}/mix.json" --profile="${work}/mix_profile.json" \
      --out="${work}/plans" --verify
}
t_workload_plan() {
  need co_up co_up_bench_workload_plan || return 1
  local reps=6
  quick && reps=2
  sed 's/"image_size": 64/"image_size": 96/' >"${work}/mix96.json" <<'JSON'
{"mode": "pipeline", "networks": [
  {"graph": "resnet50", "image_size": 64}, {"graph": "squeezenet", "image_size": 64},
  {"graph": "mobilenet", "image_size": 64}, {"graph": "googlenet", "image_size": 64}]}
JSON
  method="co_up profile --workload (96x96, B L G, --repetitions=${reps}), then the planners on it and against exhaustive search (--synthetic=20)"
  "${build}/co_up" profile --workload="${work}/mix96.json" --processors=BLG --repetitions="${reps}" \
    --profile-out="${work}/mix96_profile.json" &&
    "${build}/co_up_bench_workload_plan" --profile="${work}/mix96_profile.json" --synthetic=20
}
t_opencl() {
  need co_up_bench_opencl || return 1
  if quick; then method="--quick (smoke)"; "${build}/co_up_bench_opencl" --quick
  else method="parts A-D, --reps=5 (bench/README.md)"; "${build}/co_up_bench_opencl" --reps=5; fi
}
t_validate() {
  need co_up || return 1
  method="bench/validate.sh: every torchvision export x {all B, B/L pipeline and switch, ops B/B/L} against PyTorch"
  "${root}/bench/validate.sh" "${build}" "${fixtures}"
}
t_api() {
  need co_up_bench_api || return 1
  local args=(--reps=10 --frames=150)
  quick && args=(--quick)
  method="co_up_bench_api ${args[*]}, once with --backend=cpu-reference and once with --backend=cpu-xnnpack"
  "${build}/co_up_bench_api" "${args[@]}" --backend=cpu-reference && echo &&
    "${build}/co_up_bench_api" "${args[@]}" --backend=cpu-xnnpack
}
t_python() {
  [[ -d ${build}/python/co_up ]] || { echo "missing ${build}/python/co_up (ninja -C ${build} co_up_python)"; return 1; }
  local args=()
  quick && args=(--frames=200 --repeats=3)
  method="bench/python_overhead.py ${args[*]:-(defaults: 2000 frames, 7 repeats)}: loops in C++ vs Python on one Session, the tests' tiny network"
  PYTHONPATH=${build}/python CO_UP_PLUGIN_PATH=${build}/plugins "${py}" "${root}/bench/python_overhead.py" "${args[@]}"
}
# --split list for every convolution with at least 0.5 % of the network's MACs, in two (the unit
# numbers --list-layers shows without --split); the planner decides which of them to spread.
para_pipe_split() {  # graph image_size
  "${build}/co_up" --graph="$1" --units=branches --image-size="$2" --list-layers |
    awk '$3 ~ /^Conv/ { macs[$1] = $(NF-1); total += $(NF-1) }
         END { for (u in macs) if (macs[u] >= total / 200) print u ":2" }' | sort -n | paste -sd, -
}
t_para_pipe() {
  need co_up co_up_bench_para_pipe || return 1
  # Every run 30 frames, as co_up plan --tune's runs: over 10 frames a run's ratio to B alone
  # varied 19-42 % run to run on a busy host (docs/para_pipe.md, "Frames per run").
  local frames=30 pipeline_frames=30 reps=5 select_reps=3 tune=60 prof_reps=10 pareto=4 gn_size=224 iv3_size=299
  quick && { frames=3; pipeline_frames=6; reps=1; select_reps=1; tune=5; prof_reps=2; pareto=2; gn_size=96; iv3_size=96; }
  local gn_split iv3_split
  gn_split=$(para_pipe_split googlenet "${gn_size}") && iv3_split=$(para_pipe_split inception_v3 "${iv3_size}") || return 1
  method="co_up profile --graph=googlenet --units=branches --image-size=${gn_size} --split=<every Conv with >= 0.5 % of the MACs>:2 --processors=BL --repetitions=${prof_reps} (and --graph=inception_v3 --image-size=${iv3_size}), then co_up_bench_para_pipe --mappings=0 --frames=${frames} --pipeline-frames=${pipeline_frames} --reps=${reps} --pareto=${pareto} --select-reps=${select_reps} --tune=${tune} on both (plans from the profiles' own switch wake-up per edge; each plan measured ${reps}x alternating with B alone, medians; pipeline plans run ${pipeline_frames} frames, all admitted at once, as the model predicts them: a shorter run's throughput counts from the first frame's late end; overlap rows: the best latency plan run with --mode=overlap and the front's overlap point of highest throughput; for the target, the tuner (co_up plan --tune --tune-target=1.8x,1.3x) for ${tune} s from every front point predicted at >= 1.7x B alone's throughput and >= 1.2x lower latency, neighbours measured ${select_reps}x each interleaved with B alone (ratios within each batch), the best three confirmed ${reps}x more each beside B alone and the pick on those runs, then the pick run again for its row)"
  "${build}/co_up" profile --graph=googlenet --units=branches --image-size="${gn_size}" --split="${gn_split}" \
    --processors=BL --repetitions="${prof_reps}" --profile-out="${work}/googlenet_split${gn_size}_bl.json" >/dev/null &&
    "${build}/co_up" profile --graph=inception_v3 --units=branches --image-size="${iv3_size}" --split="${iv3_split}" \
      --processors=BL --repetitions="${prof_reps}" --profile-out="${work}/inception_v3_split${iv3_size}_bl.json" >/dev/null &&
    "${build}/co_up_bench_para_pipe" --mappings=0 --frames="${frames}" --pipeline-frames="${pipeline_frames}" --reps="${reps}" --pareto="${pareto}" \
      --select-reps="${select_reps}" --tune="${tune}" "${work}/googlenet_split${gn_size}_bl.json" "${work}/inception_v3_split${iv3_size}_bl.json"
}
# The DAG cost model's error at the sizes the plans use: each network profiled, then random
# mappings (region branches and split parts on random letters, or a 2-stage cut) measured in switch
# and pipeline mode. The profiles are the para_pipe table's (split layers) where the network has
# them; ViT-Tiny at 224 (patches of 16) and the Inception-v4-style fixture are ONNX models.
t_para_pipe_model() {
  need co_up co_up_bench_para_pipe || return 1
  # Pipeline runs 30 frames: a 10-frame run's throughput is 15-20 % above the steady state (the
  # first frame ends late), a 30-frame one's about 5 % (the model predicts either run).
  local mappings=100 frames=10 pipeline_frames=30 prof_reps=10 gn_size=224 iv3_size=299 vit=vit_tiny_224
  quick && { mappings=4; frames=3; pipeline_frames=4; prof_reps=2; gn_size=96; iv3_size=96; vit=vit_tiny_64; }
  if [[ ! -f ${fixtures}/${vit}.onnx ]]; then
    "${py}" "${root}/bench/export_transformers.py" "${fixtures}" "${vit}" >/dev/null 2>&1 || {
      echo "${fixtures}/${vit}.onnx missing and its export failed (bench/export_transformers.py needs python3-torch, -torchvision, -onnx)"; return 1; }
  fi
  local gn_split iv3_split
  gn_split=$(para_pipe_split googlenet "${gn_size}") && iv3_split=$(para_pipe_split inception_v3 "${iv3_size}") || return 1
  method="co_up profile --units=branches --processors=BL --repetitions=${prof_reps} of GoogLeNet ${gn_size} and Inception-v3 ${iv3_size} (--split as the para_pipe table), ${vit} (bench/export_transformers.py) and tests/fixtures/onnx/inception_v4_tiny.onnx (107x107); then co_up_bench_para_pipe --plans=0 --mappings=${mappings} --frames=${frames} --pipeline-frames=${pipeline_frames}: each mapping run once per mode (2 warm-up frames; the model simulates the frames measured), the reference (every unit on B, switch mode) run before every second mapping and after the last, the model's wake-up per edge fitted on the even mappings and reported on the odd ones, and the profile's own (what co_up plan uses) on all, absolute and as ratios to the nearest references (the host's drift cancels)"
  local profiles=() name
  "${build}/co_up" profile --graph=googlenet --units=branches --image-size="${gn_size}" --split="${gn_split}" \
    --processors=BL --repetitions="${prof_reps}" --profile-out="${work}/model_googlenet.json" >/dev/null || return 1
  "${build}/co_up" profile --graph=inception_v3 --units=branches --image-size="${iv3_size}" --split="${iv3_split}" \
    --processors=BL --repetitions="${prof_reps}" --profile-out="${work}/model_inception_v3.json" >/dev/null || return 1
  for name in "${fixtures}/${vit}.onnx" "${root}/tests/fixtures/onnx/inception_v4_tiny.onnx"; do
    "${build}/co_up" profile --model="${name}" --units=branches --processors=BL --repetitions="${prof_reps}" \
      --profile-out="${work}/model_$(basename "${name}" .onnx).json" >/dev/null || return 1
  done
  for name in googlenet inception_v3 "${vit}" inception_v4_tiny; do profiles+=("${work}/model_${name}.json"); done
  "${build}/co_up_bench_para_pipe" --plans=0 --mappings="${mappings}" --frames="${frames}" \
    --pipeline-frames="${pipeline_frames}" --runs="${work}/para_pipe_model_runs.csv" "${profiles[@]}"
}
t_exits() {
  need co_up || return 1
  local n=1000
  quick && n=100
  method="${n} Fashion-MNIST test images (tests/fixtures/map_and_conquer), released as fast as the run takes them; mean latency per frame from the report; one run per row"
  # The exit policy the training script chose on the validation split (not one picked here).
  local policy
  policy=$("${py}" -c 'import json,sys; print(json.load(open(sys.argv[1]))["policy"]["exit"])' \
    "${mnc}/accuracy.json") || return 1
  local rows=(
    "pipeline BLG multi_exit ${policy}"
    "pipeline BLG multi_exit none"
    "pipeline BLGG static -"
    "pipeline BBBB static -"
    "switch BLG multi_exit ${policy}"
    "switch BLG multi_exit none"
    "switch BLGG static -"
  )
  echo "| run | mode | mean ms | median ms | accuracy |"
  echo "|---|---|---|---|---|"
  local r m o model ex args text
  for r in "${rows[@]}"; do
    read -r m o model ex <<<"${r}"
    args=(--model="${mnc}/${model}.onnx" --order="${o}" --mode="${m}" --input="${mnc}/test_images.npy"
          --input-scale=1/255 --labels="${mnc}/test_labels.npy" --n="${n}")
    [[ ${model} == multi_exit ]] && args+=(--stage-plan="${mnc}/stage_plan.json" "--exit=${ex}")
    text=$("${build}/co_up" "${args[@]}" 2>&1) || { echo "${text}" >&2; return 1; }
    REPORT=${text} "${py}" - "${model} ${o}, --exit=${ex}" "${m}" <<'PY' || return 1
import os, re, sys
t = os.environ["REPORT"]
lat = re.search(r"latency median ([0-9.]+) ms \(mean ([0-9.]+)", t)
acc = re.search(r"accuracy ([0-9.]+ %)", t.split("overall")[-1])
if not lat or not acc:
    sys.exit("exits: no latency or accuracy in the report:\n" + t)
print(f"| {sys.argv[1]} | {sys.argv[2]} | {lat.group(2)} | {lat.group(1)} | {acc.group(1)} |")
PY
  done
}

# Writes the bench's output as markdown: lines of markdown tables as they are, runs of other
# lines in code fences.
to_markdown() {
  "${py}" -c '
import sys
fenced = False
for line in sys.stdin.read().splitlines():
    table = line.lstrip().startswith("|")
    if table and fenced: print("```"); fenced = False
    if not table and not fenced:
        if not line.strip(): print(); continue
        print("```"); fenced = True
    print(line)
if fenced: print("```")'
}

failed=()
index=${out}/index.md
{
  echo "# Measured tables, ${mode} mode"
  echo
  echo "Commit ${commit}, started $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc --all) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'))."
  echo "Command: \`bench/tables.sh $*\`. Estimated ${total} s on an idle host."
  echo
  echo "| table | status | seconds | uptime before | uptime after | goes to |"
  echo "|---|---|---:|---|---|---|"
} >"${index}"
for t in "${tables[@]}"; do
  IFS='|' read -r name qs fs inf where what <<<"${t}"
  selected "${name}" "${inf}" || continue
  est=${fs}; quick && est=${qs}
  up_before=$(uptime | sed 's/.*load average: //')
  echo "=== ${name} (estimate ${est} s; load ${up_before}): ${what}"
  method=""
  start=$(date +%s)
  started=$(date -u '+%Y-%m-%d %H:%M UTC')
  "t_${name}" >"${out}/raw/${name}.log" 2>&1 </dev/null
  rc=$?
  secs=$(($(date +%s) - start))
  up_after=$(uptime | sed 's/.*load average: //')
  status=ok
  ((rc == 0)) || { status="FAILED (exit ${rc})"; failed+=("${name}"); }
  {
    echo "## ${name}: ${what}"
    echo
    echo "Goes to: ${where}."
    echo
    echo "Measured ${started}, commit ${commit}, ${mode} mode, ${secs} s; load average (uptime) before ${up_before}, after ${up_after}."
    echo "Method: ${method:-see the bench header}."
    [[ ${status} == ok ]] || echo "**${status}**: the output below says why."
    echo
    to_markdown <"${out}/raw/${name}.log"
  } >"${out}/${name}.md"
  printf '| [%s](%s.md) | %s | %s | %s | %s | %s |\n' "${name}" "${name}" "${status}" "${secs}" \
    "${up_before}" "${up_after}" "${where}" >>"${index}"
  echo "    ${status}, ${secs} s -> ${out}/${name}.md"
done
{
  echo
  echo "Not regenerated by this run:"
  echo
  for n in "${not_regenerated[@]}"; do echo "- ${n}"; done
} >>"${index}"
echo "tables.sh: done $(date -u '+%H:%M UTC'), $(uptime | sed 's/.*load/load/'); index: ${index}"
quick || echo "tables.sh: into the documents with: bench/paste_tables.py ${out}"
if ((${#failed[@]})); then
  echo "tables.sh: failed: ${failed[*]} (see ${out}/raw/)" >&2
  exit 1
fi
