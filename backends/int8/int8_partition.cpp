#include "int8_partition.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <span>
#include <utility>

#include "int8_kernels.h"
#include "int8_vnni.h"
#include "plugin_status.h"
#include "subgraph_desc.h"
#include "subgraph_plan.h"
#include "xnn_kernels.h"

namespace co_up::int8 {

using backends::Conv2dShape;
using backends::element_at;
using backends::element_count;
using backends::fail;
using backends::NodePlan;
using backends::Op;
using backends::PluginError;
using backends::Pool2dShape;

struct Int8Partition::Tensor {
  std::vector<int64_t> dims;  // the ABI's (NCHW for 4-D); buffers hold NHWC
  int64_t count = 0;
  bool activation = false;  // holds run-time values (not a weight): gets buffers and a range
  bool constant = false;    // an activation whose values came with the description
  int32_t producer = -1;    // node index, -1 for inputs and constants
  std::vector<uint32_t> consumers;
  Range range;
  QuantParams q;
  Buffer<float> f32;
  Buffer<int8_t> s8;
  // After calibration: which forms the int8 program reads or writes.
  bool s8_needed = false;
  bool f32_needed = false;
};

struct Int8Partition::Node {
  NodePlan plan;
  std::string name;
  ChannelWeights weights;   // Conv: OHWI per group; FullyConnected: columns in NHWC order
  std::vector<float> bias;  // empty: none
  std::unique_ptr<F32Step> f32;
  bool int8 = false;
};

struct Int8Partition::Port {
  uint32_t tensor = 0;
  bool transpose = false;  // NCHW at the ABI, NHWC inside
  int64_t batch = 1, channels = 1, plane = 1;
  Buffer<float> staging;  // the ABI's layout
  bool pending = false;   // written by the caller, not entered yet
};

struct Int8Partition::Step {
  std::vector<XnnOperator> ops;  // run in order, when present
  std::function<void()> own;     // an own kernel, when present
};

namespace {

const char* op_name(Op op) {
  switch (op) {
    case Op::kConv: return "Conv";
    case Op::kFullyConnected: return "FullyConnected";
    case Op::kMaxPool: return "MaxPool";
    case Op::kAveragePool: return "AveragePool";
    case Op::kGlobalAveragePool: return "GlobalAveragePool";
    case Op::kGlobalMaxPool: return "GlobalMaxPool";
    case Op::kRelu: return "Relu";
    case Op::kClip: return "Clip";
    case Op::kSigmoid: return "Sigmoid";
    case Op::kHardSwish: return "HardSwish";
    case Op::kLrn: return "LRN";
    case Op::kBatchNormalization: return "BatchNormalization";
    case Op::kConcat: return "Concat";
    case Op::kAdd: return "Add";
    case Op::kSoftmax: return "Softmax";
    case Op::kFlatten: return "Flatten";
    case Op::kReshape: return "Reshape";
    case Op::kIdentity: return "Identity";
    case Op::kChannelScale: return "ChannelScale";
    case Op::kHardSigmoid: return "HardSigmoid";
    case Op::kSiLU: return "SiLU";
    case Op::kChannelShuffle: return "ChannelShuffle";
    case Op::kTensorOp: return "rank-N op";
  }
  return "?";
}

// Ops whose int8 output keeps the input's parameters: they only select, move or clamp values.
bool keeps_input_params(Op op) {
  switch (op) {
    case Op::kMaxPool:
    case Op::kGlobalMaxPool:
    case Op::kRelu:
    case Op::kClip:
    case Op::kFlatten:
    case Op::kReshape:
    case Op::kIdentity:
      return true;
    default:
      return false;
  }
}

// Inputs that carry activations (the others are weights, packed at compile).
std::vector<uint32_t> activation_inputs(const NodePlan& p) {
  switch (p.op) {
    case Op::kConcat:
    case Op::kAdd:
      return p.inputs;
    default:
      return {p.inputs[0]};
  }
}

bool is_depthwise(const Conv2dShape& s) {
  return s.group == s.in_channels && s.out_channels == s.in_channels && s.group > 1;
}

// A fully connected layer as the convolution it is: a 1x1 kernel over a 1x1 image of K channels.
Conv2dShape fully_connected_shape(const NodePlan& p) {
  Conv2dShape s;
  s.batch = p.in_dims[0];
  s.in_channels = p.fc_in;
  s.in_height = 1;
  s.in_width = 1;
  s.out_channels = p.fc_out;
  s.activation = p.activation;
  return s;
}

int8_t to_s8(int32_t v) { return static_cast<int8_t>(v); }

}  // namespace

NodeExecution plan_execution(const NodePlan& p, bool vnni) {
  const char* kernel = vnni ? "AVX512-VNNI kernel" : "XNNPACK qc8 operator";
  switch (p.op) {
    case Op::kConv:
      return {true, std::string("int8: per-channel weights, int32 bias, ") +
                        (vnni && is_depthwise(p.conv) ? "AVX512-VNNI depthwise kernel" : kernel)};
    case Op::kFullyConnected:
      return {true, std::string("int8: per-channel weights, int32 bias, ") + kernel +
                        " (as a 1x1 convolution)"};
    case Op::kMaxPool:
      return {true, "int8: XNNPACK s8 max pooling, keeps its input's parameters"};
    case Op::kGlobalAveragePool:
      return {true, "int8: XNNPACK qs8 global average pooling"};
    case Op::kGlobalMaxPool:
      return {true, "int8: keeps its input's parameters"};
    case Op::kRelu:
    case Op::kClip:
      return {true, "int8: XNNPACK s8 clamp, keeps its input's parameters"};
    case Op::kSigmoid:
      return {true, "int8: XNNPACK qs8 sigmoid (output scale 1/256)"};
    case Op::kConcat:
      return {true, "int8: inputs requantised to the output's parameters (256-entry table)"};
    case Op::kAdd:
      return {true, "int8: XNNPACK qs8 add"};
    case Op::kFlatten:
    case Op::kReshape:
    case Op::kIdentity:
      return {true, "int8: data movement, keeps its input's parameters"};
    case Op::kAveragePool:
    case Op::kHardSwish:
    case Op::kLrn:
    case Op::kBatchNormalization:
    case Op::kSoftmax:
    case Op::kChannelScale:  // declined by int8's decoding; listed for completeness
    case Op::kHardSigmoid:
    case Op::kSiLU:
    case Op::kChannelShuffle:
    case Op::kTensorOp:  // declined by int8's decoding
      break;
  }
  return {false, std::string("runs in f32 inside the partition (no int8 ") + op_name(p.op) +
                     " here): dequantise, f32 " + op_name(p.op) + ", quantise"};
}

Int8Partition::Int8Partition(const co_up_subgraph_desc& graph, const backends::DecodeRules& rules,
                             const xnnpack::CpuPool& pool, PartitionOptions options)
    : pool_(pool), options_(options) {
  if (options_.calibration_frames < 1) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         "calibration_frames must be at least 1 (int8 parameters come from calibration frames)");
  }
  first_layer_ = graph.first_layer;
  last_layer_ = graph.last_layer;
  const backends::SubgraphPlan subgraph = backends::plan_subgraph(rules, graph);

  tensors_.resize(graph.tensor_count);
  for (uint32_t t = 0; t < graph.tensor_count; ++t) {
    const co_up_tensor_desc& d = element_at(graph.tensors, t);
    tensors_[t].dims.assign(d.dims, d.dims + d.rank);
    tensors_[t].count = element_count(tensors_[t].dims);
  }
  for (uint32_t i = 0; i < graph.input_count; ++i) tensors_[graph.inputs[i]].activation = true;
  nodes_.resize(graph.node_count);
  for (uint32_t n = 0; n < graph.node_count; ++n) {
    Node& node = nodes_[n];
    node.plan = subgraph.nodes[n];
    const co_up_node_desc& desc = element_at(graph.nodes, n);
    char unnamed[16];
    std::snprintf(unnamed, sizeof(unnamed), "#%u", n);
    node.name = desc.name ? desc.name : unnamed;
    tensors_[node.plan.output].activation = true;
    tensors_[node.plan.output].producer = static_cast<int32_t>(n);
    for (uint32_t t : activation_inputs(node.plan)) {
      tensors_[t].activation = true;
      tensors_[t].consumers.push_back(n);
    }
  }

  // f32 buffers (NHWC) for every activation; constants read as activations copied in now.
  xnnpack::CpuPool inline_pool(1, {}, xnnpack::Schedule::kStatic);
  std::vector<float*> f32_buffers(graph.tensor_count, nullptr);
  for (uint32_t t = 0; t < graph.tensor_count; ++t) {
    Tensor& tensor = tensors_[t];
    if (!tensor.activation) continue;
    tensor.f32 = Buffer<float>(tensor.count);
    f32_buffers[t] = tensor.f32.data();
    const co_up_tensor_desc& d = element_at(graph.tensors, t);
    if (d.data && !subgraph.is_input[t] && tensor.producer < 0) {
      tensor.constant = true;
      const auto* values = static_cast<const float*>(d.data);
      if (tensor.dims.size() == 4) {
        xnnpack::nchw_to_nhwc(values, tensor.f32.data(), tensor.dims[0], tensor.dims[1],
                              tensor.dims[2] * tensor.dims[3], inline_pool);
      } else {
        std::memcpy(tensor.f32.data(), values, static_cast<size_t>(tensor.count) * sizeof(float));
      }
      tensor.range.observe(std::span<const float>(values, static_cast<size_t>(tensor.count)));
    }
  }

  for (uint32_t n = 0; n < graph.node_count; ++n) {
    Node& node = nodes_[n];
    const NodePlan& p = node.plan;
    node.f32 = std::make_unique<F32Step>(build_f32_step(graph, n, p, f32_buffers, pool_));
    auto constant = [&](uint32_t t) -> const float* {
      return t == CO_UP_NO_TENSOR ? nullptr
                                  : static_cast<const float*>(element_at(graph.tensors, t).data);
    };
    if (p.op == Op::kConv) {
      // W[M, C/g, kH, kW] -> [M, kH, kW, C/g], then one scale per output channel.
      const Conv2dShape& s = p.conv;
      const int64_t gin = s.in_channels / s.group, taps = s.kernel_h * s.kernel_w;
      const std::vector<float> ohwi = xnnpack::conv_weights_ohwi(constant(p.inputs[1]), s);
      node.weights = quantize_weights(ohwi.data(), s.out_channels, gin * taps);
      if (const float* b = constant(p.inputs[2])) node.bias.assign(b, b + s.out_channels);
    } else if (p.op == Op::kFullyConnected) {
      std::vector<float> permuted;  // the input is NHWC inside
      const float* w = xnnpack::fc_weights_for_nhwc(constant(p.inputs[1]), p.in_dims, p.fc_out,
                                                    p.fc_in, permuted);
      node.weights = quantize_weights(w, p.fc_out, p.fc_in);
      if (const float* b = constant(p.inputs[2])) node.bias.assign(b, b + p.fc_out);
    }
  }

  auto port = [&](uint32_t t) {
    Port port;
    port.tensor = t;
    const std::vector<int64_t>& d = tensors_[t].dims;
    if (needs_transpose(d)) {
      port.transpose = true;
      port.batch = d[0];
      port.channels = d[1];
      port.plane = d[2] * d[3];
    }
    port.staging = Buffer<float>(tensors_[t].count);
    return port;
  };
  for (uint32_t i = 0; i < graph.input_count; ++i) inputs_.push_back(port(graph.inputs[i]));
  for (uint32_t i = 0; i < graph.output_count; ++i) outputs_.push_back(port(graph.outputs[i]));
}

Int8Partition::~Int8Partition() = default;

uint32_t Int8Partition::input_count() const { return static_cast<uint32_t>(inputs_.size()); }
uint32_t Int8Partition::output_count() const { return static_cast<uint32_t>(outputs_.size()); }
QuantParams Int8Partition::tensor_params(uint32_t t) const { return tensors_.at(t).q; }

float* Int8Partition::input_staging(uint32_t i) {
  inputs_.at(i).pending = true;
  return inputs_[i].staging.data();
}

void Int8Partition::enter_staged_input(uint32_t i) {
  Port& port = inputs_.at(i);
  if (port.pending) enter(port, port.staging.data());
}

void Int8Partition::enter_input(uint32_t i, const float* values) { enter(inputs_.at(i), values); }

void Int8Partition::enter(Port& port, const float* values) {
  Tensor& t = tensors_[port.tensor];
  port.pending = false;
  if (!calibrated_ || t.f32_needed) {
    if (port.transpose) {
      xnnpack::nchw_to_nhwc(values, t.f32.data(), port.batch, port.channels, port.plane, pool_);
    } else if (values != t.f32.data()) {
      std::memcpy(t.f32.data(), values, static_cast<size_t>(t.count) * sizeof(float));
    }
  }
  if (calibrated_ && t.s8_needed) {
    // The entry terminal: f32 NCHW -> int8 NHWC in one pass.
    if (port.transpose) {
      quantize_nchw_to_nhwc(values, t.s8.data(), port.batch, port.channels, port.plane, t.q, pool_);
    } else {
      quantize(values, t.s8.data(), t.count, t.q, pool_);
    }
  }
}

const float* Int8Partition::read_output(uint32_t i) {
  Port& port = outputs_.at(i);
  if (outputs_staged_) return port.staging.data();
  const Tensor& t = tensors_[port.tensor];
  const bool int8_output = t.producer >= 0 ? nodes_[static_cast<size_t>(t.producer)].int8 : !t.f32;
  if (int8_output) {
    // The exit terminal: int8 NHWC -> f32 NCHW in one pass.
    if (port.transpose) {
      dequantize_nhwc_to_nchw(t.s8.data(), port.staging.data(), port.batch, port.channels,
                              port.plane, t.q, pool_);
    } else {
      dequantize(t.s8.data(), port.staging.data(), t.count, t.q, pool_);
    }
    return port.staging.data();
  }
  if (!port.transpose) return t.f32.data();
  xnnpack::nhwc_to_nchw(t.f32.data(), port.staging.data(), port.batch, port.channels, port.plane,
                        pool_);
  return port.staging.data();
}

void Int8Partition::stage_outputs_f32() {
  for (Port& port : outputs_) {
    const Tensor& t = tensors_[port.tensor];
    if (port.transpose) {
      xnnpack::nhwc_to_nchw(t.f32.data(), port.staging.data(), port.batch, port.channels,
                            port.plane, pool_);
    } else {
      std::memcpy(port.staging.data(), t.f32.data(), static_cast<size_t>(t.count) * sizeof(float));
    }
  }
  outputs_staged_ = true;
}

void Int8Partition::run(const backends::LayerHooks& hooks) {
  hooks.begin(first_layer_);
  // An input mapped and written but never unmapped is still entered.
  for (uint32_t i = 0; i < inputs_.size(); ++i) enter_staged_input(i);
  if (!calibrated_) {
    for (const Node& node : nodes_) node.f32->run(pool_);
    observe_ranges();
    // The outputs of this frame are f32: stage them now, before switching frees f32 buffers.
    stage_outputs_f32();
    if (++frames_run_ == options_.calibration_frames) switch_to_int8();
  } else {
    outputs_staged_ = false;
    for (const Step& step : program_) {
      for (const auto& op : step.ops) check_xnn(pool_.run_operator(op.get()), "int8 run");
      if (step.own) step.own();
    }
    ++frames_run_;
  }
  hooks.end(last_layer_);
}

void Int8Partition::observe_ranges() {
  for (Tensor& t : tensors_) {
    if (!t.activation || t.constant) continue;
    t.range.observe(std::span<const float>(t.f32.data(), static_cast<size_t>(t.count)));
  }
}

void Int8Partition::assign_params() {
  for (Tensor& t : tensors_) {
    if (t.activation) t.q = activation_params(t.range);
  }
  // A tensor read only by a Concat is written straight in the Concat's parameters when its
  // producer requantises anyway: the Concat then copies it without a table.
  for (const Node& node : nodes_) {
    if (node.plan.op != Op::kConcat) continue;
    const QuantParams out = tensors_[node.plan.output].q;
    for (uint32_t t : node.plan.inputs) {
      Tensor& in = tensors_[t];
      const bool sole_reader = in.consumers.size() == 1;
      const bool is_output = std::any_of(outputs_.begin(), outputs_.end(),
                                         [&](const Port& p) { return p.tensor == t; });
      if (sole_reader && !is_output && in.producer >= 0 &&
          !keeps_input_params(nodes_[static_cast<size_t>(in.producer)].plan.op) &&
          nodes_[static_cast<size_t>(in.producer)].plan.op != Op::kSigmoid) {
        in.q = out;
      }
    }
  }
  for (const Node& node : nodes_) {
    const NodePlan& p = node.plan;
    Tensor& out = tensors_[p.output];
    const QuantParams in = tensors_[p.inputs[0]].q;
    if (keeps_input_params(p.op)) {
      out.q = in;
    } else if (p.op == Op::kSigmoid) {
      out.q = {1.0f / 256.0f, -128};  // what XNNPACK's qs8 sigmoid produces
    } else if (p.op == Op::kConv || p.op == Op::kFullyConnected) {
      // Requantisation scales must stay below 256 (XNNPACK's limit): a near-empty output range
      // (e.g. a ReLU that killed everything during calibration) widens instead.
      const float widest = *std::max_element(node.weights.scales.begin(), node.weights.scales.end());
      out.q.scale = std::max(out.q.scale, in.scale * widest / 255.0f);
    } else if (p.op == Op::kAdd) {
      out.q.scale = std::max(out.q.scale, std::max(in.scale, tensors_[p.inputs[1]].q.scale) / 255.0f);
    } else if (p.op == Op::kGlobalAveragePool) {
      out.q.scale = std::max(out.q.scale, in.scale / 255.0f);
    }
  }
}

Int8Partition::Step Int8Partition::build_int8_step(uint32_t n) {
  Node& node = nodes_[n];
  const NodePlan& p = node.plan;
  Step step;
  pthreadpool_t tp = pool_.get();
  const xnnpack::CpuPool* pool = &pool_;
  const std::string where = "int8 node '" + node.name + "'";
  const Tensor& in = tensors_[p.inputs[0]];
  Tensor& out = tensors_[p.output];
  const int8_t* x = in.s8.data();
  int8_t* y = out.s8.data();
  const int64_t count = out.count;
  auto add_op = [&](xnn_operator_t op) { step.ops.emplace_back(op); };

  switch (p.op) {
    case Op::kConv:
    case Op::kFullyConnected: {
      const Conv2dShape s = p.op == Op::kConv ? p.conv : fully_connected_shape(p);
      const int64_t m = s.out_channels;
      const std::vector<int32_t> bias = quantize_bias(node.bias.empty() ? nullptr : node.bias.data(),
                                                      m, in.q.scale, node.weights.scales);
      std::vector<float> scales(static_cast<size_t>(m));
      for (int64_t c = 0; c < m; ++c) {
        scales[static_cast<size_t>(c)] =
            requantization_scale(in.q.scale, node.weights.scales[static_cast<size_t>(c)], out.q.scale);
      }
      const auto [lo, hi] = activation_range(s.activation);
      const Int8Bounds bounds = clamp_bounds(lo, hi, out.q);
      if (options_.use_vnni && vnni_available()) {
        Int8ConvParams params;
        params.weights = node.weights.values.data();
        params.bias = bias.data();
        params.scales = scales.data();
        params.input_zero_point = to_s8(in.q.zero_point);
        params.output_zero_point = to_s8(out.q.zero_point);
        params.output_min = bounds.min;
        params.output_max = bounds.max;
        if (is_depthwise(s)) {
          auto kernel = std::make_shared<VnniDepthwise>(s, params, x, y);
          step.own = [kernel, pool] { kernel->run(*pool); };
        } else {
          auto kernel = std::make_shared<VnniConvolution>(s, params, x, y);
          step.own = [kernel, pool] { kernel->run(*pool); };
        }
        break;
      }
      const int64_t gin = s.in_channels / s.group, gout = s.out_channels / s.group;
      xnn_operator_t op = nullptr;
      check_xnn(xnn_create_convolution2d_nhwc_qc8(
                    uint32_t(s.pad_top), uint32_t(s.pad_right), uint32_t(s.pad_bottom),
                    uint32_t(s.pad_left), uint32_t(s.kernel_h), uint32_t(s.kernel_w),
                    uint32_t(s.stride_h), uint32_t(s.stride_w), uint32_t(s.dilation_h),
                    uint32_t(s.dilation_w), uint32_t(s.group), size_t(gin), size_t(gout),
                    size_t(s.in_channels), size_t(s.out_channels), to_s8(in.q.zero_point),
                    in.q.scale, node.weights.scales.data(), node.weights.values.data(),
                    bias.data(), to_s8(out.q.zero_point), out.q.scale, bounds.min, bounds.max, 0,
                    &op),
                "qc8 convolution create for " + where);
      add_op(op);
      check_xnn(xnn_setup_convolution2d_nhwc_qc8(op, size_t(s.batch), size_t(s.in_height),
                                                 size_t(s.in_width), x, y, tp),
                "qc8 convolution setup for " + where);
      break;
    }
    case Op::kMaxPool: {
      const Pool2dShape s = p.pool;
      const int64_t oh = s.out_height(), ow = s.out_width();
      // Ceil mode as extra bottom/right padding, which XNNPACK's max pooling ignores.
      const int64_t pad_b = std::max(s.pad_bottom, (oh - 1) * s.stride_h + s.kernel_h - s.in_height - s.pad_top);
      const int64_t pad_r = std::max(s.pad_right, (ow - 1) * s.stride_w + s.kernel_w - s.in_width - s.pad_left);
      xnn_operator_t op = nullptr;
      const xnn_status st = xnn_create_max_pooling2d_nhwc_s8(
          uint32_t(s.pad_top), uint32_t(pad_r), uint32_t(pad_b), uint32_t(s.pad_left),
          uint32_t(s.kernel_h), uint32_t(s.kernel_w), uint32_t(s.stride_h), uint32_t(s.stride_w), 1,
          1, size_t(s.channels), size_t(s.channels), size_t(s.channels), -128, 127, 0, &op);
      if (st == xnn_status_success) {
        add_op(op);
        check_xnn(xnn_setup_max_pooling2d_nhwc_s8(op, size_t(s.batch), size_t(s.in_height),
                                                  size_t(s.in_width), x, y, tp),
                  "s8 max pooling setup for " + where);
      } else {
        // Windows XNNPACK declines (e.g. 1x1): the own kernel.
        step.own = [=] { max_pool2d_s8_nhwc(s, x, y, *pool); };
      }
      break;
    }
    case Op::kGlobalAveragePool: {
      const size_t ch = size_t(p.in_dims[1]);
      xnn_operator_t op = nullptr;
      check_xnn(xnn_create_global_average_pooling_nwc_qs8(
                    ch, ch, ch, to_s8(in.q.zero_point), in.q.scale, to_s8(out.q.zero_point),
                    out.q.scale, -128, 127, 0, &op),
                "qs8 global average pooling create for " + where);
      add_op(op);
      check_xnn(xnn_setup_global_average_pooling_nwc_qs8(
                    op, size_t(p.in_dims[0]), size_t(p.in_dims[2] * p.in_dims[3]), x, y, tp),
                "qs8 global average pooling setup for " + where);
      break;
    }
    case Op::kGlobalMaxPool: {
      const int64_t batch = p.in_dims[0], ch = p.in_dims[1], plane = p.in_dims[2] * p.in_dims[3];
      step.own = [=] { global_max_pool_s8_nhwc(x, y, batch, plane, ch, *pool); };
      break;
    }
    case Op::kRelu:
    case Op::kClip: {
      const float lo = p.op == Op::kRelu ? 0.0f : p.value0;
      const float hi = p.op == Op::kRelu ? std::numeric_limits<float>::infinity() : p.value1;
      const Int8Bounds bounds = clamp_bounds(lo, hi, in.q);
      xnn_operator_t op = nullptr;
      check_xnn(xnn_create_clamp_nc_s8(size_t(count), size_t(count), size_t(count), bounds.min,
                                       bounds.max, 0, &op),
                "s8 clamp create for " + where);
      add_op(op);
      check_xnn(xnn_setup_clamp_nc_s8(op, 1, x, y, tp), "s8 clamp setup for " + where);
      break;
    }
    case Op::kSigmoid: {
      xnn_operator_t op = nullptr;
      check_xnn(xnn_create_sigmoid_nc_qs8(size_t(count), size_t(count), size_t(count),
                                          to_s8(in.q.zero_point), in.q.scale,
                                          to_s8(out.q.zero_point), out.q.scale, -128, 127, 0, &op),
                "qs8 sigmoid create for " + where);
      add_op(op);
      check_xnn(xnn_setup_sigmoid_nc_qs8(op, 1, x, y, tp), "qs8 sigmoid setup for " + where);
      break;
    }
    case Op::kConcat: {
      int64_t axis = 0;
      for (size_t d = 0; d < p.in_dims.size(); ++d) {
        if (p.in_dims[d] != p.out_dims[d]) axis = int64_t(d);
      }
      if (p.inputs.size() == 1) axis = 0;
      int64_t outer = 0, axis_len = 0, inner = 0;
      split_at_axis(internal_dims(p.out_dims), internal_axis(axis, p.out_dims.size()), &outer,
                    &axis_len, &inner);
      struct Part {
        const int8_t* src;
        int64_t row_bytes;
        int64_t offset;
        std::shared_ptr<const std::array<int8_t, 256>> table;  // null: same parameters
      };
      std::vector<Part> parts;
      int64_t offset = 0;
      for (size_t i = 0; i < p.inputs.size(); ++i) {
        const Tensor& part = tensors_[p.inputs[i]];
        Part entry{part.s8.data(), p.concat_axis[i] * inner, offset, nullptr};
        if (!(part.q == out.q)) {
          entry.table = std::make_shared<const std::array<int8_t, 256>>(requantize_table(part.q, out.q));
        }
        parts.push_back(std::move(entry));
        offset += p.concat_axis[i] * inner;
      }
      const int64_t row_stride = axis_len * inner;
      step.own = [=] {
        for (const Part& part : parts) {
          copy_rows_s8(part.src, part.row_bytes, y + part.offset, row_stride, outer,
                       part.row_bytes, part.table.get(), *pool);
        }
      };
      break;
    }
    case Op::kAdd: {
      const Tensor& b = tensors_[p.inputs[1]];
      const auto [lo, hi] = activation_range(p.activation);
      const Int8Bounds bounds = clamp_bounds(lo, hi, out.q);
      xnn_operator_t op = nullptr;
      check_xnn(xnn_create_add_nd_qs8(to_s8(in.q.zero_point), in.q.scale, to_s8(b.q.zero_point),
                                      b.q.scale, to_s8(out.q.zero_point), out.q.scale, bounds.min,
                                      bounds.max, 0, &op),
                "qs8 add create for " + where);
      add_op(op);
      const size_t shape[1] = {size_t(count)};
      check_xnn(xnn_setup_add_nd_qs8(op, 1, shape, 1, shape, x, b.s8.data(), y, tp),
                "qs8 add setup for " + where);
      break;
    }
    case Op::kFlatten:
    case Op::kReshape:
    case Op::kIdentity: {
      const auto& id = p.in_dims;
      const auto& od = p.out_dims;
      const bool in_nhwc = needs_transpose(id);
      const bool out_nhwc = needs_transpose(od);
      if (p.op == Op::kIdentity || (!in_nhwc && !out_nhwc)) {
        step.own = [=] { std::memcpy(y, x, size_t(count)); };
      } else if (in_nhwc && !out_nhwc) {
        step.own = [=] { nhwc_to_nchw_s8(x, y, id[0], id[1], id[2] * id[3], *pool); };
      } else if (!in_nhwc && out_nhwc) {
        step.own = [=] { nchw_to_nhwc_s8(x, y, od[0], od[1], od[2] * od[3], *pool); };
      } else {
        auto scratch = std::make_shared<Buffer<int8_t>>(count);
        step.own = [=] {
          nhwc_to_nchw_s8(x, scratch->data(), id[0], id[1], id[2] * id[3], *pool);
          nchw_to_nhwc_s8(scratch->data(), y, od[0], od[1], od[2] * od[3], *pool);
        };
      }
      break;
    }
    case Op::kAveragePool:
    case Op::kHardSwish:
    case Op::kLrn:
    case Op::kBatchNormalization:
    case Op::kSoftmax:
    case Op::kChannelScale:
    case Op::kHardSigmoid:
    case Op::kSiLU:
    case Op::kChannelShuffle:
      fail(CO_UP_STATUS_UNSUPPORTED, std::string("no int8 ") + op_name(p.op) + " here");
    case Op::kTensorOp:  // declined by int8's decoding
      backends::fail(CO_UP_STATUS_UNSUPPORTED, "int8: rank-N ops are not implemented");
  }
  return step;
}

void Int8Partition::switch_to_int8() {
  const bool vnni = options_.use_vnni && vnni_available();
  execution_.clear();
  for (Node& node : nodes_) {
    execution_.push_back(plan_execution(node.plan, vnni));
    node.int8 = execution_.back().int8;
  }
  assign_params();
  for (Tensor& t : tensors_) {
    if (t.activation) t.s8 = Buffer<int8_t>(t.count);
  }

  // The int8 operators. One that declines its parameters leaves its node in f32, saying why.
  std::vector<Step> int8_steps(nodes_.size());
  for (uint32_t n = 0; n < nodes_.size(); ++n) {
    if (!nodes_[n].int8) continue;
    try {
      int8_steps[n] = build_int8_step(n);
    } catch (const PluginError& e) {
      nodes_[n].int8 = false;
      execution_[n] = {false, std::string("runs in f32 inside the partition: ") + e.what()};
    }
  }

  // Which form each tensor needs, and the conversions between an int8 producer and an f32
  // reader (or the reverse), placed right after the producer.
  for (Tensor& t : tensors_) {
    if (!t.activation) continue;
    const bool int8_producer = t.producer >= 0 && nodes_[static_cast<size_t>(t.producer)].int8;
    const bool f32_producer = t.producer >= 0 && !int8_producer;
    bool int8_reader = false, f32_reader = false;
    for (uint32_t c : t.consumers) (nodes_[c].int8 ? int8_reader : f32_reader) = true;
    t.s8_needed = int8_producer || int8_reader;
    t.f32_needed = f32_producer || f32_reader;
  }
  for (const Port& port : outputs_) {
    Tensor& t = tensors_[port.tensor];
    if (t.producer < 0) t.f32_needed = true;  // an input passed through: read from f32
  }
  program_.clear();
  for (uint32_t n = 0; n < nodes_.size(); ++n) {
    Node& node = nodes_[n];
    Tensor& out = tensors_[node.plan.output];
    if (node.int8) {
      program_.push_back(std::move(int8_steps[n]));
      if (out.f32_needed) {
        const int8_t* src = out.s8.data();
        float* dst = out.f32.data();
        const int64_t count = out.count;
        const QuantParams q = out.q;
        const xnnpack::CpuPool* pool = &pool_;
        program_.push_back({{}, [=] { dequantize(src, dst, count, q, *pool); }});
      }
    } else {
      Step step;
      F32Step* f32 = node.f32.get();
      const xnnpack::CpuPool* pool = &pool_;
      step.own = [f32, pool] { f32->run(*pool); };
      program_.push_back(std::move(step));
      if (out.s8_needed) {
        const float* src = out.f32.data();
        int8_t* dst = out.s8.data();
        const int64_t count = out.count;
        const QuantParams q = out.q;
        const xnnpack::CpuPool* pool = &pool_;
        program_.push_back({{}, [=] { quantize(src, dst, count, q, *pool); }});
      }
    }
  }
  // Constants read by int8 ops: quantised once.
  for (Tensor& t : tensors_) {
    if (t.constant && t.s8_needed) quantize(t.f32.data(), t.s8.data(), t.count, t.q, pool_);
  }

  // Free what the int8 program does not use: f32 operators with their packed weights, the
  // quantised weights XNNPACK or the VNNI kernels packed, unused buffers.
  for (Node& node : nodes_) {
    if (node.int8) node.f32.reset();
    node.weights = {};
    node.bias = {};
  }
  for (Tensor& t : tensors_) {
    if (!t.f32_needed) t.f32 = {};
    if (!t.s8_needed) t.s8 = {};
  }
  calibrated_ = true;
}

}  // namespace co_up::int8
