#include "graph/onnx/layer_units.h"

#include <algorithm>
#include <string>
#include <vector>

namespace co_up::graph {
namespace {

std::string unit_name(const Graph& graph, const std::vector<NodeId>& compute) {
  if (compute.empty()) return {};
  auto dir = [](const std::string& s) {
    const size_t slash = s.rfind('/');
    return slash == std::string::npos ? std::string() : s.substr(0, slash);
  };
  std::string prefix = dir(graph.node(compute[0]).name);
  for (NodeId id : compute) {
    const std::string& name = graph.node(id).name;
    while (!prefix.empty() && name.compare(0, prefix.size() + 1, prefix + "/") != 0) prefix = dir(prefix);
  }
  while (!prefix.empty() && prefix.front() == '/') prefix.erase(0, 1);
  return prefix.empty() ? graph.node(compute[0]).name : prefix;
}

// The longest common '/'-separated scope of two unit names ("a/b/c", "a/b/d" -> "a/b"; a name
// is its own scope: "a/b", "a/b/c" -> "a/b").
std::string common_scope(const std::string& a, const std::string& b) {
  auto within = [](const std::string& scope, const std::string& name) {
    return name == scope || name.compare(0, scope.size() + 1, scope + "/") == 0;
  };
  std::string scope = a;
  while (!scope.empty() && !within(scope, b)) {
    const size_t slash = scope.rfind('/');
    scope = slash == std::string::npos ? std::string() : scope.substr(0, slash);
  }
  return scope;
}

}  // namespace

void assign_block_units(Graph& graph) {
  const auto count = static_cast<int64_t>(graph.nodes().size());
  // live[i]: activations produced before node i and read by node i or later (or graph outputs).
  std::vector<int64_t> last_use(graph.tensors().size(), -1);
  for (const Node& n : graph.nodes()) {
    for (TensorId t : n.inputs) {
      if (t != kNoTensor && !graph.tensor(t).is_constant) last_use[t] = std::max<int64_t>(last_use[t], n.id);
    }
  }
  for (TensorId t : graph.outputs()) last_use[t] = count;
  std::vector<int64_t> delta(count + 2, 0);
  for (const Node& n : graph.nodes()) {
    for (TensorId t : n.outputs) {
      if (last_use[t] > static_cast<int64_t>(n.id)) {
        ++delta[n.id + 1];
        --delta[std::min<int64_t>(last_use[t], count) + 1];
      }
    }
  }
  std::vector<int64_t> live(count + 1, 0);
  int64_t running = 0;
  for (int64_t i = 0; i <= count; ++i) {
    running += delta[i];
    live[i] = running;
  }

  // Segments between single-tensor boundaries; a segment with a compute op opens a new unit once
  // the current one has a compute op.
  uint32_t unit = 0;
  bool unit_has_compute = false;
  std::vector<std::vector<NodeId>> compute_of_unit(1);
  int64_t start = 0;
  while (start < count) {
    int64_t end = start + 1;
    while (end < count && live[end] != 1) ++end;
    bool has_compute = false;
    for (int64_t i = start; i < end; ++i) has_compute = has_compute || is_compute_op(graph.node(static_cast<NodeId>(i)).op);
    if (has_compute && unit_has_compute) {
      ++unit;
      compute_of_unit.emplace_back();
      unit_has_compute = false;
    }
    for (int64_t i = start; i < end; ++i) {
      Node& n = graph.mutable_node(static_cast<NodeId>(i));
      n.layer = unit;
      if (is_compute_op(n.op)) compute_of_unit[unit].push_back(n.id);
    }
    unit_has_compute = unit_has_compute || has_compute;
    start = end;
  }
  std::vector<std::string> names;
  for (uint32_t u = 0; u < compute_of_unit.size(); ++u) names.push_back(unit_name(graph, compute_of_unit[u]));

  // Transformer encoder blocks: the residual around attention and the one around the MLP make two
  // single-tensor segments per block. A unit with attention (a MatMul of two computed tensors)
  // takes the units after it that share its block's scope, up to the next attention unit.
  std::vector<bool> attention(names.size(), false);
  for (const Node& n : graph.nodes()) {
    if (n.op == OpType::kMatMul && !graph.tensor(n.inputs.at(0)).is_constant &&
        !graph.tensor(n.inputs.at(1)).is_constant) {
      attention[n.layer] = true;
    }
  }
  std::vector<uint32_t> merged(names.size());
  std::vector<std::string> merged_names;
  for (uint32_t u = 0; u < names.size(); ++u) {
    if (attention[u] && u + 1 < names.size() && !attention[u + 1]) {
      const std::string block = common_scope(names[u], names[u + 1]);
      if (!block.empty()) {
        merged_names.push_back(block);
        merged[u] = static_cast<uint32_t>(merged_names.size() - 1);
        while (u + 1 < names.size() && !attention[u + 1] && common_scope(names[u + 1], block) == block) {
          merged[++u] = static_cast<uint32_t>(merged_names.size() - 1);
        }
        continue;
      }
    }
    merged_names.push_back(names[u]);
    merged[u] = static_cast<uint32_t>(merged_names.size() - 1);
  }
  for (const Node& n : graph.nodes()) graph.mutable_node(n.id).layer = merged[n.layer];
  for (uint32_t u = 0; u < merged_names.size(); ++u) {
    graph.set_layer_name(u, merged_names[u].empty() ? "layer" + std::to_string(u) : merged_names[u]);
  }
}

}  // namespace co_up::graph
