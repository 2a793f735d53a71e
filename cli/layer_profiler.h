// LayerProfiler: measures what the planner's cost model needs (planner/layer_profile.h) with the
// real Executor — the same sub-graph compilation, threads, receivers and transfers a mapping
// runs with, so the numbers are the runtime's own, not a benchmark's.
//
//   layers      order "XXXX" (one sub-graph on X), switch mode, profile level 2: per-layer
//               median and MAD over the measured frames from kLayer events; the receive side of
//               the network input (sub-graph 0's kTransfer with peer 0) is input_us. An
//               accelerator (kind npu/dsp) runs a sub-graph as one node and reports one time for
//               it, so there every layer is its own sub-graph (SubGraphCuts::kEveryLayer): its
//               time is that layer compiled and run alone, and what moves between two of them is
//               timed as transfer, as between any two sub-graphs. A layer the accelerator declines
//               (capability query, as --npu_fallback asks) runs on its host CPU instead, is not
//               timed, and is reported in LayerMeasurement::times.declined.
//               Processors that calibrate on their first frames (MeasureSettings::calibrating)
//               get that many more warm-up frames, so that no calibration frame is measured.
//   transfers   order "XYXY…" in switch mode puts an X->Y boundary after every even layer and
//               Y->X after every odd one; its shift "YXYX…" the rest: two runs per unordered
//               pair measure every boundary in both directions. Per boundary i (layer i on the
//               sender, i+1 on the receiver), from kTransfer events (core/executor.cpp):
//                 send    events on the sending sub-graph with peer = the receiving sub-graph
//                         (map, copy into the receiver's slot, unmap);
//                 receive events of the receiving sub-graph with peer = its own index (binding or
//                         copying its inputs in, where backends convert layouts).
//               Per frame the events of a boundary are summed; medians over frames are stored.
//   hand-off    pipeline mode, profile level 0, the orders planner::handoff_orders picks for a
//               pair (2, 3 and 4 sub-graphs): each order's steady-state period (frame
//               completions after the first), median over the rounds; `co_up profile` fits the
//               pair's hand-off to them (planner/handoff_fit.h), and the pipeline costs to them,
//               further orders and each processor's whole network alone (its speed at that
//               moment, planner/pipeline_cost_fit.h).
//
// Interleaving: what the planner compares is processors against each other, and a shared or
// virtual machine drifts in speed over seconds (this project's host: up to 1.5x between two
// runs a few seconds apart). So the executors of one measurement (every processor's "XXXX", or
// a pair's two alternating orders) are set up together and run in turns: `rounds` rounds, each
// running every executor for its share of `frames`, so a slow phase hits all of them alike.
// Each executor first runs `warmup_frames` (discarded: first-touch memory, lazily created
// buffers); with more than one round each turn also starts with one discarded frame, because a
// core that idled while the others ran comes back slower for a frame.
// DVFS is the caller's business: it sets the level before calling measure_layers.
//
// Threading: one thread at a time. Throws InputError (a layer the backend cannot run, ...) or
// RuntimeError (a failed run), as the Executor does.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/executor.h"
#include "core/foreign_cpu_time.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/graph.h"
#include "planner/layer_profile.h"
#include "profiler/run_profile.h"

namespace co_up::cli {

// A processor's layer times whose spread (layer_spread) is above this were measured beside other
// work on its core or its caches: on this project's host a quiet profile spreads 0.5-2 %, one
// taken while other work ran 3-6 %, with every layer 7-22 % slower than the same layers in later
// runs (a uniform slowdown the medians cannot reject, and the model's error on that network).
inline constexpr double kQuietLayerSpread = 0.025;
inline constexpr int kLayerAttempts = 3;
// A measurement during which other processes took more than this share of the measured cores'
// time (ForeignCpuTime) was taken beside foreign work: a `co_up plan` on one core of a pair, even
// one the profile's real-time threads preempt, ran in their idle gaps and made cross-core reads
// five times dearer while the frames spread as little as on a quiet core. 2 % is about one
// kernel tick in a half-second measurement on one core: above the counters' resolution.
inline constexpr double kQuietForeignShare = 0.02;

struct MeasureSettings {
  int frames = 10;        // measured frames per executor (medians over them)
  int warmup_frames = 2;  // run once before the rounds, discarded
  int rounds = 3;         // turns the frames are split into (1: one run each, no interleaving)
  // Letters whose backend runs its first `calibration_frames` frames differently (npu-int8: in
  // f32, collecting int8 ranges); an executor using one warms up that many frames more.
  std::string calibrating;
  int calibration_frames = 0;
  // measure_layers measures a processor whose layer times spread more than `quiet_spread` again,
  // up to `layer_attempts` measurements in all, and keeps its least disturbed (disturbance()).
  double quiet_spread = kQuietLayerSpread;
  int layer_attempts = kLayerAttempts;
  // Likewise (both steps) while other processes took more than `quiet_foreign` of the measured
  // processors' cores.
  double quiet_foreign = kQuietForeignShare;
};

// Other processes' share of the measured processors' cores over one measurement
// (ForeignCpuTime); `share` std::nullopt: unknown (no /proc), which counts as quiet.
struct ForeignShare {
  std::vector<int> cores;
  std::optional<ForeignCpuTime::Share> share;
};

// A measurement is quiet when its spread is at most `quiet_spread` and other processes' share of
// its cores (where known) at most `quiet_foreign`, or at most one tick of the counters (a short
// measurement's resolution: one tick of a tenth of a second on two cores is 5 %). Of several attempts the one of lowest
// disturbance is kept: the larger of spread over `quiet_spread` and share over `quiet_foreign`.
bool quiet(double spread, const ForeignShare& foreign, const MeasureSettings& settings);
double disturbance(double spread, const ForeignShare& foreign, const MeasureSettings& settings);

// Rounds and the least time per turn of LayerProfiler::measure_switch_latencies: 9 rounds give a
// 96 % interval of the median estimate from the 2nd smallest to the 2nd largest (one disturbed
// round moves neither); a turn runs at least 2 ms of frames per measured frame asked for
// (MeasureSettings::frames): at the default 10, 20 ms, about 60 frames of a 0.3 ms network.
inline constexpr int kSwitchRounds = 9;
inline constexpr double kSwitchTurnUsPerFrame = 2'000;

// Switch-mode one-frame latencies of interleaved orders.
struct SwitchLatencies {
  std::vector<std::vector<double>> round_us;  // [round][order]: median over that round's frames
  // Frame-to-frame spread: each frame's latency over its turn's median, the median absolute
  // deviation of that from 1, the largest over the orders.
  double spread = 0;
  ForeignShare foreign;
  int attempts = 1;  // measurements taken (more than 1: the first ones were not quiet)
  int frames_per_turn = 0;
};

struct LayerMeasurement {
  planner::LayerTimes times;
  double input_us = 0;  // receive side of the network input on this processor
  double spread = 0;    // layer_spread(times) of the kept measurement
  ForeignShare foreign;  // over the kept measurement, on the cores of every processor measured with it
  int attempts = 1;     // measurements taken (more than 1: the first ones were not quiet)
};

// How much a processor's layer times vary from frame to frame: the sum of the layers' MADs over
// the sum of their medians (declined layers left out; 0 without any time).
double layer_spread(const planner::LayerTimes& times);
// The median of |value - median| over `values` (their MAD about `median`).
double median_absolute_deviation(const std::vector<double>& values, double median);

class LayerProfiler {
 public:
  // graph, platform and plugins must outlive the profiler; `input` is one tensor per graph input.
  LayerProfiler(const graph::Graph& graph, const Platform& platform, const PluginRegistry& plugins,
                std::vector<std::vector<float>> input, MeasureSettings settings);

  // Every layer on each processor of `processors`, measured in interleaved rounds; one result
  // per letter, in that order. `level` is only recorded (0 = as found, else 1-based level).
  // Processors whose measurement was not quiet (disturbance: times spread more than
  // MeasureSettings::quiet_spread, or other processes took more than quiet_foreign of the
  // measured cores) are measured again (those together, interleaved) up to
  // MeasureSettings::layer_attempts times; each keeps its least disturbed measurement: what a
  // unit costs is its time in a run on a quiet core, not the slowdown of whatever else ran beside
  // the first attempt.
  std::vector<LayerMeasurement> measure_layers(const std::string& processors, int level) const;
  // Both directions between `a` and `b` (the two alternating orders, interleaved). Needs at
  // least two layers.
  std::pair<planner::TransferTimes, planner::TransferTimes> measure_transfers(char a, char b) const;

  // Pipeline period (us) of each order in each round, the orders interleaved: [order][round];
  // each turn runs max(frames, 4) frames (a period needs a few completions after the pipeline
  // fills).
  std::vector<std::vector<double>> measure_pipeline_rounds(const std::vector<std::string>& orders) const;
  // The frames of each run measure_pipeline_rounds takes a period from (all admitted at once).
  uint32_t pipeline_run_frames() const;
  // One-frame latencies of each order in switch mode, the orders interleaved in
  // max(rounds, kSwitchRounds) rounds (one estimate per round for the edge fit), each turn
  // max(its share of `frames`, frames * kSwitchTurnUsPerFrame / `frame_us`) frames: a short
  // frame is run often enough that a turn's median is well above the frame-to-frame noise. `frame_us`: the
  // expected latency of one frame (the model's, 0 if unknown). Measured again, as measure_layers
  // does, while the measurement is not quiet, keeping the least disturbed.
  SwitchLatencies measure_switch_latencies(const std::vector<std::string>& orders, double frame_us = 0) const;

  // Sets up one executor per order in `mode` at `profile_level` and runs them as described
  // above; `measured(i, run, first)` gets each turn's profile of order i, whose frames from
  // `first` on are measured. `frames_per_turn` > 0: every turn runs that many (plus the
  // discarded one), instead of `frames` split over the rounds. `cuts[i]` partitions order i
  // (default: where the letter changes).
  void run_interleaved(
      const std::vector<std::string>& orders, int profile_level,
      const std::function<void(size_t, const profiler::RunProfile&, uint64_t)>& measured,
      Mode mode = Mode::kSwitch, int frames_per_turn = 0,
      const std::vector<SubGraphCuts>& cuts = {}, bool share_boundaries = true) const;

  // Layers an accelerator declines (capability query of each layer's nodes), with the reason;
  // empty for other processors.
  std::map<uint32_t, std::string> declined_layers(char processor) const;

 private:
  std::vector<LayerMeasurement> measure_layers_once(const std::string& processors, int level) const;
  // The cores the threads of the processors among `letters` run on (ascending, each once).
  std::vector<int> cores_of(const std::string& letters) const;

  const graph::Graph& graph_;
  const Platform& platform_;
  const PluginRegistry& plugins_;
  std::vector<std::vector<float>> input_;
  MeasureSettings settings_;
};

// "XYXY…" of `length` letters starting with `first`.
std::string alternating_order(char first, char second, uint32_t length);

// Per-layer samples (microseconds, one per frame) of level-2 runs of one processor.
class LayerSamples {
 public:
  explicit LayerSamples(size_t layers) : samples_(layers) {}
  // Adds frames [first, frames_completed) of `run`: each frame's kLayer time per layer (summed
  // when a unit reports several events) and its network-input receive time.
  void add(const profiler::RunProfile& run, uint64_t first = 0);
  // Medians and MADs; layers in `declined` get NaN. Throws RuntimeError when another layer has
  // no sample (the run was not level 2).
  planner::LayerTimes times(char processor, int level,
                            const std::map<uint32_t, std::string>& declined = {}) const;
  double input_us() const;  // median receive time of the network input; 0 without samples

 private:
  std::vector<std::vector<double>> samples_;  // [layer][frame]
  std::vector<double> input_;
};

// Per-boundary transfer samples (one per frame), keyed by (from, to).
class TransferSamples {
 public:
  // Adds frames [first, frames_completed) of every boundary of `run` whose two layers run on
  // different processors in different sub-graphs.
  void add(const profiler::RunProfile& run, uint64_t first = 0);
  // Medians; vectors sized layer_count - 1, NaN where a boundary has no sample.
  std::map<std::pair<char, char>, planner::TransferTimes> times() const;

 private:
  struct Boundaries {
    std::vector<std::vector<double>> send, receive;  // [boundary][frame]
  };
  std::map<std::pair<char, char>, Boundaries> samples_;
};

// One run's worth of the above, for a run from frame 0 (tests, simple callers).
planner::LayerTimes layer_times_from(const profiler::RunProfile& run, char processor, int level);
double input_transfer_from(const profiler::RunProfile& run);
// Adds `run`'s boundaries to `out` (entries created with NaN where unmeasured; a boundary
// measured again is overwritten).
void collect_transfers(const profiler::RunProfile& run,
                       std::map<std::pair<char, char>, planner::TransferTimes>& out);

}  // namespace co_up::cli
