// `co_up plan`: the best mappings of a profiled network, predicted by the planner's cost model.
//
//   co_up plan --profile=FILE [--objective=throughput|latency|energy|pareto] [--top=K]
//              [--seed=N] [--graph=NAME | --model=FILE [--units=...] [--image-size=N]] [--verify]
//
// FILE is a layer profile written by `co_up profile` (planner/layer_profile.h). Prints the top K
// mappings (default 5) as ready-to-run co_up command lines with predicted throughput, latency
// and energy per frame, then the best single processor and HEFT baselines. --graph/--model, when
// given, must name the profiled network (same name, units and layer count), else exit 2.
// throughput, energy and pareto plan pipeline mode; latency plans switch mode. --seed seeds
// NSGA-II (the plan is deterministic for a seed). --verify runs the planned mappings and prints
// predicted vs measured (cli/verify_mappings.h).
// Exit status: 0, 2 for bad input (unreadable or mismatched profile, bad objective), 1 otherwise.
#pragma once

#include "cli/options.h"
#include "cli/stop_signal.h"

namespace co_up::cli {

int run_plan_command(const Options& options, StopSignal& stop);  // stop: --verify's runs

}  // namespace co_up::cli
