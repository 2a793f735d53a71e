#include "api/run_options.h"

#include <algorithm>

#include "core/error.h"
#include "core/exit_policy.h"
#include "core/option_value.h"
#include "graph/onnx/onnx_importer.h"

namespace co_up {
namespace {

using K = RunOptionKind;
using S = RunOptionScope;

int to_int(int64_t x) { return static_cast<int>(x); }

// The parsers: the same checks and words wherever the option is given (core/option_value.h).
constexpr RunOption kOptions[] = {
    {"order", "order", K::kText, S::kBoth, "one processor letter per layer unit (empty: every layer on B)",
     [](RunValues& v, const std::string& s) { v.order = s; }},
    {"mode", "mode", K::kValue, S::kBoth,
     "pipeline (frames overlap), switch (one frame at a time) or overlap (a second frame where the first is done)",
     [](RunValues& v, const std::string& s) { v.mode = s; }},
    {"split", "split", K::kText, S::kBoth, "UNIT:PARTS[,...]: split a layer unit's op by output channels",
     [](RunValues& v, const std::string& s) { v.split = s; }},
    {"platform", "platform_file", K::kText, S::kBoth, "platform JSON (default: this machine)",
     [](RunValues& v, const std::string& s) { v.platform = s; }},
    {"plugins", "plugins_dir", K::kText, S::kBoth, "plugin directory",
     [](RunValues& v, const std::string& s) { v.plugins = s; }},
    {"sysfs-root", "sysfs_root", K::kText, S::kBoth, "stands in for /sys (cpufreq, devfreq)",
     [](RunValues& v, const std::string& s) { v.sysfs_root = s; }},
    {"frequency", "frequency", K::kText, S::kBoth, "DVFS levels per layer, sub-graph or cluster",
     [](RunValues& v, const std::string& s) { v.frequency = s; }},
    {"dvfs", "dvfs_policy", K::kValue, S::kBoth, "strict (a DVFS failure stops the run) or best-effort",
     [](RunValues& v, const std::string& s) {
       if (s != "strict" && s != "best-effort") {
         throw InputError("--dvfs='" + s + "' must be 'strict' or 'best-effort'");
       }
       v.dvfs = s;
     }},
    {"profile", "profile_level", K::kValue, S::kBoth, "0 frames; 1 + sub-graphs and transfers; 2 + layers",
     [](RunValues& v, const std::string& s) { v.profile = to_int(parse_int_option("profile", s, 0, 2)); }},
    {"buffers", "buffers", K::kValue, S::kBoth, "receive buffers between adjacent stages",
     [](RunValues& v, const std::string& s) {
       v.buffers = static_cast<uint32_t>(parse_int_option("buffers", s, 1, 64));
     }},
    {"share-boundaries", "share_boundaries", K::kValue, S::kBoth,
     "switch and overlap modes: 1 shares boundary tensors in place (default), 0 copies them",
     [](RunValues& v, const std::string& s) { v.share_boundaries = parse_int_option("share-boundaries", s, 0, 1) != 0; }},
    {"threads", "threads", K::kValue, S::kBoth, "big cluster: worker threads",
     [](RunValues& v, const std::string& s) { v.threads = to_int(parse_int_option("threads", s, 1, 1024)); }},
    {"threads_little", "threads_little", K::kValue, S::kBoth, "LITTLE cluster: worker threads",
     [](RunValues& v, const std::string& s) {
       v.threads_little = to_int(parse_int_option("threads_little", s, 1, 1024));
     }},
    {"cores", "cores", K::kValue, S::kBoth, "big cluster: cores used",
     [](RunValues& v, const std::string& s) { v.cores = to_int(parse_int_option("cores", s, 1, 1024)); }},
    {"cores_little", "cores_little", K::kValue, S::kBoth, "LITTLE cluster: cores used",
     [](RunValues& v, const std::string& s) {
       v.cores_little = to_int(parse_int_option("cores_little", s, 1, 1024));
     }},
    {"image-size", "image_size", K::kValue, S::kBoth, "zoo networks: input height/width",
     [](RunValues& v, const std::string& s) { v.image_size = parse_int_option("image-size", s, 1, 4096); }},
    {"seed", "seed", K::kValue, S::kBoth, "generated weights and inputs",
     [](RunValues& v, const std::string& s) {
       v.seed = static_cast<uint64_t>(parse_int_option("seed", s, 0, INT64_MAX));
     }},
    {"data", "data_dir", K::kText, S::kBoth, "zoo networks: weights from DIR/<constant>.npy",
     [](RunValues& v, const std::string& s) { v.data = s; }},
    {"units", "units", K::kValue, S::kBoth, "layer units of the order: layers, ops or branches",
     [](RunValues& v, const std::string& s) {
       if (s != "layers" && s != "ops" && s != "branches") {
         throw InputError("--units='" + s + "' must be 'layers', 'ops' or 'branches'");
       }
       v.units = s;
     }},
    {"input-shape", "input_shape", K::kValue, S::kBoth, "ONNX models: N,C,H,W (for dynamic dimensions)",
     [](RunValues& v, const std::string& s) { v.input_shape = graph::parse_input_shape(s); }},
    {"queue-capacity", "queue_capacity", K::kValue, S::kApi, "streaming: frames in flight at most",
     [](RunValues& v, const std::string& s) {
       v.queue_capacity = static_cast<uint32_t>(parse_int_option("queue-capacity", s, 1, 1 << 20));
     }},
    {"host_gpu", "host_gpu", K::kValue, S::kBoth, "CPU cluster hosting the GPU thread (B|L)",
     [](RunValues& v, const std::string& s) { v.host_gpu = parse_cluster_option("host_gpu", s); }},
    {"host_npu", "host_npu", K::kValue, S::kBoth, "CPU cluster hosting the NPU thread (B|L)",
     [](RunValues& v, const std::string& s) { v.host_npu = parse_cluster_option("host_npu", s); }},
    {"split-cluster", "split_cluster", K::kValue, S::kBoth, "B:C: processor C takes half of B's cores",
     [](RunValues& v, const std::string& s) { v.split_cluster = parse_cluster_split(s, "--split-cluster"); }},
    {"npu_fallback", "npu_fallback", K::kValue, S::kBoth, "where layers the NPU declines go (B|L|G)",
     [](RunValues& v, const std::string& s) {
       v.npu_fallback = parse_processor_letter_option("npu_fallback", s);
     }},
    {"calibration", "calibration", K::kValue, S::kBoth, "frames npu-int8 runs in f32 to calibrate",
     [](RunValues& v, const std::string& s) { v.calibration = parse_int_option("calibration", s, 1, 1000000); }},
    {"exit", "exit", K::kValue, S::kBoth, "early exits: softmax-max>=T, entropy<=T or none",
     [](RunValues& v, const std::string& s) {
       ExitPolicy::parse(s);  // checked now
       v.exit = s;
     }},
    {"exits", "exits", K::kText, S::kBoth, "FILE.json: the model's exits in stage order",
     [](RunValues& v, const std::string& s) { v.exits = s; }},
    {"stages", "stages", K::kText, S::kBoth, "width-partitioned stages of a multi-exit model",
     [](RunValues& v, const std::string& s) { v.stages = s; }},
    {"stage-plan", "stage_plan", K::kText, S::kBoth, "the same as FILE.json",
     [](RunValues& v, const std::string& s) { v.stage_plan = s; }},
    {"state-dir", "state_dir", K::kText, S::kBoth, "where runs keep the DVFS journal",
     [](RunValues& v, const std::string& s) { v.state_dir = s; }},
    {"gpio-tags", "gpio_tags", K::kText, S::kBoth, "GPIO tag per layer: all or a list (0,3,5-7)",
     [](RunValues& v, const std::string& s) { v.gpio_tags = s; }},
    {"power", "power", K::kFlag, S::kBoth, "per-layer time, power and energy",
     [](RunValues& v, const std::string& s) {
       if (s == "1" || s == "true" || s.empty()) {
         v.power = true;
       } else if (s == "0" || s == "false") {
         v.power = false;
       } else {
         throw InputError("--power='" + s + "' must be 1 or 0");
       }
     }},
    {"power-rate", "power_rate", K::kValue, S::kBoth, "sensor sampling rate in Hz",
     [](RunValues& v, const std::string& s) {
       v.power_rate = static_cast<double>(parse_int_option("power-rate", s, 1, 100000));
     }},
    // The meter's alignment table is printed by the command line; nothing of it reaches a
    // Session's profile, so the API does not open the device.
    {"meter", "meter", K::kText, S::kCommandLine, "external meter device read live (implies --power)",
     [](RunValues& v, const std::string& s) {
       v.meter = s;
       v.power = true;
     }},
    {"meter-log", "meter_log", K::kText, S::kCommandLine, "the meter's saved log (implies --power)",
     [](RunValues& v, const std::string& s) {
       v.meter_log = s;
       v.power = true;
     }},
    {"meter-window", "meter_window", K::kValue, S::kCommandLine, "each meter sample averages this many ms",
     [](RunValues& v, const std::string& s) { v.meter_window = parse_milliseconds_option("meter-window", s, 10000); }},
};

}  // namespace

std::span<const RunOption> run_options() { return kOptions; }

const RunOption* find_run_option(std::string_view name) {
  const auto it = std::find_if(std::begin(kOptions), std::end(kOptions),
                               [&](const RunOption& o) { return o.name == name; });
  return it == std::end(kOptions) ? nullptr : &*it;
}

}  // namespace co_up
