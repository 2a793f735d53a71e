#include "graph/passes.h"

#include <cmath>
#include <stdexcept>

namespace co_up::graph {
namespace {

bool is_graph_output(const Graph& graph, TensorId tensor) {
  for (TensorId t : graph.outputs()) {
    if (t == tensor) return true;
  }
  return false;
}

// The node producing `tensor` when exactly one node reads it and it is not a graph output.
const Node* sole_producer(const Graph& graph, TensorId tensor) {
  const Tensor& t = graph.tensor(tensor);
  if (t.producer == kNoNode || is_graph_output(graph, tensor)) return nullptr;
  if (graph.consumers(tensor).size() != 1) return nullptr;
  return &graph.node(t.producer);
}

}  // namespace

void fold_batch_norm(Graph& graph) {
  std::vector<bool> folded(graph.nodes().size(), false);
  for (const Node& bn : graph.nodes()) {
    if (bn.op != OpType::kBatchNormalization) continue;
    const Node* conv = sole_producer(graph, bn.inputs[0]);
    if (conv == nullptr || conv->op != OpType::kConv ||
        conv->attrs.get_string("activation") != "none") {
      continue;
    }
    const NodeId conv_id = conv->id;
    const int64_t out_channels = graph.tensor(conv->inputs[1]).desc.shape[0];
    // Create the bias first: add_constant may grow the tensor table, so references into it
    // are taken only afterwards.
    if (conv->inputs.size() < 3 || conv->inputs[2] == kNoTensor) {
      TensorDesc desc;
      desc.shape = {out_channels};
      desc.layout = Layout::kAny;
      const TensorId bias_id = graph.add_constant(graph.node(conv_id).name + "_b", std::move(desc),
                                                  std::vector<float>(out_channels, 0.0f));
      Node& conv_node = graph.mutable_node(conv_id);
      conv_node.inputs.resize(3, kNoTensor);
      conv_node.inputs[2] = bias_id;
    }
    const auto& scale = graph.tensor(bn.inputs[1]).data;
    const auto& shift = graph.tensor(bn.inputs[2]).data;
    const auto& mean = graph.tensor(bn.inputs[3]).data;
    const auto& var = graph.tensor(bn.inputs[4]).data;
    const double epsilon = bn.attrs.get_float("epsilon");
    Tensor& weights = graph.mutable_tensor(graph.node(conv_id).inputs[1]);
    Tensor& bias = graph.mutable_tensor(graph.node(conv_id).inputs[2]);
    const size_t per_channel = weights.data.size() / static_cast<size_t>(out_channels);
    for (int64_t m = 0; m < out_channels; ++m) {
      const double factor = scale[m] / std::sqrt(static_cast<double>(var[m]) + epsilon);
      float* w = weights.data.data() + static_cast<size_t>(m) * per_channel;
      for (size_t i = 0; i < per_channel; ++i) w[i] = static_cast<float>(w[i] * factor);
      bias.data[m] = static_cast<float>((bias.data[m] - mean[m]) * factor + shift[m]);
    }
    folded[bn.id] = true;
  }
  graph.erase_passthrough_nodes([&](const Node& n) { return folded[n.id]; });
}

void eliminate_identity(Graph& graph) {
  graph.erase_passthrough_nodes([](const Node& n) { return n.op == OpType::kIdentity; });
}

void fuse_activations(Graph& graph) {
  std::vector<bool> fused(graph.nodes().size(), false);
  for (const Node& act : graph.nodes()) {
    std::string activation;
    if (act.op == OpType::kRelu) {
      activation = "relu";
    } else if (act.op == OpType::kClip && act.attrs.get_float("min") == 0.0 &&
               act.attrs.get_float("max") == 6.0) {
      activation = "relu6";
    } else {
      continue;
    }
    const Node* producer = sole_producer(graph, act.inputs[0]);
    if (producer == nullptr || producer->layer != act.layer) continue;
    if (producer->op != OpType::kConv && producer->op != OpType::kFullyConnected &&
        producer->op != OpType::kAdd) {
      continue;
    }
    if (producer->attrs.get_string("activation") != "none") continue;
    graph.mutable_node(producer->id).attrs.set("activation", activation);
    fused[act.id] = true;
  }
  graph.erase_passthrough_nodes([&](const Node& n) { return fused[n.id]; });
}

void assign_op_units(Graph& graph) {
  int64_t unit = -1;
  std::vector<std::string> names;
  for (const Node& n : graph.nodes()) {
    if (is_compute_op(n.op)) {
      ++unit;
      names.push_back(n.name);
    }
    graph.mutable_node(n.id).layer = static_cast<uint32_t>(std::max<int64_t>(unit, 0));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    graph.set_layer_name(static_cast<uint32_t>(i), names[i]);
  }
}

void optimize_for_inference(Graph& graph) {
  fold_batch_norm(graph);
  eliminate_identity(graph);
  fuse_activations(graph);
  graph.validate();
}

}  // namespace co_up::graph
