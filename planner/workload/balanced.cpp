#include <string>

#include "planner/workload_planner.h"

namespace co_up::planner {
namespace {

// Run-time balancing instead of a static split: every network whole (no hand-offs, no pipeline
// bubbles) on the stage band-greedy gives it, with a replica on every other stage of the same
// backend, so that each request runs on whichever processor frees first. What is left to lose is
// the co-run slowdown and the last requests' tail, not a profile error in the balance.
class Balanced final : public WorkloadPlanner {
 public:
  WorkloadPlan plan(const WorkloadProblem& problem) const override {
    WorkloadPlan plan = create_workload_planner("band-greedy")->plan(problem);
    plan.planner = "balanced";
    plan.replica_stages.assign(problem.networks.size(), {});
    size_t replicated = 0;
    for (size_t i = 0; i < problem.networks.size(); ++i) {
      size_t home = 0;
      while (home + 1 < plan.cuts[i].size() && plan.cuts[i][home + 1] == plan.cuts[i][home]) ++home;
      const std::string& backend = home < problem.backends.size() ? problem.backends[home] : "";
      for (size_t k = 0; k < problem.letters.size() && !backend.empty(); ++k) {
        if (k != home && k < problem.backends.size() && problem.backends[k] == backend) {
          plan.replica_stages[i].push_back(k);
        }
      }
      replicated += plan.replica_stages[i].empty() ? 0 : 1;
    }
    plan.note = replicated > 0 ? "whole networks, each request on whichever processor of the same backend frees "
                                 "first (replicas: run-time balancing)"
                               : "no two processors share a backend: band-greedy's placement, no replicas";
    finish_plan(problem, plan);
    return plan;
  }
};

}  // namespace

std::unique_ptr<WorkloadPlanner> create_balanced_planner() { return std::make_unique<Balanced>(); }

}  // namespace co_up::planner
