// `co_up plan --tune=SECONDS`: a measured local search from the cost model's plans.
//
// The DAG cost model is within a few per cent of measured runs, and a few per cent decides which
// plan meets a target. So, as tuning compilers and runtimes measure their candidates on the
// device, the tuner starts from the model's plans (a Pareto front: all its points, or the few
// predicted nearest a target; latency / throughput: the best few) and measures neighbouring
// mappings on this machine with the runner --verify uses, keeping a front of what it measured.
//
// Neighbours of a mapping (neighbour_mappings): one unit on another processor (which also moves a
// region boundary by one unit, and spreads or gathers one part of a split layer), one region
// branch on another processor, one split layer's parts spread over the processors in turn or all
// on one, and the same order in another mode (switch, pipeline, overlap). Every neighbour is an
// order the runtime runs (CostModel::runs, one letter per unit; the executor cuts sub-graphs
// itself). The model ranks a parent's neighbours (by how near their prediction comes to the
// goal, or for a front to dominating the parent's) and the best-predicted are measured first;
// ties in a seeded shuffle (deterministic per seed).
//
// Measuring: in batches of a parent and its next `batch` neighbours, `reps` rounds, each round
// running every member of the batch once in a rotated order, so that the host's drift hits them
// alike; a mapping's numbers are the medians of all its runs (a parent re-measured in each batch
// pools its runs). Parents are taken from the measured front (Pareto) or the best measured
// (latency, throughput, a target), the least expanded first. It stops when the time budget is
// spent (checked before each batch), at `max_candidates` mappings measured, or when no parent
// has neighbours left. These are measurements of this machine at that time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "cli/verify_mappings.h"
#include "planner/dag_cost_model.h"
#include "planner/search.h"

namespace co_up::cli {

struct TuneGoal {
  planner::Objective objective = planner::Objective::kPareto;  // kPareto, kLatency or kThroughput
  // A target point (0: none): at least this throughput, at most this latency. With one, the
  // search aims at min(fps / target_fps, target_ms / ms) (>= 1: met).
  double target_fps = 0;
  double target_ms = 0;
  bool has_target() const { return target_fps > 0 || target_ms > 0; }
  // Higher is better: the target score, else 1 / latency or the throughput; for a front without
  // a target, only the relation below ranks.
  double score(double fps, double ms) const;
};

struct TuneSettings {
  double seconds = 0;                                           // time budget (wall clock)
  size_t max_candidates = std::numeric_limits<size_t>::max();   // mappings measured at most
  int reps = 3;        // runs per mapping per batch
  size_t batch = 4;    // neighbours measured per batch
  size_t starts = 3;   // latency, throughput or a target: the model's best few start
  uint64_t seed = 1;
};

struct TunedMapping {
  planner::Candidate candidate;  // the model's prediction of the run measured
  std::string move;              // "model" for a start point, else the move that made it
  std::vector<double> fps, ms;   // every run
  Measurement measured;          // medians of the runs
  size_t expansions = 0;         // batches it was the parent of
};

struct TuneResult {
  std::vector<TunedMapping> measured;  // in the order first measured
  std::vector<size_t> front;           // into measured: the measured front, by throughput descending
                                       // (latency / throughput / target: the best first)
  size_t runs = 0;
  double seconds = 0;
  std::string stopped;  // why it stopped
};

// One measured run of a mapping (throws when the run fails).
using MappingRunner = std::function<Measurement(const planner::Mapping&)>;

struct Neighbour {
  planner::Mapping mapping;
  std::string move;
};
// The valid neighbours of `mapping` (see above), each distinct and different from it.
std::vector<Neighbour> neighbour_mappings(const planner::DagCostModel& model, const planner::Mapping& mapping);

// `model` predicts the runs `run` measures (planner::DagCostOptions::pipeline_frames). `starts`
// is the model's front or ranked list. `progress` (may be null) gets a line per batch.
TuneResult tune_mappings(const planner::DagCostModel& model, const std::vector<planner::Candidate>& starts,
                         const TuneGoal& goal, const TuneSettings& settings, const MappingRunner& run,
                         std::ostream* progress);

// The measured front with predictions beside and command lines.
void print_tuned(std::ostream& out, const planner::CostModel& model, const TuneGoal& goal, const TuneResult& result);

}  // namespace co_up::cli
