// Partition: a graph cut into sub-graphs by a processor order string.
//
// Consecutive layer units with the same letter form one sub-graph (ARM-CO-UP §4.1), except that
// in a multi-exit network a sub-graph also ends with the unit computing an exit (not the final
// one), so a frame that stops there runs no later layer on that processor either, and except that
// a split layer (`--split`) whose parts are on several processors runs each part and its Concat
// unit as sub-graphs of their own, so the parts run at once (graph/split_units.h). Every tensor
// that one sub-graph produces and another reads becomes an Edge with one source and one or more
// destinations: at run time, the source's Sender copies it into one Receiver per destination. The
// network input is an edge from kGraphInput. A partition is immutable once created.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace co_up {

inline constexpr uint32_t kGraphInput = UINT32_MAX;

struct SubGraph {
  uint32_t index = 0;
  char processor = 'B';
  uint32_t first_layer = 0;  // inclusive
  uint32_t last_layer = 0;   // inclusive
  std::vector<graph::NodeId> nodes;     // compute nodes, topological order (no Input nodes)
  std::vector<graph::TensorId> inputs;  // activations read here but produced elsewhere
  std::vector<graph::TensorId> outputs; // produced here, read by a later sub-graph or the user
};

struct Edge {
  graph::TensorId tensor = graph::kNoTensor;
  uint32_t source = kGraphInput;       // sub-graph index or kGraphInput
  std::vector<uint32_t> destinations;  // sub-graph indices, ascending
  bool is_graph_output = false;        // the user reads it too (--output, top-5)
};

// Where sub-graphs start: where the order's letter changes, after an exit and around a spread
// split (what a run does, as above), or at every layer
// (what `co_up profile` uses to time an accelerator, which runs a sub-graph as one node, per layer).
enum class SubGraphCuts { kWhereLetterChanges, kEveryLayer };

class Partition {
 public:
  // Throws InputError when `order` does not have one letter per layer unit.
  static Partition create(const graph::Graph& graph, const std::string& order,
                          SubGraphCuts cuts = SubGraphCuts::kWhereLetterChanges);

  const std::string& order() const { return order_; }
  const std::vector<SubGraph>& subgraphs() const { return subgraphs_; }
  const std::vector<Edge>& edges() const { return edges_; }
  // Letters in order of first appearance ("BLG" for BBLLGB).
  std::string processors() const;
  // Index of the sub-graph that runs `layer`.
  uint32_t subgraph_of_layer(uint32_t layer) const { return layer_to_subgraph_.at(layer); }

 private:
  std::string order_;
  std::vector<SubGraph> subgraphs_;
  std::vector<Edge> edges_;
  std::vector<uint32_t> layer_to_subgraph_;
};

// "sub-graph 2 (layers 5-7 on L)", for messages.
std::string subgraph_label(const SubGraph& subgraph);

// Throws InputError unless `order` is non-empty and all upper-case ASCII letters; the message
// names the first other character and its position, counted in characters (UTF-8 code points),
// and quotes a long order shortened (core/message_text.h).
void check_order_letters(const std::string& order);

// Receive-buffer capacity per (edge, destination), as ARM-CO-UP Fig. 8 requires: an adjacent edge
// gets `base` slots (2 = double buffering, so producer and consumer overlap); an edge that skips
// stages gets the longest-path sum of `base` between its ends, so its sender never waits on it in
// a steady pipeline. Result indexed [edge][destination position].
std::vector<std::vector<uint32_t>> receiver_capacities(const Partition& partition, uint32_t base);

}  // namespace co_up
