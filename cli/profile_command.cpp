#include "cli/profile_command.h"
#include "cli/workload_profile_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>

#include "core/affinity.h"
#include "core/calibration.h"
#include "core/error.h"
#include "core/network.h"
#include "core/placement.h"
#include "planner/cost_model.h"
#include "graph/parallel_regions.h"
#include "planner/dag_cost_model.h"
#include "planner/handoff_fit.h"
#include "planner/pipeline_cost_fit.h"
#include "planner/random_order.h"
#include "planner/switch_edge_fit.h"
#include "power/dvfs_journal.h"
#include "profiler/report.h"

namespace co_up::cli {
namespace {

namespace fs = std::filesystem;

std::string letter_string(char c) { return std::string(1, c); }

std::string format_seconds(double s) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), s < 10 ? "%.1f s" : "%.0f s", s);
  return buffer;
}

// Progress on the log stream: on a terminal one status line rewritten in place (step k of n,
// what, elapsed and an estimate of what is left); otherwise one line per finished step, which
// reads well in a CI log or a file.
class Progress {
 public:
  Progress(std::ostream* log, bool terminal) : log_(log), terminal_(terminal) {}
  ~Progress() { clear_status(); }

  void note(const std::string& line) {
    if (log_ == nullptr) return;
    clear_status();
    *log_ << "co_up profile: " << line << "\n" << std::flush;
  }
  void started(size_t k, size_t n, const std::string& what) {
    step_begin_ = Clock::now();
    if (log_ == nullptr || !terminal_) return;
    std::string line = "[" + std::to_string(k) + "/" + std::to_string(n) + "] " + what;
    if (steps_run_ > 0) {
      const double per_step = seconds_run_ / static_cast<double>(steps_run_);
      line += "  (elapsed " + format_seconds(seconds_run_) + ", about " +
              format_seconds(per_step * static_cast<double>(n - k + 1)) + " left)";
    }
    *log_ << "\r\033[K" << line << std::flush;
    status_shown_ = true;
  }
  void finished(size_t k, size_t n, const std::string& what) {
    const double s = std::chrono::duration<double>(Clock::now() - step_begin_).count();
    seconds_run_ += s;
    ++steps_run_;
    if (log_ == nullptr || terminal_) return;
    *log_ << "co_up profile: [" << k << "/" << n << "] " << what << ": " << format_seconds(s)
          << "\n" << std::flush;
  }

 private:
  using Clock = std::chrono::steady_clock;
  void clear_status() {
    if (status_shown_ && log_ != nullptr) *log_ << "\r\033[K" << std::flush;
    status_shown_ = false;
  }
  std::ostream* log_;
  bool terminal_;
  bool status_shown_ = false;
  Clock::time_point step_begin_{};
  double seconds_run_ = 0;
  size_t steps_run_ = 0;
};

// Everything that makes two profiles comparable, as one line for messages.
std::string identity(const planner::LayerProfile& p) {
  const planner::ProfileNetwork& n = p.network;
  std::string s = n.graph.empty() ? "--model=" + n.model : "--graph=" + n.graph;
  s += " --units=" + n.units;
  if (!n.split.empty()) s += " --split=" + n.split;
  if (n.image_size != 0) s += " --image-size=" + std::to_string(n.image_size);
  s += " (" + std::to_string(n.layer_count) + " layers) on platform '" + p.platform_name +
       "', processors " + p.letters();
  return s;
}

void put_layer_times(planner::LayerProfile& p, planner::LayerTimes t) {
  for (planner::LayerTimes& existing : p.layer_times) {
    if (existing.processor == t.processor && existing.level == t.level) {
      existing = std::move(t);
      return;
    }
  }
  p.layer_times.push_back(std::move(t));
}

void put_thread_times(planner::LayerProfile& p, planner::ThreadLayerTimes t) {
  for (planner::ThreadLayerTimes& existing : p.thread_times) {
    if (existing.processor == t.processor && existing.threads == t.threads) {
      existing = std::move(t);
      return;
    }
  }
  p.thread_times.push_back(std::move(t));
}

// Every layer on `letter` with `threads` intra-op threads: the job's platform with that cluster's
// thread count changed (its cores stay: the pool pins its workers to them).
planner::ThreadLayerTimes measure_thread_times(const ProfileJob& job, int repetitions, char letter,
                                               int threads) {
  Platform platform = *job.platform;
  platform.find(letter)->threads = threads;
  const LayerProfiler profiler(*job.graph, platform, *job.plugins, job.input,
                               {repetitions, job.warmup_frames, job.rounds, job.calibrating,
                                job.calibration_frames});
  LayerMeasurement m = profiler.measure_layers(std::string(1, letter), 0).front();
  return {letter, threads, std::move(m.times.median_us), std::move(m.times.mad_us)};
}

void put_transfer(planner::LayerProfile& p, planner::TransferTimes t) {
  for (planner::TransferTimes& existing : p.transfers) {
    if (existing.from == t.from && existing.to == t.to) {
      existing = std::move(t);
      return;
    }
  }
  p.transfers.push_back(std::move(t));
}

// The existing profile to resume, or the fresh skeleton. Throws InputError for an unreadable or
// different one (unless --restart).
planner::LayerProfile resume_or_start(const ProfileJob& job, planner::LayerProfile fresh,
                                      bool repetitions_given) {
  // Only a regular file can hold a profile to resume (--profile-out=/dev/null starts afresh).
  if (job.restart || !fs::is_regular_file(job.out)) return fresh;
  planner::LayerProfile old;
  try {
    old = planner::read_layer_profile(job.out);
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) + "; use --restart to overwrite it");
  }
  // The processors' DVFS tables and backends are part of the platform: compare those too.
  bool same = identity(old) == identity(fresh) && old.network.graph == fresh.network.graph &&
              old.network.model == fresh.network.model;
  for (size_t i = 0; same && i < fresh.processors.size(); ++i) {
    same = old.processors[i].backend == fresh.processors[i].backend &&
           old.processors[i].levels_khz == fresh.processors[i].levels_khz;
  }
  if (!same) {
    throw InputError("--profile-out '" + job.out.string() + "' holds a profile of " +
                     identity(old) + ", not of " + identity(fresh) +
                     " (or other backends or DVFS tables); use --restart to overwrite it, or "
                     "another file");
  }
  if (repetitions_given && old.repetitions != fresh.repetitions) {
    throw InputError("--profile-out '" + job.out.string() + "' was measured with --repetitions=" +
                     std::to_string(old.repetitions) + ", not " +
                     std::to_string(fresh.repetitions) +
                     "; resume without --repetitions, or use --restart");
  }
  // Names and sizes of the layers come from this build of the network.
  old.network.layers = fresh.network.layers;
  return old;
}

// Which processors' DVFS levels can be profiled; notes why the others cannot.
std::string dvfs_letters(const ProfileJob& job, const planner::LayerProfile& profile,
                         Progress& progress) {
  std::string letters;
  std::string cpus_without, others_without;
  for (const planner::ProfileProcessor& p : profile.processors) {
    if (p.levels_khz.empty()) {
      (p.kind == "cpu" ? cpus_without : others_without) += p.letter;
      continue;
    }
    // Resuming with every level done: no need to touch sysfs again.
    bool all_done = true;
    for (size_t l = 1; l <= p.levels_khz.size(); ++l) {
      const ProfileStep step{ProfileStep::Kind::kLayers, letter_string(p.letter), static_cast<int>(l)};
      all_done = all_done && profile.is_completed(step.id());
    }
    std::string error;
    if (!all_done) {
      if (job.dvfs == nullptr) {
        error = "no DVFS controller given";
      } else {
        // Probe: set the lowest level and put everything back, so the level-0 steps that come
        // first still see the clocks as found.
        error = job.dvfs->set_level(p.letter, 0);
        for (const std::string& e : job.dvfs->restore()) error += (error.empty() ? "" : "; ") + e;
      }
    }
    if (error.empty()) {
      letters += p.letter;
    } else {
      progress.note("DVFS not profiled for " + letter_string(p.letter) + ": " + error +
                    " (run as root to profile its " + std::to_string(p.levels_khz.size()) +
                    " levels); level 0 (as found) only");
    }
  }
  if (!cpus_without.empty()) {
    const std::string why = job.no_dvfs_reason.empty() ? "the platform has no DVFS table for them"
                                                       : job.no_dvfs_reason;
    progress.note("DVFS not profiled for " + cpus_without + ": " + why +
                  "; level 0 (as found) only");
  }
  if (!others_without.empty()) {
    progress.note("DVFS not profiled for " + others_without +
                  ": no \"dvfs\" table for them in the platform (a --platform file can give "
                  "one); level 0 (as found) only");
  }
  return letters;
}

int64_t unit_output_bytes(const graph::Graph& g, const graph::LayerUnit& unit) {
  for (auto it = unit.nodes.rbegin(); it != unit.nodes.rend(); ++it) {
    const graph::Node& n = g.node(*it);
    if (n.op != graph::OpType::kInput && !n.outputs.empty()) {
      return static_cast<int64_t>(g.tensor(n.outputs.front()).desc.byte_size());
    }
  }
  return 0;
}

// One line for the layers a processor declined: which, the first reason, what happens to them.
std::string declined_note(const planner::LayerProfile& profile, const planner::LayerTimes& t) {
  const planner::ProfileProcessor* p = profile.find_processor(t.processor);
  std::string layers;
  for (const auto& [layer, why] : t.declined) {
    layers += (layers.empty() ? "" : ", ") + std::to_string(layer);
    if (layer < profile.network.layers.size()) layers += " (" + profile.network.layers[layer].name + ")";
  }
  return letter_string(t.processor) + (p != nullptr ? " (" + p->backend + ")" : std::string()) +
         " cannot run layer" + (t.declined.size() == 1 ? " " : "s ") + layers + " alone (" +
         t.declined.begin()->second + "); recorded as declined, plans keep them off " +
         letter_string(t.processor);
}

std::string percent(double fraction) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << 100.0 * fraction << " %";
  return text.str();
}

// "other processes took 14.0 % of cores 0,1": what ran beside a measurement (ForeignCpuTime).
std::string foreign_text(const ForeignShare& f) {
  const std::string cores = "core" + std::string(f.cores.size() == 1 ? " " : "s ") + format_cores(f.cores);
  if (!f.share) return "other processes' share of " + cores + " unknown";
  return "other processes took " + percent(f.share->foreign) + " of " + cores;
}

// What a measurement that stayed disturbed through every attempt asks of the user.
constexpr const char* kStillBusy =
    ": still busy, profile again on a quiet machine for a closer model (co_up profile --restart)";

// One line for a processor whose layer times were measured again because they were not quiet.
std::string spread_note(const LayerMeasurement& m, const std::string& what) {
  const MeasureSettings quiet_limits;
  std::string line = what + ": " + letter_string(m.times.processor) + "'s layer times varied by more than " +
                     percent(quiet_limits.quiet_spread) + " from frame to frame, or other processes took more than " +
                     percent(quiet_limits.quiet_foreign) + " of its cores; measured " + std::to_string(m.attempts) +
                     " times, kept the quietest (" + percent(m.spread) + ", " + foreign_text(m.foreign) + ")";
  if (!quiet(m.spread, m.foreign, quiet_limits)) line += kStillBusy;
  return line;
}

// Which pipeline costs the profile fits (planner/pipeline_cost_fit.h): a factor on layer times
// and a cost per sub-graph run, on the runs' periods as measured (not relative to one of them:
// that cancelled the factor, and every random mapping of a quiet table then ran 4-8 % slower
// than predicted). A delay per edge, fitted on the even random mappings of a quiet table and
// reported on the odd ones, came out at 0-3 us on its own and, beside the per-sub-graph cost, set
// the Inception-v4-style fixture's pipeline latency 19.7 % off (4.7 % without it).
constexpr planner::PipelineCostShape kPipelineCostShape = planner::PipelineCostShape::kWorkFactorAndSubGraph;

// Seeded random orders of the network's own units in the hand-off step (planner::random_branch_order):
// what a user's or the planner's mapping looks like (many sub-graphs, branches interleaving),
// unlike the hand-off and alternating orders. A fixed seed: two profiles of one network measure
// the same orders. One per 8 units, at most 6: a network of a few units has few orders that
// differ (the hand-off orders already span its sub-graph counts), and its profile stays quick.
constexpr uint64_t kPipelineOrderSeed = 0x70697065;  // not co_up_bench_para_pipe's (1 by default)
constexpr size_t kPipelineRandomOrders = 6;
constexpr uint32_t kUnitsPerRandomOrder = 8;

// One processor of the pair running the whole network alone, in the pipeline step's rounds.
struct ReferenceSpeed {
  char processor = 0;
  double layer_scale = 1;  // its layers' speed then over the layer step's (> 1: slower)
  double spread = 0;       // its runs' periods: MAD / median
  size_t runs = 0;
};

// What the pipeline runs of a pair give: the chain model's hand-off and the DAG model's costs.
struct PipelineFits {
  double handoff_us = 0;
  std::optional<planner::PipelineCostFit> costs;
  size_t runs = 0;  // pipeline runs the costs were fitted on
  std::vector<ReferenceSpeed> speeds;  // the processors measured alone beside them
  double layer_step_factor = 1;  // the factor fitted against the layer step's times instead
};

// Up to kPipelineRandomOrders distinct orders over `a` and `b` (one per kUnitsPerRandomOrder
// units) that the model can run and that are none of `taken`; fewer where the network has too
// few (at most 8 draws per order).
std::vector<std::string> random_pipeline_orders(const planner::CostModel& model, const graph::Graph& g, char a, char b,
                                                const std::vector<std::string>& taken) {
  const uint32_t n = model.layer_count();
  const size_t wanted = std::min<size_t>(kPipelineRandomOrders, n / kUnitsPerRandomOrder);
  const std::vector<graph::DagRegion> regions = graph::find_unit_regions(graph::unit_dag(g));
  const std::string letters{a, b};
  std::mt19937_64 rng(kPipelineOrderSeed);
  std::vector<std::string> orders;
  for (size_t draw = 0; draw < 8 * wanted && orders.size() < wanted; ++draw) {
    std::string order = planner::random_branch_order(n, letters, regions, rng);
    if (!model.runs(order) || std::find(taken.begin(), taken.end(), order) != taken.end() ||
        std::find(orders.begin(), orders.end(), order) != orders.end()) {
      continue;
    }
    orders.push_back(std::move(order));
  }
  return orders;
}

// From one set of pipeline runs over `a` and `b`, interleaved: the orders the layer times and
// transfers measured so far make best at 2, 3 and 4 sub-graphs, the two alternating orders (a
// sub-graph per unit: where a cost per sub-graph or per edge shows) and seeded random orders of
// the network's units (random_pipeline_orders). The hand-off (planner/handoff_fit.h) is fitted
// on the first ones, as the chain model predicts them; the pipeline costs
// (planner/pipeline_cost_fit.h) on all of them, against the DAG model's simulation of each run.
// The factor on layer times is fitted against each processor's speed at that moment: the whole
// network on it alone (its order all of one letter), in the same rounds and frame count, twice
// per round (after half the pipeline orders and after the rest), the median of those runs. The
// layer step ran seconds earlier, and this host's speed drifts by a few percent over that: a fit
// against the layer step's times took the drift for a co-run slowdown (one profile of
// Inception-v3 fitted x1.064, the next x1.021). Twice per round: the one reference per processor
// sets the scale of every run's prediction, where each pipeline order is one of 11. A processor
// that cannot run the network alone (a declined layer) keeps its layer step's times.
// No costs when the network has one layer or an alternating order cannot run (a declined
// layer): the DAG model then keeps the hand-off, rather than a measured-looking 0.
PipelineFits measure_pipeline_fits(const LayerProfiler& profiler, const planner::LayerProfile& profile,
                                   const graph::Graph& g, char a, char b) {
  const planner::CostModel model(profile);
  const uint32_t n = model.layer_count();
  std::vector<std::string> orders = planner::handoff_orders(model, a, b);
  const size_t chain_orders = orders.size();
  const std::vector<std::string> alternating = {alternating_order(a, b, n), alternating_order(b, a, n)};
  const bool costs = n >= 2 && model.runs(alternating[0]) && model.runs(alternating[1]);
  if (costs) {
    orders.insert(orders.end(), alternating.begin(), alternating.end());
    const std::vector<std::string> random = random_pipeline_orders(model, g, a, b, orders);
    orders.insert(orders.end(), random.begin(), random.end());
  }
  PipelineFits fits;
  if (orders.size() < 2) return fits;  // 2 layers: one boundary in every order, nothing to fit
  std::vector<std::string> alone;  // the references, each processor alone
  if (costs) {
    for (const char p : {a, b}) {
      if (std::string order(n, p); model.runs(order)) alone.push_back(std::move(order));
    }
  }
  // Each round: the first half of the orders, the references, the rest, the references again.
  std::vector<std::string> measured_orders;
  std::vector<size_t> reference_of;  // per measured order: its reference's index, alone.size() for a pipeline
  const auto add = [&](const std::string& order, size_t reference) {
    measured_orders.push_back(order);
    reference_of.push_back(reference);
  };
  for (size_t i = 0; i < orders.size(); ++i) {
    if (i == orders.size() / 2) {
      for (size_t k = 0; k < alone.size(); ++k) add(alone[k], k);
    }
    add(orders[i], alone.size());
  }
  for (size_t k = 0; k < alone.size(); ++k) add(alone[k], k);
  const std::vector<std::vector<double>> rounds = profiler.measure_pipeline_rounds(measured_orders);
  std::vector<double> measured;  // per order, then per reference: the median of its runs
  std::vector<std::vector<double>> reference_runs(alone.size());
  for (size_t i = 0; i < measured_orders.size(); ++i) {
    if (reference_of[i] == alone.size()) {
      measured.push_back(profiler::median(rounds[i]));
    } else {
      std::vector<double>& r = reference_runs[reference_of[i]];
      r.insert(r.end(), rounds[i].begin(), rounds[i].end());
    }
  }
  for (const std::vector<double>& r : reference_runs) measured.push_back(profiler::median(r));
  if (chain_orders >= 2) {
    const auto chain_end = static_cast<std::ptrdiff_t>(chain_orders);
    fits.handoff_us = planner::fit_handoff(model, a, b, std::vector<std::string>(orders.begin(), orders.begin() + chain_end),
                                           std::vector<double>(measured.begin(), measured.begin() + chain_end))
                          .us;
  }
  if (!costs) return fits;
  planner::DagCostModel dag_model(model, graph::unit_dag(g));
  dag_model.set_pipeline_subgraph_us(0);
  dag_model.set_pipeline_edge_us(0);
  dag_model.set_pipeline_work_factor(1);
  std::vector<planner::PipelineRun> runs, references;
  for (size_t i = 0; i < orders.size(); ++i) runs.push_back({orders[i], profiler.pipeline_run_frames(), measured[i]});
  for (size_t k = 0; k < alone.size(); ++k) {
    references.push_back({alone[k], profiler.pipeline_run_frames(), measured[orders.size() + k]});
  }
  const planner::SameMomentPipelineFit fit =
      planner::fit_pipeline_costs_same_moment(dag_model, runs, references, kPipelineCostShape);
  fits.costs = fit.costs;
  fits.runs = runs.size();
  fits.layer_step_factor = planner::fit_pipeline_costs(dag_model, runs, kPipelineCostShape, false).work_factor;
  for (size_t k = 0; k < fit.speeds.size(); ++k) {
    const double median = measured[orders.size() + k];
    fits.speeds.push_back({fit.speeds[k].processor, fit.speeds[k].layer_scale,
                           median_absolute_deviation(reference_runs[k], median) / median, reference_runs[k].size()});
  }
  return fits;
}

std::string format_us(double us) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << us;
  return text.str();
}

// "pipeline B<->L: layers ran 3.1 % slower on B, 0.4 % faster on L than in the layer step while
// the pipelines ran (each alone, 6 runs between them, spread 0.8 %, 1.2 %): factor fitted against
// that (x1.053 against the layer step's times)". Runs alone that spread more than a quiet layer
// step's frames (MeasureSettings::quiet_spread, also MAD / median) make the factor as uncertain:
// said, with what to do.
std::string same_moment_note(char a, char b, const PipelineFits& fits) {
  std::string line = "pipeline " + std::string{a} + "<->" + std::string{b} + ": layers ran ";
  std::string spreads, noisy;
  for (size_t k = 0; k < fits.speeds.size(); ++k) {
    const ReferenceSpeed& s = fits.speeds[k];
    line += (k == 0 ? "" : ", ") + percent(std::abs(s.layer_scale - 1)) + (s.layer_scale >= 1 ? " slower" : " faster") +
            " on " + letter_string(s.processor);
    spreads += (k == 0 ? "" : ", ") + percent(s.spread);
    if (s.spread > MeasureSettings{}.quiet_spread) noisy += (noisy.empty() ? "" : " and ") + letter_string(s.processor);
  }
  std::ostringstream factor;
  factor << std::fixed << std::setprecision(3) << fits.layer_step_factor;
  line += " than in the layer step while the pipelines ran (each alone, " + std::to_string(fits.speeds.front().runs) +
          " runs between them, spread " + spreads + "): factor fitted against that (x" + factor.str() +
          " against the layer step's times)";
  if (!noisy.empty()) line += "; " + noisy + " alone spread more than " + percent(MeasureSettings{}.quiet_spread) + kStillBusy;
  for (const char p : {a, b}) {
    if (std::none_of(fits.speeds.begin(), fits.speeds.end(), [&](const ReferenceSpeed& s) { return s.processor == p; })) {
      line += "; " + letter_string(p) + " cannot run the network alone (a declined layer): its layer step's times";
    }
  }
  return line;
}

// What a switch-mode cross-processor edge costs between `a` and `b` (planner/switch_edge_fit.h),
// from switch runs of every layer on `a` and of the two alternating orders, interleaved: one
// estimate per round, their median and its interval.
struct SwitchEdgeFit {
  planner::SwitchEdgeEstimate per_edge;                 // per edge, with nothing per megabyte
  std::optional<planner::SwitchEdgeEstimate> per_mb;  // per megabyte of the edge's tensor
  SwitchLatencies runs;
  // What the profile stores: the per-megabyte fit where the sizes are known, else the per-edge
  // one (planner::stored_value: 0 when its interval reaches 0), and 0 for the other.
  const planner::SwitchEdgeEstimate& stored() const { return per_mb ? *per_mb : per_edge; }
};

// Nothing when the network has one layer or an alternating order cannot run (a declined layer):
// the profile then has no wake-up for the pair, rather than a measured-looking 0. No per-megabyte
// fit when a unit's output size is unknown.
std::optional<SwitchEdgeFit> measure_switch_edge(const LayerProfiler& profiler,
                                                 const planner::LayerProfile& profile,
                                                 const graph::Graph& g, char a, char b) {
  const planner::CostModel model(profile);
  const uint32_t n = model.layer_count();
  if (n < 2) return std::nullopt;
  const std::vector<std::string> orders = {std::string(n, a), alternating_order(a, b, n), alternating_order(b, a, n)};
  for (const std::string& order : orders) {
    if (!model.runs(order)) return std::nullopt;
  }
  const planner::DagCostModel dag_model(model, graph::unit_dag(g));
  SwitchEdgeFit result;
  result.runs = profiler.measure_switch_latencies(
      orders, dag_model.switch_latency_us(planner::Mapping{orders[1], Mode::kSwitch, {}}));
  std::vector<planner::SwitchRun> runs;
  for (const std::vector<double>& round : result.runs.round_us) runs.push_back({round[0], {round[1], round[2]}});
  const auto fit = [&](planner::SwitchEdgeShape shape) {
    return planner::fit_switch_edge_runs(dag_model, orders[0], {orders[1], orders[2]}, runs, shape);
  };
  result.per_edge = fit(planner::SwitchEdgeShape::kPerEdge);
  const std::vector<planner::ProfileLayer>& layers = profile.network.layers;
  if (layers.size() == n && std::all_of(layers.begin(), layers.end(),
                                        [](const planner::ProfileLayer& l) { return l.output_bytes > 0; })) {
    result.per_mb = fit(planner::SwitchEdgeShape::kPerMegabyte);
  }
  return result;
}

// "switch-mode edge B<->L: 57.0 us per MB of the edge's tensor (95.3 % interval ...), 9 runs of
// 40 frames, frame spread 1.2 %, other processes took 0.4 % of cores 0,1"
std::string switch_edge_note(char a, char b, const SwitchEdgeFit& edge) {
  std::string line = "switch-mode edge " + std::string{a} + "<->" + std::string{b} + ": " +
                     planner::describe(edge.stored(), edge.per_mb ? " us per MB of the edge's tensor" : " us per edge");
  if (edge.per_mb && edge.per_mb->significant()) line += " (as one cost per edge: " + format_us(edge.per_edge.value) + " us)";
  line += "; runs of " + std::to_string(edge.runs.frames_per_turn) + " frames, frame spread " +
          format_us(100 * edge.runs.spread) + " %, " + foreign_text(edge.runs.foreign);
  if (edge.runs.attempts > 1) {
    line += ", the quietest of " + std::to_string(edge.runs.attempts) + " measurements";
    if (!quiet(edge.runs.spread, edge.runs.foreign, MeasureSettings{})) line += kStillBusy;
  }
  return line;
}

}  // namespace

std::string ProfileStep::id() const {
  if (kind == Kind::kLayers) return "layers:" + processors + ":" + std::to_string(level);
  if (kind == Kind::kThreads) return "threads:" + processors + ":" + std::to_string(threads);
  const std::string pair = processors.substr(0, 1) + ":" + processors.substr(1, 1);
  return (kind == Kind::kTransfers ? "transfers:" : "handoff:") + pair;
}

std::string ProfileStep::describe(const planner::LayerProfile& profile) const {
  if (kind == Kind::kThreads) {
    return "layers on " + processors + " with " + std::to_string(threads) + " intra-op thread" +
           (threads == 1 ? "" : "s");
  }
  if (kind != Kind::kLayers) {
    return (kind == Kind::kTransfers ? "transfers " : "hand-off ") + processors.substr(0, 1) +
           "<->" + processors.substr(1, 1);
  }
  std::string text = "layers on ";
  for (size_t i = 0; i < processors.size(); ++i) text += (i ? ", " : "") + processors.substr(i, 1);
  text += " at level " + std::to_string(level);
  const planner::ProfileProcessor* p =
      processors.size() == 1 ? profile.find_processor(processors[0]) : nullptr;
  if (level == 0) {
    text += " (as found)";
  } else if (p != nullptr && static_cast<size_t>(level) <= p->levels_khz.size()) {
    text += " (" + std::to_string((p->levels_khz[static_cast<size_t>(level) - 1] + 500) / 1000) +
            " MHz)";
  }
  return text;
}

std::vector<ProfileStep> profile_steps(const planner::LayerProfile& profile,
                                       const std::string& dvfs) {
  std::vector<ProfileStep> steps;
  const auto& procs = profile.processors;
  steps.push_back({ProfileStep::Kind::kLayers, profile.letters(), 0});
  if (profile.network.layer_count >= 2) {
    for (size_t a = 0; a < procs.size(); ++a) {
      for (size_t b = a + 1; b < procs.size(); ++b) {
        steps.push_back({ProfileStep::Kind::kTransfers,
                         letter_string(procs[a].letter) + procs[b].letter, 0});
      }
    }
    // After every transfer step: the fit predicts with all of them.
    for (size_t a = 0; a < procs.size(); ++a) {
      for (size_t b = a + 1; b < procs.size(); ++b) {
        steps.push_back({ProfileStep::Kind::kHandoff,
                         letter_string(procs[a].letter) + procs[b].letter, 0});
      }
    }
  }
  for (const planner::ProfileProcessor& p : procs) {
    if (dvfs.find(p.letter) == std::string::npos) continue;
    for (size_t l = 1; l <= p.levels_khz.size(); ++l) {
      steps.push_back({ProfileStep::Kind::kLayers, letter_string(p.letter), static_cast<int>(l)});
    }
  }
  // Intra-op thread counts of every CPU cluster of several cores (planner/thread_times.h).
  for (const planner::ProfileProcessor& p : procs) {
    if (p.kind != "cpu" || p.host != p.letter || p.host_cores.size() < 2) continue;
    for (size_t t = 1; t <= p.host_cores.size(); ++t) {
      steps.push_back({ProfileStep::Kind::kThreads, letter_string(p.letter), 0, static_cast<int>(t)});
    }
  }
  return steps;
}

planner::LayerProfile profile_skeleton(const ProfileJob& job) {
  const graph::Graph& g = *job.graph;
  const Platform& platform = *job.platform;
  planner::LayerProfile p;
  p.network.graph = job.graph_name;
  p.network.model = job.model;
  p.network.units = job.units;
  p.network.split = job.split;
  p.network.image_size = job.image_size;
  p.network.layer_count = static_cast<uint32_t>(g.layer_count());
  const std::vector<graph::LayerSummary> summaries = graph::summarize_layers(g);
  const std::vector<graph::LayerUnit> units = g.layers();
  for (size_t i = 0; i < summaries.size(); ++i) {
    p.network.layers.push_back({summaries[i].index, summaries[i].name, summaries[i].ops,
                                summaries[i].macs, unit_output_bytes(g, units[i])});
  }
  p.platform_name = platform.name;
  p.repetitions = job.repetitions > 0 ? job.repetitions : kDefaultRepetitions;

  const bool explicit_letters = !job.processors.empty();
  std::string wanted;
  for (char c : explicit_letters ? job.processors : platform.letters()) {
    if (wanted.find(c) == std::string::npos) wanted += c;
  }
  for (char letter : wanted) {
    const ProcessorSpec* spec = platform.find(letter);
    if (spec == nullptr) {
      throw InputError("--processors='" + job.processors + "' names '" + letter_string(letter) +
                       "', but platform '" + platform.name + "' defines only " +
                       platform.letters() + " (see --list-devices)");
    }
    const std::shared_ptr<const Plugin> plugin = find_backend_plugin(*spec, *job.plugins);
    if (!plugin) {
      const std::string why = "backend " + backend_choices(*spec) + " is not available in '" +
                              job.plugins->directory().string() + "' [" + job.plugins->summary() + "]";
      if (explicit_letters) {
        throw InputError("cannot profile '" + letter_string(letter) + "' (" + spec->name + "): " +
                         why + "; leave it out of --processors or install the plugin");
      }
      if (job.log != nullptr) {
        *job.log << "co_up profile: skipping " << letter << " (" << spec->name << "): " << why << "\n";
      }
      continue;
    }
    planner::ProfileProcessor pp;
    pp.letter = letter;
    pp.name = spec->name;
    pp.kind = spec->kind;
    pp.backend = plugin->name();
    // What the executor needs to share a boundary with no copy (plan_shared_tensors): runtime
    // memory for a whole tensor (DENSE; CHANNEL_SLICE alone only shares a Concat's parts, the
    // model charges copies for it) and NHWC boundaries (shared tensors cross in NHWC, which
    // `co_up` always chooses where both backends hold it). Which edges qualify is the graph's
    // (graph::shareable_boundary, UnitDag::shareable).
    pp.in_place_boundaries = (plugin->external_io() & CO_UP_EXTERNAL_IO_DENSE) != 0 &&
                             (plugin->boundary_layouts() & (1u << CO_UP_LAYOUT_NHWC)) != 0;
    pp.host = spec->is_cpu() ? letter : spec->host;
    pp.host_cores = platform.host_cores(letter);
    // A processor's own table only: an accelerator without one is not clocked by its host CPU
    // cluster's table, so its times are measured as found.
    if (spec->dvfs.present()) {
      // Processors sharing a clock (one cpufreq policy) name the same domain: its first letter.
      pp.dvfs_domain = letter_string(platform.dvfs_domain(letter).front());
      pp.levels_khz = spec->dvfs.frequencies_khz;
      pp.voltages_mv = spec->dvfs.voltages_mv;
    }
    if (spec->power_model.present) {
      pp.power_model = planner::ProfilePowerModel{spec->power_model.alpha, spec->power_model.beta};
    }
    p.processors.push_back(std::move(pp));
  }
  if (p.processors.empty()) {
    throw InputError("no processor of platform '" + platform.name +
                     "' can be profiled: none of their backends is available [" +
                     job.plugins->summary() + "] (see --list-devices)");
  }
  return p;
}

ProfileOutcome profile_network(const ProfileJob& job) {
  if (job.graph == nullptr || job.platform == nullptr || job.plugins == nullptr) {
    throw InputError("profile_network: graph, platform and plugins are required");
  }
  if (job.out.empty()) {
    throw InputError("co_up profile needs --profile-out=FILE (where the layer profile goes)");
  }
  const io::OutputFile out = io::OutputFile::check(job.out, "--profile-out");
  Progress progress(job.log, job.terminal);
  ProfileOutcome outcome;
  outcome.profile = resume_or_start(job, profile_skeleton(job), job.repetitions > 0);
  planner::LayerProfile& profile = outcome.profile;
  outcome.dvfs_letters = dvfs_letters(job, profile, progress);
  const std::vector<ProfileStep> steps = profile_steps(profile, outcome.dvfs_letters);
  outcome.steps_total = steps.size();
  for (const ProfileStep& s : steps) outcome.steps_done_before += profile.is_completed(s.id()) ? 1 : 0;
  if (outcome.steps_done_before > 0) {
    progress.note("resuming: " + std::to_string(outcome.steps_done_before) + " of " +
                  std::to_string(steps.size()) + " steps done in '" + job.out.string() + "'");
  }
  const LayerProfiler profiler(*job.graph, *job.platform, *job.plugins, job.input,
                               {profile.repetitions, job.warmup_frames, job.rounds,
                                job.calibrating, job.calibration_frames});
  // The file is written once the first step to run has passed its stop check, before it measures:
  // an interrupted first step leaves a file that resumes, a stop before any step leaves the file
  // as it was (none, or the earlier run's), and a file that exists means a step is under way.
  bool written = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    const ProfileStep& step = steps[i];
    if (profile.is_completed(step.id())) continue;
    if (job.stop_requested && job.stop_requested()) {
      outcome.interrupted = true;
      break;
    }
    if (!written) {
      planner::write_layer_profile(out, profile);
      written = true;
    }
    const std::string what = step.describe(profile);
    progress.started(i + 1, steps.size(), what);
    try {
      if (step.kind == ProfileStep::Kind::kTransfers) {
        auto [forward, backward] = profiler.measure_transfers(step.processors[0], step.processors[1]);
        put_transfer(profile, std::move(forward));
        put_transfer(profile, std::move(backward));
      } else if (step.kind == ProfileStep::Kind::kThreads) {
        put_thread_times(profile, measure_thread_times(job, profile.repetitions, step.processors[0],
                                                       step.threads));
      } else if (step.kind == ProfileStep::Kind::kHandoff) {
        const char a = step.processors[0], b = step.processors[1];
        const PipelineFits pipeline = measure_pipeline_fits(profiler, profile, *job.graph, a, b);
        profile.set_handoff(a, b, pipeline.handoff_us);
        if (pipeline.costs) {
          profile.set_pipeline_costs(a, b, pipeline.costs->subgraph_us, pipeline.costs->edge_us);
          profile.set_pipeline_work_factor(a, b, pipeline.costs->work_factor);
          std::ostringstream factor;
          factor << std::fixed << std::setprecision(3) << pipeline.costs->work_factor;
          progress.note("pipeline " + std::string{a} + "<->" + std::string{b} + ": layers x" + factor.str() + ", " +
                        format_us(pipeline.costs->subgraph_us) + " us per sub-graph run, " +
                        format_us(pipeline.costs->edge_us) + " us delay per cross-processor edge (periods of " +
                        std::to_string(pipeline.runs) + " runs within " + format_us(100 * pipeline.costs->error) +
                        " %, root mean square)");
          if (!pipeline.speeds.empty()) progress.note(same_moment_note(a, b, pipeline));
        }
        if (const std::optional<SwitchEdgeFit> edge = measure_switch_edge(profiler, profile, *job.graph, a, b)) {
          // Per megabyte where the sizes are known: a tensor the other core wrote is read from
          // its caches, and that cost grows with the tensor (the fit's one number either way).
          const double stored = planner::stored_value(edge->stored());
          profile.set_switch_edge(a, b, edge->per_mb ? 0.0 : stored);
          if (edge->per_mb) profile.set_switch_edge_mb(a, b, stored);
          progress.note(switch_edge_note(a, b, *edge));
        }
      } else {
        if (step.level > 0) {  // a DVFS step measures one processor
          const std::string error = job.dvfs->set_level(step.processors[0], step.level - 1);
          if (!error.empty()) throw RuntimeError(error + " (while profiling " + what + ")");
        }
        for (LayerMeasurement& m : profiler.measure_layers(step.processors, step.level)) {
          if (m.attempts > 1) progress.note(spread_note(m, what));
          if (step.level == 0) profile.input_transfer_us[m.times.processor] = m.input_us;
          if (!m.times.declined.empty()) progress.note(declined_note(profile, m.times));
          put_layer_times(profile, std::move(m.times));
        }
        const bool next_same_domain = i + 1 < steps.size() && steps[i + 1].level > 0 &&
                                      steps[i + 1].processors == step.processors;
        if (step.level > 0 && !next_same_domain) {
          for (const std::string& e : job.dvfs->restore()) {
            throw RuntimeError("restoring DVFS after " + what + ": " + e);
          }
        }
      }
    } catch (const std::exception& e) {
      const std::string hint = job.processors.empty()
                                   ? "; leave that processor out with --processors=LETTERS"
                                   : "";
      const std::string message = std::string(e.what()) + " (profiling " + what + hint + ")";
      if (dynamic_cast<const InputError*>(&e) != nullptr) throw InputError(message);
      throw RuntimeError(message);
    }
    profile.completed.push_back(step.id());
    planner::write_layer_profile(out, profile);
    progress.finished(i + 1, steps.size(), what);
    ++outcome.steps_run;
  }
  if (job.stop_requested && job.stop_requested() &&
      outcome.steps_done_before + outcome.steps_run < steps.size()) {
    outcome.interrupted = true;
  }
  if (!written && !outcome.interrupted) planner::write_layer_profile(out, profile);  // all done before
  return outcome;
}

namespace {

void print_summary(std::ostream& out, const ProfileOutcome& o, const fs::path& file) {
  const planner::LayerProfile& p = o.profile;
  out << "profile of " << (p.network.graph.empty() ? p.network.model : p.network.graph) << " ("
      << p.network.layer_count << " layers) on platform " << p.platform_name << ": "
      << o.steps_done_before + o.steps_run << " of " << o.steps_total << " steps ("
      << o.steps_run << " measured now), " << p.repetitions << " frames per run -> "
      << file.string() << "\n";
  out << std::fixed << std::setprecision(2);
  for (const planner::LayerTimes& t : p.layer_times) {
    const planner::ProfileProcessor* proc = p.find_processor(t.processor);
    double total = 0;
    for (double us : t.median_us) total += std::isnan(us) ? 0.0 : us;
    out << "  " << t.processor << " level " << t.level << "  "
        << (proc != nullptr ? proc->backend : std::string()) << "  " << total / 1000.0
        << " ms/frame (sum of layer medians"
        << (t.declined.empty() ? std::string()
                               : "; " + std::to_string(t.declined.size()) + " layer(s) declined")
        << ")\n";
  }
  for (const planner::ThreadLayerTimes& t : p.thread_times) {
    double total = 0;
    for (double us : t.median_us) total += us;
    out << "  " << t.processor << " " << t.threads << " thread" << (t.threads == 1 ? " " : "s")
        << "  " << total / 1000.0 << " ms/frame (sum of layer medians, DVFS as found)\n";
  }
  for (const planner::TransferTimes& t : p.transfers) {
    const double send = std::accumulate(t.send_us.begin(), t.send_us.end(), 0.0);
    const double receive = std::accumulate(t.receive_us.begin(), t.receive_us.end(), 0.0);
    out << "  " << t.from << "->" << t.to << "  transfers over " << t.send_us.size()
        << " boundaries: send " << send / 1000.0 << " ms, receive " << receive / 1000.0
        << " ms (all boundaries summed)\n";
  }
  for (const planner::HandoffTime& h : p.handoffs) {
    out << "  " << h.a << "<->" << h.b << "  hand-off " << h.us / 1000.0
        << " ms per sub-graph boundary, on each side (fitted from pipeline runs)\n";
  }
  for (const planner::HandoffTime& h : p.pipeline_subgraphs) {
    const planner::HandoffTime* edge = p.find_pipeline_edge(h.a, h.b);
    const planner::HandoffTime* factor = p.find_pipeline_work_factor(h.a, h.b);
    out << "  " << h.a << "<->" << h.b << "  pipeline layers x" << (factor != nullptr ? factor->us : 1.0) << ", "
        << h.us << " us per sub-graph run, "
        << (edge != nullptr ? edge->us : 0.0) << " us delay per cross-processor edge (fitted from pipeline runs)\n";
  }
  for (const planner::HandoffTime& h : p.switch_edge_mb) {
    out << "  " << h.a << "<->" << h.b << "  switch cross-core read " << h.us
        << " us per MB of a cross-processor edge's tensor (fitted from switch runs)\n";
  }
  for (const planner::HandoffTime& h : p.switch_edges) {
    out << "  " << h.a << "<->" << h.b << "  switch wake-up " << h.us / 1000.0
        << " ms per cross-processor edge (fitted from switch runs"
        << (h.us >= planner::kSwitchEdgeFitLimitUs ? "; at the fit's upper limit: the runs were slower still" : "")
        << ")\n";
  }
}

std::string no_dvfs_reason(const Options& o) {
  if (!o.platform.empty()) {
    return "platform file '" + o.platform + "' declares no \"dvfs\" table for them";
  }
  const fs::path cpufreq = fs::path(o.sysfs_root) / "devices/system/cpu/cpufreq";
  std::error_code ec;
  bool any_policy = false;
  if (fs::is_directory(cpufreq, ec)) {
    for (const auto& entry : fs::directory_iterator(cpufreq, ec)) {
      any_policy = any_policy || entry.path().filename().string().rfind("policy", 0) == 0;
    }
  }
  if (!any_policy) {
    return "this machine has no cpufreq (no policy* under " + cpufreq.string() +
           "; virtual machines usually have none)";
  }
  return "cpufreq under " + cpufreq.string() + " lists no frequencies for them";
}

}  // namespace

int run_profile_command(const Options& o, StopSignal& stop) {
  if (!o.workload.empty()) return run_workload_profile_command(o, stop);
  if (o.graph.empty() && o.model.empty()) {
    throw InputError("co_up profile needs a network (--graph=NAME or --model=FILE.onnx)");
  }
  if (o.profile_out.empty()) {
    throw InputError("co_up profile needs --profile-out=FILE (where the layer profile goes)");
  }
  io::OutputFile::check(o.profile_out, "--profile-out");  // before any setup: a bad path fails now
  if (!o.order.empty() || !o.frequency.empty()) {
    throw InputError("co_up profile measures every processor and level itself; drop --order and "
                     "--frequency (use --processors=LETTERS to choose processors)");
  }
  const fs::path plugin_dir =
      o.plugins.empty() ? PluginRegistry::default_directory() : fs::path(o.plugins);
  if (!o.plugins.empty() && !fs::is_directory(plugin_dir)) {
    throw InputError("--plugins='" + o.plugins + "' is not a directory");
  }
  Platform platform = o.platform.empty() ? detect_host_platform(o.sysfs_root) : load_platform(o.platform);
  apply_overrides(platform, {o.threads, o.cores, o.threads_little, o.cores_little, o.host_gpu,
                             o.host_npu, o.split_cluster});
  check_cores_exist(platform);

  NetworkSpec spec{o.graph, o.units, o.image_size, o.seed, o.data};
  spec.split = o.split;
  spec.model = o.model;
  spec.input_shape = o.input_shape;
  const graph::Graph g = build_network(spec);
  const PluginRegistry registry = PluginRegistry::load_directory(plugin_dir);
  // npu-int8 runs its first --calibration frames in f32 (per compiled sub-graph, so per layer
  // too): the same option a run passes, and that many more warm-up frames before measuring.
  const std::string calibrating = set_calibration_frames(platform, registry, static_cast<int>(o.calibration));
  // Restores every governor it changed when it goes, on every path out (errors, Ctrl-C).
  power::SysfsDvfs dvfs(platform, o.sysfs_root, power::resolve_state_dir(o.state_dir));

  ProfileJob job;
  job.graph = &g;
  job.platform = &platform;
  job.plugins = &registry;
  job.dvfs = &dvfs;
  job.input = seeded_inputs(g, o.seed);
  job.graph_name = o.graph;
  job.model = o.model;
  job.units = o.units;
  job.split = o.split;
  job.image_size = o.image_size;
  job.processors = o.processors;
  job.repetitions = o.repetitions;
  job.out = o.profile_out;
  job.restart = o.restart;
  job.stop_requested = [&stop] { return stop.stopped(); };
  job.log = &std::cerr;
  job.terminal = ::isatty(STDERR_FILENO) == 1;
  job.no_dvfs_reason = no_dvfs_reason(o);
  job.calibrating = calibrating;
  job.calibration_frames = static_cast<int>(o.calibration);

  // The step in progress runs to its end (its numbers are kept); say so, as that may take a while.
  // Written with write(2): the watcher thread must not share std::cerr's state with this one.
  stop.on_stop([] {
    static const char kMessage[] =
        "\nco_up profile: stopping after the current step (a second Ctrl-C exits at once)\n";
    [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  });
  ProfileOutcome outcome;
  try {
    outcome = profile_network(job);
  } catch (...) {
    stop.on_stop(nullptr);
    throw;
  }
  stop.on_stop(nullptr);
  if (outcome.interrupted) {
    const size_t done = outcome.steps_done_before + outcome.steps_run;
    if (done == 0) {
      std::cerr << "co_up: interrupted before the first of " << outcome.steps_total
                << " steps; nothing was measured or written\n";
    } else {
      std::cerr << "co_up: interrupted after " << done << " of " << outcome.steps_total
                << " steps; '" << o.profile_out
                << "' keeps them: run the same command again to resume\n";
    }
    return 128 + (stop.signal_number() != 0 ? stop.signal_number() : SIGINT);
  }
  print_summary(std::cout, outcome, o.profile_out);
  return 0;
}

}  // namespace co_up::cli
