// One interface for the mapping searches, and the registry that names them.
//
// Each algorithm lives in its own file under planner/search/ and is reachable by name through
// search_registry() (planner/search_registry.cpp, the one list): a new algorithm is a new file
// plus one registration line there. plan() (planner/search.h) composes them by name. The
// registry is a plain function-local table, filled on first use — no static registrars.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "graph/parallel_regions.h"
#include "planner/search.h"

namespace co_up::planner {

struct SearchInput {
  const CostModel* model = nullptr;  // required; must outlive the search
  Mode mode = Mode::kPipeline;       // the mode searched for (shortest-path is switch-mode only)
  std::vector<int> levels;           // DVFS levels of the exact searches; empty: fastest
  // Where local and evolutionary searches begin: refine from the first, nsga2 seeded with all.
  std::vector<Candidate> starts;
  uint64_t seed = 1;                  // nsga2
  int generations = 0;                // nsga2; 0: Nsga2Options' default
  double margin = kSubgraphGainMargin;  // refine: what more sub-graphs must gain
  // hybrid: the network's layer-unit DAG (must outlive the search); null: a chain of units.
  const graph::UnitDag* dag = nullptr;
};

class SearchAlgorithm {
 public:
  virtual ~SearchAlgorithm() = default;
  // Candidates for `input`, best first. Throws InputError for an input the algorithm cannot use.
  virtual std::vector<Candidate> search(const SearchInput& input) const = 0;
};

// An algorithm that is one stateless function of its input.
class FunctionSearch final : public SearchAlgorithm {
 public:
  using Function = std::vector<Candidate> (*)(const SearchInput&);
  explicit FunctionSearch(Function function) : function_(function) {}
  std::vector<Candidate> search(const SearchInput& input) const override { return function_(input); }

 private:
  Function function_;
};

struct SearchRegistration {
  std::string_view name;     // "dp", "nsga2", ...
  std::string_view summary;  // one line: what it finds
  std::unique_ptr<SearchAlgorithm> (*create)();
};

// Every algorithm, in registration order.
const std::vector<SearchRegistration>& search_registry();
// Throws InputError naming the registered algorithms when `name` is none of them.
std::unique_ptr<SearchAlgorithm> create_search(std::string_view name);
// create_search(name)->search(input).
std::vector<Candidate> run_search(std::string_view name, const SearchInput& input);

}  // namespace co_up::planner
