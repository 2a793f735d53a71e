// `co_up profile --workload=FILE.json --profile-out=P.json [--processors=LETTERS]
//  [--repetitions=N] [--coruns=N]`: the workload profile (planner/workload_profile.h).
//
//   1. every network alone: its layers on each processor (cli/layer_profiler.h, interleaved
//      rounds) and the transfers between each pair, as `co_up profile` measures one network;
//   2. co-runs: for each pair of processors P, Q, up to --coruns (default 6) pairs of networks
//      (a on P, b on Q; different networks first), each measured in kCoRunRounds rounds of: a
//      alone on P, b alone on Q, both at once in two threads, about --repetitions/3 frames each
//      (at least 2). Each network runs whole on its processor, switch mode (its own Executor, its
//      own processor thread pinned to its cluster). Solo time = median frame cost of all solo
//      runs; co-run time = solo time x the median over rounds of (median frame cost while the
//      other network ran / that round's solo median), where a frame's cost is its processor
//      thread's CPU time on a one-thread CPU cluster (immune to other processes and to both
//      threads sharing a core for a while) and its wall time elsewhere;
//   3. the slowdown regression (planner/contention_model.h) fitted to two thirds of the co-runs
//      of each processor pair; the other third held out and its error stored and printed.
// The file is written once, at the end (or when stopped by a signal: what was measured so far).
// Throws InputError (exit 2) or RuntimeError (exit 1); returns 0, or 128+signal when stopped.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "cli/options.h"
#include "cli/stop_signal.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/graph.h"

namespace co_up::cli {

inline constexpr int kDefaultCoRunsPerPair = 6;
inline constexpr int kCoRunRounds = 3;  // (a alone, b alone, both) per co-run
// Batch sizes whose whole-network frames are profiled for the affine batch time.
inline constexpr std::array<uint32_t, 3> kProfiledBatches = {1, 2, 4};

int run_workload_profile_command(const Options& options, StopSignal& stop);

// One network whole on one processor, for a co-run.
struct CoRunParty {
  const graph::Graph* graph = nullptr;
  std::vector<std::vector<float>> input;
  std::string order;  // one letter per layer (declined layers of an accelerator on its host)
  int warmup_extra = 0;  // frames a calibrating backend (npu-int8) runs before it is measured
  // Compare frames by the processor thread's CPU time instead of wall time (a one-thread CPU
  // cluster, whose thread does all of the work): time spent waiting for a core is not a slowdown.
  bool cpu_time = false;
};

struct CoRunTimes {
  double solo_us[2] = {0, 0};   // median frame cost alone (every round's solo run pooled)
  double corun_us[2] = {0, 0};  // solo_us x the median over rounds of co-run / solo
  size_t corun_frames[2] = {0, 0};
};

// Measures the two parties alone and at once in rounds (see above), `frames` spread over them. Throws what the Executor throws, or RuntimeError when a party
// completed no frame while the other ran.
CoRunTimes measure_corun(const CoRunParty& a, const CoRunParty& b, const Platform& platform,
                         const PluginRegistry& plugins, int frames);

}  // namespace co_up::cli
