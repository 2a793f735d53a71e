#include <string>

#include "core/error.h"
#include "planner/workload_planner.h"

namespace co_up::planner {

// Factories, one per file in planner/workload/.
std::unique_ptr<WorkloadPlanner> create_alone_best_planner();
std::unique_ptr<WorkloadPlanner> create_band_greedy_planner();
std::unique_ptr<WorkloadPlanner> create_balanced_planner();
std::unique_ptr<WorkloadPlanner> create_hetero2pipe_horizontal_planner();
std::unique_ptr<WorkloadPlanner> create_hetero2pipe_planner();

const std::vector<WorkloadPlannerRegistration>& workload_planner_registry() {
  static const std::vector<WorkloadPlannerRegistration> kRegistry = {
      {"alone-best", "baseline: each network whole on its fastest processor", &create_alone_best_planner},
      {"band-greedy", "baseline: whole networks, heaviest first, earliest finish (Band-style)",
       &create_band_greedy_planner},
      {"balanced", "whole networks, replicas on same-backend processors: each request where a processor frees first",
       &create_balanced_planner},
      {"hetero2pipe-h", "Hetero2Pipe's horizontal DP only (no contention mitigation, no work stealing)",
       &create_hetero2pipe_horizontal_planner},
      {"hetero2pipe", "horizontal DP, contention window (Kuhn-Munkres), work stealing",
       &create_hetero2pipe_planner},
  };
  return kRegistry;
}

std::unique_ptr<WorkloadPlanner> create_workload_planner(std::string_view name) {
  std::string known;
  for (const WorkloadPlannerRegistration& r : workload_planner_registry()) {
    if (r.name == name) return r.create();
    known += (known.empty() ? "" : ", ") + std::string(r.name);
  }
  throw InputError("no workload planner '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace co_up::planner
