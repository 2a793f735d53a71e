#include "graph/parallel_regions.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <set>
#include <stdexcept>

#include "graph/shared_boundary.h"

namespace co_up::graph {
namespace {

// Union-find over vertex positions, for the weakly connected components of a region's inside.
class DisjointSets {
 public:
  explicit DisjointSets(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), size_t{0}); }
  size_t find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void unite(size_t a, size_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<size_t> parent_;
};

}  // namespace

std::vector<DagRegion> find_dag_regions(const std::vector<std::vector<uint32_t>>& successors,
                                        const std::vector<bool>& to_exit) {
  const auto n = static_cast<uint32_t>(successors.size());
  const uint32_t exit = n;  // the virtual end, after every vertex
  std::vector<std::vector<uint32_t>> succ(n), pred(n);
  for (uint32_t v = 0; v < n; ++v) {
    std::set<uint32_t> s;
    for (uint32_t w : successors[v]) {
      if (w <= v || w >= n) throw std::logic_error("find_dag_regions: successor out of topological order");
      s.insert(w);
    }
    if (s.empty() || (v < to_exit.size() && to_exit[v])) s.insert(exit);
    succ[v].assign(s.begin(), s.end());
    for (uint32_t w : succ[v]) {
      if (w != exit) pred[w].push_back(v);
    }
  }
  // Immediate post-dominators, in reverse topological order (Cooper-Harvey-Kennedy's intersection
  // with vertex numbers as the order: a post-dominator always comes later).
  std::vector<uint32_t> ipdom(n + 1, exit);
  for (uint32_t v = n; v-- > 0;) {
    uint32_t d = succ[v][0];
    for (size_t k = 1; k < succ[v].size(); ++k) {
      uint32_t a = d, b = succ[v][k];
      while (a != b) {
        if (a < b) {
          a = ipdom[a];
        } else {
          b = ipdom[b];
        }
      }
      d = a;
    }
    ipdom[v] = d;
  }

  std::vector<DagRegion> regions;
  std::vector<char> inside(n, 0);
  for (uint32_t fork = 0; fork < n; ++fork) {
    if (succ[fork].size() < 2) continue;
    const uint32_t join = ipdom[fork];
    std::vector<uint32_t> members;
    std::vector<uint32_t> stack;
    for (uint32_t w : succ[fork]) {
      if (w != join && w != exit && !inside[w]) {
        inside[w] = 1;
        stack.push_back(w);
      }
    }
    while (!stack.empty()) {
      const uint32_t v = stack.back();
      stack.pop_back();
      members.push_back(v);
      for (uint32_t w : succ[v]) {
        if (w != join && w != exit && !inside[w]) {
          inside[w] = 1;
          stack.push_back(w);
        }
      }
    }
    std::sort(members.begin(), members.end());
    bool closed = true;
    for (uint32_t v : members) {
      for (uint32_t p : pred[v]) closed = closed && (p == fork || p < fork || inside[p]);
    }
    if (closed && members.size() >= 2) {
      DisjointSets sets(members.size());
      auto position = [&](uint32_t v) {
        return static_cast<size_t>(std::lower_bound(members.begin(), members.end(), v) - members.begin());
      };
      for (size_t i = 0; i < members.size(); ++i) {
        for (uint32_t w : succ[members[i]]) {
          if (w != exit && inside[w]) sets.unite(i, position(w));
        }
      }
      DagRegion region{fork, join == exit ? kDagExit : join, {}};
      std::vector<size_t> branch_of_root(members.size(), SIZE_MAX);
      for (size_t i = 0; i < members.size(); ++i) {  // ascending: branches by first vertex
        const size_t root = sets.find(i);
        if (branch_of_root[root] == SIZE_MAX) {
          branch_of_root[root] = region.branches.size();
          region.branches.emplace_back();
        }
        region.branches[branch_of_root[root]].push_back(members[i]);
      }
      if (region.branches.size() >= 2) regions.push_back(std::move(region));
    }
    for (uint32_t v : members) inside[v] = 0;
  }
  return regions;
}

std::vector<ParallelRegion> find_parallel_regions(const Graph& graph) {
  const auto n = static_cast<uint32_t>(graph.nodes().size());
  std::vector<std::vector<uint32_t>> successors(n);
  std::vector<bool> to_exit(n, false);
  for (const Node& node : graph.nodes()) {
    for (TensorId t : node.inputs) {
      if (t == kNoTensor) continue;
      const Tensor& tensor = graph.tensor(t);
      if (tensor.is_constant || tensor.producer == kNoNode) continue;
      std::vector<uint32_t>& s = successors[tensor.producer];
      if (std::find(s.begin(), s.end(), node.id) == s.end()) s.push_back(node.id);
    }
  }
  for (TensorId t : graph.outputs()) {
    if (graph.tensor(t).producer != kNoNode) to_exit[graph.tensor(t).producer] = true;
  }
  int64_t total_macs = 0;
  for (const Node& node : graph.nodes()) total_macs += node_macs(graph, node);

  std::vector<ParallelRegion> result;
  for (const DagRegion& r : find_dag_regions(successors, to_exit)) {
    ParallelRegion region;
    region.fork = r.fork;
    region.join = r.join == kDagExit ? kNoNode : r.join;
    for (const std::vector<uint32_t>& vertices : r.branches) {
      RegionBranch branch;
      branch.nodes.assign(vertices.begin(), vertices.end());
      branch.first_layer = UINT32_MAX;
      for (NodeId id : branch.nodes) {
        const Node& node = graph.node(id);
        branch.first_layer = std::min(branch.first_layer, node.layer);
        branch.last_layer = std::max(branch.last_layer, node.layer);
        branch.macs += node_macs(graph, node);
      }
      region.macs += branch.macs;
      region.branches.push_back(std::move(branch));
    }
    region.cost_share = total_macs > 0 ? static_cast<double>(region.macs) / static_cast<double>(total_macs) : 0.0;
    result.push_back(std::move(region));
  }
  return result;
}

std::vector<std::vector<uint32_t>> UnitDag::successors() const {
  std::vector<std::vector<uint32_t>> s(predecessors.size());
  for (uint32_t u = 0; u < predecessors.size(); ++u) {
    for (uint32_t p : predecessors[u]) s[p].push_back(u);
  }
  return s;
}

UnitDag unit_dag(const Graph& graph) {
  const uint32_t units = graph.layer_count();
  UnitDag dag;
  dag.predecessors.resize(units);
  dag.outputs.assign(units, false);
  dag.inputs.assign(units, false);
  dag.shareable.assign(units, true);
  for (const Node& node : graph.nodes()) {
    if (node.op == OpType::kInput) continue;
    for (TensorId t : node.inputs) {
      if (t == kNoTensor) continue;
      const Tensor& tensor = graph.tensor(t);
      if (tensor.is_constant || tensor.producer == kNoNode) continue;
      const Node& producer = graph.node(tensor.producer);
      if (producer.op == OpType::kInput) dag.inputs[node.layer] = true;
      if (producer.op == OpType::kInput || producer.layer == node.layer) continue;
      if (!shareable_boundary(graph, t)) dag.shareable[producer.layer] = false;
      std::vector<uint32_t>& p = dag.predecessors[node.layer];
      if (std::find(p.begin(), p.end(), producer.layer) == p.end()) p.push_back(producer.layer);
    }
  }
  for (std::vector<uint32_t>& p : dag.predecessors) std::sort(p.begin(), p.end());
  for (TensorId t : graph.outputs()) {
    const NodeId producer = graph.tensor(t).producer;
    if (producer != kNoNode && graph.node(producer).op != OpType::kInput) {
      dag.outputs[graph.node(producer).layer] = true;
    }
  }
  return dag;
}

std::vector<DagRegion> find_unit_regions(const UnitDag& dag) {
  return find_dag_regions(dag.successors(), dag.outputs);
}

std::vector<std::string> describe_parallel_regions(const Graph& graph,
                                                   const std::vector<ParallelRegion>& regions) {
  std::vector<std::string> lines;
  for (const ParallelRegion& r : regions) {
    const std::string& fork = graph.node(r.fork).name;
    std::string name = r.join == kNoNode ? fork : graph.node(r.join).name;
    const size_t slash = name.rfind('/');
    if (slash != std::string::npos && slash > 0) name.resize(slash);
    char share[32];
    std::snprintf(share, sizeof share, "%.1f %%", 100.0 * r.cost_share);
    std::string line = name + ": fork " + fork + " -> join " +
                       (r.join == kNoNode ? std::string("(graph outputs)") : graph.node(r.join).name) + ", " +
                       std::to_string(r.branches.size()) + " branches, " + share + " of MACs:";
    for (size_t b = 0; b < r.branches.size(); ++b) {
      const RegionBranch& branch = r.branches[b];
      std::snprintf(share, sizeof share, "%.1f %%",
                    r.macs > 0 ? 100.0 * static_cast<double>(branch.macs) / static_cast<double>(r.macs) : 0.0);
      line += (b == 0 ? " [" : "; [") + graph.node(branch.nodes.front()).name;
      if (branch.nodes.size() > 1) line += " .. " + graph.node(branch.nodes.back()).name;
      line += ", " + std::to_string(branch.nodes.size()) + " nodes, layers " +
              std::to_string(branch.first_layer) + "-" + std::to_string(branch.last_layer) + ", " + share + "]";
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace co_up::graph
