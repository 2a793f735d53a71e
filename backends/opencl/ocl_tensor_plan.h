// What the opencl backend enqueues for a rank-N tensor op (Op::kTensorOp) or a CNN form
// (ChannelScale, HardSigmoid, SiLU, ChannelShuffle), independent of OpenCL handles: kernels from
// kernels/ocl_tensor_kernels.cl with their arguments, index and weight tables computed once at
// compile time, and for MatMul one batched CLBlast GEMM. The plugin turns a TensorPlan into
// buffers and launches.
//
// Index arithmetic follows cpu-reference's plans (ref_tensor_kernels.h, ref_resample_kernels.h),
// so both backends read the same elements in the same order. Tables hold 32-bit offsets: a
// tensor beyond 2^31 elements is declined (PluginError UNSUPPORTED).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "node_decode.h"

namespace co_up::opencl {

struct TensorArg {
  enum class Kind { kTensor, kIntTable, kFloatTable, kInt, kFloat };
  Kind kind = Kind::kInt;
  int64_t value = 0;  // tensor index, table index or int value
  float f = 0.0f;
};

struct TensorKernel {
  std::string name;
  int64_t items = 0;  // work-items; the kernel's last argument is this count
  std::vector<TensorArg> args;
};

// y[batch] = a[batch] x b[batch], row-major, one GEMM per batch entry at these element offsets.
struct TensorGemm {
  uint32_t a = 0, b = 0, y = 0;  // tensor indices
  size_t m = 0, n = 0, k = 0;
  std::vector<size_t> a_offsets, b_offsets, y_offsets;
};

struct TensorPlan {
  std::vector<std::vector<int32_t>> int_tables;
  std::vector<std::vector<float>> float_tables;
  std::optional<TensorGemm> gemm;
  std::vector<TensorKernel> kernels;  // enqueued after the GEMM, in order
};

// Throws backends::PluginError (UNSUPPORTED) for a form this backend does not run.
TensorPlan plan_tensor_node(const backends::NodePlan& p);

// Whether the opencl backend implements `op` beyond the base set (DecodeRules::implements).
bool implements_tensor_op(backends::Op op);

}  // namespace co_up::opencl
