#include "core/subgraph_desc.h"

#include <variant>

namespace co_up {

uint32_t SubGraphDesc::local_index(const graph::Graph& graph, graph::TensorId tensor,
                                   const std::set<graph::TensorId>& nhwc) {
  auto [it, inserted] = local_.try_emplace(tensor, static_cast<uint32_t>(tensors_.size()));
  if (inserted) {
    const graph::Tensor& t = graph.tensor(tensor);
    co_up_tensor_desc d{};
    d.struct_size = sizeof(co_up_tensor_desc);
    d.name = t.name.c_str();
    d.dtype = static_cast<int32_t>(t.desc.dtype);
    d.layout = nhwc.count(tensor) != 0 ? CO_UP_LAYOUT_NHWC : static_cast<int32_t>(t.desc.layout);
    d.rank = static_cast<uint32_t>(t.desc.shape.size());
    d.dims = t.desc.shape.data();
    if (!t.desc.quant.scales.empty()) {
      d.quant_scales = t.desc.quant.scales.data();
      d.quant_zero_points = t.desc.quant.zero_points.data();
      d.quant_count = static_cast<uint32_t>(t.desc.quant.scales.size());
      d.quant_axis = t.desc.quant.axis;
    }
    if (t.is_constant) {
      d.data = t.data.data();
      d.data_bytes = t.data.size() * sizeof(float);
    }
    tensors_.push_back(d);
  }
  return it->second;
}

SubGraphDesc::SubGraphDesc(const graph::Graph& graph, const SubGraph& subgraph,
                           const std::set<graph::TensorId>& nhwc) {
  for (graph::TensorId t : subgraph.inputs) inputs_.push_back(local_index(graph, t, nhwc));
  for (graph::NodeId id : subgraph.nodes) {
    const graph::Node& node = graph.node(id);
    std::vector<uint32_t>& io = node_io_.emplace_back();
    for (graph::TensorId t : node.inputs) {
      io.push_back(t == graph::kNoTensor ? CO_UP_NO_TENSOR : local_index(graph, t, nhwc));
    }
    for (graph::TensorId t : node.outputs) io.push_back(local_index(graph, t, nhwc));

    std::vector<co_up_attr>& attrs = node_attrs_.emplace_back();
    for (const auto& [name, value] : node.attrs.values()) {
      co_up_attr a{};
      a.name = name.c_str();
      if (const auto* i = std::get_if<int64_t>(&value)) {
        a.type = CO_UP_ATTR_INT;
        a.i = *i;
      } else if (const auto* f = std::get_if<double>(&value)) {
        a.type = CO_UP_ATTR_FLOAT;
        a.f = *f;
      } else if (const auto* ints = std::get_if<std::vector<int64_t>>(&value)) {
        a.type = CO_UP_ATTR_INTS;
        a.ints = ints->data();
        a.count = ints->size();
      } else if (const auto* floats = std::get_if<std::vector<float>>(&value)) {
        a.type = CO_UP_ATTR_FLOATS;
        a.floats = floats->data();
        a.count = floats->size();
      } else {
        a.type = CO_UP_ATTR_STRING;
        a.s = std::get<std::string>(value).c_str();
      }
      attrs.push_back(a);
    }

    co_up_node_desc n{};
    n.struct_size = sizeof(co_up_node_desc);
    n.name = node.name.c_str();
    n.op_type = graph::op_type_name(node.op).data();  // views a NUL-terminated literal
    n.layer = node.layer;
    n.inputs = io.data();
    n.input_count = static_cast<uint32_t>(node.inputs.size());
    n.outputs = io.data() + node.inputs.size();
    n.output_count = static_cast<uint32_t>(node.outputs.size());
    n.attrs = attrs.data();
    n.attr_count = static_cast<uint32_t>(attrs.size());
    nodes_.push_back(n);
  }
  for (graph::TensorId t : subgraph.outputs) outputs_.push_back(local_index(graph, t, nhwc));

  desc_.struct_size = sizeof(co_up_subgraph_desc);
  desc_.graph_name = graph.name().c_str();
  desc_.first_layer = subgraph.first_layer;
  desc_.last_layer = subgraph.last_layer;
  desc_.tensors = tensors_.data();
  desc_.tensor_count = static_cast<uint32_t>(tensors_.size());
  desc_.nodes = nodes_.data();
  desc_.node_count = static_cast<uint32_t>(nodes_.size());
  desc_.inputs = inputs_.data();
  desc_.input_count = static_cast<uint32_t>(inputs_.size());
  desc_.outputs = outputs_.data();
  desc_.output_count = static_cast<uint32_t>(outputs_.size());
}

}  // namespace co_up
