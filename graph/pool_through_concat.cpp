#include "graph/pool_through_concat.h"

#include <algorithm>
#include <string>
#include <vector>

#include "graph/graph_rebuild.h"

namespace co_up::graph {
namespace {

bool is_channel_pool(OpType op) {
  return op == OpType::kMaxPool || op == OpType::kAveragePool || op == OpType::kGlobalAveragePool;
}

// The Concat `pool` can move through, or kNoNode.
NodeId movable_concat(const Graph& graph, const Node& pool, const std::vector<size_t>& unit_sizes) {
  if (!is_channel_pool(pool.op) || pool.inputs.size() != 1) return kNoNode;
  const TensorId joined = pool.inputs[0];
  const Tensor& t = graph.tensor(joined);
  const std::vector<TensorId>& outputs = graph.outputs();
  if (t.producer == kNoNode || graph.consumers(joined).size() != 1 ||
      std::find(outputs.begin(), outputs.end(), joined) != outputs.end()) {
    return kNoNode;
  }
  const Node& concat = graph.node(t.producer);
  if (concat.op != OpType::kConcat || t.desc.shape.size() != 4 || concat.attrs.get_int("axis") != 1) return kNoNode;
  for (TensorId in : concat.inputs) {
    const Tensor& part = graph.tensor(in);
    if (part.is_constant || part.producer == kNoNode || graph.node(part.producer).op == OpType::kInput) return kNoNode;
  }
  if (pool.layer != concat.layer && unit_sizes[pool.layer] == 1) return kNoNode;
  return concat.id;
}

// One sweep over the graph; false when nothing moved.
bool push_pools_once(Graph& graph) {
  const std::vector<LayerUnit> units = graph.layers();
  std::vector<size_t> unit_sizes;
  for (const LayerUnit& u : units) unit_sizes.push_back(u.nodes.size());
  const size_t node_count = graph.nodes().size();
  std::vector<NodeId> pool_of_concat(node_count, kNoNode);
  std::vector<bool> moved_pool(node_count, false);
  // Per producer: the (pool, Concat input index) pairs whose pooled copy follows it.
  std::vector<std::vector<std::pair<NodeId, size_t>>> pools_after(node_count);
  bool any = false;
  for (const Node& n : graph.nodes()) {
    const NodeId concat = movable_concat(graph, n, unit_sizes);
    if (concat == kNoNode) continue;
    any = true;
    pool_of_concat[concat] = n.id;
    moved_pool[n.id] = true;
    const Node& c = graph.node(concat);
    for (size_t i = 0; i < c.inputs.size(); ++i) pools_after[graph.tensor(c.inputs[i]).producer].emplace_back(n.id, i);
  }
  if (!any) return false;

  GraphRebuild rebuild(graph);
  Graph& out = rebuild.out();
  // Per source pool: its pooled Concat inputs in the new graph, by input index.
  std::vector<std::vector<TensorId>> pooled(node_count);
  for (const Node& n : graph.nodes()) {
    if (n.op == OpType::kInput) {
      rebuild.copy_input(n);
      continue;
    }
    if (moved_pool[n.id]) continue;  // done at its Concat
    if (pool_of_concat[n.id] != kNoNode) {
      const Node& pool = graph.node(pool_of_concat[n.id]);
      const TensorId joined = out.add_node(n.name, OpType::kConcat, pooled[pool.id], n.attrs, n.layer);
      out.mutable_tensor(joined).name = graph.tensor(pool.outputs[0]).name;
      rebuild.map(pool.outputs[0], joined);
      continue;
    }
    rebuild.copy_node(n, n.layer);
    for (const auto& [pool_id, index] : pools_after[n.id]) {
      const Node& pool = graph.node(pool_id);
      const TensorId part = graph.node(graph.tensor(pool.inputs[0]).producer).inputs[index];
      std::vector<TensorId>& parts = pooled[pool_id];
      if (parts.size() <= index) parts.resize(index + 1, kNoTensor);
      parts[index] = out.add_node(pool.name + "#" + std::to_string(index + 1), pool.op, {rebuild.mapped(part)},
                                  pool.attrs, n.layer);
    }
  }
  Graph rebuilt = rebuild.finish();
  for (size_t i = 0; i < units.size(); ++i) rebuilt.set_layer_name(static_cast<uint32_t>(i), units[i].name);
  rebuilt.validate();
  graph = std::move(rebuilt);
  return true;
}

}  // namespace

void push_pools_through_concats(Graph& graph) {
  // A moved pool may land after another channel Concat (a split branch's parts, joined, then the
  // module's Concat): it moves on through that one in the next sweep.
  while (push_pools_once(graph)) {
  }
}

}  // namespace co_up::graph
