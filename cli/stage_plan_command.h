// `co_up plan` for width-partitioned multi-exit stages (Map-and-Conquer, docs/map_and_conquer.md):
//
//   co_up plan --model=M.onnx --stage-plan=FILE | --stages=P:...;I:...  --profile=PROFILE
//              --exit-logits=V.npy --exit-labels=L.npy [--objective=latency|energy|accuracy|pareto]
//              [--top=K] [--seed=N] [--verify]
//
// PROFILE is a layer profile of M with --units=ops (`co_up profile --model=M --units=ops`): every
// convolution and classifier is its own unit, so each stage's sub-layers have their own times on
// every processor and DVFS level (and power, when profiled). V.npy holds every exit's logits on
// a labelled validation set ([frames, exits, classes]; scripts/train_map_and_conquer.py writes
// them), L.npy its labels. The search (planner/stage_plan_search.h) maps stages to distinct
// processors, picks DVFS levels and exit thresholds; printed: the front ranked by the objective
// (latency and energy rank the points within 1 percentage point of the last exit's accuracy),
// and the baselines best single processor and static (no-exit) width split.
// Exit status: 0; 2 for bad input; 1 when --verify cannot measure.
#pragma once

#include <ostream>
#include <vector>

#include "cli/options.h"
#include "planner/stage_plan_search.h"

namespace co_up::cli {

int run_stage_plan_command(const Options& options);

// The co_up command line that runs `candidate` (stage i on candidate.order[i], its exit
// thresholds as the runtime's exit policy).
std::string stage_command_line(const Options& options, const planner::StageCandidate& candidate);

// --verify: runs each candidate's command line on the labelled test set and prints predicted vs
// measured latency, energy and accuracy. Needs the runtime's early exits (--exit with a
// per-exit threshold list and a labelled input set); until a build has them it throws
// RuntimeError saying so, and measures nothing.
void verify_stage_candidates(const Options& options, const std::vector<planner::StageCandidate>& candidates,
                             std::ostream& out);

}  // namespace co_up::cli
