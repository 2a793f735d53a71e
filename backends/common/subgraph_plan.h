// A whole sub-graph decoded for compilation: every node through decode_node, and the data flow
// checked (each tensor a node reads is a constant, a sub-graph input or written by an earlier
// node; nothing written twice; every sub-graph output written). What a backend then allocates,
// packs and launches is its own business.
#pragma once

#include <cstdint>
#include <vector>

#include "co_up/plugin_abi.h"
#include "node_decode.h"

namespace co_up::backends {

struct SubgraphPlan {
  std::vector<NodePlan> nodes;    // per node, in the description's (topological) order
  std::vector<uint32_t> inputs;   // tensor index per sub-graph input
  std::vector<uint32_t> outputs;  // tensor index per sub-graph output
  std::vector<bool> is_input;     // per tensor
  std::vector<bool> is_output;    // per tensor
};

// Throws PluginError (UNSUPPORTED or INVALID_ARGUMENT). `graph` has passed check_graph.
SubgraphPlan plan_subgraph(const DecodeRules& rules, const co_up_subgraph_desc& graph);

}  // namespace co_up::backends
