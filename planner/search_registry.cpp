#include "planner/search_algorithm.h"

#include <string>

#include "core/error.h"

namespace co_up::planner {

// Factories, one per file in planner/search/.
std::unique_ptr<SearchAlgorithm> create_pipeline_dp_search();
std::unique_ptr<SearchAlgorithm> create_pipeline_dp_per_subset_search();
std::unique_ptr<SearchAlgorithm> create_shortest_path_search();
std::unique_ptr<SearchAlgorithm> create_refine_search();
std::unique_ptr<SearchAlgorithm> create_nsga2_search();
std::unique_ptr<SearchAlgorithm> create_single_processor_search();
std::unique_ptr<SearchAlgorithm> create_heft_search();
std::unique_ptr<SearchAlgorithm> create_hybrid_search();
std::unique_ptr<SearchAlgorithm> create_split_search();

const std::vector<SearchRegistration>& search_registry() {
  static const std::vector<SearchRegistration> kRegistry = {
      {"dp", "pipeline: best contiguous stages, exact", &create_pipeline_dp_search},
      {"dp-per-subset", "pipeline: best contiguous stages per set of processors, best first",
       &create_pipeline_dp_per_subset_search},
      {"shortest-path", "switch: least latency over layers x processors, exact",
       &create_shortest_path_search},
      {"refine", "non-contiguous hill climbing from the first start", &create_refine_search},
      {"nsga2", "Pareto front over order and DVFS levels, seeded with the starts",
       &create_nsga2_search},
      {"single-processor", "baseline: the best one processor for the mode",
       &create_single_processor_search},
      {"heft", "baseline: HEFT list scheduling of one frame", &create_heft_search},
      {"hybrid", "stages on one processor or a parallel region's branches over several, branch-and-bound",
       &create_hybrid_search},
      {"split", "which --split layers' parts run on several processors at once, exact or descent",
       &create_split_search},
  };
  return kRegistry;
}

std::unique_ptr<SearchAlgorithm> create_search(std::string_view name) {
  std::string known;
  for (const SearchRegistration& r : search_registry()) {
    if (r.name == name) return r.create();
    known += (known.empty() ? "" : ", ") + std::string(r.name);
  }
  throw InputError("no search algorithm '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<Candidate> run_search(std::string_view name, const SearchInput& input) {
  if (input.model == nullptr) throw InputError("search '" + std::string(name) + "' needs a cost model");
  return create_search(name)->search(input);
}

}  // namespace co_up::planner
