#include "cli/options.h"

#include <functional>
#include <map>

#include "api/run_options.h"
#include "core/error.h"
#include "core/option_value.h"

namespace co_up::cli {
namespace {

// core/option_value.h: the same words as SessionOptions.
int64_t parse_int(const std::string& name, const std::string& value, int64_t min, int64_t max) {
  return parse_int_option(name, value, min, max);
}

}  // namespace

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  using Setter = std::function<void(const std::string&)>;
  const std::map<std::string, Setter> with_value = {
      {"graph", [&](const std::string& v) { o.graph = v; }},
      {"workload", [&](const std::string& v) { o.workload = v; }},
      {"model", [&](const std::string& v) { o.model = v; }},
      {"n", [&](const std::string& v) { o.frames = parse_int("n", v, 1, int64_t{1} << 40); }},
      {"power-csv", [&](const std::string& v) { o.power_csv = v; o.power = true; }},
      {"trace-out", [&](const std::string& v) { o.trace_out = v; o.power = true; }},
      {"profile", [&](const std::string& v) {
         // `co_up plan --profile=FILE` names a layer profile; for runs it is the profiling level.
         if (o.command == "plan") {
           o.profile_file = v;
         } else {
           find_run_option("profile")->parse(o, v);
         }
       }},
      {"profile-out", [&](const std::string& v) { o.profile_out = v; }},
      {"image", [&](const std::string& v) { o.image = v; }},
      {"preprocess", [&](const std::string& v) { o.preprocess = v; }},
      {"labels", [&](const std::string& v) { o.labels = v; }},
      {"input-scale", [&](const std::string& v) { o.input_scale = v; }},
      {"input", [&](const std::string& v) { o.input = v; }},
      {"output", [&](const std::string& v) { o.output = v; }},
      {"export-partitions", [&](const std::string& v) { o.export_partitions = v; }},
      {"objective", [&](const std::string& v) { o.objective = v; }},  // plan; checked by plan_command.cpp
      {"min-fps", [&](const std::string& v) { o.min_fps = v; }},            // plan; checked there too
      {"max-latency-ms", [&](const std::string& v) { o.max_latency_ms = v; }},
      {"tune", [&](const std::string& v) { o.tune = v; }},  // plan; checked there
      {"tune-candidates", [&](const std::string& v) { o.tune_candidates = v; }},
      {"tune-target", [&](const std::string& v) { o.tune_target = v; }},
      {"exit-logits", [&](const std::string& v) { o.exit_logits = v; }},  // plan with a stage plan
      {"exit-labels", [&](const std::string& v) { o.exit_labels = v; }},
      {"stage-timing", [&](const std::string& v) {
         if (v != "layers" && v != "stages" && v != "runtime") {
           throw InputError("--stage-timing='" + v + "' must be 'layers' (the paper's Eq. 8), 'stages' (whole sub-graphs) "
                            "or 'runtime' (stages one after another plus measured dispatch and hand-offs)");
         }
         o.stage_timing = v;
       }},
      {"fit-orders", [&](const std::string& v) { o.fit_orders = v; }},  // stage plan, runtime timing
      {"top", [&](const std::string& v) { o.top = static_cast<int>(parse_int("top", v, 1, 1000)); }},
      {"repetitions", [&](const std::string& v) { o.repetitions = static_cast<int>(parse_int("repetitions", v, 1, 100000)); }},
      {"processors", [&](const std::string& v) { o.processors = v; }},
      {"out", [&](const std::string& v) { o.out_dir = v; }},
      {"coruns", [&](const std::string& v) { o.coruns = static_cast<int>(parse_int("coruns", v, 1, 10000)); }},
  };
  const std::map<std::string, bool*> flags = {
      {"help", &o.help},
      {"version", &o.version},
      {"list-layers", &o.list_layers},
      {"fit-compute-scale", &o.fit_compute_scale},  // stage plan, runtime timing
      {"profiled-compute", &o.profiled_compute},     // stage plan, runtime timing
      {"list-regions", &o.list_regions},
      {"list-plugins", &o.list_plugins},
      {"list-devices", &o.list_devices},
      {"list-frequencies", &o.list_frequencies},
      {"list-constants", &o.list_constants},
      {"restore-dvfs", &o.restore_dvfs},
      {"restart", &o.restart},
      {"verify", &o.verify},
  };

  size_t i = 0;
  if (!args.empty() && args[0].rfind("--", 0) != 0 && args[0] != "-h") {
    o.command = args[0];
    if (o.command != "profile" && o.command != "plan") {
      throw InputError("unknown command '" + o.command +
                       "' (commands: profile, plan; options start with --, see --help)");
    }
    i = 1;
  }
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h") {
      o.help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      throw InputError("unexpected argument '" + arg + "' (options look like --name=value)");
    }
    const auto eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    // A run option (api/run_options.h) unless the command line has a meaning of its own for it.
    const RunOption* run_option = with_value.count(name) != 0 ? nullptr : find_run_option(name);
    if (run_option != nullptr && run_option->scope == RunOptionScope::kApi) run_option = nullptr;
    if (auto flag = flags.find(name);
        flag != flags.end() || (run_option != nullptr && run_option->kind == RunOptionKind::kFlag)) {
      if (eq != std::string::npos) throw InputError("--" + name + " takes no value");
      if (run_option != nullptr) {
        run_option->parse(o, "1");
      } else {
        *flag->second = true;
      }
      continue;
    }
    auto setter = with_value.find(name);
    if (setter == with_value.end() && run_option == nullptr) {
      throw InputError("unknown option '--" + name + "' (see co_up --help)");
    }
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      throw InputError("--" + name + " needs a value (--" + name + "=...)");
    }
    // An empty value would silently mean the default (every layer on B, no --split, a seeded
    // input, no --frequency, ...): refuse it, for every option.
    if (value.empty()) {
      throw InputError("--" + name + "= has an empty value; give one (--" + name +
                       "=...) or leave the option out for its default (see --help)");
    }
    if (run_option != nullptr) {
      run_option->parse(o, value);
    } else {
      setter->second(value);
    }
  }
  return o;
}

std::string usage() {
  return R"(co_up — run one CNN across the processors of a heterogeneous SoC (ARM-CO-UP)

usage: co_up --graph=NAME [--order=BBLGGNNN] [--mode=pipeline|switch|overlap] [--n=FRAMES] [options]
       co_up --model=FILE.onnx [--input-shape=N,C,H,W] [--order=...] [options]
       co_up --graph=NAME | --model=FILE.onnx --list-layers | --list-regions | --list-constants
       co_up --workload=FILE.json | --workload='GRAPH:ORDER[:key=value...];...' [options]
       co_up --list-plugins | --list-devices | --list-frequencies
       co_up --restore-dvfs [--sysfs-root=DIR] [--state-dir=DIR]

network
  --graph=NAME          zoo network: alexnet, googlenet, mobilenet, resnet50, squeezenet
  --model=FILE.onnx     ONNX model (opsets 11-17) instead of a zoo network; its layer units are
                        found from its structure (a fan-in block is one unit)
  --list-regions        prints the fork/join regions whose branches are independent (inception
                        modules, attention projections, detector heads): one line each with the
                        branches' nodes, layer units and share of the MACs; then exits
  --input-shape=N,C,H,W the model's input shape (needed when the model's is dynamic)
  --units=layers|ops    layer units of --order: the paper's layers (default) or one per compute op
  --units=branches      as ops, but a branch's first op and each join (Concat/Add of branches)
                        are units of their own, so every branch of a region can go elsewhere
  --split=L:P[,L:P]     data parallelism: layer L's convolution or fully connected op becomes P
                        layers over slices of its output channels (joined by a Concat), so the
                        order string can give them to different processors (L as --list-layers
                        shows without --split; each split adds P-1 letters)
  --stages=P:R/R/..;I:R/R/..  width-partitioned stages of a multi-exit --model (outputs exit0,
                        exit1, ...): P fractions of each layer's channels per stage (a last-
                        stage 1: it computes the whole layer), I which stages' features later
                        stages reuse (rows = stages, entries = layers); each stage becomes one
                        layer unit (docs/map_and_conquer.md)
  --stage-plan=FILE     the same as JSON: {"P": [[...], ...], "I": [[...], ...]}
  --image-size=N        input height/width (default: the network's own; smaller runs faster)
  --data=DIR            weights from DIR/<constant>.npy (default: seeded random, --seed=N)
  --image=FILE          input image (PPM, PNG, JPEG), preprocessed as the network expects
  --preprocess=FILE.json  --image preprocessing: mean, std, layout RGB|BGR, resize, size
                        (default: the zoo network's own; torchvision ImageNet for --model)
  --labels=FILE         class names, one per line: prints the top-5 of the last frame; or
                        FILE.npy: one integer label per input of --input (accuracy report)
  --input=FILE.npy      input tensor (default: seeded random); a leading dimension of N frames
                        beyond the network's batch of 1 is N inputs, frame f reading input f % N
  --input-scale=F|A/B   multiply every --input value by F (1/255: 8-bit images to [0, 1])
  --exit=SPEC           early exits of a multi-exit network: softmax-max>=T, entropy<=T, one T per
                        exit before the final (softmax-max>=0.8,0.9), or none; T in [0,1]
  --exits=FILE.json     {"exits": [...]}: the model's outputs that are exits, in stage order
                        (default: <model>.exits.json, else outputs named exit0, exit1, ...)
  --output=FILE.npy     writes the network output of the last frame
  --export-partitions=DIR  writes each accelerator (N, npu/dsp) sub-graph of --order as
                        DIR/<graph>_<first>_<last>.onnx for the vendor's converter, then exits

workload (several networks at once, sharing the processors; README "Several networks")
  --workload=FILE.json  networks with their own order, frames or request rate and priority
  --workload=GROUPS     the same on the command line: resnet50:BBLL:frames=500;squeezenet:LLLL:rate=30
                        (keys name, frames, rate, priority, image_size, split, input, batch;
                        groups policy=oldest|priority|plan, mode=pipeline|switch, plan=a,b,b,
                        affinity=0|1)

mapping and execution (paper Table 2)
  --order=LETTERS       one processor letter per layer: B big CPU, L LITTLE CPU, G GPU, N NPU
  --mode=pipeline|switch|overlap  overlap frames across processors, or one frame at a time,
                        or a second frame only where a processor is done with the first
  --n=FRAMES            frames to run (default 10)
  --threads=N --cores=N                 big cluster: worker threads, cores used
  --threads_little=N --cores_little=N   LITTLE cluster: worker threads, cores used
  --host_gpu=B|L --host_npu=B|L         CPU cluster hosting the GPU / NPU thread
  --split-cluster=B:C   B keeps the first half of its cores, new CPU processor C the rest (two
                        stages on one cluster, never on the same core)
  --calibration=N       frames the int8 accelerator (npu-int8) runs in f32 to calibrate its int8
                        activations (default 4); then co_up reports int8 vs f32 accuracy
  --frequency=SPEC      DVFS levels: a-b-[g,h]-... per layer, {..} per sub-graph, {{l-b-g}}, min, max
                        (levels count from 1 = lowest frequency: --list-frequencies)
  --dvfs=strict|best-effort  a DVFS failure stops the run (default), or warns once and runs on
  --buffers=N           receive buffers between adjacent stages (default 3)
  --share-boundaries=0|1  switch and overlap modes: boundary tensors shared in place (1, default)
                        or copied at every boundary (0, as a pipeline does; for comparison)
  --npu_fallback=B|L|G  layers the NPU/DSP cannot run move to that processor, and the placement
                        used is printed (default: such a layer is an error naming it)

platform and plugins
  --platform=FILE       platform JSON (default: detected from this machine)
  --plugins=DIR         plugin directory (default: $CO_UP_PLUGIN_PATH, else plugins/ next to co_up,
                        else lib/co_up/plugins/ of an installed tree)
  --sysfs-root=DIR      stands in for /sys (cpufreq, devfreq), for simulated boards
  --state-dir=DIR       where runs keep the DVFS journal (original governors and frequencies while
                        levels are applied); default $CO_UP_STATE_DIR, else /var/lib/co_up when
                        writable, else $XDG_STATE_HOME/co_up or ~/.local/state/co_up
  --restore-dvfs        puts back the governors and frequencies that a co_up run killed with
                        levels applied (SIGKILL, a crash) left, from its journal, and removes it

profiling
  --power               per-layer time, power and energy (sensors of the platform, else estimated)
  --power-rate=HZ       sensor sampling rate (default 1000)
  --power-csv=FILE      every sensor sample as CSV (implies --power)
  --trace-out=FILE      Chrome trace JSON (Perfetto): layers per processor, power, frequency
  --gpio-tags=all|LIST  GPIO tag per layer on the platform's "gpio" lines (LIST: 0,3,5-7)
  --meter=DEVICE        external meter (pin,time_ms,power_mW lines, 115200 baud) read live, aligned
                        by the GPIO tag edges: per-layer power from it (needs --gpio-tags)
  --meter-log=FILE      the same from a log the meter wrote during the run, read after it
  --meter-window=MS     each meter sample averages this long (default 0: instantaneous)
  --profile=0|1|2       0: latency and throughput; 1: + per sub-graph; 2: + per layer
  --profile-out=FILE    every number as JSON (written even when interrupted)

layer profiles (co_up profile --graph=NAME|--model=FILE --profile-out=FILE [options])
  --profile-out=FILE    the layer profile to write: every layer on every processor (and DVFS level,
                        where the platform has tables and sysfs is writable), every transfer
  --processors=LETTERS  processors to profile (default: every one whose backend plugin loads)
  --repetitions=N       measured frames per run, medians stored (default 10, after 2 warm-up;
                        runs on npu-int8 warm up --calibration frames more)
  --restart             start afresh instead of resuming the steps FILE already has

planning (co_up plan --profile=FILE ...; FILE written by co_up profile)
  --profile=FILE        the layer profile to plan from (for runs --profile is the level above)
  --objective=throughput|latency|energy|pareto  what the printed mappings optimise (default
                        throughput; latency plans switch mode, the others pipeline mode; a
                        pareto front of a network with parallel regions has overlap plans too)
  --top=K               mappings printed (default 5), then single-processor and HEFT baselines
  --min-fps=X, --max-latency-ms=Y  only plans predicted to reach them (an error when none does)
                        (a network with parallel regions is planned with the DAG cost model and
                        the hybrid para/pipe search: regions' branches on several processors)
  --seed=N              seeds the NSGA-II search (same seed, same plan)
  --verify              runs each printed mapping (--n frames after 2 warm-up) and prints
                        predicted vs measured throughput and latency
  --tune=SECONDS        then measures neighbours of the printed plans on this machine (one unit,
                        branch or split layer moved, the mode changed; the model's best-predicted
                        first; runs of --n frames, at least 30, 3 runs each, interleaved with the
                        best single processor, which every ratio is against) for SECONDS and
                        prints the measured front (latency, throughput or pareto objective); the
                        last part of SECONDS measures the best 3 (a front: 3 spread over it) 5
                        more times each, beside the single processor, and picks on those runs alone
  --tune-candidates=N   measure at most N mappings (the start points count)
  --tune-target=FPS,MS  pareto: start from the model's whole front's points predicted nearest
                        >= FPS at <= MS (not only the printed ones), aim there
  --tune-target=Ax,Bx   the same as gains over the best single processor: A times its throughput
                        at B times lower latency (1.8x,1.3x), on ratios within each batch
  --stage-plan=FILE | --stages=...  with --model (multi-exit) and a --units=ops profile: plan
                        stage -> processor, DVFS levels and exit thresholds (Map-and-Conquer;
                        --objective=latency|energy|accuracy|pareto, default pareto)
  --exit-logits=FILE.npy  every exit's logits on a labelled validation set [frames,exits,classes]
  --exit-labels=FILE.npy  their labels (docs/map_and_conquer.md)
  --stage-timing=layers|stages  a stage's sub-layers start when their inputs are there (the
                        paper's Eq. 8, default) or whole stages wait for the stages they read
                        (how co_up's executor runs sub-graphs)
  --stage-timing=runtime [--fit-orders=ORDER,ORDER,..]  a frame's stages one after another plus
                        dispatch and hand-offs fitted from switch-mode runs of those orders on the
                        labelled set (--input/--labels; default: the rotations of one order and
                        every stage on its first letter) and each processor's measured /
                        profiled stage compute (>= 1); --profiled-compute: no such scale

several networks (co_up profile|plan --workload=FILE.json; docs/hetero2pipe_planning.md)
  co_up profile --workload=W --profile-out=P [--processors=..] [--repetitions=N] [--coruns=N]
                        each network's layers alone, then co-runs of two networks on two
                        processors: slowdown regression per processor pair, held-out error
  co_up plan --workload=W --profile=P [--out=DIR]  Hetero2Pipe (horizontal DP, contention
                        window, work stealing) beside alone-best and Band-style greedy:
                        predicted aggregate throughput; --out writes DIR/<planner>.json

exit status: 0 ok, 1 runtime failure, 2 bad usage or input, 128+signal when stopped by SIGINT
(130), SIGTERM (143), SIGHUP (129) or SIGQUIT (131): the profile is written and DVFS restored; a
second signal exits at once, still restoring DVFS
)";
}

}  // namespace co_up::cli
