#include "xnn_gemv.h"

#include <algorithm>
#include <cstring>

#include "avx512_conv.h"
#include "xnn_sliced_ops.h"

// 64-byte vectors by value in the portable variant: all inline, no ABI crosses a call.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace co_up::xnnpack {
namespace {

struct GemvArgs {
  int64_t in, out;
  const float* packed;
  const float* bias;
  float lo, hi;
  const float* x;
  float* y;
};

// The loop, compiled once per target (as xnn_depthwise.cpp's): GCC's vector extension lowers
// V16 to one zmm with AVX-512 and to narrower registers elsewhere (NEON on ARM).
#define CO_UP_GEMV_LOOP                                                                          \
  void gemv_blocks(const GemvArgs& a, int64_t begin, int64_t end) {                             \
    constexpr int64_t kB = Gemv::kBlock;                                                         \
    const int64_t k4 = a.in / 4 * 4;                                                             \
    for (int64_t b = begin; b < end; ++b) {                                                      \
      const float* w = a.packed + b * a.in * kB;                                                 \
      V16 a0, a1 = {}, a2 = {}, a3 = {}, v;                                                      \
      std::memcpy(&a0, a.bias + b * kB, sizeof(V16));                                            \
      int64_t k = 0;                                                                             \
      for (; k < k4; k += 4) {                                                                   \
        std::memcpy(&v, w + k * kB, sizeof(V16));                                                \
        a0 += v * a.x[k];                                                                        \
        std::memcpy(&v, w + (k + 1) * kB, sizeof(V16));                                          \
        a1 += v * a.x[k + 1];                                                                    \
        std::memcpy(&v, w + (k + 2) * kB, sizeof(V16));                                          \
        a2 += v * a.x[k + 2];                                                                    \
        std::memcpy(&v, w + (k + 3) * kB, sizeof(V16));                                         \
        a3 += v * a.x[k + 3];                                                                    \
      }                                                                                          \
      for (; k < a.in; ++k) {                                                                    \
        std::memcpy(&v, w + k * kB, sizeof(V16));                                                \
        a0 += v * a.x[k];                                                                        \
      }                                                                                          \
      const V16 sum = (a0 + a1) + (a2 + a3);                                                     \
      const int64_t n = std::min(kB, a.out - b * kB);                                            \
      float* y = a.y + b * kB;                                                                   \
      for (int64_t l = 0; l < n; ++l) y[l] = std::min(std::max(sum[l], a.lo), a.hi);             \
    }                                                                                            \
  }

namespace portable {
typedef float V16 __attribute__((vector_size(64)));
CO_UP_GEMV_LOOP
}  // namespace portable

#if defined(__x86_64__)
namespace avx512 {
typedef float V16 __attribute__((vector_size(64)));
__attribute__((target("avx512f,prefer-vector-width=512"))) CO_UP_GEMV_LOOP
}  // namespace avx512
#endif

#undef CO_UP_GEMV_LOOP

}  // namespace

Gemv::Gemv(int64_t in, int64_t out, const float* weights, const float* bias, float lo, float hi,
           const float* x, float* y, int64_t rows, int64_t y_stride)
    : in_(in), out_(out), lo_(lo), hi_(hi), x_(x), y_(y), rows_(rows), y_stride_(y_stride > 0 ? y_stride : out) {
  packed_.assign(static_cast<size_t>(blocks() * in * kBlock), 0.0f);
  bias_.assign(static_cast<size_t>(blocks() * kBlock), 0.0f);
  for (int64_t o = 0; o < out; ++o) {
    float* panel = packed_.data() + (o / kBlock) * in * kBlock + o % kBlock;
    for (int64_t k = 0; k < in; ++k) panel[k * kBlock] = weights[o * in + k];
    if (bias) bias_[static_cast<size_t>(o)] = bias[o];
  }
}

void Gemv::run_blocks(int64_t begin, int64_t end) const {
  for (int64_t r = 0; r < rows_; ++r) {
    const GemvArgs args{in_, out_, packed_.data(), bias_.data(), lo_, hi_, x_ + r * in_, y_ + r * y_stride_};
#if defined(__x86_64__)
    if (avx512_gemm_available()) {
      avx512::gemv_blocks(args, begin, end);
      continue;
    }
#endif
    portable::gemv_blocks(args, begin, end);
  }
}

void Gemv::run_blocks_portable(int64_t begin, int64_t end) const {
  for (int64_t r = 0; r < rows_; ++r) {
    portable::gemv_blocks(GemvArgs{in_, out_, packed_.data(), bias_.data(), lo_, hi_, x_ + r * in_, y_ + r * y_stride_},
                          begin, end);
  }
}

bool Gemv::splits(int64_t in, int64_t out, int threads) {
  const int64_t weights = in * out;
  return slice_count(dense_conv_work_us(weights, weights), (out + kBlock - 1) / kBlock, threads) > 1;
}

void Gemv::run(const CpuPool& pool) const {
  if (!splits(in_ * rows_, out_, pool.thread_count())) {
    run_blocks(0, blocks());
    return;
  }
  pool.parallel_for(blocks(), 1, 2, [&](int64_t begin, int64_t end) { run_blocks(begin, end); });
}

}  // namespace co_up::xnnpack
