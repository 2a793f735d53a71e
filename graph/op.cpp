#include "graph/op.h"

#include <array>
#include <utility>

namespace co_up::graph {
namespace {

constexpr std::array<std::pair<OpType, std::string_view>, 42> kOpNames{{
    {OpType::kInput, "Input"},
    {OpType::kConv, "Conv"},
    {OpType::kFullyConnected, "FullyConnected"},
    {OpType::kMaxPool, "MaxPool"},
    {OpType::kAveragePool, "AveragePool"},
    {OpType::kGlobalAveragePool, "GlobalAveragePool"},
    {OpType::kGlobalMaxPool, "GlobalMaxPool"},
    {OpType::kRelu, "Relu"},
    {OpType::kClip, "Clip"},
    {OpType::kSigmoid, "Sigmoid"},
    {OpType::kHardSwish, "HardSwish"},
    {OpType::kLrn, "LRN"},
    {OpType::kBatchNormalization, "BatchNormalization"},
    {OpType::kConcat, "Concat"},
    {OpType::kAdd, "Add"},
    {OpType::kSoftmax, "Softmax"},
    {OpType::kFlatten, "Flatten"},
    {OpType::kReshape, "Reshape"},
    {OpType::kIdentity, "Identity"},
    {OpType::kChannelScale, "ChannelScale"},
    {OpType::kHardSigmoid, "HardSigmoid"},
    {OpType::kSiLU, "SiLU"},
    {OpType::kChannelShuffle, "ChannelShuffle"},
    {OpType::kSub, "Sub"},
    {OpType::kMul, "Mul"},
    {OpType::kDiv, "Div"},
    {OpType::kPow, "Pow"},
    {OpType::kSqrt, "Sqrt"},
    {OpType::kErf, "Erf"},
    {OpType::kTanh, "Tanh"},
    {OpType::kExp, "Exp"},
    {OpType::kMatMul, "MatMul"},
    {OpType::kTranspose, "Transpose"},
    {OpType::kReduceMean, "ReduceMean"},
    {OpType::kReduceSum, "ReduceSum"},
    {OpType::kGather, "Gather"},
    {OpType::kSlice, "Slice"},
    {OpType::kLayerNormalization, "LayerNormalization"},
    {OpType::kGelu, "Gelu"},
    {OpType::kLeakyRelu, "LeakyRelu"},
    {OpType::kResize, "Resize"},
    {OpType::kPad, "Pad"},
}};

}  // namespace

std::string_view op_type_name(OpType op) {
  for (const auto& [type, name] : kOpNames) {
    if (type == op) return name;
  }
  return "Unknown";
}

std::optional<OpType> op_type_from_name(std::string_view name) {
  for (const auto& [type, op_name] : kOpNames) {
    if (op_name == name) return type;
  }
  return std::nullopt;
}

bool is_compute_op(OpType op) {
  return op == OpType::kConv || op == OpType::kFullyConnected || op == OpType::kMatMul;
}

bool is_broadcast_binary_op(OpType op) {
  return op == OpType::kAdd || op == OpType::kSub || op == OpType::kMul || op == OpType::kDiv ||
         op == OpType::kPow;
}

bool is_unary_math_op(OpType op) {
  return op == OpType::kSqrt || op == OpType::kErf || op == OpType::kTanh || op == OpType::kExp;
}

}  // namespace co_up::graph
