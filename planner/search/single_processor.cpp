#include "planner/search_algorithm.h"

#include <string>
#include <vector>

#include "planner/search/search_support.h"

namespace co_up::planner {

Candidate best_single_processor(const CostModel& model, Mode mode) {
  const std::vector<int> levels = model.fastest_levels();
  Candidate best;
  for (char letter : model.letters()) {
    Candidate c = make_candidate(model, Mapping{std::string(model.layer_count(), letter), mode, levels},
                                 "single-processor");
    if (best.mapping.order.empty() || better(c.prediction, best.prediction, mode)) best = std::move(c);
  }
  return best;
}

std::unique_ptr<SearchAlgorithm> create_single_processor_search() {
  return std::make_unique<FunctionSearch>([](const SearchInput& in) {
    return std::vector<Candidate>{best_single_processor(*in.model, in.mode)};
  });
}

}  // namespace co_up::planner
