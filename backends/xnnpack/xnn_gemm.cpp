#include "xnn_gemm.h"

#include <algorithm>
#include <array>
#include <utility>
#include <cstring>
#include <stdexcept>
#include <string>

#include "avx512_conv.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start some intrinsics from an "undefined" vector it then reports as
// maybe-uninitialized (a known false positive at -O3).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#define CO_UP_AVX512_TARGET __attribute__((target("avx512f")))
#endif

namespace co_up::xnnpack {
namespace {

constexpr int64_t kRows = 8;   // output rows per tile
constexpr int64_t kCols = 32;  // output columns per tile = packed panel width

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One tile: rows x (up to 32) outputs of C from `rows` rows of A and one packed panel of B.
template <int kR>
void tile_portable(const float* a, int64_t a_row, int64_t a_col, const float* panel, int64_t k,
                   float* c, int64_t ldc, int64_t cols) {
  float acc[kR][kCols] = {};
  for (int64_t kk = 0; kk < k; ++kk) {
    const float* bk = panel + kk * kCols;
    for (int r = 0; r < kR; ++r) {
      const float av = a[r * a_row + kk * a_col];
      for (int64_t j = 0; j < kCols; ++j) acc[r][j] += av * bk[j];
    }
  }
  for (int r = 0; r < kR; ++r) std::memcpy(c + r * ldc, acc[r], static_cast<size_t>(cols) * sizeof(float));
}

using TileFn = void (*)(const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);

#if defined(__x86_64__)
template <int kR>
CO_UP_AVX512_TARGET void tile_avx512(const float* a, int64_t a_row, int64_t a_col,
                                     const float* panel, int64_t k, float* c, int64_t ldc,
                                     int64_t cols) {
  __m512 lo[kR], hi[kR];
  for (int r = 0; r < kR; ++r) lo[r] = hi[r] = _mm512_setzero_ps();
  for (int64_t kk = 0; kk < k; ++kk) {
    const __m512 b0 = _mm512_load_ps(panel + kk * kCols);
    const __m512 b1 = _mm512_load_ps(panel + kk * kCols + 16);
    const float* ak = a + kk * a_col;
    for (int r = 0; r < kR; ++r) {
      const __m512 av = _mm512_set1_ps(ak[r * a_row]);
      lo[r] = _mm512_fmadd_ps(av, b0, lo[r]);
      hi[r] = _mm512_fmadd_ps(av, b1, hi[r]);
    }
  }
  const __mmask16 m0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? __mmask16(0xFFFF) : cols > 16 ? __mmask16((1u << (cols - 16)) - 1) : __mmask16(0);
  for (int r = 0; r < kR; ++r) {
    _mm512_mask_storeu_ps(c + r * ldc, m0, lo[r]);
    _mm512_mask_storeu_ps(c + r * ldc + 16, m1, hi[r]);
  }
}

template <int... kR>
constexpr std::array<TileFn, sizeof...(kR)> avx512_tiles(std::integer_sequence<int, kR...>) {
  return {&tile_avx512<kR + 1>...};
}
#endif

template <int... kR>
constexpr std::array<TileFn, sizeof...(kR)> portable_tiles(std::integer_sequence<int, kR...>) {
  return {&tile_portable<kR + 1>...};
}

// Per row count 1..8, the tile function of this CPU.
const std::array<TileFn, kRows>& tiles() {
#if defined(__x86_64__)
  static const std::array<TileFn, kRows> table =
      avx512_gemm_available() ? avx512_tiles(std::make_integer_sequence<int, kRows>{})
                              : portable_tiles(std::make_integer_sequence<int, kRows>{});
#else
  static const std::array<TileFn, kRows> table = portable_tiles(std::make_integer_sequence<int, kRows>{});
#endif
  return table;
}

// Offsets of every index of `out` (row-major) into an operand of `dims`/`strides`, right-aligned
// and broadcast where the operand's dim is 1 or missing.
std::vector<int64_t> batch_offsets(const std::vector<int64_t>& out, const std::vector<int64_t>& dims,
                                   const std::vector<int64_t>& strides) {
  int64_t count = 1;
  for (int64_t d : out) count *= d;
  std::vector<int64_t> offsets(static_cast<size_t>(count), 0);
  const size_t shift = out.size() - dims.size();
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, offset = 0;
    for (size_t d = out.size(); d-- > 0;) {
      const int64_t idx = rest % out[d];
      rest /= out[d];
      if (d >= shift && dims[d - shift] != 1) offset += idx * strides[d - shift];
    }
    offsets[static_cast<size_t>(i)] = offset;
  }
  return offsets;
}

}  // namespace

StridedView row_major_view(const std::vector<int64_t>& dims) {
  StridedView v{dims, std::vector<int64_t>(dims.size(), 1)};
  for (size_t d = dims.size(); d-- > 1;) v.strides[d - 1] = v.strides[d] * dims[d];
  return v;
}

StridedView permuted_view(const StridedView& view, const std::vector<int64_t>& perm) {
  StridedView v;
  for (int64_t p : perm) {
    v.dims.push_back(view.dims.at(static_cast<size_t>(p)));
    v.strides.push_back(view.strides.at(static_cast<size_t>(p)));
  }
  return v;
}

BatchedGemm::BatchedGemm(const StridedView& a, const StridedView& b, const float* constant_b) {
  const size_t ra = a.dims.size(), rb = b.dims.size();
  if (ra < 2 || rb < 2 || a.dims[ra - 1] != b.dims[rb - 2] || a.strides.size() != ra ||
      b.strides.size() != rb) {
    throw std::invalid_argument("BatchedGemm: operands do not fit a matrix product");
  }
  m_ = a.dims[ra - 2];
  k_ = a.dims[ra - 1];
  n_ = b.dims[rb - 1];
  a_row_ = a.strides[ra - 2];
  a_col_ = a.strides[ra - 1];
  b_row_ = b.strides[rb - 2];
  b_col_ = b.strides[rb - 1];
  const std::vector<int64_t> ab(a.dims.begin(), a.dims.end() - 2), bb(b.dims.begin(), b.dims.end() - 2);
  const std::vector<int64_t> as(a.strides.begin(), a.strides.end() - 2), bs(b.strides.begin(), b.strides.end() - 2);
  std::vector<int64_t> out(std::max(ab.size(), bb.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i + ab.size() >= out.size() ? ab[i + ab.size() - out.size()] : 1;
    const int64_t y = i + bb.size() >= out.size() ? bb[i + bb.size() - out.size()] : 1;
    if (x != y && x != 1 && y != 1) throw std::invalid_argument("BatchedGemm: batch dims do not broadcast");
    out[i] = std::max(x, y);
  }
  a_offsets_ = batch_offsets(out, ab, as);
  // B's own batches (row-major over its batch dims) are packed once each.
  b_offsets_ = batch_offsets(bb, bb, bs);
  const std::vector<int64_t> slot_strides = row_major_view(bb).strides;
  b_slots_ = batch_offsets(out, bb, slot_strides);
  panels_ = ceil_div(n_, kCols);
  packed_ = Buffer<float>(std::max<int64_t>(1, static_cast<int64_t>(b_offsets_.size()) * panels_ * k_ * kCols));
  if (constant_b) {
    pack(constant_b, nullptr);
    constant_ = true;
  }
}

void BatchedGemm::pack(const float* b, const CpuPool* pool) {
  const int64_t tasks = static_cast<int64_t>(b_offsets_.size()) * panels_;
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t slot = t / panels_, panel = t % panels_;
      const int64_t n0 = panel * kCols, cols = std::min(kCols, n_ - n0);
      const float* src = b + b_offsets_[static_cast<size_t>(slot)] + n0 * b_col_;
      float* dst = packed_.data() + (slot * panels_ + panel) * k_ * kCols;
      for (int64_t kk = 0; kk < k_; ++kk) {
        const float* row = src + kk * b_row_;
        float* d = dst + kk * kCols;
        if (b_col_ == 1) {
          std::memcpy(d, row, static_cast<size_t>(cols) * sizeof(float));
        } else {
          for (int64_t j = 0; j < cols; ++j) d[j] = row[j * b_col_];
        }
        for (int64_t j = cols; j < kCols; ++j) d[j] = 0.0f;
      }
    }
  };
  if (pool) pool->parallel_for(tasks, 1, 2, body);
  else body(0, tasks);
}

void BatchedGemm::run(const float* a, const float* b, float* c, const CpuPool& pool) {
  if (!constant_) pack(b, &pool);
  const auto& fns = tiles();
  const int64_t row_tiles = ceil_div(m_, kRows);
  const int64_t tasks = batches() * panels_ * row_tiles;
  // Each task: one panel of B (kept in L1/L2) against a block of row tiles of one batch.
  pool.parallel_for(tasks, 1, 2, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t rt = t % row_tiles;
      const int64_t panel = (t / row_tiles) % panels_;
      const int64_t batch = t / (row_tiles * panels_);
      const int64_t r0 = rt * kRows, rows = std::min(kRows, m_ - r0);
      const int64_t n0 = panel * kCols, cols = std::min(kCols, n_ - n0);
      const float* pa = a + a_offsets_[static_cast<size_t>(batch)] + r0 * a_row_;
      const float* pb = packed_.data() + (b_slots_[static_cast<size_t>(batch)] * panels_ + panel) * k_ * kCols;
      float* pc = c + (batch * m_ + r0) * n_ + n0;
      fns[static_cast<size_t>(rows - 1)](pa, a_row_, a_col_, pb, k_, pc, n_, cols);
    }
  });
}

}  // namespace co_up::xnnpack
