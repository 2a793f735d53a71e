#include "subgraph_plan.h"

#include <string>

#include "plugin_status.h"
#include "subgraph_desc.h"

namespace co_up::backends {

SubgraphPlan plan_subgraph(const DecodeRules& rules, const co_up_subgraph_desc& graph) {
  SubgraphPlan plan;
  const uint32_t tensor_count = graph.tensor_count;
  auto check_io = [&](uint32_t t, const char* what) {
    if (t >= tensor_count) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, std::string(what) + " refers to tensor " +
                                              std::to_string(t) + " of " +
                                              std::to_string(tensor_count));
    }
    const co_up_tensor_desc& d = element_at(graph.tensors, t);
    if (d.dtype != CO_UP_DTYPE_F32) {
      fail(CO_UP_STATUS_UNSUPPORTED, std::string(what) + " '" + tensor_name(graph, t) +
                                         "': dtype " + std::string(dtype_name(d.dtype)) +
                                         " not supported (f32 only)");
    }
    if (d.rank == 0 || !d.dims) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           std::string(what) + " '" + tensor_name(graph, t) + "' has no dims");
    }
  };

  // Which tensors exist when: constants always, inputs before the first node, others once made.
  std::vector<bool> available(tensor_count, false);
  plan.is_input.assign(tensor_count, false);
  plan.is_output.assign(tensor_count, false);
  for (uint32_t t = 0; t < tensor_count; ++t) {
    available[t] = element_at(graph.tensors, t).data != nullptr;
  }
  for (uint32_t i = 0; i < graph.input_count; ++i) {
    const uint32_t t = graph.inputs[i];
    check_io(t, "sub-graph input");
    if (available[t] && !plan.is_input[t]) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, "sub-graph input '" + tensor_name(graph, t) +
                                              "' is a constant (constants are passed as data)");
    }
    available[t] = true;
    plan.is_input[t] = true;
    plan.inputs.push_back(t);
  }

  plan.nodes.reserve(graph.node_count);
  for (uint32_t n = 0; n < graph.node_count; ++n) {
    NodePlan node_plan = decode_node(rules, graph, n);
    const co_up_node_desc& node = element_at(graph.nodes, n);
    const std::string where = "node '" + std::string(node.name ? node.name : "?") + "' (" +
                              std::string(node.op_type ? node.op_type : "?") + ")";
    for (uint32_t t : node_plan.inputs) {
      if (t != CO_UP_NO_TENSOR && !available[t]) {
        fail(CO_UP_STATUS_INVALID_ARGUMENT,
             where + " reads tensor '" + tensor_name(graph, t) +
                 "' which is not constant, not a sub-graph input and not made by an earlier node "
                 "(list nodes in topological order)");
      }
    }
    if (available[node_plan.output]) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, where + " writes tensor '" +
                                              tensor_name(graph, node_plan.output) +
                                              "' which is already defined (constant, input or "
                                              "written twice)");
    }
    available[node_plan.output] = true;
    plan.nodes.push_back(std::move(node_plan));
  }

  for (uint32_t i = 0; i < graph.output_count; ++i) {
    const uint32_t t = graph.outputs[i];
    check_io(t, "sub-graph output");
    if (!available[t]) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, "sub-graph output '" + tensor_name(graph, t) +
                                              "' is never written by a node of this sub-graph");
    }
    plan.is_output[t] = true;
    plan.outputs.push_back(t);
  }
  return plan;
}

}  // namespace co_up::backends
