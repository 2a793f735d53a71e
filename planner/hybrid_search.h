// Hybrid para/pipe search (Para-Pipe): mappings where each pipeline stage is one processor or a
// parallel region spread over several (a branch-to-processor assignment), scored by the DAG cost
// model (planner/dag_cost_model.h).
//
// Genes: sets of layer units that take one letter. When letters^units <= exhaustive_limit every
// unit is its own gene, so the space is every order and the branch-and-bound result equals brute
// force. Otherwise each branch of a unit-level parallel region (graph::find_unit_regions; a unit in
// nested regions goes with the innermost branch) is one gene and every other unit is one: a stage
// is then a run of units on one processor, or a region whose branches go to several.
//
// Search: coordinate descent over genes from the starts, every single-processor order and a
// list-scheduling order (units on their fastest processor, each region's branches longest first to
// the processor that finishes them first) (gene
// order shuffled by `seed`, so a plan is reproducible per seed) gives the incumbent; then a
// depth-first branch-and-bound over genes in unit order, letters tried incumbent-first, pruned by
// DagCostModel's lower bounds and (for the pipeline period) total fastest work over the
// resources; for latency also over the processors. It stops after `node_budget` nodes: `exact`
// says whether it finished, i.e. whether `best` is optimal in its space.
// Objective: switch mode, the one-frame latency; pipeline mode, the period (busiest resource).
// Ties keep the first found. DVFS levels fixed per search (empty: the fastest).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/parallel_regions.h"
#include "planner/dag_cost_model.h"
#include "planner/search.h"

namespace co_up::planner {

struct HybridSearchOptions {
  Mode mode = Mode::kSwitch;
  std::vector<int> levels;  // empty: CostModel::fastest_levels()
  uint64_t seed = 1;
  uint64_t node_budget = 2'000'000;
  double exhaustive_limit = 2e6;
  std::vector<Mapping> starts;  // orders to begin the descent from (their levels are ignored)
};

struct HybridSearchResult {
  Candidate best;
  // Every mapping the descent and the search accepted as a new best, in the order found (for a
  // Pareto front across modes).
  std::vector<Mapping> improvements;
  bool exact = false;       // branch-and-bound finished within the budget
  bool every_order = false; // one gene per unit
  uint64_t nodes = 0;
};

// Throws InputError for levels that do not fit the model.
HybridSearchResult hybrid_search(const DagCostModel& model, const HybridSearchOptions& options);

// The genes as above (unit lists ascending, genes by first unit).
std::vector<std::vector<uint32_t>> hybrid_genes(const graph::UnitDag& dag, size_t letters,
                                                double exhaustive_limit);

// A chain of `units` units (each reads the one before; the last is the output): the DAG of a
// network without known structure.
graph::UnitDag chain_dag(uint32_t units);

}  // namespace co_up::planner
