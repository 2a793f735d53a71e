// cpu-xnnpack's kernels for the rank-N (transformer) ops that XNNPACK's February 2022 snapshot
// lacks or cannot take in these layouts: strided copies (Transpose, Slice, layout changes),
// broadcasting binary ops, erf / tanh / exp / GELU, layer normalisation and row softmax.
//
// Plans are made once at step creation; runs only compute (no allocation). Work is split over
// independent output rows or elements and every reduction runs in one fixed order, so results do
// not depend on the thread count. The transcendental functions are polynomial approximations
// (relative error below 1e-6 for exp, absolute error below 2e-7 for erf and tanh) written so
// that the compiler vectorises them: AVX-512 on x86-64 CPUs that have it, SSE2 otherwise, NEON
// on ARM.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "op_shapes.h"
#include "xnn_thread_pool.h"

namespace co_up::xnnpack {

inline constexpr int kMaxLoopRank = 8;

// A loop over an output of `dims` in the output's memory order, with per operand (0: output,
// 1.. inputs) the stride of each dim; dims of extent 1 dropped, dims that are contiguous for
// every operand merged. The last dim is the inner loop.
struct LoopPlan {
  int rank = 1;
  int operands = 1;
  std::array<int64_t, kMaxLoopRank> dims{};
  std::array<std::array<int64_t, kMaxLoopRank>, 3> strides{};
  int64_t count = 0;
};
// `strides[0]` is the output's; up to 3 operands. Throws std::invalid_argument above
// kMaxLoopRank dims.
LoopPlan plan_loop(const std::vector<int64_t>& dims, const std::vector<std::vector<int64_t>>& strides);

// y[out offsets] = x[in offsets] over plan (operands: y, x).
void strided_copy(const LoopPlan& plan, const float* x, float* y, const CpuPool& pool);

// Strides of an operand of `dims` broadcast (numpy, right-aligned) to `out`: row-major strides,
// 0 where it broadcasts.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& dims, const std::vector<int64_t>& out);

enum class BinaryKind : uint8_t { kAdd, kSub, kMul, kDiv, kPow };
// y = clamp(a op b, lo, hi) over plan (operands: y, a, b).
void broadcast_binary(BinaryKind op, const LoopPlan& plan, const float* a, const float* b, float* y,
                      float lo, float hi, const CpuPool& pool);

enum class UnaryKind : uint8_t { kSqrt, kErf, kTanh, kExp, kGelu, kGeluTanh };
// x and y may be the same array.
void unary(UnaryKind op, const float* x, float* y, int64_t count, const CpuPool& pool);

// Rows of `size`: mean and variance in two passes (16 partial sums, then those in order),
// y = (x - mean) / sqrt(var + epsilon) * scale + bias; `bias` may be NULL.
void layer_norm_rows(const float* x, float* y, int64_t rows, int64_t size, const float* scale,
                     const float* bias, float epsilon, const CpuPool& pool);

// Softmax of `rows` contiguous rows of `size`.
void softmax_rows(const float* x, float* y, int64_t rows, int64_t size, const CpuPool& pool);

}  // namespace co_up::xnnpack
