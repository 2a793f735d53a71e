#include <algorithm>
#include <numeric>

#include "planner/workload_planner.h"

namespace co_up::planner {
namespace {

// Band schedules each model's sub-graphs on the processor with the earliest expected finish;
// without NPU fallback a model is one sub-graph, so this is list scheduling of whole networks,
// heaviest first, on the per-frame load of each processor.
class BandGreedy final : public WorkloadPlanner {
 public:
  WorkloadPlan plan(const WorkloadProblem& problem) const override {
    const size_t n = problem.networks.size();
    const size_t stages = problem.letters.size();
    const auto alone = [&](size_t i, size_t k) {
      const NetworkCosts& c = problem.networks[i];
      return stage_us(c, k, 0, c.layers());
    };
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    const auto best_alone = [&](size_t i) {
      double b = alone(i, 0);
      for (size_t k = 1; k < stages; ++k) b = std::min(b, alone(i, k));
      return b;
    };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return best_alone(a) > best_alone(b); });
    std::vector<double> load(stages, 0.0);
    std::vector<long> placed(n, -1);
    const bool contention = problem.interference.networks() == n && problem.interference.stages() == stages;
    for (size_t i : order) {
      size_t pick = 0;
      double pick_finish = 0;
      for (size_t k = 0; k < stages; ++k) {
        double slow = 0;  // the worst co-runner already placed elsewhere
        if (contention) {
          for (size_t j = 0; j < n; ++j) {
            if (placed[j] >= 0 && static_cast<size_t>(placed[j]) != k) {
              slow = std::max(slow, problem.interference.at(i, k, j, static_cast<size_t>(placed[j])));
            }
          }
        }
        const double finish = load[k] + alone(i, k) * (1 + slow);
        if (k == 0 || finish < pick_finish) {
          pick = k;
          pick_finish = finish;
        }
      }
      placed[i] = static_cast<long>(pick);
      load[pick] = pick_finish;
    }
    WorkloadPlan plan;
    plan.planner = "band-greedy";
    for (size_t i = 0; i < n; ++i) {
      plan.cuts.push_back(single_stage_cuts(problem.networks[i].layers(), stages, static_cast<size_t>(placed[i])));
    }
    plan.sequence = order;
    plan.note = "whole networks, heaviest first, each on the processor finishing it earliest";
    finish_plan(problem, plan);
    return plan;
  }
};

}  // namespace

std::unique_ptr<WorkloadPlanner> create_band_greedy_planner() { return std::make_unique<BandGreedy>(); }

}  // namespace co_up::planner
