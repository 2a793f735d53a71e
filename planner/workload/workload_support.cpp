#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "planner/workload_planner.h"

namespace co_up::planner {

WorkloadProblem reorder_stages(const WorkloadProblem& problem, const std::string& letters) {
  std::string a = letters, b = problem.letters;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a != b) throw InputError("stage order '" + letters + "' is not a permutation of '" + problem.letters + "'");
  std::vector<size_t> from(letters.size());
  for (size_t k = 0; k < letters.size(); ++k) from[k] = problem.letters.find(letters[k]);
  WorkloadProblem out;
  out.letters = letters;
  out.simulation = problem.simulation;
  out.batches = problem.batches;
  for (size_t k : from) out.backends.push_back(k < problem.backends.size() ? problem.backends[k] : "");
  for (const NetworkCosts& c : problem.networks) {
    NetworkCosts r;
    r.name = c.name;
    for (size_t k : from) {
      r.layer_us.push_back(c.layer_us[k]);
      r.send_us.push_back(c.send_us[k]);
      r.receive_us.push_back(c.receive_us[k]);
      r.input_us.push_back(c.input_us[k]);
    }
    out.networks.push_back(std::move(r));
  }
  const size_t n = problem.networks.size();
  if (problem.interference.networks() == n && problem.interference.stages() == letters.size()) {
    out.interference = Interference(n, letters.size());
    for (size_t x = 0; x < n; ++x)
      for (size_t kx = 0; kx < letters.size(); ++kx)
        for (size_t y = 0; y < n; ++y)
          for (size_t ky = 0; ky < letters.size(); ++ky)
            out.interference.set(x, kx, y, ky, problem.interference.at(x, from[kx], y, from[ky]));
  }
  return out;
}

void finish_plan(const WorkloadProblem& problem, WorkloadPlan& plan) {
  plan.stage_letters = problem.letters;
  if (plan.sequence.empty()) {
    plan.sequence.resize(problem.networks.size());
    std::iota(plan.sequence.begin(), plan.sequence.end(), size_t{0});
  }
  plan.orders.clear();
  for (const StageCuts& c : plan.cuts) plan.orders.push_back(order_of(c, problem.letters));
  plan.replicas.assign(plan.cuts.size(), {});
  for (size_t i = 0; i < plan.replica_stages.size() && i < plan.cuts.size(); ++i) {
    for (size_t k : plan.replica_stages[i]) {
      plan.replicas[i].push_back(order_of(single_stage_cuts(problem.networks[i].layers(), problem.letters.size(), k),
                                          problem.letters));
    }
  }
  plan.predicted = simulate(problem.networks, plan.cuts, plan.sequence, problem.interference, problem.simulation,
                            plan.replica_stages);
}

}  // namespace co_up::planner
