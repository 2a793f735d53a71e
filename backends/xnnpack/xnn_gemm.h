// Batched f32 matrix products for the MatMul of cpu-xnnpack: C[batch] = A[batch] x B[batch] where
// A and B are rank-N views with any element strides (a 4-D operand held NHWC, or a Transpose
// folded into the product: attention's q k^T reads k through its permutation, nothing is
// transposed per frame), and C is row-major.
//
// Why its own GEMM: XNNPACK's fully connected operator needs its weights at creation, and this
// snapshot (February 2022) has no batch matrix multiply; attention multiplies two computed
// tensors. B is packed per run into panels of 32 columns (once at creation when it is constant),
// then tiles of 8 x 32 outputs accumulate in registers (AVX-512 where the CPU has it, else
// portable C++ the compiler vectorises, NEON on ARM).
//
// Numerics: every output is the sum over k in ascending order from 0 (f32, FMA on AVX-512), so
// results do not depend on the thread count or on the tiling.
//
// Threading: run() may be called from one thread at a time (it packs into the object's buffer).
#pragma once

#include <cstdint>
#include <vector>

#include "xnn_common.h"
#include "xnn_thread_pool.h"

namespace co_up::xnnpack {

// A rank-N operand: its logical dims and, per dim, the distance in floats between neighbours.
struct StridedView {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
};
StridedView row_major_view(const std::vector<int64_t>& dims);
// The view of a transposed tensor: out dim i is `view` dim perm[i].
StridedView permuted_view(const StridedView& view, const std::vector<int64_t>& perm);

class BatchedGemm {
 public:
  // a: [..., M, K], b: [..., K, N], batch dims broadcast as numpy; C is [batch..., M, N]
  // row-major. When `constant_b` is not NULL, B is read from it now (through b's strides) and
  // packed once; run() then ignores its `b`. Throws std::invalid_argument on shapes that do not
  // fit.
  BatchedGemm(const StridedView& a, const StridedView& b, const float* constant_b);

  void run(const float* a, const float* b, float* c, const CpuPool& pool);

  int64_t m() const { return m_; }
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  int64_t batches() const { return static_cast<int64_t>(a_offsets_.size()); }

 private:
  void pack(const float* b, const CpuPool* pool);

  int64_t m_ = 0, k_ = 0, n_ = 0;
  int64_t a_row_ = 0, a_col_ = 0;  // A's strides along M and K
  int64_t b_row_ = 0, b_col_ = 0;  // B's strides along K and N
  int64_t panels_ = 0;             // ceil(N / 32)
  std::vector<int64_t> a_offsets_;    // per output batch: where its A starts
  std::vector<int64_t> b_slots_;      // per output batch: which packed B it reads
  std::vector<int64_t> b_offsets_;    // per packed B: where its B starts
  bool constant_ = false;
  Buffer<float> packed_;  // per B batch: panels x K x 32, zero beyond N
};

}  // namespace co_up::xnnpack
