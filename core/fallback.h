// NPU fallback (--npu_fallback=B|L|G): before a run is set up, the layers an accelerator cannot
// run move to another processor, and the placement used is reported, never silent.
//
// Without the option an unsupported node fails the Executor's setup with
// unsupported_node_message(); with it, plan_npu_fallback() asks each accelerator first, through the
// same capability query (device_query_node) the Executor uses.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "co_up/plugin_abi.h"
#include "core/bound_processor.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/graph.h"

namespace co_up {

// An accelerator is a processor of kind "npu" or "dsp": it compiles whole partitions, so one
// node it cannot run makes its whole layer move.
bool is_accelerator(const ProcessorSpec& spec);

struct FallbackMove {
  uint32_t layer = 0;
  std::string layer_name;
  char from = 0;  // the accelerator letter it left
  std::string backend;  // the accelerator's plugin ("" when none was available)
  std::string node;     // the first node of the layer the accelerator declined ("" when no plugin)
  std::string op;
  std::string reason;  // the plugin's own reason, or why there was no plugin
};

struct FallbackPlan {
  std::string order;                // the order to run with
  std::vector<FallbackMove> moves;  // ascending layer
  // For stderr, one line per entry: the summary ("npu fallback: layers 3 (conv4), 5 (fc6) → B;
  // order BBLGGBNN"), then each moved layer with its node, op and reason. Empty when `order` maps
  // nothing to an accelerator.
  std::vector<std::string> report;
};

// For each accelerator letter of `order`, creates its device as the Executor would (first loaded
// backend of its platform entry, same device options) and queries every node of its sub-graphs;
// each layer with a declined node moves to `fallback`. Repeats on the new order until every
// accelerator sub-graph is supported throughout, because moving a layer reshapes the sub-graphs
// next to it. An accelerator with no loaded plugin loses all its layers, with the registry's
// reason. Throws InputError when the order does not fit the graph, or `fallback` is not a
// processor of the platform or is itself an accelerator; device errors propagate.
FallbackPlan plan_npu_fallback(const graph::Graph& graph, const std::string& order,
                               const Platform& platform, const PluginRegistry& registry,
                               char fallback);

// What plan_npu_fallback learnt on the way, for the Placement that runs its order: the
// accelerator devices it opened (bound as a run binds them) and the sub-graphs (letter, first
// layer, last layer) whose every node their accelerator supports, so they are not asked again.
struct FallbackProbe {
  std::map<char, BoundProcessor> devices;
  std::set<std::tuple<char, uint32_t, uint32_t>> supported;
};
FallbackPlan plan_npu_fallback(const graph::Graph& graph, const std::string& order,
                               const Platform& platform, const PluginRegistry& registry,
                               char fallback, FallbackProbe& probe);

// The error for a node that `processor` cannot run: layer index and name, node, op, processor,
// backend and the plugin's reason, and what to do (for accelerators, --npu_fallback).
std::string unsupported_node_message(const graph::Graph& graph, const co_up_node_desc& node,
                                     const ProcessorSpec& processor, const std::string& backend,
                                     const std::string& reason);

}  // namespace co_up
