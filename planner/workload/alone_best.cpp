#include "planner/workload_planner.h"

namespace co_up::planner {
namespace {

class AloneBest final : public WorkloadPlanner {
 public:
  WorkloadPlan plan(const WorkloadProblem& problem) const override {
    WorkloadPlan plan;
    plan.planner = "alone-best";
    for (const NetworkCosts& c : problem.networks) {
      size_t best = 0;
      for (size_t k = 1; k < c.stages(); ++k) {
        if (stage_us(c, k, 0, c.layers()) < stage_us(c, best, 0, c.layers())) best = k;
      }
      plan.cuts.push_back(single_stage_cuts(c.layers(), c.stages(), best));
    }
    plan.note = "each network whole on its fastest processor alone";
    finish_plan(problem, plan);
    return plan;
  }
};

}  // namespace

std::unique_ptr<WorkloadPlanner> create_alone_best_planner() { return std::make_unique<AloneBest>(); }

}  // namespace co_up::planner
