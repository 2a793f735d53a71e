// The co_up IR: a DAG of operator nodes over tensors, split into layer units.
//
// The graph owns every node and tensor; everything else refers to them by id (NodeId, TensorId),
// as ARM-CL's graph does. Nodes are kept in topological order — the builder only appends nodes
// whose inputs exist — and layer units are contiguous runs of that order, so a processor order
// string cuts the graph into sub-graphs whose edges only point forward.
//
// A layer unit is what one letter of --order maps: "conv1" of AlexNet (conv+relu+lrn+pool), one
// inception module of GoogLeNet, one bottleneck of ResNet50.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/attributes.h"
#include "graph/op.h"
#include "graph/tensor.h"

namespace co_up::graph {

struct Node {
  NodeId id = kNoNode;
  std::string name;
  OpType op = OpType::kIdentity;
  Attributes attrs;
  std::vector<TensorId> inputs;  // kNoTensor marks an absent optional input
  std::vector<TensorId> outputs;
  uint32_t layer = 0;  // layer unit index
};

struct LayerUnit {
  std::string name;
  std::vector<NodeId> nodes;  // in topological order, contiguous
};

class Graph {
 public:
  explicit Graph(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }

  // Adds a graph input (an Input node producing the tensor).
  TensorId add_input(const std::string& name, TensorDesc desc);
  TensorId add_constant(const std::string& name, TensorDesc desc, std::vector<float> data);
  // Appends a node computing `op` over `inputs` in layer unit `layer`; the output description is
  // inferred. Throws InputError when shapes or attributes do not fit (names the node).
  TensorId add_node(const std::string& name, OpType op, std::vector<TensorId> inputs,
                    Attributes attrs, uint32_t layer);
  void mark_output(TensorId tensor);
  // Multi-exit networks: declares every graph output an exit classifier, in stage order — the
  // order of outputs() — the final exit last. Exit k is what a frame returns when it stops after
  // k's stage (core/exit_policy.h). Throws InputError unless there are at least two outputs, each
  // computed after the one before (stage order is topological order) and all of one element
  // count (a frame's result is any of them). Passes that rebuild the graph keep the mark.
  void mark_outputs_as_exits();
  bool has_exits() const { return outputs_are_exits_; }
  // Reorders the graph outputs to `outputs` (a permutation of outputs()); throws InputError
  // otherwise. For a sidecar that lists a model's exits in stage order.
  void reorder_outputs(const std::vector<TensorId>& outputs);

  const Node& node(NodeId id) const { return nodes_.at(id); }
  Node& mutable_node(NodeId id) { return nodes_.at(id); }
  const Tensor& tensor(TensorId id) const { return tensors_.at(id); }
  Tensor& mutable_tensor(TensorId id) { return tensors_.at(id); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const std::vector<TensorId>& inputs() const { return inputs_; }
  const std::vector<TensorId>& outputs() const { return outputs_; }

  // Layer units, rebuilt from Node::layer; unit names come from set_layer_name.
  void set_layer_name(uint32_t layer, std::string name);
  std::vector<LayerUnit> layers() const;
  uint32_t layer_count() const;

  // Nodes (non-Input) that read `tensor`, in topological order.
  std::vector<NodeId> consumers(TensorId tensor) const;

  // Removes nodes for which `erase` is true. Each erased node must have one data input and one
  // output; its consumers (and graph outputs) are rewired to that input. Renumbers nodes;
  // tensors keep their ids. Used by passes (batch-norm folding, identity elimination).
  template <typename Pred>
  void erase_passthrough_nodes(Pred erase);

  // Checks ids, topological order, layer contiguity and shapes; throws std::logic_error.
  void validate() const;

 private:
  void erase_passthrough_nodes_impl(const std::vector<bool>& erase);

  std::string name_;
  std::vector<Node> nodes_;
  std::vector<Tensor> tensors_;
  std::vector<TensorId> inputs_;
  std::vector<TensorId> outputs_;
  std::vector<std::string> layer_names_;
  bool outputs_are_exits_ = false;
};

template <typename Pred>
void Graph::erase_passthrough_nodes(Pred erase) {
  std::vector<bool> flags(nodes_.size());
  for (const Node& n : nodes_) flags[n.id] = erase(n);
  erase_passthrough_nodes_impl(flags);
}

// What --list-layers prints and profiles carry, per layer unit.
struct LayerSummary {
  uint32_t index = 0;
  std::string name;
  std::string ops;           // "Conv(relu)+LRN+MaxPool"
  std::string output_shape;  // of the unit's last node
  int64_t macs = 0;
};
std::vector<LayerSummary> summarize_layers(const Graph& graph);

// Multiply-accumulates of one node (0 for non-compute ops).
int64_t node_macs(const Graph& graph, const Node& node);

// Infers the output description of `op` over `inputs`; throws InputError naming `node_name`.
TensorDesc infer_output(const std::string& node_name, OpType op,
                        const std::vector<const TensorDesc*>& inputs, const Attributes& attrs);

}  // namespace co_up::graph
