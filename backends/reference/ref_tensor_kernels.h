// Kernels of the cpu-reference backend for the rank-N (transformer) ops: broadcasting element-wise
// ops, batched matrix products, transposes, reductions, gathers, slices and layer normalisation.
//
// Each op has a plan made once at compile time from the decoded dims (rank <= kMaxRank, strides
// precomputed) and a run function that only reads and writes the arrays it is given: no allocation
// per run. The determinism contract of ref_kernels.h holds: work is split over independent output
// rows, every reduction runs in one fixed order.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "op_shapes.h"
#include "ref_thread_pool.h"

namespace co_up::reference {

inline constexpr int kMaxRank = 8;

enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kPow };
enum class UnaryOp : uint8_t { kSqrt, kErf, kTanh, kExp, kGelu, kGeluTanh };

// Output dims with the strides of each operand's element for every output dim (0 where the
// operand broadcasts). The last dim is the inner loop.
struct BroadcastPlan {
  int rank = 1;
  std::array<int64_t, kMaxRank> dims{};
  std::array<int64_t, kMaxRank> a_strides{};
  std::array<int64_t, kMaxRank> b_strides{};
  int64_t count = 0;
};
BroadcastPlan plan_broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                             const std::vector<int64_t>& out);
void broadcast_binary(BinaryOp op, const BroadcastPlan& plan, const float* a, const float* b,
                      float* y, backends::Activation activation, ThreadPool* pool);

// x and y may be the same array.
void unary(UnaryOp op, const float* x, float* y, int64_t count, ThreadPool* pool);

// y[batch, M, N] = A[batch, M, K] x B[batch, K, N], batch dims broadcast; k ascending per element.
struct MatMulPlan {
  int64_t m = 0, k = 0, n = 0;
  BroadcastPlan batch;  // over the batch dims; a/b strides count whole matrices
};
MatMulPlan plan_matmul(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
void matmul(const MatMulPlan& plan, const float* a, const float* b, float* y, ThreadPool* pool);

// Gathers y[i] = x[offset(i)] over an output of `dims` where input strides per output dim are
// given: transposes and strided slices are both this.
struct StridedCopyPlan {
  int rank = 1;
  std::array<int64_t, kMaxRank> dims{};
  std::array<int64_t, kMaxRank> strides{};
  int64_t base = 0;
  int64_t count = 0;
};
StridedCopyPlan plan_transpose(const std::vector<int64_t>& in, const std::vector<int64_t>& perm);
StridedCopyPlan plan_slice(const std::vector<int64_t>& in, const std::vector<int64_t>& starts,
                           const std::vector<int64_t>& steps, const std::vector<int64_t>& out);
void strided_copy(const StridedCopyPlan& plan, const float* x, float* y, ThreadPool* pool);

// Sum or mean over `axes` (sorted): for every kept element, the reduced elements in row-major
// order.
struct ReducePlan {
  StridedCopyPlan kept;     // over the kept dims, strides into x
  StridedCopyPlan reduced;  // over the reduced dims, strides into x
  bool mean = false;
};
ReducePlan plan_reduce(const std::vector<int64_t>& in, const std::vector<int64_t>& axes, bool mean);
void reduce(const ReducePlan& plan, const float* x, float* y, ThreadPool* pool);

// Gather along an axis with constant indices: x[outer, axis_len, inner] -> y[outer, indices, inner].
void gather(const float* x, float* y, int64_t outer, int64_t axis_len, int64_t inner,
            const std::vector<int64_t>& indices, ThreadPool* pool);

// Layer normalisation of x[outer, size] rows: mean and variance in two passes in index order,
// y = (x - mean) / sqrt(var + epsilon) * scale + bias. `bias` may be null.
void layer_norm(const float* x, float* y, int64_t outer, int64_t size, const float* scale,
                const float* bias, float epsilon, ThreadPool* pool);

}  // namespace co_up::reference
