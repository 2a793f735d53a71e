// Parallel regions: the parts of a DAG whose branches are independent between one fork and one
// join (inception modules, Q/K/V projections of attention, detector heads, ResNet's projection
// shortcut), as Para-Pipe's subgraph identification finds them. What latency planning spreads over
// several processors inside one stage.
//
// Definition (on any DAG whose vertices are numbered in topological order): a fork is a vertex
// with two or more successors; its join is its immediate post-dominator (the first vertex every
// path from the fork to the end passes through; kDagExit when the paths only meet at the end, as
// detector heads that are separate graph outputs do). The vertices strictly between them — those
// reachable from the fork without passing the join — fall into weakly connected components: the
// branches. A region is reported when it has two or more non-empty branches and no vertex inside
// reads a vertex produced after the fork outside the region (so the branches can start as soon as
// the fork is done). Direct fork->join edges (a residual block's identity skip) are not branches.
// The result depends only on the DAG's structure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace co_up::graph {

inline constexpr uint32_t kDagExit = UINT32_MAX;

struct DagRegion {
  uint32_t fork = 0;
  uint32_t join = kDagExit;
  // Each branch's vertices, ascending; branches ordered by their first vertex.
  std::vector<std::vector<uint32_t>> branches;
};

// `successors[v]`: the vertices v feeds, each > v. `to_exit[v]` (may be empty: all false): v also
// feeds the end (a graph output). A vertex with no successors feeds the end. Regions ascending by
// fork. Throws std::logic_error when a successor is not after its vertex.
std::vector<DagRegion> find_dag_regions(const std::vector<std::vector<uint32_t>>& successors,
                                        const std::vector<bool>& to_exit = {});

struct RegionBranch {
  std::vector<NodeId> nodes;   // ascending (topological)
  uint32_t first_layer = 0;    // layer units its nodes lie in
  uint32_t last_layer = 0;
  int64_t macs = 0;
};

struct ParallelRegion {
  NodeId fork = kNoNode;  // the node whose output the branches read (an Input node for a fork at the input)
  NodeId join = kNoNode;  // kNoNode: the branches end as separate graph outputs
  std::vector<RegionBranch> branches;
  int64_t macs = 0;       // all branches
  double cost_share = 0;  // macs / the graph's macs (0 for a graph without macs)
};

// The regions of the operator graph (Input nodes included as possible forks; constants are not
// vertices).
std::vector<ParallelRegion> find_parallel_regions(const Graph& graph);

// Layer-unit DAG: `predecessors[u]` are the units (!= u) whose nodes produce a tensor a node of
// unit u reads, ascending; `outputs[u]` whether unit u produces a graph output; `inputs[u]`
// whether a node of unit u reads a graph input. Units are contiguous in topological order, so
// every predecessor is < u.
struct UnitDag {
  std::vector<std::vector<uint32_t>> predecessors;
  std::vector<bool> outputs;
  std::vector<bool> inputs;
  // Per unit: switch mode may share every tensor it passes to a later unit in place
  // (shareable_boundary). Empty: unknown, every unit's may.
  std::vector<bool> shareable;
  std::vector<std::vector<uint32_t>> successors() const;
};
UnitDag unit_dag(const Graph& graph);

// The regions of the layer-unit DAG (what an order string can spread over processors).
std::vector<DagRegion> find_unit_regions(const UnitDag& dag);

// One line per region, as `co_up --list-regions` prints it:
// "inception_3a: fork pool2/3x3_s2 -> join inception_3a/output, 4 branches, 11.2 % of MACs: [...]"
std::vector<std::string> describe_parallel_regions(const Graph& graph,
                                                   const std::vector<ParallelRegion>& regions);

}  // namespace co_up::graph
