// ABI glue of the cpu-xnnpack backend: factory (XNNPACK initialised) -> device (options, pinned
// pthreadpool) -> compiled sub-graph (validated nodes, XNNPACK operators created and set up once,
// weights packed by XNNPACK at compile, one NHWC buffer per activation).
//
// Layout: the ABI speaks NCHW; inside a sub-graph every 4-D activation is NHWC, the layout
// XNNPACK's kernels want. Conversions happen only at the sub-graph boundary: outputs in
// compiled_map (timed by the runtime as transfer), inputs in compiled_bind_input (the runtime's
// usual path; not timed by the runtime today) or, after map + copy, in compiled_unmap. The only
// other layout change is a Flatten/Reshape of a 4-D tensor with H*W > 1 (AlexNet's pool5 -> fc6):
// the flattened vector must be in NCHW order, as the graph defines it.
//
// Node decoding and validation is the cpu-reference backend's, so both accept the same graphs
// with the same messages.
//
// Inside the plugin, failures are PluginError exceptions carrying a status code; `guarded` turns
// every exception into a co_up_status at the boundary, so nothing throws across it.
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <xnnpack.h>

#include "co_up/plugin_abi.h"
#include "ref_kernels.h"
#include "xnn_kernels.h"
#include "xnn_thread_pool.h"

using co_up::reference::Activation;
using co_up::reference::Conv2dShape;
using co_up::reference::Pool2dShape;

namespace co_up::xnnpack {
namespace {

constexpr const char* kBackendName = "cpu-xnnpack";
constexpr const char* kBackendVersion = "1.0.0";

class PluginError : public std::runtime_error {
 public:
  PluginError(co_up_status_code code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  co_up_status_code code() const { return code_; }

 private:
  co_up_status_code code_;
};

[[noreturn]] void fail(co_up_status_code code, const std::string& message) {
  throw PluginError(code, message);
}

// A status the plugin allocated; `message` points into `text`.
struct OwnedStatus : co_up_status {
  std::string text;
};

// Returned when even the status cannot be allocated; status_release recognises and keeps it.
// Immutable: never written after static initialisation.
const co_up_status kOutOfMemoryStatus = {
    sizeof(co_up_status), CO_UP_STATUS_OUT_OF_MEMORY,
    "cpu-xnnpack: out of memory (free memory or use smaller sub-graphs)"};

co_up_status* make_status(co_up_status_code code, const std::string& message) {
  try {
    auto status = std::make_unique<OwnedStatus>();
    status->text = std::string(kBackendName) + ": " + message;
    status->struct_size = sizeof(co_up_status);
    status->code = code;
    status->message = status->text.c_str();
    return status.release();
  } catch (...) {
    return const_cast<co_up_status*>(&kOutOfMemoryStatus);
  }
}

template <typename F>
co_up_status* guarded(const char* call, F&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const PluginError& e) {
    return make_status(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return make_status(CO_UP_STATUS_OUT_OF_MEMORY,
                       std::string(call) + ": out of memory (free memory or split the sub-graph)");
  } catch (const std::exception& e) {
    return make_status(CO_UP_STATUS_RUNTIME_ERROR, std::string(call) + ": " + e.what());
  } catch (...) {
    return make_status(CO_UP_STATUS_RUNTIME_ERROR, std::string(call) + ": unknown exception");
  }
}

// ---------------------------------------------------------------------------------------------
// Sub-graph description access. Arrays of structs are strided by their first element's
// struct_size, so a newer host whose structs grew by appending still indexes correctly.

template <typename T>
const T& element_at(const T* array, uint32_t index) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(array);
  return *reinterpret_cast<const T*>(bytes + static_cast<size_t>(index) * array[0].struct_size);
}

void check_graph(const co_up_subgraph_desc* graph) {
  if (!graph) fail(CO_UP_STATUS_INVALID_ARGUMENT, "sub-graph description is NULL");
  if (graph->struct_size < sizeof(co_up_subgraph_desc)) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         "co_up_subgraph_desc.struct_size " + std::to_string(graph->struct_size) +
             " is smaller than ABI 1.0's " + std::to_string(sizeof(co_up_subgraph_desc)) +
             " (rebuild the host against plugin_abi.h)");
  }
  if (graph->tensor_count > 0 &&
      (!graph->tensors || graph->tensors[0].struct_size < sizeof(co_up_tensor_desc))) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         "co_up_tensor_desc array is NULL or its struct_size is smaller than ABI 1.0's");
  }
  if (graph->node_count > 0 &&
      (!graph->nodes || graph->nodes[0].struct_size < sizeof(co_up_node_desc))) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         "co_up_node_desc array is NULL or its struct_size is smaller than ABI 1.0's");
  }
  if ((graph->input_count > 0 && !graph->inputs) || (graph->output_count > 0 && !graph->outputs)) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT, "sub-graph input or output index array is NULL");
  }
}

std::string_view dtype_name(int32_t dtype) {
  switch (dtype) {
    case CO_UP_DTYPE_F32: return "f32";
    case CO_UP_DTYPE_F16: return "f16";
    case CO_UP_DTYPE_I8: return "int8";
    case CO_UP_DTYPE_U8: return "uint8";
    case CO_UP_DTYPE_I32: return "int32";
    case CO_UP_DTYPE_I64: return "int64";
    default: return "unknown";
  }
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

int64_t element_count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Activation parse_activation(std::string_view s, bool* ok) {
  *ok = true;
  if (s == "none") return Activation::kNone;
  if (s == "relu") return Activation::kRelu;
  if (s == "relu6") return Activation::kRelu6;
  *ok = false;
  return Activation::kNone;
}

enum class Op {
  kConv, kFullyConnected, kMaxPool, kAveragePool, kGlobalAveragePool, kGlobalMaxPool, kRelu,
  kClip, kSigmoid, kHardSwish, kLrn, kBatchNormalization, kConcat, kAdd, kSoftmax, kFlatten,
  kReshape, kIdentity
};

std::optional<Op> op_from_name(std::string_view name) {
  static constexpr std::pair<std::string_view, Op> kOps[] = {
      {"Conv", Op::kConv}, {"FullyConnected", Op::kFullyConnected}, {"MaxPool", Op::kMaxPool},
      {"AveragePool", Op::kAveragePool}, {"GlobalAveragePool", Op::kGlobalAveragePool},
      {"GlobalMaxPool", Op::kGlobalMaxPool}, {"Relu", Op::kRelu}, {"Clip", Op::kClip},
      {"Sigmoid", Op::kSigmoid}, {"HardSwish", Op::kHardSwish}, {"LRN", Op::kLrn},
      {"BatchNormalization", Op::kBatchNormalization}, {"Concat", Op::kConcat}, {"Add", Op::kAdd},
      {"Softmax", Op::kSoftmax}, {"Flatten", Op::kFlatten}, {"Reshape", Op::kReshape},
      {"Identity", Op::kIdentity}};
  for (const auto& [n, op] : kOps) {
    if (n == name) return op;
  }
  return std::nullopt;
}

// Everything decoded and validated from one node; the compile step only packs and wires.
struct NodePlan {
  Op op = Op::kIdentity;
  std::vector<uint32_t> inputs;  // tensor indices, CO_UP_NO_TENSOR for absent optional inputs
  uint32_t output = 0;
  std::vector<int64_t> in_dims;  // dims of input 0
  std::vector<int64_t> out_dims;
  Conv2dShape conv;
  Pool2dShape pool;
  Activation activation = Activation::kNone;
  int64_t fc_in = 0;   // FullyConnected K
  int64_t fc_out = 0;  // FullyConnected M
  float value0 = 0.0f;  // Clip min, LRN alpha, BN epsilon
  float value1 = 0.0f;  // Clip max, LRN beta
  float value2 = 0.0f;  // LRN bias
  int64_t size = 0;     // LRN size
  int64_t outer = 1;    // Concat / Softmax split of the shape around the axis
  int64_t axis_len = 1;
  int64_t inner = 1;
  std::vector<int64_t> concat_axis;  // per input
};

// Reads one node with messages that name it: "node 'conv1' (Conv): ...".
class NodeReader {
 public:
  NodeReader(const co_up_subgraph_desc& graph, uint32_t index)
      : graph_(graph), node_(element_at(graph.nodes, index)), index_(index) {
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

  std::string tensor_name(uint32_t index) const {
    const co_up_tensor_desc& t = tensor(index);
    return t.name ? t.name : std::string("#") + std::to_string(index);
  }

  std::vector<int64_t> dims(uint32_t index) const {
    const co_up_tensor_desc& t = tensor(index);
    return std::vector<int64_t>(t.dims, t.dims + t.rank);
  }

  // Weights and other parameters are packed at compile time, so they must come with data.
  const float* constant_data(uint32_t index, const char* role) const {
    const co_up_tensor_desc& t = tensor(index);
    if (!t.data) {
      fail_node(CO_UP_STATUS_UNSUPPORTED, std::string(role) + " tensor '" + tensor_name(index) +
                                              "' is not constant (cpu-xnnpack packs it at "
                                              "compile time; fold it into a constant)");
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
    if (t.layout == CO_UP_LAYOUT_NHWC) {
      fail_node(CO_UP_STATUS_UNSUPPORTED, std::string("layout NHWC not supported (NCHW only) on ") +
                                              role + " '" + tensor_name(index) + "'");
    }
    if (t.layout != CO_UP_LAYOUT_NCHW && t.layout != CO_UP_LAYOUT_ANY) {
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

  const co_up_subgraph_desc& graph_;
  const co_up_node_desc& node_;
  uint32_t index_;
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

NodePlan decode_node(const co_up_subgraph_desc& graph, uint32_t index) {
  const NodeReader r(graph, index);
  NodePlan p;
  const auto op = op_from_name(r.op_type());
  if (!op) {
    r.fail_node(CO_UP_STATUS_UNSUPPORTED, "op '" + r.op_type() +
                                              "' is not implemented by cpu-xnnpack (map this "
                                              "layer to another backend)");
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
    case Op::kIdentity:
      unary();
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
      r.expect_dims(b, p.in_dims, "input B");
      p.inputs.push_back(b);
      p.activation = r.attr_activation();
      break;
    }
    case Op::kSoftmax: {
      unary();
      const int64_t axis = normalise_axis(r, r.attr_int("axis"), p.in_dims.size(), false);
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

// ---------------------------------------------------------------------------------------------
// Device options

std::vector<int> parse_cores(std::string_view text) {
  std::vector<int> cores;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    if (item.empty() || item.size() > 6 ||
        item.find_first_not_of("0123456789") != std::string_view::npos) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           "option cores='" + std::string(text) +
               "' is not a comma-separated list of CPU ids (e.g. cores=0,1)");
    }
    const int core = std::stoi(std::string(item));
    for (int c : cores) {
      if (c == core) {
        fail(CO_UP_STATUS_INVALID_ARGUMENT, "option cores='" + std::string(text) +
                                                "' lists CPU " + std::to_string(core) + " twice");
      }
    }
    cores.push_back(core);
    pos = comma + 1;
  }
  return cores;
}

// Online CPUs (/sys/devices/system/cpu/online), or 0..nprocs-1 when that file is unreadable.
std::vector<int> online_cpus() {
  std::vector<int> cpus;
  if (FILE* f = std::fopen("/sys/devices/system/cpu/online", "r")) {
    char line[4096] = {};
    const bool ok = std::fgets(line, sizeof(line), f) != nullptr;
    std::fclose(f);
    const char* p = line;
    while (ok && *p >= '0' && *p <= '9') {
      char* next = nullptr;
      const long first = std::strtol(p, &next, 10);
      long last = first;
      if (*next == '-') last = std::strtol(next + 1, &next, 10);
      for (long c = first; c <= last; ++c) cpus.push_back(static_cast<int>(c));
      p = *next == ',' ? next + 1 : next;
    }
  }
  if (cpus.empty()) {
    for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()); ++c) {
      cpus.push_back(static_cast<int>(c));
    }
  }
  return cpus;
}

std::string cores_string(const std::vector<int>& cores) {
  std::string s;
  for (int c : cores) {
    if (!s.empty()) s.push_back(',');
    s.append(std::to_string(c));
  }
  return s;
}

const char* xnn_status_name(xnn_status status) {
  switch (status) {
    case xnn_status_success: return "success";
    case xnn_status_uninitialized: return "uninitialized";
    case xnn_status_invalid_parameter: return "invalid parameter";
    case xnn_status_invalid_state: return "invalid state";
    case xnn_status_unsupported_parameter: return "unsupported parameter";
    case xnn_status_unsupported_hardware: return "unsupported hardware";
    case xnn_status_out_of_memory: return "out of memory";
  }
  return "unknown status";
}

}  // namespace
}  // namespace co_up::xnnpack

// ---------------------------------------------------------------------------------------------
// The opaque ABI handles.

using co_up::xnnpack::CpuPool;
using co_up::xnnpack::NodePlan;

struct co_up_factory {
  // Cores held by live devices, by processor letter: two letters must not share a core.
  std::mutex mutex;
  std::vector<std::pair<co_up_device*, std::pair<char, std::vector<int>>>> claims;
};

struct co_up_device {
  co_up_factory* factory = nullptr;
  char processor = '?';
  std::vector<int> cores;
  // Declared last: workers are joined before the options they were made from go away.
  std::unique_ptr<CpuPool> pool;
};

namespace co_up::xnnpack {
namespace {

struct XnnOperatorDeleter {
  void operator()(xnn_operator* op) const { xnn_delete_operator(op); }
};
using XnnOperator = std::unique_ptr<xnn_operator, XnnOperatorDeleter>;

// A 64-byte-aligned float buffer with XNN_EXTRA_BYTES of slack: XNNPACK kernels may read (never
// use) a few bytes past the end of a tensor.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(int64_t count) : count_(count) {
    const size_t bytes = (static_cast<size_t>(count) * sizeof(float) + XNN_EXTRA_BYTES + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, bytes);
    data_.reset(static_cast<float*>(p));
  }
  float* data() const { return data_.get(); }
  int64_t count() const { return count_; }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  int64_t count_ = 0;
};

}  // namespace
}  // namespace co_up::xnnpack

struct co_up_compiled {
  struct Step {
    uint32_t layer = 0;
    std::vector<co_up::xnnpack::XnnOperator> ops;  // run in order, when present
    std::function<void()> own;                      // the backend's own kernel, when present
  };
  // A sub-graph input or output as the runtime sees it (NCHW) and as the kernels hold it.
  struct Port {
    uint32_t tensor = 0;
    bool convert = false;                // 4-D: NCHW staging <-> NHWC tensor
    int64_t batch = 1, channels = 1, plane = 1;
    co_up::xnnpack::Buffer staging;      // NCHW copy when `convert`
    bool pending = false;                // input mapped, not converted yet
  };

  co_up_device* device = nullptr;
  std::vector<co_up::xnnpack::Buffer> storage;  // per tensor: internal layout (NHWC when 4-D)
  std::vector<Port> inputs;
  std::vector<Port> outputs;
  std::vector<Step> steps;
};

namespace co_up::xnnpack {
namespace {

std::pair<float, float> activation_range(Activation a) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  switch (a) {
    case Activation::kNone: return {-kInf, kInf};
    case Activation::kRelu: return {0.0f, kInf};
    case Activation::kRelu6: return {0.0f, 6.0f};
  }
  return {-kInf, kInf};
}

void check_xnn(xnn_status status, const std::string& what) {
  if (status == xnn_status_success) return;
  fail(status == xnn_status_out_of_memory ? CO_UP_STATUS_OUT_OF_MEMORY : CO_UP_STATUS_RUNTIME_ERROR,
       "XNNPACK " + what + " failed: " + xnn_status_name(status));
}

// Internal dims: NHWC for a 4-D tensor, the ABI dims otherwise.
std::vector<int64_t> internal_dims(const std::vector<int64_t>& d) {
  if (d.size() != 4) return d;
  return {d[0], d[2], d[3], d[1]};
}

int64_t internal_axis(int64_t axis, size_t rank) {
  if (rank != 4) return axis;
  static constexpr int64_t kToNhwc[4] = {0, 3, 1, 2};
  return kToNhwc[axis];
}

void split_internal(const std::vector<int64_t>& dims, int64_t axis, int64_t* outer,
                    int64_t* axis_len, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (int64_t d = 0; d < axis; ++d) *outer *= dims[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) *inner *= dims[d];
  *axis_len = dims[static_cast<size_t>(axis)];
}

// Builds the step of a validated node: XNNPACK operators created (weights packed) and set up on
// the compiled object's fixed buffers, or one of the backend's own kernels.
co_up_compiled::Step build_step(const co_up_subgraph_desc& graph, uint32_t index,
                                const NodePlan& p, co_up_compiled& c) {
  co_up_compiled::Step step;
  step.layer = element_at(graph.nodes, index).layer;
  const CpuPool& pool = *c.device->pool;
  pthreadpool_t tp = pool.get();
  const CpuPool* pool_ptr = &pool;
  auto data = [&](uint32_t t) -> const float* {
    return t == CO_UP_NO_TENSOR ? nullptr
                                : static_cast<const float*>(element_at(graph.tensors, t).data);
  };
  const std::string where = "node '" + std::string(element_at(graph.nodes, index).name
                                                        ? element_at(graph.nodes, index).name
                                                        : "?") + "'";
  float* x = c.storage[p.inputs[0]].data();
  float* y = c.storage[p.output].data();
  const int64_t count = element_count(p.out_dims);
  auto add_op = [&](xnn_operator_t op) { step.ops.emplace_back(op); };
  auto unary_op = [&](auto create, auto setup, auto... args) {
    xnn_operator_t op = nullptr;
    check_xnn(create(size_t(count), size_t(count), size_t(count), args..., 0u, &op),
              "create for " + where);
    add_op(op);
    check_xnn(setup(op, size_t(1), x, y, tp), "setup for " + where);
  };

  switch (p.op) {
    case Op::kConv: {
      const Conv2dShape& s = p.conv;
      const int64_t gin = s.in_channels / s.group, gout = s.out_channels / s.group;
      // W[M, C/g, kH, kW] -> [M, kH, kW, C/g] (XNNPACK's per-group OHWI); depthwise is the same.
      const float* w = data(p.inputs[1]);
      std::vector<float> packed(static_cast<size_t>(s.out_channels * gin * s.kernel_h * s.kernel_w));
      const int64_t taps = s.kernel_h * s.kernel_w;
      for (int64_t m = 0; m < s.out_channels; ++m) {
        for (int64_t ci = 0; ci < gin; ++ci) {
          for (int64_t t = 0; t < taps; ++t) {
            packed[static_cast<size_t>((m * taps + t) * gin + ci)] = w[(m * gin + ci) * taps + t];
          }
        }
      }
      const auto [lo, hi] = activation_range(s.activation);
      xnn_operator_t op = nullptr;
      check_xnn(xnn_create_convolution2d_nhwc_f32(
                    uint32_t(s.pad_top), uint32_t(s.pad_right), uint32_t(s.pad_bottom),
                    uint32_t(s.pad_left), uint32_t(s.kernel_h), uint32_t(s.kernel_w),
                    uint32_t(s.stride_h), uint32_t(s.stride_w), uint32_t(s.dilation_h),
                    uint32_t(s.dilation_w), uint32_t(s.group), size_t(gin), size_t(gout),
                    size_t(s.in_channels), size_t(s.out_channels), packed.data(),
                    data(p.inputs[2]), lo, hi, 0, &op),
                "convolution create for " + where);
      add_op(op);
      check_xnn(xnn_setup_convolution2d_nhwc_f32(op, size_t(s.batch), size_t(s.in_height),
                                                 size_t(s.in_width), x, y, tp),
                "convolution setup for " + where);
      break;
    }
    case Op::kFullyConnected: {
      const float* w = data(p.inputs[1]);
      std::vector<float> permuted;
      if (p.in_dims.size() == 4 && p.in_dims[2] * p.in_dims[3] > 1) {
        // The input is NHWC inside: reorder W's columns from (c, h, w) to (h, w, c) once.
        const int64_t ch = p.in_dims[1], plane = p.in_dims[2] * p.in_dims[3];
        permuted.resize(static_cast<size_t>(p.fc_out * p.fc_in));
        for (int64_t m = 0; m < p.fc_out; ++m) {
          for (int64_t ci = 0; ci < ch; ++ci) {
            for (int64_t q = 0; q < plane; ++q) {
              permuted[static_cast<size_t>(m * p.fc_in + q * ch + ci)] = w[m * p.fc_in + ci * plane + q];
            }
          }
        }
        w = permuted.data();
      }
      const auto [lo, hi] = activation_range(p.activation);
      xnn_operator_t op = nullptr;
      check_xnn(xnn_create_fully_connected_nc_f32(size_t(p.fc_in), size_t(p.fc_out), size_t(p.fc_in),
                                                  size_t(p.fc_out), w, data(p.inputs[2]), lo, hi, 0,
                                                  &op),
                "fully connected create for " + where);
      add_op(op);
      check_xnn(xnn_setup_fully_connected_nc_f32(op, size_t(p.in_dims[0]), x, y, tp),
                "fully connected setup for " + where);
      break;
    }
    case Op::kMaxPool:
    case Op::kAveragePool: {
      const Pool2dShape s = p.pool;
      const int64_t oh = s.out_height(), ow = s.out_width();
      // XNNPACK rounds down; ceil mode becomes extra bottom/right padding, which a max ignores.
      const int64_t pad_b = std::max(s.pad_bottom, (oh - 1) * s.stride_h + s.kernel_h - s.in_height - s.pad_top);
      const int64_t pad_r = std::max(s.pad_right, (ow - 1) * s.stride_w + s.kernel_w - s.in_width - s.pad_left);
      const bool average = p.op == Op::kAveragePool;
      const bool padded = s.pad_top || s.pad_left || pad_b || pad_r;
      xnn_operator_t op = nullptr;
      xnn_status st = xnn_status_unsupported_parameter;
      if (!average) {
        st = xnn_create_max_pooling2d_nhwc_f32(
            uint32_t(s.pad_top), uint32_t(pad_r), uint32_t(pad_b), uint32_t(s.pad_left),
            uint32_t(s.kernel_h), uint32_t(s.kernel_w), uint32_t(s.stride_h), uint32_t(s.stride_w),
            1, 1, size_t(s.channels), size_t(s.channels), size_t(s.channels),
            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(), 0, &op);
      } else if (!padded) {
        // Padding: XNNPACK's divisor rules differ from ONNX's count_include_pad; own kernel.
        st = xnn_create_average_pooling2d_nhwc_f32(
            0, 0, 0, 0, uint32_t(s.kernel_h), uint32_t(s.kernel_w), uint32_t(s.stride_h),
            uint32_t(s.stride_w), size_t(s.channels), size_t(s.channels), size_t(s.channels),
            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(), 0, &op);
      }
      if (st == xnn_status_success) {
        add_op(op);
        st = average ? xnn_setup_average_pooling2d_nhwc_f32(op, size_t(s.batch), size_t(s.in_height),
                                                            size_t(s.in_width), x, y, tp)
                     : xnn_setup_max_pooling2d_nhwc_f32(op, size_t(s.batch), size_t(s.in_height),
                                                        size_t(s.in_width), x, y, tp);
        check_xnn(st, "pooling setup for " + where);
      } else {
        // Shapes XNNPACK declines (e.g. a 1x1 window): the backend's own kernel.
        step.own = [=] {
          if (average) {
            average_pool2d_nhwc(s, x, y, *pool_ptr);
          } else {
            max_pool2d_nhwc(s, x, y, *pool_ptr);
          }
        };
      }
      break;
    }
    case Op::kGlobalAveragePool: {
      const size_t ch = size_t(p.in_dims[1]);
      xnn_operator_t op = nullptr;
      check_xnn(xnn_create_global_average_pooling_nwc_f32(
                    ch, ch, ch, -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::infinity(), 0, &op),
                "global average pooling create for " + where);
      add_op(op);
      check_xnn(xnn_setup_global_average_pooling_nwc_f32(op, size_t(p.in_dims[0]),
                                                         size_t(p.in_dims[2] * p.in_dims[3]), x, y, tp),
                "global average pooling setup for " + where);
      break;
    }
    case Op::kGlobalMaxPool: {
      const int64_t n = p.in_dims[0], ch = p.in_dims[1], plane = p.in_dims[2] * p.in_dims[3];
      step.own = [=] { global_max_pool_nhwc(x, y, n, plane, ch, *pool_ptr); };
      break;
    }
    case Op::kRelu:
      unary_op(xnn_create_clamp_nc_f32, xnn_setup_clamp_nc_f32, 0.0f,
               std::numeric_limits<float>::infinity());
      break;
    case Op::kClip:
      unary_op(xnn_create_clamp_nc_f32, xnn_setup_clamp_nc_f32, p.value0, p.value1);
      break;
    case Op::kSigmoid:
      unary_op(xnn_create_sigmoid_nc_f32, xnn_setup_sigmoid_nc_f32);
      break;
    case Op::kHardSwish:
      unary_op(xnn_create_hardswish_nc_f32, xnn_setup_hardswish_nc_f32);
      break;
    case Op::kLrn: {
      const int64_t pixels = p.in_dims[0] * p.in_dims[2] * p.in_dims[3], ch = p.in_dims[1];
      const int64_t size = p.size;
      const float alpha = p.value0, beta = p.value1, bias = p.value2;
      step.own = [=] { lrn_nhwc(x, y, pixels, ch, size, alpha, beta, bias, *pool_ptr); };
      break;
    }
    case Op::kBatchNormalization: {
      const int64_t batch = p.in_dims[0], ch = p.in_dims[1];
      const int64_t plane = count / (batch * ch);
      auto folded = std::make_shared<std::vector<float>>(static_cast<size_t>(2 * ch));
      reference::fold_batch_norm(ch, data(p.inputs[1]), data(p.inputs[2]), data(p.inputs[3]),
                                 data(p.inputs[4]), p.value0, folded->data(), folded->data() + ch);
      if (p.in_dims.size() == 4 || plane == 1) {
        step.own = [=] {
          channel_affine_nhwc(x, y, batch * plane, ch, folded->data(), folded->data() + ch, *pool_ptr);
        };
      } else {
        step.own = [=] {
          reference::batch_norm(x, y, batch, ch, plane, folded->data(), folded->data() + ch, nullptr);
        };
      }
      break;
    }
    case Op::kConcat: {
      const auto& first = p.in_dims;
      int64_t axis = 0;
      for (size_t d = 0; d < first.size(); ++d) {
        if (first[d] != p.out_dims[d]) axis = int64_t(d);
      }
      if (p.inputs.size() == 1) axis = 0;
      const std::vector<int64_t> out_internal = internal_dims(p.out_dims);
      const int64_t iaxis = internal_axis(axis, p.out_dims.size());
      int64_t outer = 0, axis_len = 0, inner = 0;
      split_internal(out_internal, iaxis, &outer, &axis_len, &inner);
      // Each input is a strided copy: `outer` rows of concat_axis[i] * inner floats.
      int64_t offset = 0;
      for (size_t i = 0; i < p.inputs.size(); ++i) {
        const size_t row = size_t(p.concat_axis[i] * inner);
        xnn_operator_t op = nullptr;
        check_xnn(xnn_create_copy_nc_x32(row, row, size_t(axis_len * inner), 0, &op),
                  "copy create for " + where);
        add_op(op);
        check_xnn(xnn_setup_copy_nc_x32(op, size_t(outer), c.storage[p.inputs[i]].data(), y + offset, tp),
                  "copy setup for " + where);
        offset += int64_t(row);
      }
      break;
    }
    case Op::kAdd: {
      const auto [lo, hi] = activation_range(p.activation);
      xnn_operator_t op = nullptr;
      check_xnn(xnn_create_add_nd_f32(lo, hi, 0, &op), "add create for " + where);
      add_op(op);
      const size_t shape[1] = {size_t(count)};
      check_xnn(xnn_setup_add_nd_f32(op, 1, shape, 1, shape, x, c.storage[p.inputs[1]].data(), y, tp),
                "add setup for " + where);
      break;
    }
    case Op::kSoftmax: {
      int64_t axis = 0;
      const int64_t rank = int64_t(p.in_dims.size());
      // Recover the normalised axis from the reference split (outer * axis_len * inner).
      for (int64_t a = 0, o = 1; a < rank; o *= p.in_dims[size_t(a)], ++a) {
        if (o == p.outer && p.in_dims[size_t(a)] == p.axis_len) {
          axis = a;
          break;
        }
      }
      int64_t outer = 0, axis_len = 0, inner = 0;
      split_internal(internal_dims(p.in_dims), internal_axis(axis, p.in_dims.size()), &outer,
                     &axis_len, &inner);
      if (inner == 1) {
        xnn_operator_t op = nullptr;
        check_xnn(xnn_create_softmax_nc_f32(size_t(axis_len), size_t(axis_len), size_t(axis_len), 0, &op),
                  "softmax create for " + where);
        add_op(op);
        check_xnn(xnn_setup_softmax_nc_f32(op, size_t(outer), x, y, tp), "softmax setup for " + where);
      } else {
        step.own = [=] { softmax_lines(x, y, outer, axis_len, inner, *pool_ptr); };
      }
      break;
    }
    case Op::kFlatten:
    case Op::kReshape:
    case Op::kIdentity: {
      const auto& in = p.in_dims;
      const auto& out = p.out_dims;
      const bool in_nhwc = in.size() == 4 && in[2] * in[3] > 1 && in[1] > 1;
      const bool out_nhwc = out.size() == 4 && out[2] * out[3] > 1 && out[1] > 1;
      if (p.op == Op::kIdentity || (!in_nhwc && !out_nhwc)) {
        // Same element order inside: a plain copy.
        step.own = [=] { std::memcpy(y, x, size_t(count) * sizeof(float)); };
      } else if (in_nhwc && !out_nhwc) {
        step.own = [=] { nhwc_to_nchw(x, y, in[0], in[1], in[2] * in[3], *pool_ptr); };
      } else if (!in_nhwc && out_nhwc) {
        step.own = [=] { nchw_to_nhwc(x, y, out[0], out[1], out[2] * out[3], *pool_ptr); };
      } else {
        auto scratch = std::make_shared<Buffer>(count);
        step.own = [=] {
          nhwc_to_nchw(x, scratch->data(), in[0], in[1], in[2] * in[3], *pool_ptr);
          nchw_to_nhwc(scratch->data(), y, out[0], out[1], out[2] * out[3], *pool_ptr);
        };
      }
      break;
    }
  }
  return step;
}

std::unique_ptr<co_up_compiled> compile(co_up_device* device, const co_up_subgraph_desc& graph) {
  auto c = std::make_unique<co_up_compiled>();
  c->device = device;
  const uint32_t tensor_count = graph.tensor_count;
  auto tensor_name = [&](uint32_t t) {
    const co_up_tensor_desc& d = element_at(graph.tensors, t);
    return d.name ? std::string(d.name) : std::string("#") + std::to_string(t);
  };
  auto check_io = [&](uint32_t t, const char* what) {
    if (t >= tensor_count) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, std::string(what) + " refers to tensor " +
                                              std::to_string(t) + " of " +
                                              std::to_string(tensor_count));
    }
    const co_up_tensor_desc& d = element_at(graph.tensors, t);
    if (d.dtype != CO_UP_DTYPE_F32) {
      fail(CO_UP_STATUS_UNSUPPORTED, std::string(what) + " '" + tensor_name(t) + "': dtype " +
                                         std::string(dtype_name(d.dtype)) +
                                         " not supported (f32 only)");
    }
    if (d.rank == 0 || !d.dims) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, std::string(what) + " '" + tensor_name(t) + "' has no dims");
    }
  };
  auto port = [&](uint32_t t) {
    co_up_compiled::Port port;
    port.tensor = t;
    const co_up_tensor_desc& d = element_at(graph.tensors, t);
    if (d.rank == 4 && d.dims[2] * d.dims[3] > 1 && d.dims[1] > 1) {
      port.convert = true;
      port.batch = d.dims[0];
      port.channels = d.dims[1];
      port.plane = d.dims[2] * d.dims[3];
      port.staging = Buffer(port.batch * port.channels * port.plane);
    }
    return port;
  };

  std::vector<bool> available(tensor_count, false);
  std::vector<bool> is_input(tensor_count, false);
  for (uint32_t t = 0; t < tensor_count; ++t) available[t] = element_at(graph.tensors, t).data != nullptr;
  for (uint32_t i = 0; i < graph.input_count; ++i) {
    const uint32_t t = graph.inputs[i];
    check_io(t, "sub-graph input");
    if (available[t] && !is_input[t]) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, "sub-graph input '" + tensor_name(t) +
                                              "' is a constant (constants are passed as data)");
    }
    available[t] = true;
    is_input[t] = true;
  }
  std::vector<NodePlan> plans;
  plans.reserve(graph.node_count);
  for (uint32_t n = 0; n < graph.node_count; ++n) {
    NodePlan plan = decode_node(graph, n);
    const co_up_node_desc& node = element_at(graph.nodes, n);
    const std::string where = "node '" + std::string(node.name ? node.name : "?") + "' (" +
                              std::string(node.op_type ? node.op_type : "?") + ")";
    for (uint32_t t : plan.inputs) {
      if (t != CO_UP_NO_TENSOR && !available[t]) {
        fail(CO_UP_STATUS_INVALID_ARGUMENT,
             where + " reads tensor '" + tensor_name(t) +
                 "' which is not constant, not a sub-graph input and not made by an earlier node "
                 "(list nodes in topological order)");
      }
    }
    if (available[plan.output]) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, where + " writes tensor '" + tensor_name(plan.output) +
                                              "' which is already defined (constant, input or "
                                              "written twice)");
    }
    available[plan.output] = true;
    plans.push_back(std::move(plan));
  }
  for (uint32_t i = 0; i < graph.output_count; ++i) {
    const uint32_t t = graph.outputs[i];
    check_io(t, "sub-graph output");
    if (!available[t]) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, "sub-graph output '" + tensor_name(t) +
                                              "' is never written by a node of this sub-graph");
    }
  }

  // Activation buffers (internal layout). Constants are not stored: XNNPACK packs the weights
  // it needs at operator creation, and the own kernels keep what they fold.
  std::vector<bool> needed(tensor_count, false);
  for (uint32_t i = 0; i < graph.input_count; ++i) needed[graph.inputs[i]] = true;
  for (const NodePlan& plan : plans) {
    needed[plan.output] = true;
    const bool packs = plan.op == Op::kConv || plan.op == Op::kFullyConnected ||
                       plan.op == Op::kBatchNormalization;
    for (size_t i = 0; i < (packs ? 1 : plan.inputs.size()); ++i) needed[plan.inputs[i]] = true;
  }
  c->storage.resize(tensor_count);
  for (uint32_t t = 0; t < tensor_count; ++t) {
    if (!needed[t]) continue;
    const co_up_tensor_desc& d = element_at(graph.tensors, t);
    int64_t count = 1;
    for (uint32_t k = 0; k < d.rank; ++k) count *= d.dims[k];
    c->storage[t] = Buffer(count);
    if (d.data && !is_input[t]) {
      // A constant read as an activation (e.g. Add with a constant): copy in internal layout.
      if (d.rank == 4) {
        CpuPool inline_pool(1, {}, Schedule::kStatic);
        nchw_to_nhwc(static_cast<const float*>(d.data), c->storage[t].data(), d.dims[0], d.dims[1],
                     d.dims[2] * d.dims[3], inline_pool);
      } else {
        std::memcpy(c->storage[t].data(), d.data, static_cast<size_t>(count) * sizeof(float));
      }
    }
  }
  for (uint32_t i = 0; i < graph.input_count; ++i) c->inputs.push_back(port(graph.inputs[i]));
  for (uint32_t i = 0; i < graph.output_count; ++i) c->outputs.push_back(port(graph.outputs[i]));
  for (uint32_t n = 0; n < graph.node_count; ++n) c->steps.push_back(build_step(graph, n, plans[n], *c));
  return c;
}

void convert_input(co_up_compiled& c, co_up_compiled::Port& in) {
  if (in.convert && in.pending) {
    nchw_to_nhwc(in.staging.data(), c.storage[in.tensor].data(), in.batch, in.channels, in.plane,
                 *c.device->pool);
  }
  in.pending = false;
}

void run(co_up_compiled& c, const co_up_run_hooks* hooks) {
  const bool has_begin = hooks && hooks->struct_size >= offsetof(co_up_run_hooks, layer_begin) +
                                                          sizeof(hooks->layer_begin) &&
                         hooks->layer_begin;
  const bool has_end = hooks && hooks->struct_size >= offsetof(co_up_run_hooks, layer_end) +
                                                        sizeof(hooks->layer_end) &&
                       hooks->layer_end;
  // An input mapped and written but never unmapped is still converted.
  for (auto& in : c.inputs) convert_input(c, in);
  pthreadpool_t tp = c.device->pool->get();
  for (size_t s = 0; s < c.steps.size(); ++s) {
    const uint32_t layer = c.steps[s].layer;
    const bool starts = s == 0 || c.steps[s - 1].layer != layer;
    const bool ends = s + 1 == c.steps.size() || c.steps[s + 1].layer != layer;
    if (starts && has_begin) hooks->layer_begin(hooks->user_data, layer);
    for (const auto& op : c.steps[s].ops) check_xnn(xnn_run_operator(op.get(), tp), "run");
    if (c.steps[s].own) c.steps[s].own();
    if (ends && has_end) hooks->layer_end(hooks->user_data, layer);
  }
}

// ---------------------------------------------------------------------------------------------
// ABI functions

void status_release(co_up_status* status) {
  if (!status || status == &kOutOfMemoryStatus) return;
  delete static_cast<OwnedStatus*>(status);
}

co_up_status* factory_create(const co_up_option*, uint32_t, co_up_factory** out_factory) {
  return guarded("factory_create", [&] {
    if (!out_factory) fail(CO_UP_STATUS_INVALID_ARGUMENT, "factory_create: out_factory is NULL");
    *out_factory = nullptr;
    const xnn_status st = xnn_initialize(nullptr);
    if (st != xnn_status_success) {
      fail(CO_UP_STATUS_NO_DEVICE, std::string("xnn_initialize failed: ") + xnn_status_name(st) +
                                       " (this CPU lacks the instructions XNNPACK needs; use "
                                       "cpu-reference)");
    }
    *out_factory = std::make_unique<co_up_factory>().release();
  });
}

// XNNPACK's initialisation is process-wide and idempotent; it is never undone, since another
// factory of this plugin (another registry) may still use it.
void factory_release(co_up_factory* factory) { std::unique_ptr<co_up_factory>{factory}; }

co_up_status* device_create(co_up_factory* factory, const co_up_option* options,
                            uint32_t option_count, co_up_device** out_device) {
  return guarded("device_create", [&] {
    if (!factory || !out_device) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, "device_create: factory or out_device is NULL");
    }
    *out_device = nullptr;
    auto device = std::make_unique<co_up_device>();
    device->factory = factory;
    std::optional<int> threads;
    bool pin = true;
    Schedule schedule = Schedule::kDynamic;
    for (uint32_t i = 0; i < option_count; ++i) {
      if (!options || !options[i].key || !options[i].value) {
        fail(CO_UP_STATUS_INVALID_ARGUMENT, "device option " + std::to_string(i) +
                                                " has a NULL key or value");
      }
      const std::string_view key = options[i].key;
      const std::string_view value = options[i].value;
      if (key == "processor") {
        if (value.size() != 1 || !((value[0] >= 'A' && value[0] <= 'Z') ||
                                   (value[0] >= 'a' && value[0] <= 'z'))) {
          fail(CO_UP_STATUS_INVALID_ARGUMENT,
               "option processor='" + std::string(value) + "' must be one letter (e.g. B)");
        }
        device->processor = value[0];
      } else if (key == "cores") {
        device->cores = parse_cores(value);
      } else if (key == "threads") {
        if (value.empty() || value.size() > 4 ||
            value.find_first_not_of("0123456789") != std::string_view::npos ||
            std::stoi(std::string(value)) < 1) {
          fail(CO_UP_STATUS_INVALID_ARGUMENT,
               "option threads='" + std::string(value) + "' must be an integer >= 1");
        }
        threads = std::stoi(std::string(value));
      } else if (key == "pin") {
        if (value != "on" && value != "off") {
          fail(CO_UP_STATUS_INVALID_ARGUMENT,
               "option pin='" + std::string(value) + "' must be 'on' or 'off'");
        }
        pin = value == "on";
      } else if (key == "schedule") {
        if (value != "static" && value != "dynamic") {
          fail(CO_UP_STATUS_INVALID_ARGUMENT,
               "option schedule='" + std::string(value) + "' must be 'static' or 'dynamic'");
        }
        schedule = value == "static" ? Schedule::kStatic : Schedule::kDynamic;
      }
    }
    const std::string who = std::string("processor ") + device->processor;
    const int core_count = static_cast<int>(device->cores.size());
    if (!threads) threads = core_count > 0 ? core_count : 1;
    if (core_count > 0 && *threads > core_count) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           who + ": option threads=" + std::to_string(*threads) + " exceeds the " +
               std::to_string(core_count) + " CPU(s) in cores=" + cores_string(device->cores) +
               " (use threads <= number of cores)");
    }
    const std::vector<int> online = online_cpus();
    for (int core : device->cores) {
      if (std::find(online.begin(), online.end(), core) == online.end()) {
        fail(CO_UP_STATUS_INVALID_ARGUMENT,
             who + ": core " + std::to_string(core) + " in cores=" + cores_string(device->cores) +
                 " does not exist on this machine (online: " + cores_string(online) +
                 "); fix the platform's cores");
      }
    }
    std::lock_guard lock(factory->mutex);
    for (const auto& [other, claim] : factory->claims) {
      if (claim.first == device->processor) continue;  // the same processor (another executor)
      for (int core : device->cores) {
        if (std::find(claim.second.begin(), claim.second.end(), core) != claim.second.end()) {
          fail(CO_UP_STATUS_INVALID_ARGUMENT,
               who + ": core " + std::to_string(core) + " also belongs to processor " +
                   claim.first + " (cores " + cores_string(claim.second) +
                   "); clusters must not share cores, each has its own pool");
        }
      }
    }
    try {
      device->pool = std::make_unique<CpuPool>(
          *threads, pin ? std::span<const int>(device->cores) : std::span<const int>(), schedule);
    } catch (const std::runtime_error& e) {
      fail(CO_UP_STATUS_RUNTIME_ERROR, who + ": " + e.what());
    }
    factory->claims.push_back({device.get(), {device->processor, device->cores}});
    *out_device = device.release();
  });
}

void device_release(co_up_device* device) {
  if (!device) return;
  {
    std::lock_guard lock(device->factory->mutex);
    auto& claims = device->factory->claims;
    claims.erase(std::remove_if(claims.begin(), claims.end(),
                                [&](const auto& c) { return c.first == device; }),
                 claims.end());
  }
  std::unique_ptr<co_up_device>{device};
}

co_up_status* device_query_node(co_up_device* device, const co_up_subgraph_desc* graph,
                                uint32_t node_index, co_up_node_support* out_support) {
  return guarded("device_query_node", [&] {
    if (!device || !out_support) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, "device_query_node: device or out_support is NULL");
    }
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
      decode_node(*graph, node_index);
    } catch (const PluginError& e) {
      reason = e.what();
    }
    out_support->supported = reason.empty() ? 1 : 0;
    std::snprintf(out_support->reason, sizeof(out_support->reason), "%s", reason.c_str());
  });
}

co_up_status* compiled_create(co_up_device* device, const co_up_subgraph_desc* graph,
                              co_up_compiled** out_compiled) {
  return guarded("compiled_create", [&] {
    if (!device || !out_compiled) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, "compiled_create: device or out_compiled is NULL");
    }
    *out_compiled = nullptr;
    check_graph(graph);
    *out_compiled = compile(device, *graph).release();
  });
}

void compiled_release(co_up_compiled* compiled) { std::unique_ptr<co_up_compiled>{compiled}; }

co_up_compiled::Port& port_at(co_up_compiled* compiled, int32_t direction, uint32_t index,
                              const char* call) {
  if (!compiled) fail(CO_UP_STATUS_INVALID_ARGUMENT, std::string(call) + ": compiled is NULL");
  if (direction != CO_UP_IO_INPUT && direction != CO_UP_IO_OUTPUT) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT, std::string(call) + ": direction " +
                                            std::to_string(direction) + " is neither input nor output");
  }
  auto& list = direction == CO_UP_IO_INPUT ? compiled->inputs : compiled->outputs;
  if (index >= list.size()) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         std::string(call) + ": " + (direction == CO_UP_IO_INPUT ? "input" : "output") +
             " index " + std::to_string(index) + " is out of range (" +
             std::to_string(list.size()) + ")");
  }
  return list[index];
}

// Inputs: 4-D ones are written in NCHW into a staging buffer and converted at unmap (timed by the
// runtime as transfer). Outputs: 4-D ones are converted to NCHW here, at map.
co_up_status* compiled_map(co_up_compiled* compiled, int32_t direction, uint32_t index,
                           void** out_host_ptr) {
  return guarded("compiled_map", [&] {
    if (!out_host_ptr) fail(CO_UP_STATUS_INVALID_ARGUMENT, "compiled_map: out_host_ptr is NULL");
    co_up_compiled::Port& port = port_at(compiled, direction, index, "compiled_map");
    float* internal = compiled->storage[port.tensor].data();
    if (!port.convert) {
      *out_host_ptr = internal;
      return;
    }
    if (direction == CO_UP_IO_INPUT) {
      port.pending = true;
    } else {
      nhwc_to_nchw(internal, port.staging.data(), port.batch, port.channels, port.plane,
                   *compiled->device->pool);
    }
    *out_host_ptr = port.staging.data();
  });
}

co_up_status* compiled_unmap(co_up_compiled* compiled, int32_t direction, uint32_t index) {
  return guarded("compiled_unmap", [&] {
    co_up_compiled::Port& port = port_at(compiled, direction, index, "compiled_unmap");
    if (direction == CO_UP_IO_INPUT) convert_input(*compiled, port);
  });
}

// Binding reads the runtime's buffer at once: 4-D inputs are converted NCHW -> NHWC straight from
// it into the operators' fixed input buffer (one pass, instead of the runtime's copy into the
// staging buffer plus a conversion); others are copied. The runtime must keep `host_ptr` valid
// only for this call, which is within what the ABI asks.
co_up_status* compiled_bind_input(co_up_compiled* compiled, uint32_t index, const void* host_ptr) {
  return guarded("compiled_bind_input", [&] {
    if (!host_ptr) fail(CO_UP_STATUS_INVALID_ARGUMENT, "compiled_bind_input: host_ptr is NULL");
    co_up_compiled::Port& port = port_at(compiled, CO_UP_IO_INPUT, index, "compiled_bind_input");
    if (reinterpret_cast<uintptr_t>(host_ptr) % alignof(float) != 0) {
      fail(CO_UP_STATUS_UNSUPPORTED,
           "compiled_bind_input: host_ptr is not 4-byte aligned (map and copy instead)");
    }
    const auto* src = static_cast<const float*>(host_ptr);
    Buffer& internal = compiled->storage[port.tensor];
    if (port.convert) {
      nchw_to_nhwc(src, internal.data(), port.batch, port.channels, port.plane,
                   *compiled->device->pool);
    } else {
      std::memcpy(internal.data(), src, static_cast<size_t>(internal.count()) * sizeof(float));
    }
    port.pending = false;
  });
}

co_up_status* compiled_run(co_up_compiled* compiled, const co_up_run_hooks* hooks) {
  return guarded("compiled_run", [&] {
    if (!compiled) fail(CO_UP_STATUS_INVALID_ARGUMENT, "compiled_run: compiled is NULL");
    run(*compiled, hooks);
  });
}

constexpr co_up_plugin_api kApi = {
    sizeof(co_up_plugin_api),
    CO_UP_ABI_VERSION_MAJOR,
    CO_UP_ABI_VERSION_MINOR,
    kBackendName,
    kBackendVersion,
    "f32 CPU backend on XNNPACK (NEON / SSE / AVX kernels), NHWC inside a sub-graph, one pinned "
    "pthreadpool per cluster",
    CO_UP_BACKEND_CPU,
    &status_release,
    &factory_create,
    &factory_release,
    &device_create,
    &device_release,
    &device_query_node,
    &compiled_create,
    &compiled_release,
    &compiled_map,
    &compiled_unmap,
    &compiled_bind_input,
    &compiled_run,
};

}  // namespace
}  // namespace co_up::xnnpack

extern "C" CO_UP_PLUGIN_EXPORT const co_up_plugin_api* co_up_plugin_get_api(
    uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  if (host_abi_major != CO_UP_ABI_VERSION_MAJOR) return nullptr;
  return &co_up::xnnpack::kApi;
}
