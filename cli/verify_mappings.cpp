#include "cli/verify_mappings.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/calibration.h"
#include "core/error.h"
#include "cli/layer_profiler.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/placement.h"
#include "power/dvfs_journal.h"
#include "planner/relative_error.h"
#include "profiler/report.h"

namespace co_up::cli {
namespace {

using planner::relative_error;

// "-" for NaN: no usable measurement.
std::string percent(double fraction) {
  if (std::isnan(fraction)) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%+.1f%%", 100.0 * fraction);
  return buffer;
}

std::string fixed(double value, int width, int precision = 2) {
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%*.*f", width, precision, value);
  return buffer;
}

std::string pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

// Sets the mapping's DVFS levels (per domain of the model); returns "" or what failed.
std::string apply_levels(power::SysfsDvfs* dvfs, const planner::CostModel& model,
                         const Mapping& mapping) {
  for (size_t d = 0; d < mapping.levels.size() && d < model.domains().size(); ++d) {
    const int level = mapping.levels[d];
    if (level <= 0) continue;
    const std::string& domain = model.domains()[d];
    if (dvfs == nullptr) return "no DVFS controller to set '" + domain + "' to level " + std::to_string(level);
    if (std::string e = dvfs->set_level(domain.at(0), level - 1); !e.empty()) return e;
  }
  return {};
}

}  // namespace

Measurement measure_mapping(const graph::Graph& graph, const Platform& platform,
                            const PluginRegistry& plugins, const std::string& order,
                            Mode mode, const VerifySettings& settings) {
  ExecutorOptions options;
  options.mode = mode;
  Executor executor(Placement::create(graph, order, platform, plugins), options);
  RunRequest request;
  request.input_sets.push_back(seeded_inputs(graph, 1));
  const bool calibrates = order.find_first_of(settings.calibrating) != std::string::npos;
  const int warmup = settings.warmup_frames + (calibrates ? settings.calibration_frames : 0);
  if (warmup > 0) {
    request.frames = static_cast<uint64_t>(warmup);
    executor.run(request);
  }
  request.frames = static_cast<uint64_t>(std::max(settings.frames, 2));
  const RunResult result = executor.run(request);
  if (result.profile.frames_completed != request.frames) {
    throw RuntimeError("run of order '" + order + "' completed " +
                       std::to_string(result.profile.frames_completed) + " of " +
                       std::to_string(request.frames) + " frames");
  }
  const profiler::Summary s = profiler::summarize(result.profile);
  return {s.throughput_fps, s.latency_median_ms};
}

std::vector<VerifiedMapping> verify_mappings(const graph::Graph& graph, const Platform& platform,
                                             const PluginRegistry& plugins, power::SysfsDvfs* dvfs,
                                             const planner::CostModel& model,
                                             const std::vector<planner::Candidate>& candidates,
                                             const VerifySettings& settings, std::ostream& out) {
  out << "verify: " << candidates.size() << " mapping" << (candidates.size() == 1 ? "" : "s")
      << " run on platform " << platform.name << ", " << std::max(settings.frames, 2)
      << " frames each after " << settings.warmup_frames << " warm-up"
      << (settings.calibrating.empty() || settings.calibration_frames == 0
              ? std::string()
              : " (" + std::to_string(settings.warmup_frames + settings.calibration_frames) +
                    " where npu-int8 calibrates: " + settings.calibrating + ")")
      << "\n";
  out << "   #  " << pad("order", std::max<size_t>(model.layer_count(), 5) + 2)
      << "mode      throughput fps: predicted measured  error    latency ms: predicted measured  error\n";
  std::vector<VerifiedMapping> verified;
  for (size_t i = 0; i < candidates.size(); ++i) {
    VerifiedMapping v;
    v.candidate = candidates[i];
    const Mapping& m = v.candidate.mapping;
    try {
      v.failure = apply_levels(dvfs, model, m);
      if (v.failure.empty()) {
        v.measured = measure_mapping(graph, platform, plugins, m.order, m.mode, settings);
      }
    } catch (const std::exception& e) {
      v.failure = e.what();
    }
    if (dvfs != nullptr) {
      for (const std::string& e : dvfs->restore()) v.failure += (v.failure.empty() ? "" : "; ") + e;
    }
    const planner::Prediction& p = v.candidate.prediction;
    out << (i + 1 < 10 ? "   " : "  ") << i + 1 << "  "
        << pad(m.order, std::max<size_t>(model.layer_count(), 5) + 2)
        << pad(mode_name(m.mode), 10);
    if (!v.failure.empty()) {
      out << "failed: " << v.failure << "\n";
    } else {
      v.throughput_error = relative_error(p.throughput_fps, v.measured.throughput_fps);
      v.latency_error = relative_error(p.latency_ms, v.measured.latency_ms);
      out << "                " << fixed(p.throughput_fps, 9) << fixed(v.measured.throughput_fps, 9)
          << "  " << pad(percent(v.throughput_error), 7) << "              "
          << fixed(p.latency_ms, 9) << fixed(v.measured.latency_ms, 9) << "  "
          << percent(v.latency_error) << "\n";
    }
    verified.push_back(std::move(v));
  }
  out << "median |error| of each mapping's objective (pipeline: throughput, switch: latency, overlap: both): "
      << fixed(100.0 * median_abs_error(verified), 0, 1) << "%"
      << "  (without parallel regions, the chain model predicts pipeline latency without queueing: a lower bound)\n";
  return verified;
}

std::unique_ptr<MeasuringSetup> measuring_setup(const Options& o, const planner::CostModel& model, std::ostream& out) {
  const planner::ProfileNetwork& net = model.profile().network;
  NetworkSpec spec{net.graph, net.units, net.image_size, o.seed, o.data};
  spec.split = net.split;
  spec.model = net.model;
  spec.input_shape = o.input_shape;
  graph::Graph graph = build_network(spec);
  if (graph.layer_count() != model.layer_count()) {
    throw InputError("the profile's network has " + std::to_string(model.layer_count()) +
                     " layers, but building it here gives " + std::to_string(graph.layer_count()) +
                     " (was it profiled with other --units or another model file?)");
  }
  const std::filesystem::path plugin_dir =
      o.plugins.empty() ? PluginRegistry::default_directory() : std::filesystem::path(o.plugins);
  Platform platform = o.platform.empty() ? detect_host_platform(o.sysfs_root) : load_platform(o.platform);
  apply_overrides(platform, {o.threads, o.cores, o.threads_little, o.cores_little, o.host_gpu,
                             o.host_npu, o.split_cluster});
  check_cores_exist(platform);
  if (platform.name != model.profile().platform_name) {
    out << "verify: note: measuring on platform '" << platform.name << "', the profile is of '"
        << model.profile().platform_name << "'\n";
  }
  auto setup = std::make_unique<MeasuringSetup>(MeasuringSetup{
      std::move(graph), std::move(platform), PluginRegistry::load_directory(plugin_dir), nullptr, {}});
  // After the platform has its place: the controller keeps what it is given.
  setup->dvfs = std::make_unique<power::SysfsDvfs>(setup->platform, o.sysfs_root, power::resolve_state_dir(o.state_dir));
  setup->settings.frames = static_cast<int>(std::min<int64_t>(o.frames, 1 << 20));
  setup->settings.calibration_frames = static_cast<int>(o.calibration);
  setup->settings.calibrating =
      set_calibration_frames(setup->platform, setup->plugins, setup->settings.calibration_frames);
  return setup;
}

Measurement measure_mapping(MeasuringSetup& setup, const planner::CostModel& model, const Mapping& mapping) {
  std::string failure = apply_levels(setup.dvfs.get(), model, mapping);
  Measurement m;
  try {
    if (failure.empty()) {
      m = measure_mapping(setup.graph, setup.platform, setup.plugins, mapping.order, mapping.mode, setup.settings);
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  for (const std::string& e : setup.dvfs->restore()) failure += (failure.empty() ? "" : "; ") + e;
  if (!failure.empty()) throw RuntimeError(failure);
  return m;
}

std::vector<VerifiedMapping> verify_mappings(const Options& o, const planner::CostModel& model,
                                             const std::vector<planner::Candidate>& candidates,
                                             std::ostream& out) {
  const std::unique_ptr<MeasuringSetup> setup = measuring_setup(o, model, out);
  return verify_mappings(setup->graph, setup->platform, setup->plugins, setup->dvfs.get(), model, candidates,
                         setup->settings, out);
}

double median_abs_error(const std::vector<VerifiedMapping>& verified) {
  std::vector<double> errors;
  for (const VerifiedMapping& v : verified) {
    if (!v.failure.empty()) continue;
    const Mode mode = v.candidate.mapping.mode;
    // Overlap mode is planned for both (a spread plan's latency at a higher throughput).
    if (mode != Mode::kSwitch && !std::isnan(v.throughput_error)) errors.push_back(std::abs(v.throughput_error));
    if (mode != Mode::kPipeline && !std::isnan(v.latency_error)) errors.push_back(std::abs(v.latency_error));
  }
  return profiler::median(std::move(errors));
}

}  // namespace co_up::cli
