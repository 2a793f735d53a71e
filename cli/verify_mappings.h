// `co_up plan --verify`: runs planned mappings with the real Executor and sets the cost model's
// predictions (planner/cost_model.h) beside what they measure.
//
// Each mapping gets its own Executor (its order and mode), `warmup_frames` first (not measured:
// first-touch memory, pipeline fill), then `frames`. Measured throughput is the steady state
// (completions after the first frame, profiler::summarize), latency the median frame latency.
// DVFS levels of a mapping are set through SysfsDvfs before its run and restored after it.
// Relative error = (predicted - measured) / measured; the mode's own objective (pipeline:
// throughput, switch: latency) is the one the summary line's median is taken over.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "cli/options.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/graph.h"
#include "planner/cost_model.h"
#include "planner/search.h"
#include "power/sysfs_dvfs.h"

namespace co_up::cli {

struct VerifySettings {
  int frames = 10;
  int warmup_frames = 2;
  // Letters whose backend calibrates on its first frames (npu-int8, set_calibration_frames in
  // core/calibration.h): a mapping using one warms up that many frames more.
  std::string calibrating;
  int calibration_frames = 0;
};

struct Measurement {
  double throughput_fps = 0;
  double latency_ms = 0;  // median over frames
};

struct VerifiedMapping {
  planner::Candidate candidate;
  Measurement measured;
  double throughput_error = 0;  // relative, signed; NaN when nothing was measured
  double latency_error = 0;
  std::string failure;  // non-empty: the run failed (the numbers are 0)
};

// One run of `order` in `mode` (after warm-up frames); throws as the Executor does.
Measurement measure_mapping(const graph::Graph& graph, const Platform& platform,
                            const PluginRegistry& plugins, const std::string& order,
                            Mode mode, const VerifySettings& settings);

// Runs every candidate and prints the table to `out`. A candidate that fails to run is reported
// (its failure) and the others still run. `dvfs` may be null when no candidate sets levels.
std::vector<VerifiedMapping> verify_mappings(const graph::Graph& graph, const Platform& platform,
                                             const PluginRegistry& plugins, power::SysfsDvfs* dvfs,
                                             const planner::CostModel& model,
                                             const std::vector<planner::Candidate>& candidates,
                                             const VerifySettings& settings, std::ostream& out);

// The same for `co_up plan --verify`: builds the profile's network (graph or model, units, image
// size; weights from --seed/--data), the platform (--platform or this machine, with the core
// overrides) and the plugins (--plugins) from `options`; frames from --n (default 10).
std::vector<VerifiedMapping> verify_mappings(const Options& options, const planner::CostModel& model,
                                             const std::vector<planner::Candidate>& candidates,
                                             std::ostream& out);

// What --verify and --tune measure with, built from `options` as verify_mappings(options, ..)
// builds it (a note on `out` when the platform is not the profile's).
struct MeasuringSetup {
  graph::Graph graph;
  Platform platform;
  PluginRegistry plugins;
  std::unique_ptr<power::SysfsDvfs> dvfs;  // restores governors on every path out
  VerifySettings settings;
};
std::unique_ptr<MeasuringSetup> measuring_setup(const Options& options, const planner::CostModel& model,
                                                std::ostream& out);
// One run of `mapping` with its DVFS levels set (restored after); throws what failed.
Measurement measure_mapping(MeasuringSetup& setup, const planner::CostModel& model, const Mapping& mapping);

// Median of |error| over the candidates' own objectives (see above); 0 without any.
double median_abs_error(const std::vector<VerifiedMapping>& verified);

}  // namespace co_up::cli
