#include "cli/layer_profiler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "core/error.h"
#include "core/executor.h"
#include "core/fallback.h"
#include "core/foreign_cpu_time.h"
#include "core/partition.h"
#include "core/placement.h"
#include "profiler/report.h"

namespace co_up::cli {
namespace {

using profiler::Event;
using profiler::EventKind;

constexpr double kNsPerUs = 1000.0;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double duration_us(const Event& e) { return static_cast<double>(e.end_ns - e.begin_ns) / kNsPerUs; }

// Per-frame sums of the durations (us) of the events `select` accepts, for frames
// [first, frames_completed) (a frame without any such event sums to 0).
template <typename Select>
std::vector<double> per_frame_us(const profiler::RunProfile& run, uint64_t first, Select select) {
  std::vector<double> sums(run.frames_completed > first ? run.frames_completed - first : 0, 0.0);
  for (const Event& e : run.events) {
    if (e.frame >= first && e.frame - first < sums.size() && select(e)) {
      sums[e.frame - first] += duration_us(e);
    }
  }
  return sums;
}

}  // namespace

std::string alternating_order(char first, char second, uint32_t length) {
  std::string order(length, first);
  for (uint32_t i = 1; i < length; i += 2) order[i] = second;
  return order;
}

void LayerSamples::add(const profiler::RunProfile& run, uint64_t first) {
  if (run.frames_completed <= first) return;
  const uint64_t frames = run.frames_completed - first;
  // [layer][frame of this run]; a unit may report several events per frame if a backend splits
  // it, summing keeps the unit's total.
  std::vector<std::vector<double>> sums(samples_.size(), std::vector<double>(frames, 0.0));
  std::vector<bool> seen(samples_.size(), false);
  for (const Event& e : run.events) {
    if (e.kind != EventKind::kLayer || e.layer >= samples_.size() || e.frame < first ||
        e.frame - first >= frames) {
      continue;
    }
    sums[e.layer][e.frame - first] += duration_us(e);
    seen[e.layer] = true;
  }
  for (size_t l = 0; l < samples_.size(); ++l) {
    if (seen[l]) samples_[l].insert(samples_[l].end(), sums[l].begin(), sums[l].end());
  }
  const std::vector<double> input = per_frame_us(run, first, [](const Event& e) {
    return e.kind == EventKind::kTransfer && e.subgraph == 0 && e.peer == 0;
  });
  input_.insert(input_.end(), input.begin(), input.end());
}

planner::LayerTimes LayerSamples::times(char processor, int level,
                                        const std::map<uint32_t, std::string>& declined) const {
  planner::LayerTimes times;
  times.processor = processor;
  times.level = level;
  times.declined = declined;
  for (size_t l = 0; l < samples_.size(); ++l) {
    if (declined.count(static_cast<uint32_t>(l)) != 0) {
      times.median_us.push_back(kNaN);
      times.mad_us.push_back(kNaN);
      continue;
    }
    if (samples_[l].empty()) {
      throw RuntimeError("no time measured for layer " + std::to_string(l) + " on '" +
                         std::string(1, processor) + "' (the run needs profile level 2)");
    }
    const double m = profiler::median(samples_[l]);
    times.median_us.push_back(m);
    times.mad_us.push_back(median_absolute_deviation(samples_[l], m));
  }
  return times;
}

double LayerSamples::input_us() const { return profiler::median(input_); }

void TransferSamples::add(const profiler::RunProfile& run, uint64_t first) {
  const auto& layers = run.layers;
  if (layers.size() < 2 || run.frames_completed <= first) return;
  for (size_t i = 0; i + 1 < layers.size(); ++i) {
    const char from = layers[i].processor, to = layers[i + 1].processor;
    const uint32_t sender = layers[i].subgraph, receiver = layers[i + 1].subgraph;
    if (from == to || sender == receiver) continue;
    // Sender side: what the sub-graph ending at layer i copies into the next one's receivers
    // (core/executor.cpp: record_transfer(begin, out.layer, destination, bytes)).
    const std::vector<double> send = per_frame_us(run, first, [&](const Event& e) {
      return e.kind == EventKind::kTransfer && e.subgraph == sender && e.peer == receiver;
    });
    // Receiver side: binding or copying in the next sub-graph's inputs, recorded with
    // peer = its own index.
    const std::vector<double> receive = per_frame_us(run, first, [&](const Event& e) {
      return e.kind == EventKind::kTransfer && e.subgraph == receiver && e.peer == receiver;
    });
    Boundaries& b = samples_[{from, to}];
    b.send.resize(layers.size() - 1);
    b.receive.resize(layers.size() - 1);
    b.send[i].insert(b.send[i].end(), send.begin(), send.end());
    b.receive[i].insert(b.receive[i].end(), receive.begin(), receive.end());
  }
}

std::map<std::pair<char, char>, planner::TransferTimes> TransferSamples::times() const {
  std::map<std::pair<char, char>, planner::TransferTimes> result;
  for (const auto& [pair, b] : samples_) {
    planner::TransferTimes& t = result[pair];
    t.from = pair.first;
    t.to = pair.second;
    for (size_t i = 0; i < b.send.size(); ++i) {
      t.send_us.push_back(b.send[i].empty() ? kNaN : profiler::median(b.send[i]));
      t.receive_us.push_back(b.receive[i].empty() ? kNaN : profiler::median(b.receive[i]));
    }
  }
  return result;
}

planner::LayerTimes layer_times_from(const profiler::RunProfile& run, char processor, int level) {
  LayerSamples samples(run.layers.size());
  samples.add(run);
  return samples.times(processor, level);
}

double input_transfer_from(const profiler::RunProfile& run) {
  LayerSamples samples(run.layers.size());
  samples.add(run);
  return samples.input_us();
}

void collect_transfers(const profiler::RunProfile& run,
                       std::map<std::pair<char, char>, planner::TransferTimes>& out) {
  TransferSamples samples;
  samples.add(run);
  for (auto& [pair, t] : samples.times()) {
    auto [it, inserted] = out.try_emplace(pair, t);
    if (inserted) continue;
    for (size_t i = 0; i < t.send_us.size(); ++i) {
      if (std::isnan(t.send_us[i])) continue;
      it->second.send_us[i] = t.send_us[i];
      it->second.receive_us[i] = t.receive_us[i];
    }
  }
}

LayerProfiler::LayerProfiler(const graph::Graph& graph, const Platform& platform,
                             const PluginRegistry& plugins, std::vector<std::vector<float>> input,
                             MeasureSettings settings)
    : graph_(graph), platform_(platform), plugins_(plugins), input_(std::move(input)),
      settings_(settings) {
  if (settings_.frames < 1 || settings_.warmup_frames < 0 || settings_.rounds < 1) {
    throw InputError("a measurement needs at least 1 frame and 1 round (got " +
                     std::to_string(settings_.frames) + " frames, " +
                     std::to_string(settings_.rounds) + " rounds)");
  }
  settings_.rounds = std::min(settings_.rounds, settings_.frames);
}

void LayerProfiler::run_interleaved(
    const std::vector<std::string>& orders, int profile_level,
    const std::function<void(size_t, const profiler::RunProfile&, uint64_t)>& measured,
    Mode mode, int frames_per_turn, const std::vector<SubGraphCuts>& cuts, bool share_boundaries) const {
  ExecutorOptions options;
  options.mode = mode;
  options.share_boundaries = share_boundaries;
  options.profile_level = profile_level;
  std::vector<std::unique_ptr<Executor>> executors;
  for (size_t i = 0; i < orders.size(); ++i) {
    const SubGraphCuts c = i < cuts.size() ? cuts[i] : SubGraphCuts::kWhereLetterChanges;
    PlacementOptions placement;
    placement.cuts = c;
    executors.push_back(std::make_unique<Executor>(
        Placement::create(graph_, orders[i], platform_, plugins_, placement), options));
  }
  RunRequest request;
  request.input_sets.push_back(input_);
  for (size_t i = 0; i < orders.size(); ++i) {
    const bool calibrates = orders[i].find_first_of(settings_.calibrating) != std::string::npos;
    const int warmup = settings_.warmup_frames + (calibrates ? settings_.calibration_frames : 0);
    if (warmup <= 0) continue;
    request.frames = static_cast<uint64_t>(warmup);
    executors[i]->run(request);
  }
  const int rounds = settings_.rounds;
  const uint64_t rewarm = rounds > 1 ? 1 : 0;
  for (int r = 0; r < rounds; ++r) {
    // frames split as evenly as possible: the first (frames % rounds) rounds get one more.
    const int share = frames_per_turn > 0
                          ? frames_per_turn
                          : settings_.frames / rounds + (r < settings_.frames % rounds ? 1 : 0);
    request.frames = static_cast<uint64_t>(share) + rewarm;
    for (size_t i = 0; i < executors.size(); ++i) {
      const RunResult result = executors[i]->run(request);
      if (result.profile.frames_completed != request.frames) {
        throw RuntimeError("run of order '" + orders[i] + "' completed " +
                           std::to_string(result.profile.frames_completed) + " of " +
                           std::to_string(request.frames) + " frames");
      }
      measured(i, result.profile, rewarm);
    }
  }
}

double median_absolute_deviation(const std::vector<double>& values, double median) {
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) deviations.push_back(std::abs(v - median));
  return profiler::median(std::move(deviations));
}

double layer_spread(const planner::LayerTimes& times) {
  double mads = 0, medians = 0;
  for (size_t l = 0; l < times.median_us.size() && l < times.mad_us.size(); ++l) {
    if (std::isnan(times.median_us[l]) || std::isnan(times.mad_us[l])) continue;
    mads += times.mad_us[l];
    medians += times.median_us[l];
  }
  return medians > 0 ? mads / medians : 0.0;
}

bool quiet(double spread, const ForeignShare& foreign, const MeasureSettings& settings) {
  return spread <= settings.quiet_spread &&
         (!foreign.share || foreign.share->foreign <= std::max(settings.quiet_foreign, foreign.share->resolution));
}

double disturbance(double spread, const ForeignShare& foreign, const MeasureSettings& settings) {
  const auto over = [](double value, double limit) { return limit > 0 ? value / limit : value; };
  return std::max(over(spread, settings.quiet_spread),
                  foreign.share ? over(foreign.share->foreign, settings.quiet_foreign) : 0.0);
}

namespace {

// While some of `kept` are not quiet, and at most settings.layer_attempts measurements in all,
// `remeasure(indices)` measures those again (together: interleaved, so one phase of the machine
// hits them alike) and returns one result per index, in that order; each keeps whichever of
// its attempts is the least disturbed, and counts them all in `attempts`.
template <typename Measurement, typename Remeasure>
void keep_least_disturbed(std::vector<Measurement>& kept, const MeasureSettings& settings,
                          const Remeasure& remeasure) {
  const auto disturbed = [&](const Measurement& m) { return disturbance(m.spread, m.foreign, settings); };
  for (int attempt = 2; attempt <= settings.layer_attempts; ++attempt) {
    std::vector<size_t> again;
    for (size_t i = 0; i < kept.size(); ++i) {
      if (!quiet(kept[i].spread, kept[i].foreign, settings)) again.push_back(i);
    }
    if (again.empty()) return;
    std::vector<Measurement> retry = remeasure(again);
    for (size_t k = 0; k < again.size(); ++k) {
      Measurement& m = kept[again[k]];
      if (disturbed(retry.at(k)) < disturbed(m)) m = std::move(retry[k]);
      m.attempts = attempt;
    }
  }
}

}  // namespace

std::vector<int> LayerProfiler::cores_of(const std::string& letters) const {
  std::vector<int> cores;
  for (char p : letters) {
    if (platform_.find(p) == nullptr) continue;
    const std::vector<int>& own = platform_.host_cores(p);
    cores.insert(cores.end(), own.begin(), own.end());
  }
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  return cores;
}

std::vector<LayerMeasurement> LayerProfiler::measure_layers(const std::string& processors,
                                                            int level) const {
  std::vector<LayerMeasurement> kept = measure_layers_once(processors, level);
  keep_least_disturbed(kept, settings_, [&](const std::vector<size_t>& again) {
    std::string letters;
    for (size_t i : again) letters += processors[i];
    return measure_layers_once(letters, level);  // one result per letter, in that order
  });
  return kept;
}

std::vector<LayerMeasurement> LayerProfiler::measure_layers_once(const std::string& processors,
                                                                 int level) const {
  const uint32_t layers = graph_.layer_count();
  std::vector<std::string> orders;
  std::vector<SubGraphCuts> cuts;
  std::vector<std::map<uint32_t, std::string>> declined(processors.size());
  std::vector<LayerSamples> samples;
  for (size_t i = 0; i < processors.size(); ++i) {
    const char p = processors[i];
    std::string order(layers, p);
    const ProcessorSpec* spec = platform_.find(p);
    const bool accelerator = spec != nullptr && is_accelerator(*spec);
    // The layers it declines run on its host cluster (not timed): the others still are.
    declined[i] = declined_layers(p);
    for (const auto& [layer, why] : declined[i]) order[layer] = spec->host;
    orders.push_back(std::move(order));
    cuts.push_back(accelerator ? SubGraphCuts::kEveryLayer : SubGraphCuts::kWhereLetterChanges);
    samples.emplace_back(layers);
  }
  // The processors run in turns, so each one's cores are idle while the others run: other work
  // on any of them is counted (this process's threads cannot be told apart per core).
  const ForeignCpuTime foreign(cores_of(processors));
  run_interleaved(
      orders, 2,
      [&](size_t i, const profiler::RunProfile& run, uint64_t first) {
        if (declined[i].empty()) {
          samples[i].add(run, first);
          return;
        }
        // Only the layers on the measured processor: declined ones ran on the host.
        profiler::RunProfile own = run;
        std::erase_if(own.events, [&](const profiler::Event& e) {
          return e.kind == EventKind::kLayer && e.layer < orders[i].size() &&
                 orders[i][e.layer] != processors[i];
        });
        samples[i].add(own, first);
      },
      Mode::kSwitch, 0, cuts);
  const ForeignShare share{foreign.cores(), foreign.share()};
  std::vector<LayerMeasurement> result;
  for (size_t i = 0; i < processors.size(); ++i) {
    LayerMeasurement& m = result.emplace_back();
    m.times = samples[i].times(processors[i], level, declined[i]);
    m.input_us = samples[i].input_us();
    m.spread = layer_spread(m.times);
    m.foreign = share;
  }
  return result;
}

std::map<uint32_t, std::string> LayerProfiler::declined_layers(char processor) const {
  std::map<uint32_t, std::string> declined;
  const ProcessorSpec* spec = platform_.find(processor);
  if (spec == nullptr || !is_accelerator(*spec)) return declined;
  const FallbackPlan plan = plan_npu_fallback(graph_, std::string(graph_.layer_count(), processor),
                                              platform_, plugins_, spec->host);
  for (const FallbackMove& m : plan.moves) {
    declined.emplace(m.layer, m.node.empty() ? m.reason
                                             : "node '" + m.node + "' (" + m.op + "): " + m.reason);
  }
  return declined;
}

uint32_t LayerProfiler::pipeline_run_frames() const {
  return static_cast<uint32_t>(std::max(settings_.frames, 4) + (settings_.rounds > 1 ? 1 : 0));
}

std::vector<std::vector<double>> LayerProfiler::measure_pipeline_rounds(const std::vector<std::string>& orders) const {
  std::vector<std::vector<double>> periods(orders.size());
  run_interleaved(
      orders, 0,
      [&](size_t i, const profiler::RunProfile& run, uint64_t) {
        // The discarded first frame is the pipeline fill, which summarize leaves out anyway.
        const double fps = profiler::summarize(run).throughput_fps;
        if (fps > 0) periods[i].push_back(1e6 / fps);
      },
      Mode::kPipeline, std::max(settings_.frames, 4));
  for (size_t i = 0; i < orders.size(); ++i) {
    if (periods[i].empty()) throw RuntimeError("pipeline run of order '" + orders[i] + "' measured no period");
  }
  return periods;
}

SwitchLatencies LayerProfiler::measure_switch_latencies(const std::vector<std::string>& orders,
                                                       double frame_us) const {
  LayerProfiler turns = *this;
  turns.settings_.rounds = std::max(settings_.rounds, kSwitchRounds);
  const int share = (settings_.frames + turns.settings_.rounds - 1) / turns.settings_.rounds;
  const double turn_us = kSwitchTurnUsPerFrame * settings_.frames;
  const int enough = frame_us > 0 ? static_cast<int>(std::min(std::ceil(turn_us / frame_us), 1'000.0)) : 0;
  const int per_turn = std::max(share, enough);
  turns.settings_.frames = per_turn * turns.settings_.rounds;
  std::string letters;
  for (const std::string& order : orders) letters += order;
  const std::vector<int> cores = cores_of(letters);
  const auto measure_once = [&] {
    const ForeignCpuTime foreign(cores);
    SwitchLatencies m;
    m.frames_per_turn = per_turn;
    m.round_us.assign(static_cast<size_t>(turns.settings_.rounds), std::vector<double>(orders.size(), 0.0));
    std::vector<size_t> turns_seen(orders.size(), 0);
    std::vector<std::vector<double>> relative(orders.size());  // frame over its turn's median
    turns.run_interleaved(
        orders, 0,
        [&](size_t i, const profiler::RunProfile& run, uint64_t first) {
          std::vector<double> latencies;
          const size_t frames = std::min(run.frame_start_ns.size(), run.frame_end_ns.size());
          for (size_t f = first; f < frames; ++f) {
            const int64_t ns = run.frame_end_ns[f] - run.frame_start_ns[f];
            if (ns > 0) latencies.push_back(static_cast<double>(ns) / 1e3);
          }
          if (latencies.empty()) throw RuntimeError("switch run of order '" + orders[i] + "' measured no frame");
          const double median = profiler::median(latencies);
          m.round_us[turns_seen[i]++][i] = median;
          for (double us : latencies) relative[i].push_back(us / median);
        },
        Mode::kSwitch);
    for (const std::vector<double>& r : relative) m.spread = std::max(m.spread, median_absolute_deviation(r, 1.0));
    m.foreign = {foreign.cores(), foreign.share()};
    return m;
  };
  std::vector<SwitchLatencies> kept{measure_once()};
  keep_least_disturbed(kept, settings_, [&](const std::vector<size_t>&) { return std::vector{measure_once()}; });
  return std::move(kept.front());
}

std::pair<planner::TransferTimes, planner::TransferTimes> LayerProfiler::measure_transfers(
    char a, char b) const {
  const auto layers = static_cast<uint32_t>(graph_.layer_count());
  if (layers < 2) {
    throw InputError("network '" + graph_.name() + "' has one layer unit: no boundaries to measure");
  }
  TransferSamples samples;
  // A layer one of them declines goes to the other: its boundaries cannot occur in any mapping
  // that runs, so they are recorded as 0 below.
  const std::map<uint32_t, std::string> declined_a = declined_layers(a), declined_b = declined_layers(b);
  std::vector<std::string> orders = {alternating_order(a, b, layers), alternating_order(b, a, layers)};
  for (std::string& order : orders) {
    for (uint32_t l = 0; l < layers; ++l) {
      if (order[l] == a && declined_a.count(l) != 0) order[l] = b;
      else if (order[l] == b && declined_b.count(l) != 0) order[l] = a;
    }
  }
  const auto declines = [&](char p, uint32_t layer) {
    return (p == a ? declined_a : declined_b).count(layer) != 0;
  };
  // Level 1 records transfers without the per-layer events (less work on the measured path).
  // Boundaries copied: the copies are what is measured (a pipeline pays them; a switch-mode run
  // shares them in place where both backends allow, ProfileProcessor::in_place_boundaries).
  run_interleaved(
      orders, 1,
      [&](size_t, const profiler::RunProfile& run, uint64_t first) { samples.add(run, first); },
      Mode::kSwitch, 0, {}, false);
  auto found = samples.times();
  for (char from : {a, b}) {  // a pair whose every boundary involves a declined layer
    const char to = from == a ? b : a;
    planner::TransferTimes& t = found[{from, to}];
    t.from = from;
    t.to = to;
    t.send_us.resize(layers - 1, kNaN);
    t.receive_us.resize(layers - 1, kNaN);
  }
  for (auto& [pair, t] : found) {
    for (size_t i = 0; i < t.send_us.size(); ++i) {
      const auto boundary = static_cast<uint32_t>(i);
      if (std::isnan(t.send_us[i]) && (declines(t.from, boundary) || declines(t.to, boundary + 1))) {
        t.send_us[i] = 0;
        t.receive_us[i] = 0;
      }
      if (std::isnan(t.send_us[i])) {
        throw RuntimeError("boundary " + std::to_string(i) + " from '" + std::string(1, t.from) +
                           "' to '" + std::string(1, t.to) + "' was not measured");
      }
    }
  }
  return {found.at({a, b}), found.at({b, a})};
}

}  // namespace co_up::cli
