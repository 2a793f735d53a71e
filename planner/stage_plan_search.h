// Planning width-partitioned multi-exit stages (Map-and-Conquer): a search over the stage ->
// processor mapping, each processor's DVFS level and the exit thresholds, with the selection
// scheme of the planner's NSGA-II (non_dominated_sort + crowding_distance, planner/search.h),
// for three objectives: mean latency and mean energy per frame (Eq. 8-14,
// planner/stage_latency_model.h, weighted by how many validation frames stop at each exit) and
// accuracy on the labelled validation set.
//
// P and I are the trained model's (one trained model per (P, I): exit confidences of a model
// trained for another P and I are unknown), so they enter as the fixed structure of the costs.
// Deterministic per seed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "planner/stage_overheads.h"

namespace co_up::planner {

// Every exit's logits on a labelled validation set: logits[(frame * exits + exit) * classes + c].
struct ExitScores {
  size_t frames = 0, exits = 0, classes = 0;
  std::vector<float> logits;
  std::vector<int64_t> labels;  // one per frame
};

// A frame stops at the first exit k < exits-1 whose softmax maximum is >= thresholds[k]; the last
// exit takes every frame left. A threshold above 1 never stops a frame.
struct ExitOutcome {
  double accuracy = 0;                 // correct frames / frames
  std::vector<double> exit_fraction;   // per exit: frames that stop there / frames
};
ExitOutcome evaluate_exit_thresholds(const ExitScores& scores, const std::vector<double>& thresholds);

// The cost of running every stage's sub-layers on one processor at one DVFS level.
struct ProcessorOption {
  char letter = 0;
  int level = 0;                           // as in the layer profile (0: as found)
  double power_w = -1;                     // busy power; < 0: unknown (energy not modelled)
  std::vector<std::vector<double>> tau_ms;  // [stage][sub-layer]: n layers, then the exit
};

struct StageSearchInput {
  std::vector<std::vector<int>> reuse;  // the plan's I: [stage][layer]
  std::vector<ProcessorOption> options;
  // transfer_ms[{from, to}][stage][layer]: moving that stage's layer features between processors.
  std::map<std::pair<char, char>, std::vector<std::vector<double>>> transfer_ms;
  ExitScores scores;
  std::vector<double> threshold_grid = {0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99, 2.0};
  // false: the paper's Eq. 8 (a sub-layer starts when the features it reads are there); true:
  // whole stages, as co_up's executor runs sub-graphs (stage_latency_model.h).
  bool whole_stages = false;
  // Set: the runtime model instead (stage_overheads.h): a frame's stages one after another, plus
  // these dispatch and hand-off costs; whole_stages is then ignored. Orders may then repeat a
  // letter on consecutive stages where its next-stage cost is known (early exits within one
  // processor: each stage a sub-graph on its thread).
  std::optional<StageOverheads> runtime;
  uint64_t seed = 1;
  int generations = 60;
  int population = 40;
};

struct StageCandidate {
  std::string order;                // stage i -> order[i]
  std::vector<int> levels;          // per stage (its processor's level)
  std::vector<double> thresholds;   // per exit but the last
  double latency_ms = 0;            // mean per frame
  double energy_mj = 0;             // mean per frame; < 0: unknown
  double accuracy = 0;
  std::vector<double> exit_fraction;
  std::string source;               // "nsga2", "single processor", "static split"
};

struct StageSearchResult {
  std::vector<StageCandidate> front;  // non-dominated, by latency
  std::vector<StageCandidate> single_processor;  // every stage on one processor, one per option
  std::vector<StageCandidate> static_split;      // distinct processors, no early exit
};

// Throws InputError when there are fewer processors than stages or the shapes disagree.
StageSearchResult search_stage_mappings(const StageSearchInput& input);

// The latency (ms) of a frame that stops at each exit under `input`'s timing model, for a
// candidate's order and levels.
std::vector<double> candidate_exit_latency(const StageSearchInput& input, const StageCandidate& candidate);

// Predicts one candidate (order, levels, thresholds filled in) under `input`.
StageCandidate evaluate_stage_candidate(const StageSearchInput& input, StageCandidate candidate);

}  // namespace co_up::planner
