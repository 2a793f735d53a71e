// Searches over mappings under the cost model (planner/cost_model.h).
//
//   shortest_path_latency   switch mode, minimum latency: exact shortest path over
//                           layers x processors with transfer costs, at fixed levels.
//   pipeline_dp             pipeline mode, maximum throughput over contiguous stage partitions
//                           where each processor runs at most one stage: exact dynamic programming
//                           (Hetero2Pipe's partition recurrence extended to choosing each stage's
//                           processor: state = layers done x processors used x last processor,
//                           labels = per-resource times, dominated labels dropped), at fixed
//                           levels.
//   refine_pipeline         non-contiguous refinement (orders like BBBLLLLLLLB): hill climbing
//                           over single-layer moves and letter swaps, accepting improvements;
//                           its result is kept only when it has no more sub-graphs than the
//                           start or is predicted faster by more than the margin below.
//   nsga2                   NSGA-II (ARM-CO-UP section 6) over order + per-domain levels;
//                           objectives throughput (max), latency (min), energy (min, when the
//                           profile has power data); seeded; deterministic for a seed.
//   best_single_processor, heft   baselines.
//   brute_force             every order (small networks only), for tests.
// Each lives in its own file under planner/search/; planner/search_algorithm.h gives them one
// interface and a registry by name, through which plan() calls them.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "planner/cost_model.h"

namespace co_up::planner {

struct Candidate {
  Mapping mapping;
  Prediction prediction;
  std::string source;  // which search found it: "dp", "shortest-path", "refined", "nsga2", ...
};

// `levels` empty: CostModel::fastest_levels().
Candidate shortest_path_latency(const CostModel& model, std::vector<int> levels = {});
Candidate pipeline_dp(const CostModel& model, std::vector<int> levels = {});
// The best contiguous pipeline using exactly each non-empty set of processors (one candidate per
// set that the layers can cover), best first; the first has pipeline_dp's period.
std::vector<Candidate> pipeline_dp_per_subset(const CostModel& model, std::vector<int> levels = {});
// Fewer sub-graphs are preferred unless more are predicted faster by more than this fraction
// (throughput). Why 5 %: the cost model's median |error| for pipeline throughput on this host is
// 2.7-4.0 % per run (bench/planner_accuracy_results.md), so two predictions closer than that are
// a tie; and every extra sub-graph risks what the model does not charge (queueing, scheduling
// gaps: AlexNet's 5-sub-graph picks predicted 2-3 % faster than the best 2-stage split measured
// 10-14 % slower before the hand-off term). The issue's own tolerance is the same 5 %.
inline constexpr double kSubgraphGainMargin = 0.05;

// Sub-graphs of an order: its runs of one letter ("BBLLB": 3).
size_t subgraph_count(const std::string& order);
// Sub-graphs of an order as the runtime cuts it for `model`'s network: the runs of one letter,
// plus the parts and Concat unit of each split layer (named "<layer>#1".. in the profile) whose
// parts are on several processors, which run as sub-graphs of their own (graph/split_units.h).
size_t subgraph_count(const CostModel& model, const std::string& order);

Candidate refine_pipeline(const CostModel& model, const Candidate& start, int max_rounds = 100,
                          double margin = kSubgraphGainMargin);

struct Nsga2Options {
  uint64_t seed = 1;
  int population = 96;
  int generations = 250;
  double crossover_rate = 0.9;
  double mutation_rate = -1;  // per gene; < 0: 1 / genome length
  Mode mode = Mode::kPipeline;
  bool use_energy = true;     // ignored when the profile has no power data
};
// The final Pareto front (rank 0, duplicates removed), sorted by throughput descending.
std::vector<Candidate> nsga2(const CostModel& model, const std::vector<Mapping>& seeds,
                             const Nsga2Options& options);

// Best single processor (each at fastest levels) for the mode: max throughput for pipeline, min
// latency for switch.
Candidate best_single_processor(const CostModel& model, Mode mode);
// HEFT for one frame (Topcuoglu et al. 2002): tasks in decreasing upward rank (mean compute +
// mean transfer + successor's rank), each on the processor giving the earliest finish time.
Candidate heft(const CostModel& model, Mode mode);

// Multi-objective helpers. Objective vectors are minimised: {period_us, latency, energy?}.
std::vector<double> objectives(const Prediction& p, bool use_energy);
bool dominates(const std::vector<double>& a, const std::vector<double>& b);
// Fast non-dominated sort (Deb et al. 2002): fronts of indices, front 0 first.
std::vector<std::vector<size_t>> non_dominated_sort(const std::vector<std::vector<double>>& points);
// Crowding distance of each point of one front (infinite at the extremes).
std::vector<double> crowding_distance(const std::vector<std::vector<double>>& points,
                                      const std::vector<size_t>& front);

// Calls visit for every order of model.layer_count() letters (letters().size()^layers orders;
// refuses more than 2 million), at the given mode and levels. For tests.
void brute_force(const CostModel& model, Mode mode, const std::vector<int>& levels,
                 const std::function<void(const Mapping&, const Prediction&)>& visit);
// True when each letter of `order` forms one contiguous run (the pipeline_dp search space).
bool is_contiguous(const std::string& order);

// Plans for an objective; used by `co_up plan`. Returns up to `top` candidates, best first, with
// distinct command lines (Mapping normalised, CostModel::normalized). Runs the exact searches at
// the fastest levels, the refinement, and NSGA-II (5 generations per gene, 60..250) seeded with
// them, the baselines and (with power data) the same orders at the lowest levels; the candidates
// of all are ranked by the objective (ties: the other objectives).
enum class Objective { kThroughput, kLatency, kEnergy, kPareto };
// kThroughput ranks with the margin above: the next mapping is, from the fewest sub-graphs up,
// the fastest of its sub-graph count unless one with more is predicted faster by more than
// `margin` (then that one, and so on), so ranked[0] may be predicted up to `margin` slower than
// the fastest; the other objectives rank by their key alone.
struct PlanResult {
  std::vector<Candidate> ranked;  // kPareto: the front, sorted by throughput
  Candidate single_processor;     // baseline, same mode as ranked.front()
  Candidate heft;                 // baseline
  // When ranked[0] is not the fastest predicted: which faster one it was preferred to, and why.
  std::string preference_note;
};
// Throws InputError for kEnergy without power data.
PlanResult plan(const CostModel& model, Objective objective, size_t top, uint64_t seed = 1,
                double margin = kSubgraphGainMargin);

}  // namespace co_up::planner
