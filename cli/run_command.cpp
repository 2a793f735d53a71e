#include "cli/run_command.h"

#include <csignal>
#include <exception>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "api/session_run.h"
#include "api/session_setup.h"
#include "cli/export_partitions.h"
#include "cli/labelled_inputs.h"
#include "cli/listings.h"
#include "co_up/co_up.hpp"
#include "core/error.h"
#include "core/io/output_file.h"
#include "core/network.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/image.h"
#include "graph/npy.h"
#include "graph/onnx/preprocess.h"
#include "graph/parallel_regions.h"
#include "graph/zoo/zoo.h"
#include "profiler/power_trace.h"
#include "profiler/report.h"

namespace co_up::cli {
namespace {

// The files a run writes, checked before anything is set up (core/io/output_file.h): a path that
// cannot be written fails now, not after the frames, and nothing existing is touched until the
// run's results replace it.
struct RunOutputs {
  std::optional<io::OutputFile> profile, trace, power_csv, output;
};

RunOutputs check_outputs(const Options& o) {
  RunOutputs outputs;
  struct Named {
    std::optional<io::OutputFile>& slot;
    const std::string& path;
    const char* flag;
  };
  const Named named[] = {{outputs.profile, o.profile_out, "--profile-out"},
                         {outputs.trace, o.trace_out, "--trace-out"},
                         {outputs.power_csv, o.power_csv, "--power-csv"},
                         {outputs.output, o.output, "--output"}};
  for (size_t i = 0; i < std::size(named); ++i) {
    if (named[i].path.empty()) continue;
    named[i].slot = io::OutputFile::check(named[i].path, named[i].flag);
    for (size_t k = 0; k < i; ++k) {
      const std::optional<io::OutputFile>& other = named[k].slot;
      if (!other || other->is_device()) continue;  // two outputs may share /dev/null
      std::error_code ec;
      if (other->target() == named[i].slot->target() ||
          std::filesystem::equivalent(other->target(), named[i].slot->target(), ec)) {
        throw InputError(std::string(named[i].flag) + " and " + named[k].flag + " both name '" +
                         named[i].path + "'; give each output its own file");
      }
    }
  }
  return outputs;
}

std::vector<std::vector<float>> load_input(const Options& o, const graph::Graph& g) {
  if (!o.input.empty() && !o.image.empty()) {
    throw InputError("--input and --image both given; use one");
  }
  if (!o.preprocess.empty() && o.image.empty()) {
    throw InputError("--preprocess applies to --image; give the image too");
  }
  const graph::TensorDesc& desc = g.tensor(g.inputs().at(0)).desc;
  if (!o.image.empty() && desc.shape.size() != 4) {
    throw InputError("--image needs an NCHW input, but " + g.name() + " takes " + desc.shape_string());
  }
  if (!o.input.empty()) {
    graph::NpyArray array = graph::read_npy(o.input);
    if (array.shape != desc.shape) {
      graph::TensorDesc got;
      got.shape = array.shape;
      throw InputError("--input '" + o.input + "' has shape " + got.shape_string() + " but " +
                       g.name() + " needs " + desc.shape_string());
    }
    return {std::move(array.data)};
  }
  if (!o.image.empty()) {
    const graph::ZooEntry* entry = graph::find_zoo_entry(o.graph);
    graph::ImagePreprocess pre;
    pre.width = static_cast<int>(desc.shape.at(3));
    pre.height = static_cast<int>(desc.shape.at(2));
    if (entry != nullptr) {
      pre.bgr = entry->bgr;
      pre.mean = {entry->mean[0], entry->mean[1], entry->mean[2]};
      pre.std = {entry->std[0], entry->std[1], entry->std[2]};
    }
    if (!o.preprocess.empty()) pre = graph::read_preprocess_json(o.preprocess, pre);
    std::vector<float> image = graph::load_image_nchw(o.image, pre);
    const auto batch = static_cast<size_t>(desc.shape.at(0));
    std::vector<float> input;
    for (size_t b = 0; b < batch; ++b) input.insert(input.end(), image.begin(), image.end());
    return {std::move(input)};
  }
  return seeded_inputs(g, o.seed);
}

// --labels, one per class of the network's output: fewer would name the wrong classes or none.
std::vector<std::string> read_class_labels(const std::string& path, const graph::TensorDesc& scores) {
  if (path.empty()) return {};
  std::vector<std::string> labels = graph::read_labels(path);
  const int64_t classes = scores.shape.empty() ? 1 : scores.shape.back();
  if (static_cast<int64_t>(labels.size()) < classes) {
    throw InputError("--labels '" + path + "' has " + std::to_string(labels.size()) +
                     " labels but the network scores " + std::to_string(classes) +
                     " classes; give one label per class, line i naming class i");
  }
  return labels;
}

void print_top5(const std::vector<std::string>& labels, const std::vector<float>& scores) {
  std::cout << "top-5 of the last frame:\n";
  for (const graph::Prediction& p : graph::top_k(scores, 5)) {
    std::cout << "  " << std::fixed << std::setprecision(4) << p.score << "  [" << p.index << "] "
              << (static_cast<size_t>(p.index) < labels.size() ? labels[p.index] : "") << "\n";
  }
}

// The Session's options: the command line's run options, the same fields (api/run_options.h).
SessionOptions session_options(const Options& o) {
  SessionOptions options;
  static_cast<RunValues&>(SessionAccess::values(options)) = o;
  return options;
}

NetworkSpec network_spec(const Options& o) {
  NetworkSpec spec{o.graph, o.units, o.image_size, o.seed, o.data};
  spec.split = o.split;
  spec.stages = o.stages;
  spec.stage_plan_file = o.stage_plan;
  spec.model = o.model;
  spec.input_shape = o.input_shape;
  spec.exits_file = o.exits;
  return spec;
}

// --list-layers, --list-constants, --list-regions, --export-partitions: the network, no run.
int describe_network(const Options& o, const Platform& platform) {
  const graph::Graph g = build_network(network_spec(o));
  if (o.list_layers || o.list_constants) {
    list_layers(g, o.list_constants);
    return 0;
  }
  if (o.list_regions) {
    const std::vector<graph::ParallelRegion> regions = graph::find_parallel_regions(g);
    for (const std::string& line : graph::describe_parallel_regions(g, regions)) std::cout << line << "\n";
    std::cout << regions.size() << " parallel regions\n";
    return 0;
  }
  // The step before the vendor's converter.
  return run_export_partitions(g, o.order.empty() ? std::string(g.layer_count(), 'B') : o.order,
                               platform, o.export_partitions, std::cout);
}

}  // namespace

int run_network(const Options& o, StopSignal& stop) {
  const RunOutputs outputs = check_outputs(o);
  // Listings read the plugins and the platform as the Session would (api/session_setup.h); for a
  // run the Session opens them itself.
  const std::filesystem::path plugin_dir = api::plugin_directory(o.plugins);
  const Platform platform = api::open_platform(
      o.platform, o.sysfs_root,
      {o.threads, o.cores, o.threads_little, o.cores_little, o.host_gpu, o.host_npu, o.split_cluster});
  if (o.list_plugins || o.list_devices) {
    const PluginRegistry registry = PluginRegistry::load_directory(plugin_dir);
    if (o.list_plugins) list_plugins(registry);
    if (o.list_devices) list_devices(platform, registry);
    return 0;
  }
  if (o.list_frequencies) {
    list_frequencies(platform);
    return 0;
  }
  if (o.graph.empty() && o.model.empty()) {
    throw InputError("no network given (use --graph=NAME or --model=FILE.onnx; see --help)");
  }
  if (o.list_layers || o.list_constants || o.list_regions || !o.export_partitions.empty()) {
    return describe_network(o, platform);
  }

  // Graph, plugins, --npu_fallback, partition, DVFS levels, GPIO tags, meter, sensors, devices:
  // all the Session's. Its destructor restores the levels on every path out of here.
  Session session = SessionAccess::open(network_spec(o), session_options(o));
  const graph::Graph& g = api::session_graph(session);

  RunRequest request;
  request.frames = static_cast<uint64_t>(o.frames);
  // A labelled input set: frame f reads input f % N (load_input refuses the option mixes).
  std::optional<InputSets> batch;
  if (o.image.empty() && o.preprocess.empty()) batch = read_input_batch(o.input, g);
  if (batch) {
    request.input_sets = std::move(*batch);
  } else {
    request.input_sets.push_back(load_input(o, g));
  }
  if (!o.input_scale.empty()) {
    if (o.input.empty()) throw InputError("--input-scale scales --input=FILE.npy; give --input");
    scale_inputs(request.input_sets, parse_input_scale(o.input_scale));
  }
  // Fail on unreadable inputs now, not after a long run (outputs were checked at the start).
  const uint32_t result_index = result_output(g);  // a multi-exit network answers with its last
  const graph::TensorDesc& out_desc = g.tensor(g.outputs().at(result_index)).desc;
  const bool npy_labels = is_npy_labels(o.labels);
  const std::vector<std::string> labels =
      npy_labels ? std::vector<std::string>{} : read_class_labels(o.labels, out_desc);
  std::optional<LabelCheck> label_check;
  if (npy_labels) {
    const int64_t classes = out_desc.shape.empty() ? 1 : out_desc.shape.back();
    label_check.emplace(read_npy_labels(o.labels, request.input_sets.size(), classes), result_index);
    request.on_output = [&label_check](uint64_t frame, uint32_t output, std::span<const float> values) {
      label_check->on_output(frame, output, values);
    };
  }

  // A signal during setup was recorded; on_stop then requests the stop at once and the run
  // returns without frames, so the report and the profile still say what happened.
  stop.on_stop([&session] { api::request_stop(session); });
  api::FramesRun run;
  try {
    run = api::run_frames(session, request, !o.input.empty() || !o.image.empty());
  } catch (...) {
    stop.on_stop(nullptr);
    throw;
  }
  stop.on_stop(nullptr);
  RunResult& result = run.result;
  if (label_check) result.profile.frame_correct = label_check->correct(result.profile.frames_completed);
  if (run.late_error) {
    if (outputs.profile) profiler::write_json(*outputs.profile, result.profile);
    std::rethrow_exception(run.late_error);
  }

  profiler::print_report(std::cout, result.profile);
  if (!result.profile.interrupted) api::print_int8_report(session, std::cout, result);
  if (o.power) {
    const api::PowerReport power = api::report_power(session, std::cout, std::cerr, result.profile);
    if (outputs.power_csv) profiler::write_power_csv(*outputs.power_csv, *power.samples);
    if (outputs.trace) {
      profiler::write_chrome_trace(*outputs.trace, power.spans, *power.samples, result.profile.dvfs,
                                   power.layer_power, power.meter_samples);
    }
  }
  if (outputs.profile) profiler::write_json(*outputs.profile, result.profile);
  if (result.profile.frames_completed > 0) {
    const std::vector<float>& answer = result.last_outputs.at(result_index);
    if (outputs.output) graph::write_npy(*outputs.output, out_desc.shape, answer);
    if ((!o.labels.empty() && !npy_labels) || !o.image.empty()) print_top5(labels, answer);
  }
  if (result.profile.interrupted) {
    std::cerr << "co_up: interrupted after " << result.profile.frames_completed << " of "
              << result.profile.frames_requested << " frames; profile written\n";
    return 128 + (stop.signal_number() != 0 ? stop.signal_number() : SIGINT);
  }
  return 0;
}

}  // namespace co_up::cli
