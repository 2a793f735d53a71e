#include "graph/onnx/layer_units.h"

#include <algorithm>
#include <string>
#include <vector>

namespace co_up::graph {
namespace {

// The module path the names of `compute` (not empty) share: "features/features.3/block" for
// "/features/features.3/block/block.0/block.0.0/Conv" and its siblings; empty if none.
std::string path_prefix(const Graph& graph, const std::vector<NodeId>& compute) {
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
  return prefix;
}

size_t path_depth(const std::string& path) {
  return path.empty() ? 0 : 1 + static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
}

// The first `depth` components of `path`.
std::string truncate_path(const std::string& path, size_t depth) {
  size_t pos = 0;
  for (size_t k = 0; k < depth; ++k) {
    pos = path.find('/', k == 0 ? 0 : pos + 1);
    if (pos == std::string::npos) return path;
  }
  return path.substr(0, pos);
}

std::string unit_name(const Graph& graph, const std::vector<NodeId>& compute) {
  if (compute.empty()) return {};
  const std::string prefix = path_prefix(graph, compute);
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

// The top-level module of a scoped node name ("b6" for "/b6/cv1/conv/Conv"); empty when the
// name has no scope.
std::string top_module(const std::string& name) {
  const size_t begin = name.find_first_not_of('/');
  if (begin == std::string::npos) return {};
  const size_t slash = name.find('/', begin);
  return slash == std::string::npos ? std::string() : name.substr(begin, slash - begin);
}

// A detector's neck keeps backbone features alive across several top-level modules (YOLO's P3
// and P4 until the PAN concats), so no single-tensor boundary falls between its stages and the
// whole neck would be one segment. A segment whose compute ops share no module path, all inside
// composite top-level modules, is cut where the top-level module of the compute ops changes and the new module reads what the previous one
// produced (a chain of stages, not parallel branches of one block); non-compute ops stay with the
// module before them. Several tensors may cross such a cut.
std::vector<std::pair<int64_t, int64_t>> split_across_top_level_modules(
    const Graph& graph, const std::vector<std::pair<int64_t, int64_t>>& segments) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& seg : segments) {
    std::vector<NodeId> compute;
    bool scoped = true;
    for (int64_t i = seg.first; i < seg.second; ++i) {
      const Node& n = graph.node(static_cast<NodeId>(i));
      if (!is_compute_op(n.op)) continue;
      compute.push_back(n.id);
      // Only composite top-level modules ("b6/cv1/conv/Conv"), not layers of a flat module
      // ("b1/Conv": the branches of one block written out at the top level).
      const std::string inner = n.name.substr(std::min(n.name.size(), n.name.find_first_not_of('/')));
      scoped = scoped && std::count(inner.begin(), inner.end(), '/') >= 2;
    }
    if (compute.size() < 2 || !scoped || !path_prefix(graph, compute).empty()) {
      out.push_back(seg);
      continue;
    }
    int64_t start = seg.first;
    std::string module;
    for (int64_t i = seg.first; i < seg.second; ++i) {
      const Node& n = graph.node(static_cast<NodeId>(i));
      if (!is_compute_op(n.op)) continue;
      const std::string m = top_module(n.name);
      if (module.empty()) module = m;
      if (m == module) continue;
      // Does this module read the run [start, i) directly?
      bool chained = false;
      for (int64_t j = i; j < seg.second && !chained; ++j) {
        const Node& reader = graph.node(static_cast<NodeId>(j));
        if (is_compute_op(reader.op) && top_module(reader.name) != m) break;
        for (TensorId t : reader.inputs) {
          const NodeId producer = t == kNoTensor ? kNoNode : graph.tensor(t).producer;
          chained = chained || (producer != kNoNode && static_cast<int64_t>(producer) >= start &&
                                static_cast<int64_t>(producer) < i);
        }
      }
      if (!chained) continue;
      out.emplace_back(start, i);
      start = i;
      module = m;
    }
    out.emplace_back(start, seg.second);
  }
  return out;
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

  // Segments between single-tensor boundaries.
  std::vector<std::pair<int64_t, int64_t>> segments;
  for (int64_t start = 0; start < count;) {
    int64_t end = start + 1;
    while (end < count && live[end] != 1) ++end;
    segments.emplace_back(start, end);
    start = end;
  }
  segments = split_across_top_level_modules(graph, segments);
  // An inverted-residual block without its skip connection (stride 2, or a change of width) has
  // single-tensor boundaries between its expand, depthwise, squeeze-excite and project parts.
  // Module paths say where such a block ends: residual blocks (segments with an Add and several
  // compute ops) show how deep block paths are (features/features.3/block in MobileNet,
  // features/features.2/features.2.1/block in EfficientNet); consecutive segments whose compute
  // ops share a path to that depth are one block. Networks without residual blocks keep their
  // segments (SqueezeNet's squeeze conv and expand block, GoogLeNet's inception modules).
  auto segment_prefix = [&](const std::pair<int64_t, int64_t>& seg) {
    std::vector<NodeId> compute;
    for (int64_t i = seg.first; i < seg.second; ++i) {
      if (is_compute_op(graph.node(static_cast<NodeId>(i)).op)) compute.push_back(static_cast<NodeId>(i));
    }
    return compute.empty() ? std::string() : path_prefix(graph, compute);
  };
  size_t block_depth = 0;
  for (const auto& seg : segments) {
    int computes = 0;
    bool adds = false;
    for (int64_t i = seg.first; i < seg.second; ++i) {
      const OpType op = graph.node(static_cast<NodeId>(i)).op;
      computes += is_compute_op(op) ? 1 : 0;
      adds = adds || op == OpType::kAdd;
    }
    const std::string prefix = segment_prefix(seg);
    if (adds && computes >= 2 && !prefix.empty()) {
      const size_t depth = path_depth(prefix);
      block_depth = block_depth == 0 ? depth : std::min(block_depth, depth);
    }
  }
  auto block_of = [&](const std::string& prefix) {
    return block_depth == 0 || path_depth(prefix) < block_depth ? std::string() : truncate_path(prefix, block_depth);
  };

  // A segment with a compute op opens a new unit once the current one has a compute op, unless
  // both belong to the same block.
  uint32_t unit = 0;
  bool unit_has_compute = false;
  std::string unit_block;
  std::vector<std::vector<NodeId>> compute_of_unit(1);
  for (const auto& seg : segments) {
    bool has_compute = false;
    for (int64_t i = seg.first; i < seg.second; ++i) has_compute = has_compute || is_compute_op(graph.node(static_cast<NodeId>(i)).op);
    const std::string block = has_compute ? block_of(segment_prefix(seg)) : std::string();
    if (has_compute && unit_has_compute && (block.empty() || block != unit_block)) {
      ++unit;
      compute_of_unit.emplace_back();
      unit_has_compute = false;
    }
    for (int64_t i = seg.first; i < seg.second; ++i) {
      Node& n = graph.mutable_node(static_cast<NodeId>(i));
      n.layer = unit;
      if (is_compute_op(n.op)) compute_of_unit[unit].push_back(n.id);
    }
    if (has_compute) unit_block = block;
    unit_has_compute = unit_has_compute || has_compute;
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

void cut_units_after_exits(Graph& graph) {
  if (!graph.has_exits()) return;
  std::vector<bool> ends_stage(graph.nodes().size(), false);
  for (size_t k = 0; k + 1 < graph.outputs().size(); ++k) {
    ends_stage[graph.tensor(graph.outputs()[k]).producer] = true;
  }
  std::vector<std::string> old_names;
  for (const LayerUnit& unit : graph.layers()) old_names.push_back(unit.name);
  std::vector<std::string> names;
  uint32_t shift = 0;
  uint32_t previous = UINT32_MAX;
  bool cut = false;
  for (const Node& node : graph.nodes()) {
    if (node.op == OpType::kInput) continue;
    Node& n = graph.mutable_node(node.id);
    if (n.layer != previous) {
      names.push_back(old_names.at(n.layer));
    } else if (cut) {
      ++shift;
      names.push_back(n.name);
    }
    cut = ends_stage[n.id];
    previous = n.layer;
    n.layer += shift;
  }
  for (uint32_t u = 0; u < names.size(); ++u) graph.set_layer_name(u, names[u]);
}

}  // namespace co_up::graph
