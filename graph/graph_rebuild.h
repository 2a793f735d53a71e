// Rebuilding a graph node by node into a new one (passes that reorder nodes, replace an op by
// several, or fuse a pattern into one op): the mapping from the source graph's tensors to the
// new graph's, constants copied where first read, inputs and outputs (and exits) carried over.
#pragma once

#include <vector>

#include "graph/graph.h"

namespace co_up::graph {

// Borrows `source` for its lifetime; the new graph is taken out with finish(). Not thread-safe.
class GraphRebuild {
 public:
  explicit GraphRebuild(const Graph& source)
      : source_(source), out_(source.name()), map_(source.tensors().size(), kNoTensor) {}

  // The new graph, for adding nodes and constants of its own.
  Graph& out() { return out_; }

  // The new graph's tensor for source tensor t; a constant not yet read is copied here.
  // kNoTensor (an absent optional input) stays kNoTensor.
  TensorId mapped(TensorId t) {
    if (t == kNoTensor) return kNoTensor;
    if (map_[t] == kNoTensor) {
      const Tensor& c = source_.tensor(t);
      map_[t] = out_.add_constant(c.name, c.desc, c.data);
    }
    return map_[t];
  }
  // mapped() of every input of a source node, in order.
  std::vector<TensorId> mapped_inputs(const Node& n) {
    std::vector<TensorId> inputs;
    for (TensorId t : n.inputs) inputs.push_back(mapped(t));
    return inputs;
  }
  // Source tensor `from` is `to` in the new graph from now on.
  void map(TensorId from, TensorId to) { map_[from] = to; }

  // A source kInput node, copied with its tensor's name and desc.
  void copy_input(const Node& n) {
    const Tensor& t = source_.tensor(n.outputs[0]);
    map_[n.outputs[0]] = out_.add_input(t.name, t.desc);
  }
  // A source node copied unchanged but for its layer unit; its output keeps the source tensor's
  // name and desc.
  TensorId copy_node(const Node& n, uint32_t layer) {
    const TensorId t = out_.add_node(n.name, n.op, mapped_inputs(n), n.attrs, layer);
    const Tensor& from = source_.tensor(n.outputs[0]);
    out_.mutable_tensor(t).name = from.name;
    out_.mutable_tensor(t).desc = from.desc;
    map_[n.outputs[0]] = t;
    return t;
  }

  // Marks the source graph's outputs (and exits, where it has them) in the new graph and hands
  // it over; the builder is spent.
  Graph finish() {
    for (TensorId t : source_.outputs()) out_.mark_output(map_[t]);
    if (source_.has_exits()) out_.mark_outputs_as_exits();
    return std::move(out_);
  }

 private:
  const Graph& source_;
  Graph out_;
  std::vector<TensorId> map_;
};

}  // namespace co_up::graph
