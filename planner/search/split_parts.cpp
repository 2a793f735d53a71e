// "split": which split layers' parts to spread over the processors (planner/split_plan.h), from
// the first start (or the best single processor) in the input's mode.
#include <memory>

#include "planner/hybrid_search.h"
#include "planner/search_algorithm.h"
#include "planner/split_plan.h"

namespace co_up::planner {

std::unique_ptr<SearchAlgorithm> create_split_search() {
  return std::make_unique<FunctionSearch>([](const SearchInput& input) {
    const graph::UnitDag dag = input.dag != nullptr ? *input.dag : chain_dag(input.model->layer_count());
    const DagCostModel dag_model(*input.model, dag);
    std::string base = input.starts.empty() ? std::string() : input.starts.front().mapping.order;
    if (base.empty()) {
      SearchInput single = input;
      single.starts.clear();
      base = run_search("single-processor", single).front().mapping.order;
    }
    SplitPlanOptions options;
    options.mode = input.mode;
    options.levels = input.levels;
    return std::vector<Candidate>{plan_splits(dag_model, base, options).best};
  });
}

}  // namespace co_up::planner
