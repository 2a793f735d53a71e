// `co_up plan` for a network with parallel regions: the chain planner's candidates (plan(),
// planner/search.h) and the hybrid para/pipe search (planner/hybrid_search.h), all predicted by
// the DAG cost model (planner/dag_cost_model.h) and ranked by the objective.
//   kLatency     switch mode, least one-frame latency
//   kThroughput  pipeline mode, least period (busiest resource)
//   kEnergy      the chain planner's candidates, re-predicted, least energy
//   kPareto      non-dominated in (period, latency, energy when known) over both modes: the
//                mappings each search accepted on its way, each in switch and pipeline mode, and
//                the path from the best pipeline to the least-latency branch assignment, one
//                region at a time ("hybrid-path"), every switch candidate on several
//                processors in overlap mode too, and descents in overlap mode from them under
//                latency bounds ("overlap-descent"); sorted by throughput, descending
// Every candidate's source says which search found it and its kind: "single" (one processor),
// "pipe-only" (pipeline, every region on one processor), "para-only" (switch, some region's
// branches on several processors), "switch" (switch, no region spread), "hybrid" (pipeline with
// a region spread), "split" / "split-pipe" (switch / pipeline with the parts of a split layer on
// several processors; planner/split_plan.h), "overlap" (overlap mode, on several processors).
// A profile taken with --split adds the split search's
// candidates (from one processor, the chain planner's best and each hybrid search's best).
// Deterministic for a seed.
#pragma once

#include <cstdint>
#include <string>

#include "graph/parallel_regions.h"
#include "planner/dag_cost_model.h"
#include "planner/search.h"

namespace co_up::planner {

struct HybridPlanOptions {
  uint64_t seed = 1;
  uint64_t node_budget = 300'000;  // per branch-and-bound run
  // Constraints (0: none): candidates predicted slower or later are dropped; InputError when none
  // is left, naming the best prediction.
  double min_fps = 0;
  double max_latency_ms = 0;
};

PlanResult plan_hybrid(const DagCostModel& model, Objective objective, size_t top,
                       const HybridPlanOptions& options = {});

// "single", "pipe-only", "para-only", "switch", "hybrid", "split", "split-pipe" or "overlap", as
// above.
std::string para_pipe_kind(const DagCostModel& model, const Mapping& mapping);

}  // namespace co_up::planner
