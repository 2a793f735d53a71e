// Decoding and validation of sub-graph nodes for the opencl backend: the ABI description of one
// node becomes a NodePlan (op, tensor indices, shapes, attributes) or a PluginError naming the
// node and what is wrong. The rules are those of backends/reference (same messages, same
// accepted graphs), so both backends accept exactly the same sub-graphs.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "co_up/plugin_abi.h"

namespace co_up::opencl {

class PluginError : public std::runtime_error {
 public:
  PluginError(co_up_status_code code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  co_up_status_code code() const { return code_; }

 private:
  co_up_status_code code_;
};

[[noreturn]] inline void fail(co_up_status_code code, const std::string& message) {
  throw PluginError(code, message);
}

// Arrays of ABI structs are strided by their first element's struct_size.
template <typename T>
const T& element_at(const T* array, uint32_t index) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(array);
  return *reinterpret_cast<const T*>(bytes + static_cast<size_t>(index) * array[0].struct_size);
}

void check_graph(const co_up_subgraph_desc* graph);
std::string_view dtype_name(int32_t dtype);
std::string dims_string(const std::vector<int64_t>& dims);
int64_t element_count(const std::vector<int64_t>& dims);

enum class Activation : uint8_t { kNone, kRelu, kRelu6 };

struct Conv2dShape {
  int64_t batch = 1;
  int64_t in_channels = 0;
  int64_t in_height = 0;
  int64_t in_width = 0;
  int64_t out_channels = 0;
  int64_t kernel_h = 1;
  int64_t kernel_w = 1;
  int64_t stride_h = 1;
  int64_t stride_w = 1;
  int64_t pad_top = 0;
  int64_t pad_left = 0;
  int64_t pad_bottom = 0;
  int64_t pad_right = 0;
  int64_t dilation_h = 1;
  int64_t dilation_w = 1;
  int64_t group = 1;
  Activation activation = Activation::kNone;

  int64_t out_height() const {
    return (in_height + pad_top + pad_bottom - dilation_h * (kernel_h - 1) - 1) / stride_h + 1;
  }
  int64_t out_width() const {
    return (in_width + pad_left + pad_right - dilation_w * (kernel_w - 1) - 1) / stride_w + 1;
  }
  // One input channel per group, M a multiple of C: a direct kernel beats a GEMM of K = kH*kW.
  bool is_depthwise() const {
    return group > 1 && group == in_channels && out_channels % in_channels == 0;
  }
};

struct Pool2dShape {
  int64_t batch = 1;
  int64_t channels = 0;
  int64_t in_height = 0;
  int64_t in_width = 0;
  int64_t kernel_h = 1;
  int64_t kernel_w = 1;
  int64_t stride_h = 1;
  int64_t stride_w = 1;
  int64_t pad_top = 0;
  int64_t pad_left = 0;
  int64_t pad_bottom = 0;
  int64_t pad_right = 0;
  bool ceil_mode = false;
  bool count_include_pad = false;

  int64_t out_height() const;
  int64_t out_width() const;
};

enum class Op {
  kConv, kFullyConnected, kMaxPool, kAveragePool, kGlobalAveragePool, kGlobalMaxPool, kRelu,
  kClip, kSigmoid, kHardSwish, kLrn, kBatchNormalization, kConcat, kAdd, kSoftmax, kFlatten,
  kReshape, kIdentity
};

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

// Throws PluginError (UNSUPPORTED or INVALID_ARGUMENT) naming the node.
NodePlan decode_node(const co_up_subgraph_desc& graph, uint32_t index);

}  // namespace co_up::opencl
