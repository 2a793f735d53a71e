#include "planner/search_algorithm.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "planner/search/search_support.h"

namespace co_up::planner {

Candidate heft(const CostModel& model, Mode mode) {
  const std::vector<int> levels = model.fastest_levels();
  const uint32_t n = model.layer_count();
  const size_t n_proc = model.letters().size();
  // Upward rank over the layer chain: mean compute + mean transfer to the successor + its rank.
  std::vector<double> rank(n, 0.0);
  for (uint32_t i = n; i-- > 0;) {
    double compute = 0;
    for (size_t p = 0; p < n_proc; ++p) compute += model.layer_us(i, p, levels);
    compute /= static_cast<double>(n_proc);
    double transfer = 0;
    if (i + 1 < n && n_proc > 1) {
      for (size_t p = 0; p < n_proc; ++p) {
        for (size_t q = 0; q < n_proc; ++q) transfer += model.send_us(i, p, q, mode) + model.receive_us(i, p, q, mode);
      }
      transfer /= static_cast<double>(n_proc * n_proc);  // HEFT's mean: pairs incl. same-processor 0
    }
    rank[i] = compute + transfer + (i + 1 < n ? rank[i + 1] : 0.0);
  }
  std::vector<uint32_t> tasks(n);
  std::iota(tasks.begin(), tasks.end(), 0u);
  std::stable_sort(tasks.begin(), tasks.end(), [&](uint32_t a, uint32_t b) { return rank[a] > rank[b]; });

  std::vector<double> resource_free(model.resource_count(), 0.0);
  std::vector<double> finish(n, 0.0);
  std::string order(n, '?');
  for (uint32_t i : tasks) {  // a chain: predecessors come first in rank order
    double best_finish = kInf;
    size_t best_p = 0;
    for (size_t p = 0; p < n_proc; ++p) {
      double ready = 0;
      if (i == 0) {
        ready = model.input_us(p);
      } else {
        const size_t prev = model.index_of(order[i - 1]);
        ready = finish[i - 1] + model.send_us(i - 1, prev, p, mode) + model.receive_us(i - 1, prev, p, mode);
      }
      const double eft = std::max(ready, resource_free[model.resource_of(p)]) + model.layer_us(i, p, levels);
      if (eft < best_finish) {
        best_finish = eft;
        best_p = p;
      }
    }
    order[i] = model.letters()[best_p];
    finish[i] = best_finish;
    resource_free[model.resource_of(best_p)] = best_finish;
  }
  return make_candidate(model, Mapping{order, mode, levels}, "heft");
}

std::unique_ptr<SearchAlgorithm> create_heft_search() {
  return std::make_unique<FunctionSearch>([](const SearchInput& in) {
    return std::vector<Candidate>{heft(*in.model, in.mode)};
  });
}

}  // namespace co_up::planner
