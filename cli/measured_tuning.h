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
// pools its runs). With a reference mapping (TuneSettings::reference: `co_up plan` gives the
// model's best single-processor mapping in switch mode), the reference is one more member of
// every batch's rotation, and each run is also kept as ratios against the median of the
// reference's runs in its own batch (MeasuredRuns::gains): the host's speed drifts by several per
// cent over a minute of runs, and a ratio within one batch cancels that drift where absolute
// numbers, or ratios against a reference measured once before, do not. Rankings then use the
// ratios (an absolute target aside: it is stated in fps and ms); a relative target
// (TuneGoal::target_fps_gain, target_latency_gain: `--tune-target=1.8x,1.3x`) needs them.
// Parents are taken from the measured front (Pareto) or the best measured (latency, throughput,
// a target), the least expanded first. The search stops when its time is spent (checked before
// each batch; the confirmation's expected time is kept back from the budget), at
// `max_candidates` mappings measured, or when no parent has neighbours left.
//
// Confirmation: the best of ~100 mappings measured 3 times each is picked on its own noisy median
// (the winner's curse: its search numbers are biased up). So after the search, the best `confirm`
// (by score; a front without a target: that many spread evenly over it, both ends included) are
// measured `confirm_reps` more times each, every run next to a run of the reference (which of the
// two first alternating), and the pick (TuneResult::pick) is chosen on those runs alone; both
// numbers are kept and printed. These are measurements of this machine at that time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/verify_mappings.h"
#include "planner/dag_cost_model.h"
#include "planner/search.h"

namespace co_up::cli {

// Throughput and latency ratios against the reference: fps / reference fps, reference ms / ms
// (higher is better for both; 0: no reference).
struct Gains {
  double fps = 0;
  double latency = 0;
};

struct TuneGoal {
  planner::Objective objective = planner::Objective::kPareto;  // kPareto, kLatency or kThroughput
  // An absolute target point (0: none): at least this throughput, at most this latency. With one,
  // the search aims at min(fps / target_fps, target_ms / ms) (>= 1: met).
  double target_fps = 0;
  double target_ms = 0;
  // A relative target (0: none; needs TuneSettings::reference): at least this throughput gain and
  // latency gain over the reference, scored on the in-batch ratios:
  // min(gains.fps / target_fps_gain, gains.latency / target_latency_gain).
  double target_fps_gain = 0;
  double target_latency_gain = 0;
  bool has_relative_target() const { return target_fps_gain > 0 || target_latency_gain > 0; }
  bool has_target() const { return target_fps > 0 || target_ms > 0 || has_relative_target(); }
  // Higher is better: the target score, else the latency or throughput gain (with a reference:
  // `gains` non-zero), else 1 / latency or the throughput; for a front without a target, only the
  // dominance relation ranks.
  double score(const Measurement& measured, const Gains& gains) const;
};

// Frames per measured run, at least: `co_up plan --tune` raises a smaller --n to it. A run's
// throughput counts its completions first to last (profiler::summarize), which a frame stalled by
// another process, or a first frame that ended late, moves by their share of the run: on a busy
// 2-core host, GoogLeNet 224 mappings interleaved with B alone varied 19-42 % run to run in their
// ratio to B alone over 10 frames and 5-15 % over 30 (docs/para_pipe.md, "Frames per run"). A run
// of 30 takes 2-3 times one of 10 (setup and warm-up included), so a budget measures that many
// times fewer mappings.
inline constexpr int kTuneFramesPerRun = 30;

struct TuneSettings {
  double seconds = 0;                                           // time budget (wall clock)
  size_t max_candidates = std::numeric_limits<size_t>::max();   // mappings measured at most
  int reps = 3;        // runs per mapping per batch
  size_t batch = 4;    // neighbours measured per batch
  size_t starts = 3;   // latency, throughput or a target: the model's best few start
  uint64_t seed = 1;
  // Measured in every batch, and the runs kept as ratios against it (none: absolute numbers only).
  std::optional<planner::Mapping> reference;
  size_t confirm = 3;    // mappings confirmed after the search (0: none)
  int confirm_reps = 5;  // runs of each in the confirmation, each beside a run of the reference
};

// Runs of one mapping.
struct MeasuredRuns {
  std::vector<double> fps, ms;                 // every run
  std::vector<double> fps_gain, latency_gain;  // with a reference: each run against it (see above)
  Measurement median;                          // medians of fps, ms
  Gains gains;                                 // medians of the ratios (0 without a reference)
  bool empty() const { return fps.empty(); }
  void summarize();                            // sets median and gains from the runs
};

struct TunedMapping {
  planner::Candidate candidate;  // the model's prediction of the run measured
  std::string move;              // "model" for a start point, else the move that made it
  MeasuredRuns search;           // the search's runs
  MeasuredRuns confirmation;     // the confirmation's runs (empty: not confirmed)
  size_t expansions = 0;         // batches it was the parent of
};

struct TuneResult {
  std::vector<TunedMapping> measured;  // in the order first measured
  std::vector<size_t> front;           // into measured: the measured front, by throughput descending
                                       // (latency / throughput / target: the best first)
  MeasuredRuns reference;              // the reference's runs, search and confirmation (empty: none)
  std::vector<size_t> confirmed;       // into measured: those confirmed, by confirmation score (a
                                       // front without a target: by confirmed throughput)
  size_t pick = 0;                     // into measured: the best confirmed (latency / throughput /
                                       // target); measured.size() when there is none
  size_t runs = 0;                     // every run, the reference's and the confirmation's included
  size_t confirmation_runs = 0;
  double seconds = 0;
  std::string stopped;  // why the search stopped
  bool has_pick() const { return pick < measured.size(); }
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
// is the model's front or ranked list. `progress` (may be null) gets a line per batch. Throws
// std::invalid_argument for a relative target without a reference, and what the reference's run
// throws.
TuneResult tune_mappings(const planner::DagCostModel& model, const std::vector<planner::Candidate>& starts,
                         const TuneGoal& goal, const TuneSettings& settings, const MappingRunner& run,
                         std::ostream* progress);

// The measured front with predictions beside and command lines, then the confirmation.
void print_tuned(std::ostream& out, const planner::CostModel& model, const TuneGoal& goal, const TuneResult& result);

}  // namespace co_up::cli
