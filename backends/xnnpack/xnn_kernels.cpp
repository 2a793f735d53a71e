#include "xnn_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "avx512_conv.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start some intrinsics from an "undefined" vector it then reports as
// maybe-uninitialized (a known false positive at -O3), as in avx512_conv.cpp.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#endif

namespace co_up::xnnpack {
namespace {

// Below this many elements a kernel runs on the calling thread: waking workers costs more.
constexpr int64_t kMinParallel = 16384;
// Transpose tile: 32 x 32 floats (4 KiB) in and out stay in L1.
constexpr int64_t kTile = 32;

#if defined(__x86_64__)
// dst[c][r] = src[r][c] for one 8 x 8 block, in registers (unpack, shuffle, swap 128-bit halves).
__attribute__((target("avx"))) void transpose_8x8_avx(const float* src, int64_t src_stride,
                                                      float* dst, int64_t dst_stride) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * src_stride);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * dst_stride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * dst_stride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#endif

// dst[c][r] = src[r][c] for r in [r0, r1), c in [c0, c1) of an x of `rows` x `cols`.
void transpose_block(const float* src, float* dst, int64_t rows, int64_t cols, int64_t r0,
                     int64_t r1, int64_t c0, int64_t c1) {
#if defined(__x86_64__)
  static const bool avx = __builtin_cpu_supports("avx");
  if (avx) {
    // Full 8 x 8 blocks in registers (the scalar loop runs at a tenth of memcpy speed); edges
    // below.
    const int64_t r8 = r0 + (r1 - r0) / 8 * 8, c8 = c0 + (c1 - c0) / 8 * 8;
    // Column-major over blocks: each output row's 32 floats (two cache lines) are written in
    // sequence.
    for (int64_t c = c0; c < c8; c += 8) {
      for (int64_t r = r0; r < r8; r += 8) {
        transpose_8x8_avx(src + r * cols + c, cols, dst + c * rows + r, rows);
      }
    }
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t c = (r < r8 ? c8 : c0); c < c1; ++c) dst[c * rows + r] = src[r * cols + c];
    }
    return;
  }
#endif
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t c = c0; c < c1; ++c) dst[c * rows + r] = src[r * cols + c];
  }
}

// dst[c][r] = src[r][c] for c in [c0, c1) of an x of `rows` (few) x `cols`: every output pixel's
// channels in turn, so the stores run in sequence.
void interleave_planes(const float* src, float* dst, int64_t rows, int64_t cols, int64_t c0, int64_t c1) {
  int64_t c = c0;
#if defined(__x86_64__)
  if (rows == 3) {
    // An RGB image, four pixels at a time: three planes' 4 floats each into 12 interleaved ones
    // (SSE, which every x86-64 CPU has; the scalar loop ran at half this speed).
    const float* p0 = src;
    const float* p1 = src + cols;
    const float* p2 = src + 2 * cols;
    for (; c + 4 <= c1; c += 4) {
      const __m128 a = _mm_loadu_ps(p0 + c), b = _mm_loadu_ps(p1 + c), d = _mm_loadu_ps(p2 + c);
      const __m128 ab_lo = _mm_unpacklo_ps(a, b);                           // a0 b0 a1 b1
      const __m128 ab_hi = _mm_unpackhi_ps(a, b);                           // a2 b2 a3 b3
      const __m128 d0a1 = _mm_shuffle_ps(d, ab_lo, _MM_SHUFFLE(2, 2, 0, 0));  // d0 d0 a1 a1
      const __m128 b1d1 = _mm_shuffle_ps(ab_lo, d, _MM_SHUFFLE(1, 1, 3, 3));  // b1 b1 d1 d1
      const __m128 d2a3 = _mm_shuffle_ps(d, ab_hi, _MM_SHUFFLE(2, 2, 2, 2));  // d2 d2 a3 a3
      const __m128 b3d3 = _mm_shuffle_ps(ab_hi, d, _MM_SHUFFLE(3, 3, 3, 3));  // b3 b3 d3 d3
      float* out = dst + 3 * c;
      _mm_storeu_ps(out, _mm_shuffle_ps(ab_lo, d0a1, _MM_SHUFFLE(2, 0, 1, 0)));      // a0 b0 d0 a1
      _mm_storeu_ps(out + 4, _mm_shuffle_ps(b1d1, ab_hi, _MM_SHUFFLE(1, 0, 2, 0)));  // b1 d1 a2 b2
      _mm_storeu_ps(out + 8, _mm_shuffle_ps(d2a3, b3d3, _MM_SHUFFLE(2, 0, 2, 0)));   // d2 a3 b3 d3
    }
  }
#endif
  for (; c < c1; ++c) {
    for (int64_t r = 0; r < rows; ++r) dst[c * rows + r] = src[r * cols + c];
  }
}

void transpose_planes(const float* x, float* y, int64_t batch, int64_t rows, int64_t cols,
                      const CpuPool& pool) {
  // Per image: y[c][r] = x[r][c] for an x of rows x cols, split over tiles of rows. Few rows (an
  // RGB input's planes, NCHW -> NHWC) were one tile, so one thread, all in the scalar edge loop
  // (50 us of a 224x224 frame, before its first layer): ranges of columns (pixels) instead.
  constexpr int64_t kPixels = 1024;
  const bool few_rows = rows < 8;
  const int64_t items = few_rows ? (cols + kPixels - 1) / kPixels : (rows + kTile - 1) / kTile;
  const int64_t item_floats = few_rows ? kPixels * rows : kTile * cols;
  pool.parallel_for(batch * items, 1, kMinParallel / std::max<int64_t>(item_floats, 1) + 1,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t item = begin; item < end; ++item) {
                        const float* src = x + item / items * rows * cols;
                        float* dst = y + item / items * rows * cols;
                        if (few_rows) {
                          const int64_t c0 = item % items * kPixels;
                          interleave_planes(src, dst, rows, cols, c0, std::min(cols, c0 + kPixels));
                          continue;
                        }
                        const int64_t r0 = item % items * kTile;
                        const int64_t r1 = std::min(rows, r0 + kTile);
                        for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
                          transpose_block(src, dst, rows, cols, r0, r1, c0, std::min(cols, c0 + kTile));
                        }
                      }
                    });
}

}  // namespace

void nchw_to_nhwc(const float* x, float* y, int64_t batch, int64_t channels, int64_t plane,
                  const CpuPool& pool) {
  transpose_planes(x, y, batch, channels, plane, pool);
}

void nhwc_to_nchw(const float* x, float* y, int64_t batch, int64_t channels, int64_t plane,
                  const CpuPool& pool) {
  transpose_planes(x, y, batch, plane, channels, pool);
}

namespace {

// LRN of one pixel's channels. `padded` holds `before` zeros, the pixel's C squares and `after`
// zeros (the zeros written once per thread): each channel's window sum is then `size` shifted
// adds over the whole channel row, which vectorises, and adds the same squares in the same
// ascending order as cpu-reference (adding the zeros first changes no bit).
struct LrnRow {
  int64_t channels, size;
  float scale, beta, bias;
};

void lrn_pixel_portable(const LrnRow& r, const float* src, float* dst, float* padded, float* sum) {
  const int64_t before = (r.size - 1) / 2;
  for (int64_t c = 0; c < r.channels; ++c) padded[before + c] = src[c] * src[c];
  std::fill(sum, sum + r.channels, 0.0f);
  for (int64_t k = 0; k < r.size; ++k) {
    for (int64_t c = 0; c < r.channels; ++c) sum[c] += padded[c + k];
  }
  if (r.beta == 0.75f) {
    // d^-0.75 = 1 / (sqrt(d) * sqrt(sqrt(d))): no pow.
    for (int64_t c = 0; c < r.channels; ++c) {
      const float d = r.bias + r.scale * sum[c];
      const float q = std::sqrt(d);
      dst[c] = src[c] / (q * std::sqrt(q));
    }
  } else {
    for (int64_t c = 0; c < r.channels; ++c) dst[c] = src[c] / std::pow(r.bias + r.scale * sum[c], r.beta);
  }
}

#if defined(__x86_64__)
// The same operations in the same order, 16 channels at a time (the scalar loop above cannot be
// vectorised by the compiler: std::sqrt sets errno). Multiply and add must stay separate (GCC
// would fuse them, AVX-512 having FMA), so the bits are the portable loop's. beta == 0.75 only.
#if defined(__clang__)
#define CO_UP_LRN_ATTR __attribute__((target("avx512f")))
#else
#define CO_UP_LRN_ATTR __attribute__((target("avx512f"), optimize("fp-contract=off")))
#endif
CO_UP_LRN_ATTR void lrn_pixel_avx512(const LrnRow& r, const float* src, float* dst,
                                                         float* padded) {
  const int64_t before = (r.size - 1) / 2;
  for (int64_t c = 0; c < r.channels; c += 16) {
    const int64_t left = r.channels - c;
    const auto m = static_cast<__mmask16>(left >= 16 ? 0xffffu : (1u << left) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(m, src + c);
    _mm512_mask_storeu_ps(padded + before + c, m, _mm512_mul_ps(v, v));
  }
  const __m512 scale = _mm512_set1_ps(r.scale), bias = _mm512_set1_ps(r.bias);
  for (int64_t c = 0; c < r.channels; c += 16) {
    const int64_t left = r.channels - c;
    const auto m = static_cast<__mmask16>(left >= 16 ? 0xffffu : (1u << left) - 1);
    __m512 s = _mm512_setzero_ps();
    for (int64_t k = 0; k < r.size; ++k) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, padded + c + k));
    const __m512 d = _mm512_add_ps(bias, _mm512_mul_ps(scale, s));
    const __m512 q = _mm512_sqrt_ps(d);
    // Masked-off lanes divide 0 by sqrt(bias)^1.5: never stored.
    const __m512 y = _mm512_div_ps(_mm512_maskz_loadu_ps(m, src + c), _mm512_mul_ps(q, _mm512_sqrt_ps(q)));
    _mm512_mask_storeu_ps(dst + c, m, y);
  }
}
#undef CO_UP_LRN_ATTR
#endif

}  // namespace

void lrn_nhwc(const float* x, float* y, int64_t pixels, int64_t channels, int64_t size,
              float alpha, float beta, float bias, const CpuPool& pool, LrnPath path) {
  const LrnRow row{channels, size, alpha / static_cast<float>(size), beta, bias};
#if defined(__x86_64__)
  const bool avx512 = path == LrnPath::kAuto && beta == 0.75f && avx512_gemm_available();
#endif
  pool.parallel_for(pixels, 1, kMinParallel / std::max<int64_t>(channels, 1) + 1,
                    [&](int64_t begin, int64_t end) {
    // `size` - 1 zeros around the squares, and 16 more so that masked loads stay inside.
    std::vector<float> padded(static_cast<size_t>(channels + size + 16), 0.0f);
    std::vector<float> sum(static_cast<size_t>(channels));
    for (int64_t p = begin; p < end; ++p) {
#if defined(__x86_64__)
      if (avx512) {
        lrn_pixel_avx512(row, x + p * channels, y + p * channels, padded.data());
        continue;
      }
#endif
      lrn_pixel_portable(row, x + p * channels, y + p * channels, padded.data(), sum.data());
    }
  });
}

void channel_affine_nhwc(const float* x, float* y, int64_t pixels, int64_t channels,
                         const float* multiplier, const float* offset, const CpuPool& pool) {
  pool.parallel_for(pixels, 1, kMinParallel / std::max<int64_t>(channels, 1) + 1,
                    [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const float* src = x + p * channels;
      float* dst = y + p * channels;
      for (int64_t c = 0; c < channels; ++c) dst[c] = src[c] * multiplier[c] + offset[c];
    }
  });
}

void global_max_pool_nhwc(const float* x, float* y, int64_t batch, int64_t plane,
                          int64_t channels, const CpuPool& pool) {
  pool.parallel_for(batch * channels, 16, kMinParallel / std::max<int64_t>(plane, 1) + 1,
                    [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end;) {
      const int64_t n = item / channels;
      const int64_t c0 = item % channels;
      const int64_t c1 = std::min(channels, c0 + (end - item));
      float* dst = y + n * channels;
      std::fill(dst + c0, dst + c1, -std::numeric_limits<float>::infinity());
      for (int64_t p = 0; p < plane; ++p) {
        const float* src = x + (n * plane + p) * channels;
        for (int64_t c = c0; c < c1; ++c) dst[c] = std::max(dst[c], src[c]);
      }
      item += c1 - c0;
    }
  });
}

namespace {

template <typename Window>
void pool2d_nhwc(const backends::Pool2dShape& s, float* y, const CpuPool& pool, Window window) {
  const int64_t out_h = s.out_height();
  const int64_t out_w = s.out_width();
  // One output pixel (all channels) per item.
  pool.parallel_for(s.batch * out_h * out_w, 1,
                    kMinParallel / std::max<int64_t>(s.channels * s.kernel_h * s.kernel_w, 1) + 1,
                    [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / (out_h * out_w);
      const int64_t oh = item / out_w % out_h;
      const int64_t ow = item % out_w;
      window(n, oh * s.stride_h - s.pad_top, ow * s.stride_w - s.pad_left, y + item * s.channels);
    }
  });
}

}  // namespace

void max_pool2d_nhwc(const backends::Pool2dShape& s, const float* x, float* y,
                     const CpuPool& pool) {
  const int64_t c_count = s.channels;
  pool2d_nhwc(s, y, pool, [&](int64_t n, int64_t h0, int64_t w0, float* dst) {
    std::fill(dst, dst + c_count, -std::numeric_limits<float>::infinity());
    for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h0 + s.kernel_h, s.in_height); ++h) {
      for (int64_t w = std::max<int64_t>(w0, 0); w < std::min(w0 + s.kernel_w, s.in_width); ++w) {
        const float* src = x + ((n * s.in_height + h) * s.in_width + w) * c_count;
        for (int64_t c = 0; c < c_count; ++c) dst[c] = std::max(dst[c], src[c]);
      }
    }
  });
}

void average_pool2d_nhwc(const backends::Pool2dShape& s, const float* x, float* y,
                         const CpuPool& pool) {
  const int64_t c_count = s.channels;
  pool2d_nhwc(s, y, pool, [&](int64_t n, int64_t h0, int64_t w0, float* dst) {
    const int64_t h_begin = std::max<int64_t>(h0, 0);
    const int64_t h_end = std::min(h0 + s.kernel_h, s.in_height);
    const int64_t w_begin = std::max<int64_t>(w0, 0);
    const int64_t w_end = std::min(w0 + s.kernel_w, s.in_width);
    std::fill(dst, dst + c_count, 0.0f);
    for (int64_t h = h_begin; h < h_end; ++h) {
      for (int64_t w = w_begin; w < w_end; ++w) {
        const float* src = x + ((n * s.in_height + h) * s.in_width + w) * c_count;
        for (int64_t c = 0; c < c_count; ++c) dst[c] += src[c];
      }
    }
    int64_t count = (h_end - h_begin) * (w_end - w_begin);
    if (s.count_include_pad) {
      count = (std::min(h0 + s.kernel_h, s.in_height + s.pad_bottom) - h0) *
              (std::min(w0 + s.kernel_w, s.in_width + s.pad_right) - w0);
    }
    const float divisor = count > 0 ? static_cast<float>(count) : 1.0f;
    for (int64_t c = 0; c < c_count; ++c) dst[c] = count > 0 ? dst[c] / divisor : 0.0f;
  });
}

void softmax_lines(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner,
                   const CpuPool& pool) {
  pool.parallel_for(outer, 1, kMinParallel / std::max<int64_t>(axis * inner, 1) + 1,
                    [&](int64_t begin, int64_t end) {
    const int64_t offset = begin * axis * inner;
    reference::softmax(x + offset, y + offset, end - begin, axis, inner, nullptr);
  });
}

void concat_rows(std::span<const float* const> inputs, std::span<const int64_t> widths, int64_t outer,
                 float* y, const CpuPool& pool) {
  int64_t row = 0;
  for (int64_t w : widths) row += w;
  // A copy streams about twice as fast as an element-wise pass: split from twice its size.
  pool.parallel_for(outer * row, 16, 2 * kMinParallel, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin / row; r * row < end; ++r) {
      const int64_t row_begin = std::max(begin - r * row, int64_t{0});
      const int64_t row_end = std::min(end - r * row, row);
      int64_t offset = 0;
      for (size_t i = 0; i < inputs.size(); ++i) {
        const int64_t from = std::max(row_begin, offset), to = std::min(row_end, offset + widths[i]);
        if (from < to) {
          std::memcpy(y + r * row + from, inputs[i] + r * widths[i] + (from - offset),
                      static_cast<size_t>(to - from) * sizeof(float));
        }
        offset += widths[i];
      }
    }
  });
}

void copy_floats(const float* x, float* y, int64_t count, const CpuPool& pool) {
  const float* const inputs[1] = {x};
  const int64_t widths[1] = {count};
  concat_rows(inputs, widths, 1, y, pool);
}

void hard_sigmoid_nc(const float* x, float* y, int64_t count, float alpha, float beta,
                     const CpuPool& pool) {
  pool.parallel_for(count, 64, kMinParallel, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = std::min(std::max(alpha * x[i] + beta, 0.0f), 1.0f);
  });
}

}  // namespace co_up::xnnpack
