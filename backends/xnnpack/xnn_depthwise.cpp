#include "xnn_depthwise.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "avx512_conv.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers: false maybe-uninitialized reports at -O3 (as in avx512_conv.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <cmath>

#include "avx512_silu.h"

// 64-byte vectors by value in the portable variant: all inline, no ABI crosses a call.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace co_up::xnnpack {

namespace {

struct DepthwiseArgs {
  const backends::Conv2dShape* shape;
  int64_t channels_padded;
  const float* weights;
  const float* bias;
  float lo, hi;
  int64_t output_stride;
  const float* x;
  float* y;
  bool silu;
};

namespace portable {
#define CO_UP_LOOP_ATTR
typedef float V16 __attribute__((vector_size(64)));
inline float silu1(float v) { return v / (1.0f + std::exp(-v)); }
inline V16 silu16(V16 v) {
  for (int l = 0; l < 16; ++l) v[l] = silu1(v[l]);
  return v;
}
#include "xnn_depthwise_loops.inc"
#undef CO_UP_LOOP_ATTR
}  // namespace portable

#if defined(__x86_64__)
namespace avx512 {
#define CO_UP_LOOP_ATTR __attribute__((target("avx512f,prefer-vector-width=512")))
typedef float V16 __attribute__((vector_size(64)));
// silu_ps, so that fused and stand-alone SiLU (xnn_silu.h) give the same bits.
CO_UP_LOOP_ATTR inline V16 silu16(V16 v) { return reinterpret_cast<V16>(silu_ps(reinterpret_cast<__m512>(v))); }
CO_UP_LOOP_ATTR inline float silu1(float v) { return _mm512_cvtss_f32(silu_ps(_mm512_set1_ps(v))); }
#include "xnn_depthwise_loops.inc"
#undef CO_UP_LOOP_ATTR
}  // namespace avx512
#endif

}  // namespace

bool depthwise_kernel_wins(const backends::Conv2dShape& s) {
  if (s.group != s.in_channels || s.out_channels != s.in_channels || s.group < 2) return false;
  // The tap counts Debian 12's XNNPACK has f32 depthwise micro-kernels for (up16x3, up16x4,
  // up16x9, up16x25 on x86; the same primary tiles on ARM). Its 3-tap kernel beats this one
  // (1x3 and 3x1 at C=256, 56x56, one thread: about 0.16 ms against 0.38 ms).
  const int64_t taps = s.kernel_h * s.kernel_w;
  return taps != 3 && taps != 4 && taps != 9 && taps != 25;
}

DepthwiseConvolution::DepthwiseConvolution(const backends::Conv2dShape& shape, const float* weights,
                                           const float* bias, float output_min, float output_max,
                                           int64_t output_stride, const float* x, float* y,
                                           bool silu)
    : s_(shape),
      channels_padded_((shape.in_channels + 15) / 16 * 16),
      lo_(output_min),
      hi_(output_max),
      output_stride_(output_stride > 0 ? output_stride : shape.out_channels),
      x_(x),
      y_(y),
      silu_(silu) {
  if (s_.group != s_.in_channels || s_.out_channels != s_.in_channels) {
    throw std::invalid_argument("not a depthwise convolution (one input and output channel per group)");
  }
  const int64_t taps = s_.kernel_h * s_.kernel_w, ch = s_.in_channels;
  weights_.assign(static_cast<size_t>(taps * channels_padded_), 0.0f);
  bias_.assign(static_cast<size_t>(channels_padded_), 0.0f);
  for (int64_t c = 0; c < ch; ++c) {  // OIHW [C, 1, kH, kW] -> [tap][channel]
    for (int64_t t = 0; t < taps; ++t) weights_[static_cast<size_t>(t * channels_padded_ + c)] = weights[c * taps + t];
    if (bias) bias_[static_cast<size_t>(c)] = bias[c];
  }
}

void DepthwiseConvolution::run(const CpuPool& pool, Variant variant) const {
  const DepthwiseArgs args{&s_, channels_padded_, weights_.data(), bias_.data(), lo_, hi_,
                           output_stride_, x_, y_, silu_};
  const int64_t rows = s_.batch * s_.out_height();
  pool.parallel_for(rows, 1, 2, [&](int64_t begin, int64_t end) {
#if defined(__x86_64__)
    if (variant == Variant::kAuto && avx512_gemm_available()) {
      avx512::depthwise_rows(args, begin, end);
      return;
    }
#endif
    portable::depthwise_rows(args, begin, end);
  });
}

}  // namespace co_up::xnnpack
