#include "core/partition.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/error.h"
#include "core/message_text.h"
#include "graph/split_units.h"

namespace co_up {

using graph::kNoTensor;
using graph::NodeId;
using graph::OpType;
using graph::TensorId;

void check_order_letters(const std::string& order) {
  if (order.empty()) throw InputError("the order is empty (one processor letter per layer)");
  // Positions count characters (UTF-8 code points), as the user typed them.
  size_t position = 0;
  for (size_t i = 0; i < order.size(); ++position) {
    const auto byte = static_cast<unsigned char>(order[i]);
    if (byte >= 'A' && byte <= 'Z') {
      ++i;
      continue;
    }
    size_t length = byte < 0x80 ? 1 : (byte & 0xE0) == 0xC0 ? 2 : (byte & 0xF0) == 0xE0 ? 3 : (byte & 0xF8) == 0xF0 ? 4 : 0;
    bool valid_utf8 = length != 0 && i + length <= order.size();
    for (size_t k = 1; valid_utf8 && k < length; ++k) {
      valid_utf8 = (static_cast<unsigned char>(order[i + k]) & 0xC0) == 0x80;
    }
    std::string what, why;
    if (!valid_utf8) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", byte);
      what = "byte " + std::string(hex);  // the character cannot be shown
      why = ", which is not UTF-8 text";
    } else if (byte >= 'a' && byte <= 'z') {
      what = std::string(1, '\'') + order[i] + '\'';
      why = ": processor letters are upper-case (" + std::string(1, static_cast<char>(byte - 'a' + 'A')) + ")";
    } else {
      what = order.substr(i, length);
      what.insert(what.begin(), '\'');
      what += '\'';
      why = ", which is not a processor letter (use upper-case letters A-Z such as B, L, G, N)";
    }
    throw InputError("order " + order_for_message(order) + " has invalid " +
                     (valid_utf8 ? "character " : "") + what + " at position " +
                     std::to_string(position + 1) + why);
  }
}

Partition Partition::create(const graph::Graph& graph, const std::string& order,
                            SubGraphCuts cuts) {
  const uint32_t layers = graph.layer_count();
  check_order_letters(order);
  if (order.size() != layers) {
    throw InputError("order " + order_for_message(order) + " has " + std::to_string(order.size()) +
                     " letters but graph '" + graph.name() + "' has " + std::to_string(layers) +
                     " layers (one letter per layer; see --list-layers)");
  }

  // A multi-exit network's stages on one letter are sub-graphs of their own, cut after each
  // exit but the final: a sub-graph decides its exits only once it has run, so a frame that
  // stops at an exit then skips the later stages' layers even on the same processor (which runs
  // them one after another on its one thread, with no hand-off between threads).
  std::vector<bool> exit_ends_unit(layers, false);
  if (graph.has_exits()) {
    for (size_t k = 0; k + 1 < graph.outputs().size(); ++k) {
      const graph::Tensor& t = graph.tensor(graph.outputs()[k]);
      if (graph.node(t.producer).op != OpType::kInput) exit_ends_unit[graph.node(t.producer).layer] = true;
    }
  }
  // A split layer's parts on several processors run at once only in sub-graphs of their own
  // (graph/split_units.h).
  std::vector<std::string> unit_names;
  for (const graph::LayerUnit& unit : graph.layers()) unit_names.push_back(unit.name);
  const std::vector<bool> split_starts = graph::split_subgraph_starts(graph::find_split_units(unit_names), order);
  Partition p;
  p.order_ = order;
  p.layer_to_subgraph_.resize(layers);
  for (uint32_t layer = 0; layer < layers; ++layer) {
    if (layer == 0 || order[layer] != order[layer - 1] || cuts == SubGraphCuts::kEveryLayer ||
        exit_ends_unit[layer - 1] || split_starts[layer]) {
      SubGraph sg;
      sg.index = static_cast<uint32_t>(p.subgraphs_.size());
      sg.processor = order[layer];
      sg.first_layer = layer;
      p.subgraphs_.push_back(sg);
    }
    p.subgraphs_.back().last_layer = layer;
    p.layer_to_subgraph_[layer] = p.subgraphs_.back().index;
  }

  auto source_of = [&](TensorId t) -> uint32_t {
    const NodeId producer = graph.tensor(t).producer;
    if (graph.node(producer).op == OpType::kInput) return kGraphInput;
    return p.layer_to_subgraph_[graph.node(producer).layer];
  };
  std::map<TensorId, size_t> edge_of_tensor;
  auto edge_for = [&](TensorId t, uint32_t source) -> Edge& {
    auto [it, inserted] = edge_of_tensor.try_emplace(t, p.edges_.size());
    if (inserted) p.edges_.push_back(Edge{t, source, {}, false});
    return p.edges_[it->second];
  };

  for (const graph::Node& node : graph.nodes()) {
    if (node.op == OpType::kInput) continue;
    SubGraph& sg = p.subgraphs_[p.layer_to_subgraph_[node.layer]];
    sg.nodes.push_back(node.id);
    for (TensorId t : node.inputs) {
      if (t == kNoTensor || graph.tensor(t).is_constant) continue;
      const uint32_t source = source_of(t);
      if (source == sg.index) continue;
      Edge& edge = edge_for(t, source);
      if (std::find(edge.destinations.begin(), edge.destinations.end(), sg.index) ==
          edge.destinations.end()) {
        edge.destinations.push_back(sg.index);
        sg.inputs.push_back(t);
      }
    }
  }
  for (TensorId t : graph.outputs()) {
    const uint32_t source = source_of(t);
    if (source == kGraphInput) {
      throw InputError("graph '" + graph.name() + "' returns its input unchanged; nothing to run");
    }
    edge_for(t, source).is_graph_output = true;
  }
  for (const Edge& edge : p.edges_) {
    if (edge.source != kGraphInput) p.subgraphs_[edge.source].outputs.push_back(edge.tensor);
  }
  return p;
}

std::string Partition::processors() const {
  std::string letters;
  for (const SubGraph& sg : subgraphs_) {
    if (letters.find(sg.processor) == std::string::npos) letters += sg.processor;
  }
  return letters;
}

std::vector<std::vector<uint32_t>> receiver_capacities(const Partition& partition, uint32_t base) {
  const auto& subgraphs = partition.subgraphs();
  const size_t n = subgraphs.size();
  // Sub-graph DAG (edges only point to higher indices).
  std::vector<std::vector<bool>> adjacent(n, std::vector<bool>(n, false));
  for (const Edge& e : partition.edges()) {
    if (e.source == kGraphInput) continue;
    for (uint32_t d : e.destinations) adjacent[e.source][d] = true;
  }
  // hops[a][b]: most edges on any path a -> b (0 when unreachable).
  std::vector<std::vector<uint32_t>> hops(n, std::vector<uint32_t>(n, 0));
  for (size_t a = n; a-- > 0;) {
    for (size_t b = a + 1; b < n; ++b) {
      if (adjacent[a][b]) hops[a][b] = std::max(hops[a][b], 1u);
      for (size_t m = a + 1; m < b; ++m) {
        if (adjacent[a][m] && hops[m][b] > 0) hops[a][b] = std::max(hops[a][b], 1 + hops[m][b]);
      }
    }
  }
  std::vector<std::vector<uint32_t>> capacities;
  for (const Edge& e : partition.edges()) {
    std::vector<uint32_t> per_destination;
    for (uint32_t d : e.destinations) {
      per_destination.push_back(e.source == kGraphInput ? base
                                                        : base * std::max(1u, hops[e.source][d]));
    }
    capacities.push_back(std::move(per_destination));
  }
  return capacities;
}

std::string subgraph_label(const SubGraph& sg) {
  return "sub-graph " + std::to_string(sg.index) + " (layers " + std::to_string(sg.first_layer) +
         "-" + std::to_string(sg.last_layer) + " on " + std::string(1, sg.processor) + ")";
}

}  // namespace co_up
