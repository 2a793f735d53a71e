#include "int8_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace co_up::int8 {
namespace {

// Below this many elements a kernel runs on the calling thread: waking workers costs more.
constexpr int64_t kMinParallel = 32768;
// Transpose tile: 32 x 32 elements stay in L1 on both sides.
constexpr int64_t kTile = 32;

// Round to nearest even of x * inverse_scale, plus zero_point, saturated to int8. The magic-number
// rounding (adding and subtracting 1.5 * 2^23 rounds any |v| <= 2^22 to an integer, ties to even,
// under the default rounding mode) vectorises on SSE2 and NEON, where nearbyint becomes a libm
// call per element. NaN maps to -128.
inline int8_t to_int8(float x, float inverse_scale, float zero_point) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  float v = x * inverse_scale;
  v = v > -512.0f ? v : -512.0f;
  v = v < 512.0f ? v : 512.0f;
  v = (v + kMagic) - kMagic + zero_point;
  v = v > -128.0f ? v : -128.0f;
  v = v < 127.0f ? v : 127.0f;
  return static_cast<int8_t>(static_cast<int32_t>(v));
}

// The contiguous loops, as functions of plain values: int8 stores may alias anything, so values
// a loop reads through a closure would be reloaded after every store (and not vectorised). On
// x86-64 they carry AVX-512 and AVX2 clones, picked at load time (the baseline is SSE2).
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define CO_UP_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CO_UP_VECTOR_CLONES
#endif

CO_UP_VECTOR_CLONES void quantize_run(const float* __restrict x, int8_t* __restrict y, int64_t n, float inverse_scale,
                  float zero_point) {
  for (int64_t i = 0; i < n; ++i) y[i] = to_int8(x[i], inverse_scale, zero_point);
}

CO_UP_VECTOR_CLONES void dequantize_run(const int8_t* __restrict x, float* __restrict y, int64_t n, float scale,
                    int32_t zero_point) {
  for (int64_t i = 0; i < n; ++i) y[i] = scale * static_cast<float>(x[i] - zero_point);
}

void copy_run(const int8_t* x, int8_t* y, int64_t n) { std::memcpy(y, x, static_cast<size_t>(n)); }

// Per image: y[c][r] = convert(x[r][c]) for an x of rows x cols, in 32 x 32 tiles. Each tile row
// is converted contiguously into a small buffer first, f(x, buffer, count) (vectorised), then
// the buffer is transposed (a pure data movement in L1).
template <typename In, typename Out, typename F>
void transpose_planes(const In* x, Out* y, int64_t batch, int64_t rows, int64_t cols, F f,
                      const CpuPool& pool) {
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  pool.parallel_for(batch * row_tiles, 1, kMinParallel / (kTile * std::max<int64_t>(cols, 1)) + 1,
                    [&](int64_t begin, int64_t end) {
                      Out tile[kTile][kTile];
                      for (int64_t item = begin; item < end; ++item) {
                        const int64_t n = item / row_tiles;
                        const int64_t r0 = item % row_tiles * kTile;
                        const int64_t r1 = std::min(rows, r0 + kTile);
                        const In* src = x + n * rows * cols;
                        Out* dst = y + n * rows * cols;
                        for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
                          const int64_t c1 = std::min(cols, c0 + kTile);
                          for (int64_t r = r0; r < r1; ++r) {
                            f(src + r * cols + c0, tile[r - r0], c1 - c0);
                          }
                          for (int64_t c = c0; c < c1; ++c) {
                            Out* out = dst + c * rows;
                            for (int64_t r = r0; r < r1; ++r) out[r] = tile[r - r0][c - c0];
                          }
                        }
                      }
                    });
}

}  // namespace

void quantize(const float* x, int8_t* y, int64_t count, const QuantParams& q, const CpuPool& pool) {
  const float inverse = 1.0f / q.scale;
  const auto zero = static_cast<float>(q.zero_point);
  pool.parallel_for(count, 64, kMinParallel, [&](int64_t begin, int64_t end) {
    quantize_run(x + begin, y + begin, end - begin, inverse, zero);
  });
}

void dequantize(const int8_t* x, float* y, int64_t count, const QuantParams& q,
                const CpuPool& pool) {
  const float scale = q.scale;
  const int32_t zero = q.zero_point;
  pool.parallel_for(count, 64, kMinParallel, [&](int64_t begin, int64_t end) {
    dequantize_run(x + begin, y + begin, end - begin, scale, zero);
  });
}

void quantize_nchw_to_nhwc(const float* x, int8_t* y, int64_t batch, int64_t channels,
                           int64_t plane, const QuantParams& q, const CpuPool& pool) {
  const float inverse = 1.0f / q.scale;
  const auto zero = static_cast<float>(q.zero_point);
  transpose_planes(x, y, batch, channels, plane,
                   [=](const float* in, int8_t* out, int64_t n) { quantize_run(in, out, n, inverse, zero); },
                   pool);
}

void dequantize_nhwc_to_nchw(const int8_t* x, float* y, int64_t batch, int64_t channels,
                             int64_t plane, const QuantParams& q, const CpuPool& pool) {
  const float scale = q.scale;
  const int32_t zero = q.zero_point;
  transpose_planes(x, y, batch, plane, channels,
                   [=](const int8_t* in, float* out, int64_t n) { dequantize_run(in, out, n, scale, zero); },
                   pool);
}

void nchw_to_nhwc_s8(const int8_t* x, int8_t* y, int64_t batch, int64_t channels, int64_t plane,
                     const CpuPool& pool) {
  transpose_planes(x, y, batch, channels, plane, copy_run, pool);
}

void nhwc_to_nchw_s8(const int8_t* x, int8_t* y, int64_t batch, int64_t channels, int64_t plane,
                     const CpuPool& pool) {
  transpose_planes(x, y, batch, plane, channels, copy_run, pool);
}

void copy_rows_s8(const int8_t* x, int64_t x_stride, int8_t* y, int64_t y_stride, int64_t rows,
                  int64_t row_bytes, const std::array<int8_t, 256>* table, const CpuPool& pool) {
  pool.parallel_for(rows, 1, kMinParallel / std::max<int64_t>(row_bytes, 1) + 1,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t r = begin; r < end; ++r) {
                        const int8_t* src = x + r * x_stride;
                        int8_t* dst = y + r * y_stride;
                        if (table == nullptr) {
                          std::memcpy(dst, src, static_cast<size_t>(row_bytes));
                          continue;
                        }
                        for (int64_t i = 0; i < row_bytes; ++i) {
                          dst[i] = (*table)[static_cast<size_t>(src[i] + 128)];
                        }
                      }
                    });
}

void max_pool2d_s8_nhwc(const backends::Pool2dShape& s, const int8_t* x, int8_t* y,
                        const CpuPool& pool) {
  const int64_t oh = s.out_height(), ow = s.out_width(), ch = s.channels;
  pool.parallel_for(s.batch * oh, 1, kMinParallel / std::max<int64_t>(ow * ch, 1) + 1,
                    [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / oh, oy = row % oh;
      const int64_t y0 = std::max<int64_t>(oy * s.stride_h - s.pad_top, 0);
      const int64_t y1 = std::min(oy * s.stride_h - s.pad_top + s.kernel_h, s.in_height);
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t x0 = std::max<int64_t>(ox * s.stride_w - s.pad_left, 0);
        const int64_t x1 = std::min(ox * s.stride_w - s.pad_left + s.kernel_w, s.in_width);
        int8_t* dst = y + ((n * oh + oy) * ow + ox) * ch;
        std::fill(dst, dst + ch, int8_t{-128});
        for (int64_t iy = y0; iy < y1; ++iy) {
          for (int64_t ix = x0; ix < x1; ++ix) {
            const int8_t* src = x + ((n * s.in_height + iy) * s.in_width + ix) * ch;
            for (int64_t c = 0; c < ch; ++c) dst[c] = std::max(dst[c], src[c]);
          }
        }
      }
    }
  });
}

void global_max_pool_s8_nhwc(const int8_t* x, int8_t* y, int64_t batch, int64_t plane,
                             int64_t channels, const CpuPool& pool) {
  pool.parallel_for(batch, 1, 2, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      int8_t* dst = y + n * channels;
      std::fill(dst, dst + channels, int8_t{-128});
      for (int64_t p = 0; p < plane; ++p) {
        const int8_t* src = x + (n * plane + p) * channels;
        for (int64_t c = 0; c < channels; ++c) dst[c] = std::max(dst[c], src[c]);
      }
    }
  });
}

}  // namespace co_up::int8
