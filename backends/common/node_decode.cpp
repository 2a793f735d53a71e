// Node decoding (see node_decode.h).
#include "node_decode.h"

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "plugin_status.h"
#include "subgraph_desc.h"

namespace co_up::backends {

namespace {

Activation parse_activation(std::string_view s, bool* ok) {
  *ok = true;
  if (s == "none") return Activation::kNone;
  if (s == "relu") return Activation::kRelu;
  if (s == "relu6") return Activation::kRelu6;
  *ok = false;
  return Activation::kNone;
}

std::optional<Op> op_from_name(std::string_view name) {
  static constexpr std::pair<std::string_view, Op> kOps[] = {
      {"Conv", Op::kConv}, {"FullyConnected", Op::kFullyConnected}, {"MaxPool", Op::kMaxPool},
      {"AveragePool", Op::kAveragePool}, {"GlobalAveragePool", Op::kGlobalAveragePool},
      {"GlobalMaxPool", Op::kGlobalMaxPool}, {"Relu", Op::kRelu}, {"Clip", Op::kClip},
      {"Sigmoid", Op::kSigmoid}, {"HardSwish", Op::kHardSwish}, {"LRN", Op::kLrn},
      {"BatchNormalization", Op::kBatchNormalization}, {"Concat", Op::kConcat}, {"Add", Op::kAdd},
      {"Softmax", Op::kSoftmax}, {"Flatten", Op::kFlatten}, {"Reshape", Op::kReshape},
      {"Identity", Op::kIdentity}, {"ChannelScale", Op::kChannelScale},
      {"HardSigmoid", Op::kHardSigmoid}, {"SiLU", Op::kSiLU}, {"ChannelShuffle", Op::kChannelShuffle}};
  for (const auto& [n, op] : kOps) {
    if (n == name) return op;
  }
  return std::nullopt;
}

// Reads one node with messages that name it: "node 'conv1' (Conv): ...".
class NodeReader {
 public:
  NodeReader(const DecodeRules& rules, const co_up_subgraph_desc& graph, uint32_t index)
      : rules_(rules), graph_(graph), node_(element_at(graph.nodes, index)) {
    name_ = node_.name ? node_.name : std::string("#") + std::to_string(index);
    op_type_ = node_.op_type ? node_.op_type : "";
  }

  const co_up_node_desc& node() const { return node_; }
  const std::string& op_type() const { return op_type_; }

  [[noreturn]] void fail_node(co_up_status_code code, const std::string& what) const {
    fail(code, "node '" + name_ + "' (" + op_type_ + "): " + what);
  }

  uint32_t input_index(uint32_t i, const char* role, bool optional = false) const {
    if (i >= node_.input_count || !node_.inputs || node_.inputs[i] == CO_UP_NO_TENSOR) {
      if (optional) return CO_UP_NO_TENSOR;
      fail_node(CO_UP_STATUS_INVALID_ARGUMENT,
                std::string("input ") + std::to_string(i) + " (" + role + ") is missing");
    }
    return checked_tensor(node_.inputs[i], role);
  }

  uint32_t output_index() const {
    if (node_.output_count != 1 || !node_.outputs) {
      fail_node(CO_UP_STATUS_INVALID_ARGUMENT,
                "expects exactly 1 output, got " + std::to_string(node_.output_count));
    }
    return checked_tensor(node_.outputs[0], "output");
  }

  const co_up_tensor_desc& tensor(uint32_t index) const { return element_at(graph_.tensors, index); }

  std::string tensor_name(uint32_t index) const { return backends::tensor_name(graph_, index); }

  std::vector<int64_t> dims(uint32_t index) const {
    const co_up_tensor_desc& t = tensor(index);
    return std::vector<int64_t>(t.dims, t.dims + t.rank);
  }

  // Weights and other parameters are packed at compile time, so they must come with data.
  const float* constant_data(uint32_t index, const char* role) const {
    const co_up_tensor_desc& t = tensor(index);
    if (!t.data) {
      fail_node(CO_UP_STATUS_UNSUPPORTED, std::string(role) + " tensor '" + tensor_name(index) +
                                              "' is not constant (" + rules_.backend_name + " " +
                                              rules_.constant_use +
                                              " at compile time; fold it into a constant)");
    }
    return static_cast<const float*>(t.data);
  }

  void expect_rank(uint32_t index, uint32_t rank, const char* role) const {
    if (tensor(index).rank != rank) {
      fail_node(CO_UP_STATUS_INVALID_ARGUMENT,
                std::string(role) + " '" + tensor_name(index) + "' must be " +
                    std::to_string(rank) + "-D, got " + dims_string(dims(index)));
    }
  }

  void expect_dims(uint32_t index, const std::vector<int64_t>& expected, const char* role) const {
    if (dims(index) != expected) {
      fail_node(CO_UP_STATUS_INVALID_ARGUMENT,
                std::string(role) + " '" + tensor_name(index) + "' has shape " +
                    dims_string(dims(index)) + ", expected " + dims_string(expected) +
                    " (fix shape inference in the graph)");
    }
  }

  const co_up_attr& attr(const char* name, co_up_attr_type type) const {
    for (uint32_t i = 0; i < node_.attr_count && node_.attrs; ++i) {
      const co_up_attr& a = node_.attrs[i];
      if (a.name && std::strcmp(a.name, name) == 0) {
        if (a.type != type) {
          fail_node(CO_UP_STATUS_INVALID_ARGUMENT,
                    std::string("attribute '") + name + "' has the wrong type " +
                        std::to_string(a.type) + " (expected " + std::to_string(type) + ")");
        }
        return a;
      }
    }
    fail_node(CO_UP_STATUS_INVALID_ARGUMENT,
              std::string("attribute '") + name + "' is missing (the graph builder sets it)");
  }

  int64_t attr_int(const char* name) const { return attr(name, CO_UP_ATTR_INT).i; }
  float attr_float(const char* name) const {
    return static_cast<float>(attr(name, CO_UP_ATTR_FLOAT).f);
  }
  std::vector<int64_t> attr_ints(const char* name, size_t count) const {
    const co_up_attr& a = attr(name, CO_UP_ATTR_INTS);
    if ((count != 0 && a.count != count) || (a.count > 0 && !a.ints)) {
      fail_node(CO_UP_STATUS_INVALID_ARGUMENT, std::string("attribute '") + name + "' has " +
                                                   std::to_string(a.count) + " entries, expected " +
                                                   std::to_string(count));
    }
    return std::vector<int64_t>(a.ints, a.ints + a.count);
  }
  std::vector<float> attr_floats(const char* name, size_t count) const {
    const co_up_attr& a = attr(name, CO_UP_ATTR_FLOATS);
    if ((count != 0 && a.count != count) || (a.count > 0 && !a.floats)) {
      fail_node(CO_UP_STATUS_INVALID_ARGUMENT, std::string("attribute '") + name + "' has " +
                                                   std::to_string(a.count) + " entries, expected " +
                                                   std::to_string(count));
    }
    return std::vector<float>(a.floats, a.floats + a.count);
  }
  std::string attr_string(const char* name) const {
    const co_up_attr& a = attr(name, CO_UP_ATTR_STRING);
    return a.s ? a.s : "";
  }
  Activation attr_activation() const {
    const co_up_attr& a = attr("activation", CO_UP_ATTR_STRING);
    bool ok = false;
    const Activation act = parse_activation(a.s ? a.s : "", &ok);
    if (!ok) {
      fail_node(CO_UP_STATUS_UNSUPPORTED, std::string("fused activation '") + (a.s ? a.s : "") +
                                              "' is not implemented (none, relu, relu6)");
    }
    return act;
  }

 private:
  bool is_boundary(uint32_t index) const {
    for (uint32_t i = 0; i < graph_.input_count; ++i) {
      if (graph_.inputs[i] == index) return true;
    }
    for (uint32_t i = 0; i < graph_.output_count; ++i) {
      if (graph_.outputs[i] == index) return true;
    }
    return false;
  }

  uint32_t checked_tensor(uint32_t index, const char* role) const {
    if (index >= graph_.tensor_count) {
      fail_node(CO_UP_STATUS_INVALID_ARGUMENT, std::string(role) + " refers to tensor " +
                                                   std::to_string(index) + ", but the sub-graph has " +
                                                   std::to_string(graph_.tensor_count));
    }
    const co_up_tensor_desc& t = tensor(index);
    if (t.dtype != CO_UP_DTYPE_F32) {
      fail_node(CO_UP_STATUS_UNSUPPORTED,
                "dtype " + std::string(dtype_name(t.dtype)) + " not supported (f32 only) on " +
                    role + " '" + tensor_name(index) + "'");
    }
    if (t.layout == CO_UP_LAYOUT_NHWC && !(rules_.nhwc_boundaries && t.rank == 4 && is_boundary(index))) {
      fail_node(CO_UP_STATUS_UNSUPPORTED,
                std::string("layout NHWC not supported on ") + role + " '" + tensor_name(index) + "' (" +
                    (rules_.nhwc_boundaries ? "only on 4-D sub-graph inputs and outputs" : "NCHW only") + ")");
    }
    if (t.layout != CO_UP_LAYOUT_NCHW && t.layout != CO_UP_LAYOUT_ANY && t.layout != CO_UP_LAYOUT_NHWC) {
      fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "unknown layout " + std::to_string(t.layout));
    }
    if (t.rank == 0 || !t.dims) {
      fail_node(CO_UP_STATUS_INVALID_ARGUMENT,
                std::string(role) + " '" + tensor_name(index) + "' has no dims");
    }
    for (uint32_t d = 0; d < t.rank; ++d) {
      if (t.dims[d] < 1) {
        fail_node(CO_UP_STATUS_INVALID_ARGUMENT, std::string(role) + " '" + tensor_name(index) +
                                                     "' has a non-positive dimension " +
                                                     dims_string(dims(index)));
      }
    }
    if (t.data && t.data_bytes != static_cast<uint64_t>(element_count(dims(index))) * 4) {
      fail_node(CO_UP_STATUS_INVALID_ARGUMENT,
                std::string(role) + " '" + tensor_name(index) + "' holds " +
                    std::to_string(t.data_bytes) + " bytes, its shape needs " +
                    std::to_string(element_count(dims(index)) * 4));
    }
    return index;
  }

  const DecodeRules& rules_;
  const co_up_subgraph_desc& graph_;
  const co_up_node_desc& node_;
  std::string name_;
  std::string op_type_;
};

int64_t normalise_axis(const NodeReader& r, int64_t axis, size_t rank, bool allow_rank) {
  const int64_t limit = static_cast<int64_t>(rank) + (allow_rank ? 1 : 0);
  const int64_t a = axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
  if (a < 0 || a >= limit) {
    r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "axis " + std::to_string(axis) +
                                                   " is out of range for rank " +
                                                   std::to_string(rank));
  }
  return a;
}

void split_around_axis(const std::vector<int64_t>& dims, int64_t axis, NodePlan& plan) {
  plan.outer = 1;
  plan.inner = 1;
  for (int64_t d = 0; d < axis; ++d) plan.outer *= dims[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) plan.inner *= dims[d];
  plan.axis_len = dims[static_cast<size_t>(axis)];
}

void decode_conv(const NodeReader& r, NodePlan& p) {
  const uint32_t x = r.input_index(0, "X");
  const uint32_t w = r.input_index(1, "W");
  const uint32_t b = r.input_index(2, "B", true);
  p.inputs = {x, w, b};
  r.expect_rank(x, 4, "input X");
  r.expect_rank(w, 4, "weights W");
  r.constant_data(w, "weights W");
  const auto xd = r.dims(x);
  const auto wd = r.dims(w);
  const auto strides = r.attr_ints("strides", 2);
  const auto pads = r.attr_ints("pads", 4);
  const auto dilations = r.attr_ints("dilations", 2);
  Conv2dShape& s = p.conv;
  s.batch = xd[0];
  s.in_channels = xd[1];
  s.in_height = xd[2];
  s.in_width = xd[3];
  s.out_channels = wd[0];
  s.kernel_h = wd[2];
  s.kernel_w = wd[3];
  s.stride_h = strides[0];
  s.stride_w = strides[1];
  s.pad_top = pads[0];
  s.pad_left = pads[1];
  s.pad_bottom = pads[2];
  s.pad_right = pads[3];
  s.dilation_h = dilations[0];
  s.dilation_w = dilations[1];
  s.group = r.attr_int("group");
  s.activation = r.attr_activation();
  if (s.stride_h < 1 || s.stride_w < 1 || s.dilation_h < 1 || s.dilation_w < 1) {
    r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "strides and dilations must be >= 1");
  }
  for (int64_t pad : pads) {
    if (pad < 0) r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "pads must be >= 0");
  }
  if (s.group < 1 || s.in_channels % s.group != 0 || s.out_channels % s.group != 0) {
    r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT,
                "group " + std::to_string(s.group) + " must divide C=" + std::to_string(s.in_channels) +
                    " and M=" + std::to_string(s.out_channels));
  }
  if (wd[1] != s.in_channels / s.group) {
    r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "weights " + dims_string(wd) + " need dim 1 = C/group = " +
                                                   std::to_string(s.in_channels / s.group));
  }
  if (b != CO_UP_NO_TENSOR) {
    r.expect_dims(b, {s.out_channels}, "bias B");
    r.constant_data(b, "bias B");
  }
  const int64_t oh = s.out_height();
  const int64_t ow = s.out_width();
  if (oh < 1 || ow < 1) {
    r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "kernel window is larger than the padded input " +
                                                   dims_string(xd));
  }
  p.in_dims = xd;
  p.out_dims = {s.batch, s.out_channels, oh, ow};
}

void decode_fully_connected(const NodeReader& r, NodePlan& p) {
  const uint32_t x = r.input_index(0, "X");
  const uint32_t w = r.input_index(1, "W");
  const uint32_t b = r.input_index(2, "B", true);
  p.inputs = {x, w, b};
  const auto xd = r.dims(x);
  if (xd.size() < 2) r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "input X must be at least 2-D");
  r.expect_rank(w, 2, "weights W");
  r.constant_data(w, "weights W");
  const auto wd = r.dims(w);
  p.fc_in = element_count(xd) / xd[0];
  p.fc_out = wd[0];
  if (wd[1] != p.fc_in) {
    r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "weights " + dims_string(wd) + " need K = " +
                                                   std::to_string(p.fc_in) + " (input " +
                                                   dims_string(xd) + " flattened)");
  }
  if (b != CO_UP_NO_TENSOR) {
    r.expect_dims(b, {p.fc_out}, "bias B");
    r.constant_data(b, "bias B");
  }
  p.activation = r.attr_activation();
  p.in_dims = xd;
  p.out_dims = {xd[0], p.fc_out};
}

void decode_pool(const NodeReader& r, NodePlan& p, bool average) {
  const uint32_t x = r.input_index(0, "X");
  p.inputs = {x};
  r.expect_rank(x, 4, "input X");
  const auto xd = r.dims(x);
  const auto kernel = r.attr_ints("kernel_shape", 2);
  const auto strides = r.attr_ints("strides", 2);
  const auto pads = r.attr_ints("pads", 4);
  Pool2dShape& s = p.pool;
  s.batch = xd[0];
  s.channels = xd[1];
  s.in_height = xd[2];
  s.in_width = xd[3];
  s.kernel_h = kernel[0];
  s.kernel_w = kernel[1];
  s.stride_h = strides[0];
  s.stride_w = strides[1];
  s.pad_top = pads[0];
  s.pad_left = pads[1];
  s.pad_bottom = pads[2];
  s.pad_right = pads[3];
  s.ceil_mode = r.attr_int("ceil_mode") != 0;
  s.count_include_pad = average && r.attr_int("count_include_pad") != 0;
  if (s.kernel_h < 1 || s.kernel_w < 1 || s.stride_h < 1 || s.stride_w < 1) {
    r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "kernel_shape and strides must be >= 1");
  }
  // Pads below the kernel size keep every window touching the input (no empty windows).
  if (pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0 || pads[0] >= s.kernel_h ||
      pads[2] >= s.kernel_h || pads[1] >= s.kernel_w || pads[3] >= s.kernel_w) {
    r.fail_node(CO_UP_STATUS_UNSUPPORTED, "pads must be >= 0 and smaller than the kernel");
  }
  if (s.out_height() < 1 || s.out_width() < 1) {
    r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "kernel window is larger than the padded input " +
                                                   dims_string(xd));
  }
  p.in_dims = xd;
  p.out_dims = {s.batch, s.channels, s.out_height(), s.out_width()};
}

std::optional<TensorOp> tensor_op_from_name(std::string_view name) {
  static constexpr std::pair<std::string_view, TensorOp> kOps[] = {
      {"Sub", TensorOp::kSub}, {"Mul", TensorOp::kMul}, {"Div", TensorOp::kDiv},
      {"Pow", TensorOp::kPow}, {"Sqrt", TensorOp::kSqrt}, {"Erf", TensorOp::kErf},
      {"Tanh", TensorOp::kTanh}, {"Exp", TensorOp::kExp}, {"Gelu", TensorOp::kGelu},
      {"MatMul", TensorOp::kMatMul}, {"Transpose", TensorOp::kTranspose},
      {"ReduceMean", TensorOp::kReduceMean}, {"ReduceSum", TensorOp::kReduceSum},
      {"Gather", TensorOp::kGather}, {"Slice", TensorOp::kSlice},
      {"LayerNormalization", TensorOp::kLayerNormalization}, {"LeakyRelu", TensorOp::kLeakyRelu},
      {"Resize", TensorOp::kResize}, {"Pad", TensorOp::kPad}};
  for (const auto& [n, op] : kOps) {
    if (n == name) return op;
  }
  return std::nullopt;
}

// numpy broadcasting; empty when the shapes do not broadcast.
std::vector<int64_t> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return {};
    out[i] = da == 1 ? db : da;
  }
  return out;
}

constexpr size_t kMaxTensorRank = 8;

// Decodes the rank-N ops (Op::kTensorOp); the node's op is `op`.
void decode_tensor_op(const NodeReader& r, NodePlan& p, TensorOp op) {
  p.op = Op::kTensorOp;
  p.tensor_op = op;
  const uint32_t x = r.input_index(0, "X");
  p.inputs = {x};
  p.in_dims = r.dims(x);
  p.out_dims = p.in_dims;
  auto check_rank = [&](const std::vector<int64_t>& d) {
    if (d.size() > kMaxTensorRank) {
      r.fail_node(CO_UP_STATUS_UNSUPPORTED, "rank " + std::to_string(d.size()) + " is above the " +
                                                std::to_string(kMaxTensorRank) + " supported");
    }
  };
  check_rank(p.in_dims);
  auto sorted_unique_axes = [&](const std::vector<int64_t>& v, const char* what) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] < 0 || v[i] >= static_cast<int64_t>(p.in_dims.size()) || (i > 0 && v[i] <= v[i - 1])) {
        r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, std::string(what) + " " + dims_string(v) +
                                                       " must be sorted, distinct and below rank " +
                                                       std::to_string(p.in_dims.size()));
      }
    }
  };
  switch (op) {
    case TensorOp::kAdd:
    case TensorOp::kSub:
    case TensorOp::kMul:
    case TensorOp::kDiv:
    case TensorOp::kPow: {
      const uint32_t b = r.input_index(1, "B");
      p.inputs.push_back(b);
      p.in1_dims = r.dims(b);
      check_rank(p.in1_dims);
      p.out_dims = broadcast_dims(p.in_dims, p.in1_dims);
      if (p.out_dims.empty()) {
        r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "operands " + dims_string(p.in_dims) + " and " +
                                                       dims_string(p.in1_dims) + " do not broadcast");
      }
      if (op == TensorOp::kAdd) p.activation = r.attr_activation();
      break;
    }
    case TensorOp::kSqrt:
    case TensorOp::kErf:
    case TensorOp::kTanh:
    case TensorOp::kExp:
      break;
    case TensorOp::kGelu: {
      const co_up_attr& a = r.attr("approximate", CO_UP_ATTR_STRING);
      const std::string_view s = a.s ? a.s : "";
      if (s != "none" && s != "tanh") {
        r.fail_node(CO_UP_STATUS_UNSUPPORTED, "approximate '" + std::string(s) + "' is not one of none, tanh");
      }
      p.gelu_tanh = s == "tanh";
      break;
    }
    case TensorOp::kMatMul: {
      const uint32_t b = r.input_index(1, "B");
      p.inputs.push_back(b);
      p.in1_dims = r.dims(b);
      check_rank(p.in1_dims);
      const auto& a = p.in_dims;
      const auto& bd = p.in1_dims;
      if (a.size() < 2 || bd.size() < 2 || a.back() != bd[bd.size() - 2]) {
        r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "operands " + dims_string(a) + " and " +
                                                       dims_string(bd) + " do not fit a matrix product");
      }
      const std::vector<int64_t> ab(a.begin(), a.end() - 2), bb(bd.begin(), bd.end() - 2);
      std::vector<int64_t> batch = ab.empty() && bb.empty() ? std::vector<int64_t>{} : broadcast_dims(ab, bb);
      if (batch.empty() && !(ab.empty() && bb.empty())) {
        r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "batch dimensions of " + dims_string(a) + " and " +
                                                       dims_string(bd) + " do not broadcast");
      }
      p.out_dims = batch;
      p.out_dims.push_back(a[a.size() - 2]);
      p.out_dims.push_back(bd.back());
      break;
    }
    case TensorOp::kTranspose: {
      p.ints = r.attr_ints("perm", p.in_dims.size());
      std::vector<bool> seen(p.in_dims.size(), false);
      for (size_t i = 0; i < p.ints.size(); ++i) {
        const int64_t d = p.ints[i];
        if (d < 0 || d >= static_cast<int64_t>(p.in_dims.size()) || seen[static_cast<size_t>(d)]) {
          r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "perm " + dims_string(p.ints) + " is not a permutation");
        }
        seen[static_cast<size_t>(d)] = true;
        p.out_dims[i] = p.in_dims[static_cast<size_t>(d)];
      }
      break;
    }
    case TensorOp::kReduceMean:
    case TensorOp::kReduceSum: {
      p.ints = r.attr_ints("axes", 0);
      sorted_unique_axes(p.ints, "axes");
      p.keepdims = r.attr_int("keepdims") != 0;
      p.out_dims.clear();
      size_t next = 0;
      for (size_t d = 0; d < p.in_dims.size(); ++d) {
        const bool reduced = next < p.ints.size() && p.ints[next] == static_cast<int64_t>(d);
        if (reduced) ++next;
        if (!reduced) p.out_dims.push_back(p.in_dims[d]);
        else if (p.keepdims) p.out_dims.push_back(1);
      }
      if (p.out_dims.empty()) p.out_dims.push_back(1);
      break;
    }
    case TensorOp::kGather: {
      p.axis = normalise_axis(r, r.attr_int("axis"), p.in_dims.size(), false);
      p.ints = r.attr_ints("indices", 0);
      const std::vector<int64_t> ishape = r.attr_ints("indices_shape", 0);
      if (element_count(ishape) != static_cast<int64_t>(p.ints.size())) {
        r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "indices do not fit indices_shape " + dims_string(ishape));
      }
      for (int64_t i : p.ints) {
        if (i < 0 || i >= p.in_dims[static_cast<size_t>(p.axis)]) {
          r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "index " + std::to_string(i) + " is out of range");
        }
      }
      const auto axis = static_cast<size_t>(p.axis);
      p.out_dims.assign(p.in_dims.begin(), p.in_dims.begin() + static_cast<ptrdiff_t>(axis));
      p.out_dims.insert(p.out_dims.end(), ishape.begin(), ishape.end());
      p.out_dims.insert(p.out_dims.end(), p.in_dims.begin() + static_cast<ptrdiff_t>(axis) + 1, p.in_dims.end());
      if (p.out_dims.empty()) p.out_dims.push_back(1);
      check_rank(p.out_dims);
      break;
    }
    case TensorOp::kSlice: {
      const size_t rank = p.in_dims.size();
      p.ints = r.attr_ints("starts", rank);
      const std::vector<int64_t> ends = r.attr_ints("ends", rank);
      p.ints2 = r.attr_ints("steps", rank);
      for (size_t d = 0; d < rank; ++d) {
        if (p.ints2[d] < 1 || p.ints[d] < 0 || p.ints[d] >= ends[d] || ends[d] > p.in_dims[d]) {
          r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "slice of axis " + std::to_string(d) +
                                                         " is empty or out of range (positive steps only)");
        }
        p.out_dims[d] = (ends[d] - p.ints[d] + p.ints2[d] - 1) / p.ints2[d];
      }
      break;
    }
    case TensorOp::kLayerNormalization: {
      p.axis = normalise_axis(r, r.attr_int("axis"), p.in_dims.size(), false);
      p.value0 = r.attr_float("epsilon");
      const std::vector<int64_t> norm(p.in_dims.begin() + static_cast<ptrdiff_t>(p.axis), p.in_dims.end());
      const uint32_t scale = r.input_index(1, "Scale");
      const uint32_t bias = r.input_index(2, "Bias", true);
      if (element_count(r.dims(scale)) != element_count(norm) ||
          (bias != CO_UP_NO_TENSOR && element_count(r.dims(bias)) != element_count(norm))) {
        r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "Scale and Bias must hold " +
                                                       std::to_string(element_count(norm)) + " values");
      }
      p.inputs.push_back(scale);
      p.inputs.push_back(bias);
      break;
    }
    case TensorOp::kLeakyRelu:
      p.value0 = r.attr_float("alpha");
      break;
    case TensorOp::kResize: {
      const size_t rank = p.in_dims.size();
      if (rank < 2) r.fail_node(CO_UP_STATUS_UNSUPPORTED, "resizes rank >= 2 only");
      p.out_dims = r.attr_ints("sizes", rank);
      p.floats = r.attr_floats("scales", rank);
      const std::string mode = r.attr_string("mode");
      const std::string transform = r.attr_string("coordinate_transformation_mode");
      const std::string rounding = r.attr_string("nearest_mode");
      static constexpr std::pair<std::string_view, ResizeTransform> kTransforms[] = {
          {"asymmetric", ResizeTransform::kAsymmetric}, {"half_pixel", ResizeTransform::kHalfPixel},
          {"pytorch_half_pixel", ResizeTransform::kPytorchHalfPixel},
          {"align_corners", ResizeTransform::kAlignCorners}};
      static constexpr std::pair<std::string_view, NearestRounding> kRoundings[] = {
          {"floor", NearestRounding::kFloor}, {"ceil", NearestRounding::kCeil},
          {"round_prefer_floor", NearestRounding::kRoundPreferFloor},
          {"round_prefer_ceil", NearestRounding::kRoundPreferCeil}};
      if (mode != "nearest" && mode != "linear") {
        r.fail_node(CO_UP_STATUS_UNSUPPORTED, "mode '" + mode + "' is not nearest or linear");
      }
      p.resize.mode = mode == "nearest" ? ResizeMode::kNearest : ResizeMode::kLinear;
      bool found = false;
      for (const auto& [n, t] : kTransforms) {
        if (n == transform) p.resize.transform = t, found = true;
      }
      if (!found) r.fail_node(CO_UP_STATUS_UNSUPPORTED, "coordinate_transformation_mode '" + transform + "' is not supported");
      found = false;
      for (const auto& [n, t] : kRoundings) {
        if (n == rounding) p.resize.rounding = t, found = true;
      }
      if (!found) r.fail_node(CO_UP_STATUS_UNSUPPORTED, "nearest_mode '" + rounding + "' is not supported");
      for (size_t d = 0; d < rank; ++d) {
        if (p.out_dims[d] < 1 || !(p.floats[d] > 0.0f) || (d + 2 < rank && (p.out_dims[d] != p.in_dims[d]))) {
          r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "sizes " + dims_string(p.out_dims) + " of input " +
                                                         dims_string(p.in_dims) +
                                                         " must be positive and resize only the last two axes");
        }
      }
      break;
    }
    case TensorOp::kPad: {
      const size_t rank = p.in_dims.size();
      p.ints = r.attr_ints("pads", 2 * rank);
      p.value0 = r.attr_float("value");
      const std::string mode = r.attr_string("mode");
      if (mode == "constant") p.pad_mode = PadMode::kConstant;
      else if (mode == "reflect") p.pad_mode = PadMode::kReflect;
      else if (mode == "edge") p.pad_mode = PadMode::kEdge;
      else r.fail_node(CO_UP_STATUS_UNSUPPORTED, "mode '" + mode + "' is not constant, reflect or edge");
      for (size_t d = 0; d < rank; ++d) {
        const int64_t begin = p.ints[d], end = p.ints[d + rank];
        if (begin < 0 || end < 0 || (p.pad_mode == PadMode::kReflect && (begin >= p.in_dims[d] || end >= p.in_dims[d]))) {
          r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "pads " + dims_string(p.ints) + " are negative or (reflect) not smaller than " +
                                                         dims_string(p.in_dims));
        }
        p.out_dims[d] = p.in_dims[d] + begin + end;
      }
      break;
    }
  }
}

}  // namespace

NodePlan decode_node(const DecodeRules& rules, const co_up_subgraph_desc& graph, uint32_t index) {
  const NodeReader r(rules, graph, index);
  NodePlan p;
  const auto op = op_from_name(r.op_type());
  if (const auto tensor_op = tensor_op_from_name(r.op_type())) {
    if (rules.implements == nullptr || !rules.implements(Op::kTensorOp)) {
      r.fail_node(CO_UP_STATUS_UNSUPPORTED, "op '" + r.op_type() + "' is not implemented by " +
                                                rules.backend_name + " (map this layer to cpu-reference or opencl)");
    }
    decode_tensor_op(r, p, *tensor_op);
    p.output = r.output_index();
    r.expect_dims(p.output, p.out_dims, "output");
    return p;
  }
  if (!op || (!is_base_op(*op) && (rules.implements == nullptr || !rules.implements(*op)))) {
    r.fail_node(CO_UP_STATUS_UNSUPPORTED, "op '" + r.op_type() +
                                              "' is not implemented by " + rules.backend_name +
                                              " (map this layer to another backend)");
  }
  p.op = *op;
  p.output = r.output_index();
  auto unary = [&] {
    const uint32_t x = r.input_index(0, "X");
    p.inputs = {x};
    p.in_dims = r.dims(x);
    p.out_dims = p.in_dims;
  };
  switch (p.op) {
    case Op::kConv:
      decode_conv(r, p);
      break;
    case Op::kFullyConnected:
      decode_fully_connected(r, p);
      break;
    case Op::kMaxPool:
    case Op::kAveragePool:
      decode_pool(r, p, p.op == Op::kAveragePool);
      break;
    case Op::kGlobalAveragePool:
    case Op::kGlobalMaxPool:
      unary();
      r.expect_rank(p.inputs[0], 4, "input X");
      p.out_dims = {p.in_dims[0], p.in_dims[1], 1, 1};
      break;
    case Op::kRelu:
    case Op::kSigmoid:
    case Op::kHardSwish:
    case Op::kSiLU:
    case Op::kIdentity:
      unary();
      break;
    case Op::kHardSigmoid:
      unary();
      p.value0 = r.attr_float("alpha");
      p.value1 = r.attr_float("beta");
      break;
    case Op::kChannelScale: {
      unary();
      r.expect_rank(p.inputs[0], 4, "input X");
      const uint32_t scale = r.input_index(1, "S");
      r.expect_dims(scale, {p.in_dims[0], p.in_dims[1], 1, 1}, "input S");
      p.inputs.push_back(scale);
      break;
    }
    case Op::kChannelShuffle:
      unary();
      r.expect_rank(p.inputs[0], 4, "input X");
      p.groups = r.attr_int("groups");
      if (p.groups < 1 || p.in_dims[1] % p.groups != 0) {
        r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "groups " + std::to_string(p.groups) +
                                                       " does not divide the " +
                                                       std::to_string(p.in_dims[1]) + " channels");
      }
      break;
    case Op::kClip:
      unary();
      p.value0 = r.attr_float("min");
      p.value1 = r.attr_float("max");
      if (!(p.value0 <= p.value1)) {
        r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "min must be <= max");
      }
      break;
    case Op::kLrn:
      unary();
      r.expect_rank(p.inputs[0], 4, "input X");
      p.size = r.attr_int("size");
      p.value0 = r.attr_float("alpha");
      p.value1 = r.attr_float("beta");
      p.value2 = r.attr_float("bias");
      if (p.size < 1) r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "size must be >= 1");
      break;
    case Op::kBatchNormalization: {
      unary();
      if (p.in_dims.size() < 2) {
        r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "input X must be at least 2-D (N, C, ...)");
      }
      const char* roles[] = {"scale", "bias", "mean", "var"};
      for (uint32_t i = 0; i < 4; ++i) {
        const uint32_t t = r.input_index(i + 1, roles[i]);
        r.expect_dims(t, {p.in_dims[1]}, roles[i]);
        r.constant_data(t, roles[i]);
        p.inputs.push_back(t);
      }
      p.value0 = r.attr_float("epsilon");
      break;
    }
    case Op::kConcat: {
      if (r.node().input_count < 1) r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "needs inputs");
      for (uint32_t i = 0; i < r.node().input_count; ++i) p.inputs.push_back(r.input_index(i, "X"));
      p.in_dims = r.dims(p.inputs[0]);
      const int64_t axis = normalise_axis(r, r.attr_int("axis"), p.in_dims.size(), false);
      p.axis = axis;
      p.out_dims = p.in_dims;
      p.out_dims[static_cast<size_t>(axis)] = 0;
      for (uint32_t t : p.inputs) {
        auto d = r.dims(t);
        bool compatible = d.size() == p.in_dims.size();
        for (size_t k = 0; compatible && k < d.size(); ++k) {
          compatible = k == static_cast<size_t>(axis) || d[k] == p.in_dims[k];
        }
        if (!compatible) {
          r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT,
                      "input '" + r.tensor_name(t) + "' " + dims_string(d) +
                          " differs from the first input " + dims_string(p.in_dims) +
                          " outside axis " + std::to_string(axis));
        }
        p.concat_axis.push_back(d[static_cast<size_t>(axis)]);
        p.out_dims[static_cast<size_t>(axis)] += d[static_cast<size_t>(axis)];
      }
      split_around_axis(p.out_dims, axis, p);
      break;
    }
    case Op::kAdd: {
      unary();
      const uint32_t b = r.input_index(1, "B");
      if (r.dims(b) != p.in_dims || r.dims(p.output) != p.in_dims) {
        if (rules.implements == nullptr || !rules.implements(Op::kTensorOp)) {
          r.fail_node(CO_UP_STATUS_UNSUPPORTED,
                      "broadcasting Add of " + dims_string(p.in_dims) + " and " + dims_string(r.dims(b)) +
                          " is not implemented by " + rules.backend_name +
                          " (same shapes only; map this layer to cpu-reference or opencl)");
        }
        decode_tensor_op(r, p, TensorOp::kAdd);
        break;
      }
      r.expect_dims(b, p.in_dims, "input B");
      p.inputs.push_back(b);
      p.activation = r.attr_activation();
      break;
    }
    case Op::kSoftmax: {
      unary();
      const int64_t axis = normalise_axis(r, r.attr_int("axis"), p.in_dims.size(), false);
      p.axis = axis;
      split_around_axis(p.in_dims, axis, p);
      break;
    }
    case Op::kFlatten: {
      unary();
      const int64_t axis = normalise_axis(r, r.attr_int("axis"), p.in_dims.size(), true);
      int64_t outer = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= p.in_dims[static_cast<size_t>(d)];
      p.out_dims = {outer, element_count(p.in_dims) / outer};
      break;
    }
    case Op::kTensorOp:
      break;  // not in the op table above
    case Op::kReshape: {
      unary();
      p.out_dims = r.attr_ints("shape", 0);
      if (p.out_dims.empty() || element_count(p.out_dims) != element_count(p.in_dims)) {
        r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT, "shape " + dims_string(p.out_dims) +
                                                       " does not hold the input's " +
                                                       std::to_string(element_count(p.in_dims)) +
                                                       " elements");
      }
      for (int64_t d : p.out_dims) {
        if (d < 1) {
          r.fail_node(CO_UP_STATUS_INVALID_ARGUMENT,
                      "shape " + dims_string(p.out_dims) + " must be resolved (no -1 or 0)");
        }
      }
      break;
    }
  }
  r.expect_dims(p.output, p.out_dims, "output");
  return p;
}

void answer_node_query(const DecodeRules& rules, const co_up_subgraph_desc* graph,
                       uint32_t node_index, co_up_node_support* out_support) {
  if (out_support->struct_size < sizeof(co_up_node_support)) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         "co_up_node_support.struct_size is smaller than ABI 1.0's (set it before the call)");
  }
  check_graph(graph);
  if (node_index >= graph->node_count) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT, "node index " + std::to_string(node_index) +
                                            " is out of range (" +
                                            std::to_string(graph->node_count) + " nodes)");
  }
  std::string reason;
  try {
    decode_node(rules, *graph, node_index);
  } catch (const PluginError& e) {
    reason = e.what();
  }
  out_support->supported = reason.empty() ? 1 : 0;
  std::snprintf(out_support->reason, sizeof(out_support->reason), "%s", reason.c_str());
}

co_up_status* query_node(const StatusOrigin& origin, const DecodeRules& rules, bool has_device,
                         const co_up_subgraph_desc* graph, uint32_t node_index,
                         co_up_node_support* out_support) noexcept {
  return guarded(origin, "device_query_node", [&] {
    if (!has_device || !out_support) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, "device_query_node: device or out_support is NULL");
    }
    answer_node_query(rules, graph, node_index, out_support);
  });
}

}  // namespace co_up::backends
