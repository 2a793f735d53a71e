#include "tests/rknn/graph_runner.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "ref_cnn_kernels.h"

namespace co_up::test {
namespace {

using graph::Node;
using graph::OpType;
using graph::TensorId;

reference::Activation activation_of(const Node& n) {
  const std::string& a = n.attrs.get_string("activation");
  if (a == "none") return reference::Activation::kNone;
  if (a == "relu") return reference::Activation::kRelu;
  if (a == "relu6") return reference::Activation::kRelu6;
  throw std::invalid_argument("node '" + n.name + "': unknown fused activation '" + a + "'");
}

int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

}  // namespace

ReferenceGraphRunner::ReferenceGraphRunner(const graph::Graph& graph, std::vector<graph::NodeId> nodes)
    : graph_(graph), tensors_(graph.tensors().size()) {
  if (nodes.empty()) {
    for (const Node& n : graph.nodes()) nodes.push_back(n.id);
  }
  for (graph::NodeId id : nodes) {
    const Node& n = graph.node(id);
    if (n.op == OpType::kInput) continue;
    steps_.push_back(build_step(n));
  }
  scratch_ = reference::AlignedBuffer(scratch_floats_);
}

float* ReferenceGraphRunner::data(TensorId t) {
  reference::AlignedBuffer& buffer = tensors_.at(t);
  if (buffer.size() == 0) {
    const graph::Tensor& tensor = graph_.tensor(t);
    buffer = reference::AlignedBuffer(static_cast<size_t>(tensor.desc.element_count()));
    if (tensor.is_constant) std::copy(tensor.data.begin(), tensor.data.end(), buffer.data());
  }
  return buffer.data();
}

std::span<float> ReferenceGraphRunner::values(TensorId t) {
  float* p = data(t);
  return {p, tensors_[t].size()};
}

ReferenceGraphRunner::Step ReferenceGraphRunner::build_step(const Node& n) {
  const std::vector<int64_t>& in = graph_.tensor(n.inputs.at(0)).desc.shape;
  const std::vector<int64_t>& out_shape = graph_.tensor(n.outputs.at(0)).desc.shape;
  const int64_t count = count_of(out_shape);
  const float* x = data(n.inputs[0]);
  float* y = data(n.outputs[0]);
  // Weights are packed from the graph's own copy: no second copy of a 100 MB AlexNet.
  auto constant = [&](size_t i) -> const float* {
    if (i >= n.inputs.size() || n.inputs[i] == graph::kNoTensor) return nullptr;
    const graph::Tensor& t = graph_.tensor(n.inputs[i]);
    return t.is_constant ? t.data.data() : data(t.id);
  };
  switch (n.op) {
    case OpType::kInput:
      break;
    case OpType::kConv: {
      const auto& w = graph_.tensor(n.inputs.at(1)).desc.shape;
      const auto& strides = n.attrs.get_ints("strides");
      const auto& pads = n.attrs.get_ints("pads");
      const auto& dilations = n.attrs.get_ints("dilations");
      reference::Conv2dShape s;
      s.batch = in[0];
      s.in_channels = in[1];
      s.in_height = in[2];
      s.in_width = in[3];
      s.out_channels = w[0];
      s.kernel_h = w[2];
      s.kernel_w = w[3];
      s.stride_h = strides[0];
      s.stride_w = strides[1];
      s.pad_top = pads[0];
      s.pad_left = pads[1];
      s.pad_bottom = pads[2];
      s.pad_right = pads[3];
      s.dilation_h = dilations[0];
      s.dilation_w = dilations[1];
      s.group = n.attrs.get_int("group");
      s.activation = activation_of(n);
      auto conv = std::make_shared<const reference::PackedConv2d>(s, constant(1), constant(2));
      scratch_floats_ = std::max(scratch_floats_, conv->scratch_floats(1));  // no pool: one thread
      return [this, conv, x, y] { conv->run(x, y, scratch_.data(), nullptr); };
    }
    case OpType::kFullyConnected: {
      const auto& w = graph_.tensor(n.inputs.at(1)).desc.shape;
      auto fc = std::make_shared<const reference::PackedFullyConnected>(
          w[0], w[1], constant(1), constant(2), activation_of(n));
      const int64_t batch = in[0];
      return [fc, x, y, batch] { fc->run(x, batch, y, nullptr); };
    }
    case OpType::kMaxPool:
    case OpType::kAveragePool: {
      const auto& kernel = n.attrs.get_ints("kernel_shape");
      const auto& strides = n.attrs.get_ints("strides");
      const auto& pads = n.attrs.get_ints("pads");
      reference::Pool2dShape s;
      s.batch = in[0];
      s.channels = in[1];
      s.in_height = in[2];
      s.in_width = in[3];
      s.kernel_h = kernel[0];
      s.kernel_w = kernel[1];
      s.stride_h = strides[0];
      s.stride_w = strides[1];
      s.pad_top = pads[0];
      s.pad_left = pads[1];
      s.pad_bottom = pads[2];
      s.pad_right = pads[3];
      s.ceil_mode = n.attrs.get_int("ceil_mode") != 0;
      const bool average = n.op == OpType::kAveragePool;
      s.count_include_pad = average && n.attrs.get_int("count_include_pad") != 0;
      return [s, average, x, y] {
        if (average) {
          reference::average_pool2d(s, x, y, nullptr);
        } else {
          reference::max_pool2d(s, x, y, nullptr);
        }
      };
    }
    case OpType::kGlobalAveragePool:
    case OpType::kGlobalMaxPool: {
      const int64_t planes = in[0] * in[1], plane = in[2] * in[3];
      const bool average = n.op == OpType::kGlobalAveragePool;
      return [=] {
        if (average) {
          reference::global_average_pool(planes, plane, x, y, nullptr);
        } else {
          reference::global_max_pool(planes, plane, x, y, nullptr);
        }
      };
    }
    case OpType::kRelu:
      return [=] { reference::relu(x, y, count, nullptr); };
    case OpType::kClip: {
      const auto lo = static_cast<float>(n.attrs.get_float("min"));
      const auto hi = static_cast<float>(n.attrs.get_float("max"));
      return [=] { reference::clip(x, y, count, lo, hi, nullptr); };
    }
    case OpType::kSigmoid:
      return [=] { reference::sigmoid(x, y, count, nullptr); };
    case OpType::kHardSwish:
      return [=] { reference::hard_swish(x, y, count, nullptr); };
    case OpType::kLrn: {
      const int64_t size = n.attrs.get_int("size");
      const auto alpha = static_cast<float>(n.attrs.get_float("alpha"));
      const auto beta = static_cast<float>(n.attrs.get_float("beta"));
      const auto bias = static_cast<float>(n.attrs.get_float("bias"));
      const int64_t batch = in[0], channels = in[1], plane = in[2] * in[3];
      return [=] { reference::lrn(x, y, batch, channels, plane, size, alpha, beta, bias, nullptr); };
    }
    case OpType::kBatchNormalization: {
      const int64_t batch = in[0], channels = in[1], plane = in[2] * in[3];
      auto folded = std::make_shared<std::vector<float>>(static_cast<size_t>(2 * channels));
      reference::fold_batch_norm(channels, constant(1), constant(2), constant(3), constant(4), static_cast<float>(n.attrs.get_float("epsilon")),
                                 folded->data(), folded->data() + channels);
      return [=] {
        reference::batch_norm(x, y, batch, channels, plane, folded->data(), folded->data() + channels, nullptr);
      };
    }
    case OpType::kConcat: {
      const auto axis = static_cast<size_t>(n.attrs.get_int("axis"));
      int64_t outer = 1, inner = 1;
      for (size_t d = 0; d < axis; ++d) outer *= out_shape[d];
      for (size_t d = axis + 1; d < out_shape.size(); ++d) inner *= out_shape[d];
      std::vector<const float*> sources;
      std::vector<int64_t> extents;
      for (TensorId t : n.inputs) {
        sources.push_back(data(t));
        extents.push_back(graph_.tensor(t).desc.shape.at(axis));
      }
      return [=] { reference::concat(sources, extents, outer, inner, y, nullptr); };
    }
    case OpType::kAdd: {
      const float* b = data(n.inputs.at(1));
      const reference::Activation act = activation_of(n);
      return [=] { reference::add(x, b, y, count, act, nullptr); };
    }
    case OpType::kSoftmax: {
      const auto axis = static_cast<size_t>(n.attrs.get_int("axis"));
      int64_t outer = 1, inner = 1;
      for (size_t d = 0; d < axis; ++d) outer *= in[d];
      for (size_t d = axis + 1; d < in.size(); ++d) inner *= in[d];
      const int64_t extent = in.at(axis);
      return [=] { reference::softmax(x, y, outer, extent, inner, nullptr); };
    }
    case OpType::kFlatten:
    case OpType::kReshape:
    case OpType::kIdentity:
      return [=] { reference::copy(x, y, count, nullptr); };
    case OpType::kChannelScale: {
      const float* s = data(n.inputs.at(1));
      const int64_t batch = in.at(0), channels = in.at(1), plane = in.at(2) * in.at(3);
      return [=] { reference::channel_scale(x, s, y, batch, channels, plane, nullptr); };
    }
    case OpType::kHardSigmoid: {
      const auto alpha = static_cast<float>(n.attrs.get_float("alpha"));
      const auto beta = static_cast<float>(n.attrs.get_float("beta"));
      return [=] { reference::hard_sigmoid(x, y, count, alpha, beta, nullptr); };
    }
    case OpType::kSiLU:
      return [=] { reference::silu(x, y, count, nullptr); };
    case OpType::kChannelShuffle: {
      const int64_t batch = in.at(0), channels = in.at(1), plane = in.at(2) * in.at(3);
      const int64_t groups = n.attrs.get_int("groups");
      return [=] { reference::channel_shuffle(x, y, batch, channels, plane, groups, nullptr); };
    }
    default:
      break;  // the rank-N ops: refused below
  }
  throw std::invalid_argument("node '" + n.name + "' (" + std::string(graph::op_type_name(n.op)) +
                              "): not supported by the reference graph runner");
}

void ReferenceGraphRunner::run() {
  for (const Step& step : steps_) step();
}

std::vector<std::vector<float>> run_reference(const graph::Graph& graph,
                                              const std::vector<std::vector<float>>& inputs) {
  ReferenceGraphRunner runner(graph);
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    std::span<float> in = runner.values(graph.inputs()[i]);
    const std::vector<float>& values = inputs.at(i);
    if (values.size() != in.size()) {
      throw std::invalid_argument("input " + std::to_string(i) + " has " + std::to_string(values.size()) +
                                  " values, the graph needs " + std::to_string(in.size()));
    }
    std::copy(values.begin(), values.end(), in.begin());
  }
  runner.run();
  std::vector<std::vector<float>> outputs;
  for (graph::TensorId t : graph.outputs()) {
    std::span<float> out = runner.values(t);
    outputs.emplace_back(out.begin(), out.end());
  }
  return outputs;
}

}  // namespace co_up::test
