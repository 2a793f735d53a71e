// Planners for a workload of several networks sharing the processors, and the registry that
// names them (the counterpart of search_algorithm.h for one network). Each algorithm lives in its
// own file under planner/workload/ and is registered once in workload_planner_registry.cpp.
//
//   alone-best         baseline: each network whole on the processor where it runs fastest alone
//   band-greedy        baseline (Band, MobiSys'22, without NPU fallback): networks, heaviest
//                      first, each whole on the processor that finishes it earliest given what is
//                      already placed there and the slowdown predicted from the other processors
//   hetero2pipe-h      Hetero2Pipe without contention mitigation and work stealing (its "No C/T"
//                      ablation): horizontal DP per network, the best pipeline order of processors
//   balanced           every network whole, with a replica on every other stage of the same
//                      backend: each request runs on whichever processor frees first (run-time
//                      balancing, no hand-offs); networks without such stages as band-greedy
//   hetero2pipe        the paper's two steps: horizontal DP, contention-window re-arrangement
//                      (Kuhn-Munkres), vertical alignment by work stealing; the vertical step
//                      also runs from band-greedy's placement, and the balanced plan is a
//                      candidate too: the best predicted is kept (work stealing is a local
//                      search: docs/hetero2pipe_planning.md)
// Every plan is predicted by planner/hetero2pipe.h's simulate() under the same contention table,
// so the plans compare like for like. Threading: pure functions.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "planner/hetero2pipe.h"

namespace co_up::planner {

struct WorkloadProblem {
  std::string letters;                 // the processors, as the costs' stages are ordered
  std::vector<NetworkCosts> networks;  // stage k of every network = processor letters[k]
  Interference interference;           // networks x letters; empty: no contention
  SimulationSettings simulation;
  // Per stage: the backend plugin that runs it ("" unknown). Stages with the same non-empty one
  // compute the same bits, so a network may have replicas on them (run-time balancing).
  std::vector<std::string> backends;
  // Per network: requests per frame the planner chose (workload_problem; 1: unbatched). A batched
  // network's costs are per request, so every planner and the simulator count requests alike.
  std::vector<uint32_t> batches;
};

struct WorkloadPlan {
  std::string planner;
  std::string stage_letters;          // the pipeline order the cuts refer to
  std::vector<StageCuts> cuts;        // per network, in the problem's network order
  std::vector<size_t> sequence;       // request order of one cycle (network indices)
  std::vector<std::string> orders;    // per network: its --order string
  // Per network (or empty: none): stages that also run the whole network, each request on
  // whichever takes it first; the network's cuts then put it whole on one stage.
  std::vector<std::vector<size_t>> replica_stages;
  std::vector<std::vector<std::string>> replicas;  // per network: the replicas' --order strings
  SimulationResult predicted;
  std::string note;                   // what the planner did, one line
};

// The problem with its stages permuted to `letters` (a permutation of problem.letters).
WorkloadProblem reorder_stages(const WorkloadProblem& problem, const std::string& letters);
// Fills stage_letters, orders and predicted from cuts and sequence.
void finish_plan(const WorkloadProblem& problem, WorkloadPlan& plan);

class WorkloadPlanner {
 public:
  virtual ~WorkloadPlanner() = default;
  virtual WorkloadPlan plan(const WorkloadProblem& problem) const = 0;
};

struct WorkloadPlannerRegistration {
  std::string_view name;
  std::string_view summary;
  std::unique_ptr<WorkloadPlanner> (*create)();
};

const std::vector<WorkloadPlannerRegistration>& workload_planner_registry();
// Throws InputError naming the registered planners when `name` is none of them.
std::unique_ptr<WorkloadPlanner> create_workload_planner(std::string_view name);

}  // namespace co_up::planner
