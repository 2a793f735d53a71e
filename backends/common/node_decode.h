// Decoding and validation of one node of a sub-graph description: the ABI's co_up_node_desc, its
// co_up_attr list and the tensors it names become a NodePlan (op, tensor indices, shapes, typed
// attributes), or a PluginError whose message names the node and what is wrong:
// "node 'conv1' (Conv): attribute 'pads' has 2 entries, expected 4".
//
// Every backend decodes with these rules, so they accept the same graphs with the same messages;
// DecodeRules carries what legitimately differs between them. All backends take f32 tensors in
// NCHW (or layout-free) form at the ABI, whatever they use inside; a backend that holds
// activations in NHWC also takes NHWC on its sub-graph's inputs and outputs.
#pragma once

#include <cstdint>
#include <vector>

#include "co_up/plugin_abi.h"
#include "op_shapes.h"

namespace co_up::backends {

enum class Op {
  kConv, kFullyConnected, kMaxPool, kAveragePool, kGlobalAveragePool, kGlobalMaxPool, kRelu,
  kClip, kSigmoid, kHardSwish, kLrn, kBatchNormalization, kConcat, kAdd, kSoftmax, kFlatten,
  kReshape, kIdentity,
  // CNN forms (graph/op.h); only backends whose DecodeRules::implements says so accept them.
  kChannelScale, kHardSigmoid, kSiLU, kChannelShuffle,
  // A rank-N op of the transformer set (NodePlan::tensor_op says which); only backends whose
  // DecodeRules::implements names Op::kTensorOp accept it, others decline the node.
  kTensorOp
};

// The rank-N ops (graph/op.h). An Add of two same-shape tensors stays Op::kAdd; an Add that
// broadcasts is TensorOp::kAdd.
enum class TensorOp {
  kAdd, kSub, kMul, kDiv, kPow,                  // in_dims, in1_dims -> out_dims (numpy broadcast)
  kSqrt, kErf, kTanh, kExp,                      // element-wise
  kGelu,                                         // gelu_tanh: the tanh approximation
  kMatMul,                                       // in_dims [..., M, K] x in1_dims [..., K, N]
  kTranspose,                                    // ints = perm
  kReduceMean, kReduceSum,                       // ints = axes (sorted), keepdims
  kGather,                                       // axis, ints = indices
  kSlice,                                        // ints = starts, ints2 = steps
  kLayerNormalization,                           // axis, value0 = epsilon; inputs X, Scale, Bias?
  kLeakyRelu,                                    // value0 = alpha
  kResize,                                       // resize (below), floats = scales per axis
  kPad,                                          // pad_mode, ints = pads (begins, ends), value0 = fill
};

enum class ResizeMode { kNearest, kLinear };
enum class ResizeTransform { kAsymmetric, kHalfPixel, kPytorchHalfPixel, kAlignCorners };
enum class NearestRounding { kFloor, kCeil, kRoundPreferFloor, kRoundPreferCeil };
enum class PadMode { kConstant, kReflect, kEdge };
struct ResizeSpec {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeTransform transform = ResizeTransform::kAsymmetric;
  NearestRounding rounding = NearestRounding::kFloor;
};

// True for the ops every backend implements. Listed, not a range of the enum: an op added later
// is declined by every backend whose DecodeRules::implements does not name it.
constexpr bool is_base_op(Op op) {
  switch (op) {
    case Op::kConv: case Op::kFullyConnected: case Op::kMaxPool: case Op::kAveragePool:
    case Op::kGlobalAveragePool: case Op::kGlobalMaxPool: case Op::kRelu: case Op::kClip:
    case Op::kSigmoid: case Op::kHardSwish: case Op::kLrn: case Op::kBatchNormalization:
    case Op::kConcat: case Op::kAdd: case Op::kSoftmax: case Op::kFlatten: case Op::kReshape:
    case Op::kIdentity:
      return true;
    default:
      return false;
  }
}

// The IR's CNN forms (graph/op.h): ChannelScale, HardSigmoid, SiLU, ChannelShuffle.
constexpr bool is_cnn_form(Op op) {
  return op == Op::kChannelScale || op == Op::kHardSigmoid || op == Op::kSiLU ||
         op == Op::kChannelShuffle;
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
  int64_t axis = 0;                  // Concat / Softmax / Gather / LayerNormalization axis, normalised
  std::vector<int64_t> concat_axis;  // per input: its extent along the axis
  int64_t groups = 1;                // ChannelShuffle
  // Op::kTensorOp only (see TensorOp).
  TensorOp tensor_op = TensorOp::kAdd;
  std::vector<int64_t> in1_dims;  // dims of input 1 of a binary op or MatMul
  std::vector<int64_t> ints;
  std::vector<int64_t> ints2;
  bool keepdims = true;
  bool gelu_tanh = false;
  std::vector<float> floats;
  ResizeSpec resize;
  PadMode pad_mode = PadMode::kConstant;
};

// What a backend's decoding messages say about it.
struct DecodeRules {
  const char* backend_name;  // "op 'Gemm' is not implemented by <backend_name> (...)"
  // What the backend does with constant weights at compile time, so a non-constant one cannot
  // work: "weights W tensor 'w' is not constant (<backend_name> <constant_use> at compile
  // time; ...)", e.g. "packs it", "uploads it".
  const char* constant_use;
  // The backend takes 4-D sub-graph inputs and outputs in NHWC memory order too (it declares
  // CO_UP_LAYOUT_NHWC in boundary_layouts); NHWC anywhere else is refused.
  bool nhwc_boundaries = false;
  // Which ops beyond the base set the backend implements (Op::kTensorOp: the rank-N set); NULL: none. Others are declined per
  // node ("op 'SiLU' is not implemented by <backend_name>"), never accepted and failed at compile.
  bool (*implements)(Op op) = nullptr;
};

// Throws PluginError (UNSUPPORTED or INVALID_ARGUMENT) naming the node. `graph` has passed
// check_graph and `index` < graph.node_count.
NodePlan decode_node(const DecodeRules& rules, const co_up_subgraph_desc& graph, uint32_t index);

// The body of every backend's device_query_node once its own handle is checked: validates the
// call (throws INVALID_ARGUMENT) and answers whether decode_node accepts the node, with its
// message as the reason when not. `out_support` is not NULL.
void answer_node_query(const DecodeRules& rules, const co_up_subgraph_desc* graph,
                       uint32_t node_index, co_up_node_support* out_support);

struct StatusOrigin;

// The whole of the ABI's device_query_node, for every backend: `has_device` is whether the
// plugin's own device handle was non-NULL; errors come back as a status of `origin`.
co_up_status* query_node(const StatusOrigin& origin, const DecodeRules& rules, bool has_device,
                         const co_up_subgraph_desc* graph, uint32_t node_index,
                         co_up_node_support* out_support) noexcept;

}  // namespace co_up::backends
