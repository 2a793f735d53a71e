#include "xnn_tensor_kernels.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "avx512_conv.h"

namespace co_up::xnnpack {

namespace portable {
#define CO_UP_LOOP_ATTR
#include "xnn_vector_loops.inc"
#undef CO_UP_LOOP_ATTR
}  // namespace portable

#if defined(__x86_64__)
namespace avx512 {
#define CO_UP_LOOP_ATTR __attribute__((target("avx512f,prefer-vector-width=512")))
#include "xnn_vector_loops.inc"
#undef CO_UP_LOOP_ATTR
}  // namespace avx512
#define CO_UP_DISPATCH(call) (avx512_gemm_available() ? avx512::call : portable::call)
#else
#define CO_UP_DISPATCH(call) (portable::call)
#endif

namespace {

constexpr int64_t kMinParallel = 16384;  // elements below which a kernel runs on the caller

// Offsets of row `row` (of plan.count / inner rows) for each operand.
void row_offsets(const LoopPlan& p, int64_t row, int64_t* offsets) {
  for (int o = 0; o < p.operands; ++o) offsets[o] = 0;
  for (int d = p.rank - 2; d >= 0; --d) {
    const int64_t idx = row % p.dims[static_cast<size_t>(d)];
    row /= p.dims[static_cast<size_t>(d)];
    for (int o = 0; o < p.operands; ++o) offsets[o] += idx * p.strides[static_cast<size_t>(o)][static_cast<size_t>(d)];
  }
}

template <typename F>
void for_rows(const LoopPlan& p, const CpuPool& pool, F body) {
  const int64_t inner = p.dims[static_cast<size_t>(p.rank - 1)];
  const int64_t rows = p.count / std::max<int64_t>(inner, 1);
  pool.parallel_for(rows, 1, kMinParallel / std::max<int64_t>(inner, 1) + 1, [&](int64_t begin, int64_t end) {
    int64_t offsets[3];
    for (int64_t r = begin; r < end; ++r) {
      row_offsets(p, r, offsets);
      body(offsets, inner);
    }
  });
}

}  // namespace

LoopPlan plan_loop(const std::vector<int64_t>& dims, const std::vector<std::vector<int64_t>>& strides) {
  if (strides.empty() || strides.size() > 3) throw std::invalid_argument("plan_loop: 1 to 3 operands");
  const size_t rank = dims.size();
  // Order dims by the output's stride, largest first (its memory order); stable for ties.
  std::vector<size_t> order(rank);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return strides[0][a] > strides[0][b]; });
  LoopPlan p;
  p.operands = static_cast<int>(strides.size());
  p.count = 1;
  std::vector<size_t> kept;
  for (size_t d : order) {
    p.count *= dims[d];
    if (dims[d] != 1) kept.push_back(d);
  }
  int rank_out = 0;
  for (size_t d : kept) {
    if (rank_out > 0) {
      // Merge into the previous dim when contiguous with it for every operand.
      const auto prev = static_cast<size_t>(rank_out - 1);
      bool merge = true;
      for (size_t o = 0; o < strides.size(); ++o) {
        merge = merge && p.strides[o][prev] == strides[o][d] * dims[d];
      }
      if (merge) {
        p.dims[prev] *= dims[d];
        for (size_t o = 0; o < strides.size(); ++o) p.strides[o][prev] = strides[o][d];
        continue;
      }
    }
    if (rank_out == kMaxLoopRank) throw std::invalid_argument("plan_loop: rank above 8");
    p.dims[static_cast<size_t>(rank_out)] = dims[d];
    for (size_t o = 0; o < strides.size(); ++o) p.strides[o][static_cast<size_t>(rank_out)] = strides[o][d];
    ++rank_out;
  }
  if (rank_out == 0) {
    p.dims[0] = 1;
    rank_out = 1;
  }
  p.rank = rank_out;
  return p;
}

void strided_copy(const LoopPlan& p, const float* x, float* y, const CpuPool& pool) {
  const auto last = static_cast<size_t>(p.rank - 1);
  const int64_t sy = p.strides[0][last], sx = p.strides[1][last];
  for_rows(p, pool, [&](const int64_t* off, int64_t n) {
    float* dst = y + off[0];
    const float* src = x + off[1];
    if (sy == 1 && sx == 1) {
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i * sy] = src[i * sx];
    }
  });
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& dims, const std::vector<int64_t>& out) {
  std::vector<int64_t> strides(out.size(), 0);
  const size_t shift = out.size() - dims.size();
  int64_t stride = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    strides[d + shift] = dims[d] == 1 ? 0 : stride;
    stride *= dims[d];
  }
  return strides;
}

void broadcast_binary(BinaryKind op, const LoopPlan& p, const float* a, const float* b, float* y,
                      float lo, float hi, const CpuPool& pool) {
  const auto last = static_cast<size_t>(p.rank - 1);
  const int64_t sa = p.strides[1][last], sb = p.strides[2][last];
  // The output is contiguous along its inner dim (plans are made over row-major outputs).
  for_rows(p, pool, [&](const int64_t* off, int64_t n) {
    CO_UP_DISPATCH(binary_row(op, a + off[1], sa, b + off[2], sb, y + off[0], n, lo, hi));
  });
}

void unary(UnaryKind op, const float* x, float* y, int64_t count, const CpuPool& pool) {
  pool.parallel_for(count, 64, kMinParallel / 8, [&](int64_t begin, int64_t end) {
    CO_UP_DISPATCH(unary_loop(op, x + begin, y + begin, end - begin));
  });
}

void layer_norm_rows(const float* x, float* y, int64_t rows, int64_t size, const float* scale,
                     const float* bias, float epsilon, const CpuPool& pool) {
  pool.parallel_for(rows, 1, kMinParallel / std::max<int64_t>(size, 1) + 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      CO_UP_DISPATCH(layer_norm_row(x + r * size, y + r * size, size, scale, bias, epsilon));
    }
  });
}

void softmax_rows(const float* x, float* y, int64_t rows, int64_t size, const CpuPool& pool) {
  pool.parallel_for(rows, 1, kMinParallel / std::max<int64_t>(size, 1) + 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) CO_UP_DISPATCH(softmax_row(x + r * size, y + r * size, size));
  });
}

}  // namespace co_up::xnnpack
