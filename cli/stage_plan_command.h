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
// --verify --input=TEST.npy --labels=TEST_LABELS.npy [--input-scale=F] [--n=FRAMES] then runs each
// ranked point through the run command (cli/run_inference.h) on that labelled test set.
// Exit status: 0; 2 for bad input; 1 when --verify cannot measure.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "cli/options.h"
#include "cli/stop_signal.h"
#include "planner/stage_plan_search.h"

namespace co_up::cli {

int run_stage_plan_command(const Options& options, StopSignal& stop);

// The co_up arguments that run `candidate` (stage i on candidate.order[i] in pipeline mode, or
// switch mode with --stage-timing=runtime, whose model is one frame in flight; its
// exit thresholds as the runtime's exit policy, `off` for a threshold no frame reaches, and its
// DVFS levels as --frequency when every stage has a table level on a CPU processor).
std::vector<std::string> stage_command_args(const Options& options, const planner::StageCandidate& candidate);
// The same as one shell line, with the levels as a comment.
std::string stage_command_line(const Options& options, const planner::StageCandidate& candidate);

struct VerifiedStageCandidate {
  double latency_ms = 0;  // measured mean per frame
  double accuracy = 0;    // measured on the labelled test set
  std::vector<double> exit_fraction;
  std::vector<double> exit_latency_ms;  // measured mean per exit (0 where no frame stopped)
  std::vector<uint64_t> exit_frames;    // frames that stopped at each exit
  std::string failure;    // non-empty: the run failed (the numbers are 0)
};

// --verify: runs each candidate's arguments plus the labelled test set (options.input,
// options.labels, options.input_scale, options.frames frames) and options.platform/plugins
// through run_inference, one after another, and prints predicted vs measured mean latency and
// accuracy per point. A run that fails is reported in its row; the others still run.
// InputError when --input or --labels is missing.
std::vector<VerifiedStageCandidate> verify_stage_candidates(const Options& options,
                                                            const std::vector<planner::StageCandidate>& candidates,
                                                            StopSignal& stop, std::ostream& out);

}  // namespace co_up::cli
