#include "planner/search_algorithm.h"

#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "planner/search/search_support.h"

namespace co_up::planner {

Candidate refine_pipeline(const CostModel& model, const Candidate& start, int max_rounds, double margin) {
  Candidate best = start;
  best.mapping = model.normalized(best.mapping);
  best.prediction = model.predict(best.mapping);
  const Candidate first = best;
  const std::string& letters = model.letters();
  const uint32_t n = model.layer_count();
  bool changed = false;
  for (int round = 0; round < max_rounds; ++round) {
    Candidate round_best = best;
    auto consider = [&](Mapping&& m) {
      m = model.normalized(std::move(m));
      Prediction p = model.predict(m);
      if (better(p, round_best.prediction, best.mapping.mode)) {
        round_best.mapping = std::move(m);
        round_best.prediction = p;
      }
    };
    for (uint32_t i = 0; i < n; ++i) {  // move one layer to another processor
      for (char c : letters) {
        if (c == best.mapping.order[i]) continue;
        Mapping m = best.mapping;
        m.order[i] = c;
        consider(std::move(m));
      }
    }
    for (uint32_t i = 0; i < n; ++i) {  // swap the processors of two layers
      for (uint32_t j = i + 1; j < n; ++j) {
        if (best.mapping.order[i] == best.mapping.order[j]) continue;
        Mapping m = best.mapping;
        std::swap(m.order[i], m.order[j]);
        consider(std::move(m));
      }
    }
    if (!better(round_best.prediction, best.prediction, best.mapping.mode)) break;
    best = std::move(round_best);
    changed = true;
  }
  // Hill climbing only sees the prediction; more sub-graphs must also beat the model's error.
  if (subgraph_count(model, best.mapping.order) > subgraph_count(model, first.mapping.order) &&
      !worth_more_subgraphs(best.prediction, first.prediction, margin)) {
    return first;
  }
  if (changed) best.source = "refined";
  return best;
}

std::unique_ptr<SearchAlgorithm> create_refine_search() {
  return std::make_unique<FunctionSearch>([](const SearchInput& in) {
    if (in.starts.empty()) throw InputError("search 'refine' needs a start mapping");
    return std::vector<Candidate>{refine_pipeline(*in.model, in.starts.front(), 100, in.margin)};
  });
}

}  // namespace co_up::planner
