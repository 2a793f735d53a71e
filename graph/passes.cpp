#include "graph/passes.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/graph_rebuild.h"

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

void assign_branch_units(Graph& graph) {
  int64_t unit = -1;
  std::vector<std::string> names;
  std::vector<int64_t> unit_of(graph.nodes().size(), -1);
  for (const Node& n : graph.nodes()) {
    bool reads_current = false;
    std::vector<int64_t> read_units;
    for (TensorId t : n.inputs) {
      if (t == kNoTensor || graph.tensor(t).is_constant || graph.tensor(t).producer == kNoNode) continue;
      const Node& producer = graph.node(graph.tensor(t).producer);
      const int64_t u = producer.op == OpType::kInput ? -1 : unit_of[producer.id];
      if (u == unit && unit >= 0) reads_current = true;
      if (u >= 0 && std::find(read_units.begin(), read_units.end(), u) == read_units.end()) read_units.push_back(u);
    }
    const bool starts = n.op != OpType::kInput &&
                        (is_compute_op(n.op) || (unit >= 0 && (!reads_current || read_units.size() > 1)));
    if (starts) {
      ++unit;
      names.push_back(n.name);
    }
    unit_of[n.id] = std::max<int64_t>(unit, 0);
    graph.mutable_node(n.id).layer = static_cast<uint32_t>(std::max<int64_t>(unit, 0));
  }
  for (size_t i = 0; i < names.size(); ++i) graph.set_layer_name(static_cast<uint32_t>(i), names[i]);
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

void split_output_channels(Graph& graph, uint32_t unit, int parts) {
  const std::vector<LayerUnit> units = graph.layers();
  const std::string where = "cannot split layer " + std::to_string(unit);
  if (unit >= units.size()) {
    throw InputError(where + ": the network has " + std::to_string(units.size()) + " layers (see --list-layers)");
  }
  if (parts < 2) throw InputError(where + " into " + std::to_string(parts) + " parts: give 2 or more");
  NodeId op_id = kNoNode;
  for (NodeId id : units[unit].nodes) {
    if (!is_compute_op(graph.node(id).op)) continue;
    if (op_id != kNoNode) {
      throw InputError(where + " ('" + units[unit].name + "'): it holds several convolutions or fully connected "
                       "ops; split one of them with --units=ops");
    }
    op_id = id;
  }
  if (op_id == kNoNode) {
    throw InputError(where + " ('" + units[unit].name + "'): it has no convolution or fully connected op");
  }
  const Node& op = graph.node(op_id);
  if (op.op == OpType::kMatMul) {
    throw InputError(where + " ('" + op.name + "'): MatMul cannot be split by output channel (only Conv and "
                     "FullyConnected can)");
  }
  if (op.op == OpType::kConv && op.attrs.get_int("group") != 1) {
    throw InputError(where + " ('" + op.name + "'): grouped and depthwise convolutions cannot be split by output "
                     "channel (each slice would need its own input channels)");
  }
  const Tensor& weights = graph.tensor(op.inputs.at(1));
  const int64_t channels = weights.desc.shape.at(0);
  if (channels < parts) {
    throw InputError(where + " ('" + op.name + "') into " + std::to_string(parts) + " parts: it has only " +
                     std::to_string(channels) + " output channels");
  }
  // Slice boundaries: multiples of 16 channels (a vector) when there are enough, else of 1.
  const int64_t align = channels >= 16 * parts ? 16 : 1;
  std::vector<int64_t> bounds{0};
  for (int i = 1; i < parts; ++i) {
    bounds.push_back((channels * i / parts + align / 2) / align * align);
  }
  bounds.push_back(channels);

  // Rebuilt in node order, with the op replaced by its slices and a Concat.
  GraphRebuild rebuild(graph);
  Graph& out = rebuild.out();
  const auto shift = static_cast<uint32_t>(parts - 1);
  auto new_layer = [&](const Node& n) {
    if (n.layer < unit) return n.layer;
    if (n.layer > unit) return n.layer + shift;
    return n.id < op_id ? unit : unit + shift;  // the unit's tail follows the Concat
  };
  for (const Node& n : graph.nodes()) {
    if (n.op == OpType::kInput) {
      rebuild.copy_input(n);
      continue;
    }
    if (n.id != op_id) {
      rebuild.copy_node(n, new_layer(n));
      continue;
    }
    const std::vector<TensorId> inputs = rebuild.mapped_inputs(n);
    const int64_t per_channel = weights.desc.element_count() / channels;
    const bool has_bias = n.inputs.size() > 2 && n.inputs[2] != kNoTensor;
    std::vector<TensorId> slices;
    for (int i = 0; i < parts; ++i) {
      const int64_t from = bounds[i], count = bounds[i + 1] - from;
      const std::string suffix = "#" + std::to_string(i + 1);
      TensorDesc wd = weights.desc;
      wd.shape[0] = count;
      std::vector<TensorId> slice_inputs = inputs;
      slice_inputs[1] = out.add_constant(weights.name + suffix, wd,
                                         {weights.data.begin() + from * per_channel,
                                          weights.data.begin() + (from + count) * per_channel});
      if (has_bias) {
        const Tensor& bias = graph.tensor(n.inputs[2]);
        TensorDesc bd = bias.desc;
        bd.shape[0] = count;
        slice_inputs[2] = out.add_constant(bias.name + suffix, bd, {bias.data.begin() + from, bias.data.begin() + from + count});
      }
      slices.push_back(out.add_node(n.name + suffix, n.op, slice_inputs, n.attrs, unit + static_cast<uint32_t>(i)));
    }
    Attributes concat;
    concat.set("axis", int64_t{1});
    const TensorId joined = out.add_node(n.name + "#concat", OpType::kConcat, slices, concat, unit + shift);
    out.mutable_tensor(joined).name = graph.tensor(n.outputs[0]).name;
    rebuild.map(n.outputs[0], joined);
  }
  Graph rebuilt = rebuild.finish();
  for (size_t i = 0; i < units.size(); ++i) {
    const auto index = static_cast<uint32_t>(i);
    if (index != unit) {
      rebuilt.set_layer_name(index < unit ? index : index + shift, units[i].name);
      continue;
    }
    for (int p = 0; p < parts; ++p) rebuilt.set_layer_name(unit + static_cast<uint32_t>(p), units[i].name + "#" + std::to_string(p + 1));
  }
  rebuilt.validate();
  graph = std::move(rebuilt);
}

void optimize_for_inference(Graph& graph) {
  fold_batch_norm(graph);
  eliminate_identity(graph);
  fuse_activations(graph);
  graph.validate();
}

}  // namespace co_up::graph
