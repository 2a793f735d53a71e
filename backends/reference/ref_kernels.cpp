#include "ref_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

namespace co_up::reference {
namespace {

// GEMM tiling. The micro-tile is kMr rows (output channels) x kNr columns (output pixels): 6x16
// keeps 12 AVX or 24 NEON accumulator registers busy with room for the B row and the broadcast.
// kKc x kNc floats of packed B (192 KiB) stay in L2; a kMr x kKc A panel (6 KiB) stays in L1.
constexpr int64_t kMr = 6;
constexpr int64_t kNr = 16;
constexpr int64_t kKc = 256;
constexpr int64_t kNc = 192;  // multiple of kNr
static_assert(kNc % kNr == 0);

// Below this many output elements a kernel runs on the calling thread alone: waking workers costs
// more than it saves. Only changes who computes an element, never how.
constexpr int64_t kMinParallelWork = 16384;


ThreadPool* pool_for(ThreadPool* pool, int64_t work) {
  return work >= kMinParallelWork ? pool : nullptr;
}

float activate(float v, Activation activation) {
  switch (activation) {
    case Activation::kNone:
      return v;
    case Activation::kRelu:
      return v > 0.0f ? v : 0.0f;
    case Activation::kRelu6:
      return v > 0.0f ? (v < 6.0f ? v : 6.0f) : 0.0f;
  }
  return v;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

using Vec4 = float __attribute__((vector_size(16)));
using Vec8 = float __attribute__((vector_size(32)));

// c[kMr x kNr] (row stride ldc) = (accumulate ? c : 0) + a_panel * b_panel over k in [0, kc), k
// ascending. Every tile, edge tiles included, goes through the one variant chosen for the object,
// so an element's arithmetic never depends on where a thread split falls. V is the widest vector
// the variant's ISA holds in registers: 6 x 16 accumulators = 12 AVX or 24 SSE/NEON registers.
template <typename V>
__attribute__((always_inline)) inline void micro_kernel_body(int64_t kc, const float* __restrict a,
                                                             const float* __restrict b,
                                                             float* __restrict c, int64_t ldc,
                                                             bool accumulate) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  constexpr int64_t kCols = kNr / kLanes;
  V acc[kMr][kCols];
  for (int64_t i = 0; i < kMr; ++i) {
    for (int64_t j = 0; j < kCols; ++j) {
      if (accumulate) {
        std::memcpy(&acc[i][j], c + i * ldc + j * kLanes, sizeof(V));
      } else {
        acc[i][j] = V{};
      }
    }
  }
  for (int64_t k = 0; k < kc; ++k) {
    V bv[kCols];
    for (int64_t j = 0; j < kCols; ++j) std::memcpy(&bv[j], b + k * kNr + j * kLanes, sizeof(V));
    for (int64_t i = 0; i < kMr; ++i) {
      const float av = a[k * kMr + i];
      for (int64_t j = 0; j < kCols; ++j) acc[i][j] += av * bv[j];
    }
  }
  for (int64_t i = 0; i < kMr; ++i) {
    for (int64_t j = 0; j < kCols; ++j) std::memcpy(c + i * ldc + j * kLanes, &acc[i][j], sizeof(V));
  }
}

void micro_kernel_generic(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                          bool accumulate) {
  micro_kernel_body<Vec4>(kc, a, b, c, ldc, accumulate);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// Baseline x86-64 has neither AVX nor FMA; this variant runs where the CPU has both.
__attribute__((target("arch=x86-64-v3"))) void micro_kernel_avx2(int64_t kc, const float* a,
                                                                 const float* b, float* c,
                                                                 int64_t ldc, bool accumulate) {
  micro_kernel_body<Vec8>(kc, a, b, c, ldc, accumulate);
}
#endif

// Chosen from the CPU once per packed object, so one machine always gets the same arithmetic.
PackedConv2d::MicroKernel select_micro_kernel() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &micro_kernel_avx2;
#endif
  return &micro_kernel_generic;
}

// Dot product in a fixed order: 32 lane sums (lane l takes k with k mod 32 == l), added lane 0
// to 31, then the tail in order. Eight independent accumulators hide the add latency.
float dot(const float* __restrict x, const float* __restrict w, int64_t count) {
  Vec4 acc[8] = {};
  int64_t k = 0;
  for (; k + 32 <= count; k += 32) {
    for (int j = 0; j < 8; ++j) {
      Vec4 xv, wv;
      std::memcpy(&xv, x + k + 4 * j, sizeof(Vec4));
      std::memcpy(&wv, w + k + 4 * j, sizeof(Vec4));
      acc[j] += xv * wv;
    }
  }
  float sum = 0.0f;
  for (int j = 0; j < 8; ++j) {
    for (int l = 0; l < 4; ++l) sum += acc[j][l];
  }
  for (; k < count; ++k) sum += x[k] * w[k];
  return sum;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

AlignedBuffer::AlignedBuffer(size_t count) : size_(count) {
  if (count == 0) return;
  const size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, bytes);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  data_.reset(static_cast<float*>(p));
}

void AlignedBuffer::Free::operator()(float* p) const { std::free(p); }

// ---------------------------------------------------------------------------------------------
// Convolution

PackedConv2d::PackedConv2d(const Conv2dShape& shape, const float* weights, const float* bias,
                           bool use_isa_extensions)
    : shape_(shape),
      micro_kernel_(use_isa_extensions ? select_micro_kernel() : &micro_kernel_generic) {
  const Conv2dShape& s = shape_;
  if (s.batch < 1 || s.in_channels < 1 || s.in_height < 1 || s.in_width < 1 || s.out_channels < 1 ||
      s.kernel_h < 1 || s.kernel_w < 1 || s.stride_h < 1 || s.stride_w < 1 || s.dilation_h < 1 ||
      s.dilation_w < 1 || s.group < 1 || s.pad_top < 0 || s.pad_left < 0 || s.pad_bottom < 0 ||
      s.pad_right < 0) {
    throw std::invalid_argument("convolution shape has a non-positive size, stride, dilation or "
                                "group, or a negative pad");
  }
  if (s.in_channels % s.group != 0 || s.out_channels % s.group != 0) {
    throw std::invalid_argument("group " + std::to_string(s.group) + " does not divide C=" +
                                std::to_string(s.in_channels) + " and M=" +
                                std::to_string(s.out_channels));
  }
  out_h_ = s.out_height();
  out_w_ = s.out_width();
  if (out_h_ < 1 || out_w_ < 1) {
    throw std::invalid_argument("convolution window is larger than the padded input");
  }
  depthwise_ = s.is_depthwise();
  group_out_ = s.out_channels / s.group;
  group_depth_ = s.in_channels / s.group * s.kernel_h * s.kernel_w;
  bias_.assign(static_cast<size_t>(s.out_channels), 0.0f);
  if (bias) std::copy(bias, bias + s.out_channels, bias_.begin());

  if (depthwise_) {
    const size_t count = static_cast<size_t>(s.out_channels * s.kernel_h * s.kernel_w);
    weights_ = AlignedBuffer(count);
    std::copy(weights, weights + count, weights_.data());
    return;
  }
  // [group][row panel][k][kMr], rows past group_out_ left zero.
  panels_m_ = ceil_div(group_out_, kMr);
  weights_ = AlignedBuffer(static_cast<size_t>(s.group * panels_m_ * group_depth_ * kMr));
  float* dst = weights_.data();
  for (int64_t g = 0; g < s.group; ++g) {
    for (int64_t p = 0; p < panels_m_; ++p) {
      float* panel = dst + (g * panels_m_ + p) * group_depth_ * kMr;
      for (int64_t i = 0; i < kMr; ++i) {
        const int64_t m = p * kMr + i;
        if (m >= group_out_) break;
        const float* row = weights + (g * group_out_ + m) * group_depth_;
        for (int64_t k = 0; k < group_depth_; ++k) panel[k * kMr + i] = row[k];
      }
    }
  }
}

size_t PackedConv2d::scratch_floats(int threads) const {
  if (depthwise_) return 0;
  return static_cast<size_t>(threads) * static_cast<size_t>(kKc * kNc + kMr * kNr);
}

void PackedConv2d::run(const float* x, float* y, float* scratch, ThreadPool* pool) const {
  if (depthwise_) {
    run_depthwise(x, y, pool);
  } else {
    run_gemm(x, y, scratch, pool);
  }
}

void PackedConv2d::run_gemm(const float* x, float* y, float* scratch, ThreadPool* pool) const {
  const Conv2dShape& s = shape_;
  const int64_t columns = out_h_ * out_w_;  // GEMM N: output pixels of one image
  const int64_t depth = group_depth_;        // GEMM K
  const int64_t plane = s.in_height * s.in_width;
  const int64_t window = s.kernel_h * s.kernel_w;
  const int64_t group_in = s.in_channels / s.group;
  const bool pointwise = s.kernel_h == 1 && s.kernel_w == 1 && s.stride_h == 1 && s.stride_w == 1 &&
                         s.pad_top == 0 && s.pad_left == 0 && s.pad_bottom == 0 && s.pad_right == 0;
  const int64_t column_panels = ceil_div(columns, kNr);
  pool = pool_for(pool, s.batch * s.out_channels * columns);
  const int threads = pool ? pool->thread_count() : 1;
  const size_t per_thread = scratch_floats(1);

  // Packs rows [k0, k0+kc) x columns [j0, j0+nc) of the (virtual) im2col matrix of one group
  // into kNr-column panels; im2col is never materialised.
  auto pack_b = [&](const float* xg, int64_t k0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
    for (int64_t jp = 0; jp < nc; jp += kNr, dst += kc * kNr) {
      const int64_t col0 = j0 + jp;
      const int64_t valid = std::min(kNr, columns - col0);
      if (pointwise) {
        for (int64_t r = 0; r < kc; ++r) {
          const float* src = xg + (k0 + r) * plane + col0;
          float* d = dst + r * kNr;
          for (int64_t jj = 0; jj < valid; ++jj) d[jj] = src[jj];
          for (int64_t jj = valid; jj < kNr; ++jj) d[jj] = 0.0f;
        }
        continue;
      }
      int64_t iy0[kNr];
      int64_t ix0[kNr];
      for (int64_t jj = 0; jj < kNr; ++jj) {
        if (jj < valid) {
          const int64_t col = col0 + jj;
          iy0[jj] = col / out_w_ * s.stride_h - s.pad_top;
          ix0[jj] = col % out_w_ * s.stride_w - s.pad_left;
        } else {
          iy0[jj] = -(int64_t{1} << 40);  // never inside the image: packs zeros
          ix0[jj] = 0;
        }
      }
      int64_t c = k0 / window;
      int64_t ky = k0 % window / s.kernel_w;
      int64_t kx = k0 % window % s.kernel_w;
      for (int64_t r = 0; r < kc; ++r) {
        const float* src = xg + c * plane;
        const int64_t dy = ky * s.dilation_h;
        const int64_t dx = kx * s.dilation_w;
        float* d = dst + r * kNr;
        for (int64_t jj = 0; jj < kNr; ++jj) {
          const int64_t iy = iy0[jj] + dy;
          const int64_t ix = ix0[jj] + dx;
          const bool inside = static_cast<uint64_t>(iy) < static_cast<uint64_t>(s.in_height) &&
                              static_cast<uint64_t>(ix) < static_cast<uint64_t>(s.in_width);
          d[jj] = inside ? src[iy * s.in_width + ix] : 0.0f;
        }
        if (++kx == s.kernel_w) {
          kx = 0;
          if (++ky == s.kernel_h) {
            ky = 0;
            ++c;
          }
        }
      }
    }
  };

  auto job = [&](int chunk) {
    // Column ranges in whole kNr panels, so only the image's last panel is ever partial.
    const int64_t j_begin = column_panels * chunk / threads * kNr;
    const int64_t j_end = std::min(columns, column_panels * (chunk + 1) / threads * kNr);
    if (j_begin >= j_end) return;
    float* packed_b = scratch + per_thread * static_cast<size_t>(chunk);
    float* tile = packed_b + kKc * kNc;
    for (int64_t n = 0; n < s.batch; ++n) {
      for (int64_t g = 0; g < s.group; ++g) {
        const float* xg = x + (n * s.in_channels + g * group_in) * plane;
        float* yg = y + (n * s.out_channels + g * group_out_) * columns;
        const float* ag = weights_.data() + g * panels_m_ * depth * kMr;
        const float* bias = bias_.data() + g * group_out_;
        for (int64_t j0 = j_begin; j0 < j_end; j0 += kNc) {
          const int64_t nc = std::min(kNc, j_end - j0);
          for (int64_t k0 = 0; k0 < depth; k0 += kKc) {
            const int64_t kc = std::min(kKc, depth - k0);
            const bool first = k0 == 0;
            const bool last = k0 + kc == depth;
            pack_b(xg, k0, kc, j0, nc, packed_b);
            for (int64_t mp = 0; mp < panels_m_; ++mp) {
              const float* a = ag + (mp * depth + k0) * kMr;
              const int64_t m0 = mp * kMr;
              const int64_t mr = std::min(kMr, group_out_ - m0);
              for (int64_t jp = 0; jp < nc; jp += kNr) {
                const int64_t nr = std::min(kNr, nc - jp);
                const float* b = packed_b + jp * kc;
                float* c = yg + m0 * columns + j0 + jp;
                if (mr == kMr && nr == kNr) {
                  micro_kernel_(kc, a, b, c, columns, !first);
                } else {
                  // Edge tile: same micro-kernel on a scratch tile, copy the valid part.
                  for (int64_t i = 0; i < mr && !first; ++i) {
                    std::copy(c + i * columns, c + i * columns + nr, tile + i * kNr);
                  }
                  micro_kernel_(kc, a, b, tile, kNr, !first);
                  for (int64_t i = 0; i < mr; ++i) {
                    std::copy(tile + i * kNr, tile + i * kNr + nr, c + i * columns);
                  }
                }
                if (last) {
                  for (int64_t i = 0; i < mr; ++i) {
                    float* row = c + i * columns;
                    const float bi = bias[m0 + i];
                    for (int64_t jj = 0; jj < nr; ++jj) {
                      row[jj] = activate(row[jj] + bi, s.activation);
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  };
  if (pool) {
    pool->run(job);
  } else {
    job(0);
  }
}

void PackedConv2d::run_depthwise(const float* x, float* y, ThreadPool* pool) const {
  const Conv2dShape& s = shape_;
  const int64_t multiplier = s.out_channels / s.in_channels;
  const int64_t in_plane = s.in_height * s.in_width;
  const int64_t out_plane = out_h_ * out_w_;
  const float* weights = weights_.data();
  pool = pool_for(pool, s.batch * s.out_channels * out_plane);
  // One output plane per item; per element: taps ky then kx ascending, then bias, then activation.
  parallel_for(pool, s.batch * s.out_channels, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / s.out_channels;
      const int64_t m = item % s.out_channels;
      const float* src = x + (n * s.in_channels + m / multiplier) * in_plane;
      const float* w = weights + m * s.kernel_h * s.kernel_w;
      float* dst = y + item * out_plane;
      for (int64_t oh = 0; oh < out_h_; ++oh) {
        float* out = dst + oh * out_w_;
        std::fill(out, out + out_w_, 0.0f);
        for (int64_t ky = 0; ky < s.kernel_h; ++ky) {
          const int64_t iy = oh * s.stride_h - s.pad_top + ky * s.dilation_h;
          if (iy < 0 || iy >= s.in_height) continue;
          const float* row = src + iy * s.in_width;
          for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
            const float wv = w[ky * s.kernel_w + kx];
            const int64_t offset = kx * s.dilation_w - s.pad_left;  // ix = ow * stride + offset
            const int64_t ow_begin = offset >= 0 ? 0 : ceil_div(-offset, s.stride_w);
            const int64_t ow_end =
                std::min(out_w_, s.in_width - 1 - offset < 0
                                     ? 0
                                     : (s.in_width - 1 - offset) / s.stride_w + 1);
            if (s.stride_w == 1) {
              const float* in = row + offset;
              for (int64_t ow = ow_begin; ow < ow_end; ++ow) out[ow] += wv * in[ow];
            } else {
              for (int64_t ow = ow_begin; ow < ow_end; ++ow) {
                out[ow] += wv * row[ow * s.stride_w + offset];
              }
            }
          }
        }
        const float b = bias_[static_cast<size_t>(m)];
        for (int64_t ow = 0; ow < out_w_; ++ow) out[ow] = activate(out[ow] + b, s.activation);
      }
    }
  });
}

void conv2d(const Conv2dShape& shape, const float* x, const float* weights, const float* bias,
            float* y, ThreadPool* pool) {
  const PackedConv2d packed(shape, weights, bias);
  AlignedBuffer scratch(packed.scratch_floats(pool ? pool->thread_count() : 1));
  packed.run(x, y, scratch.data(), pool);
}

// ---------------------------------------------------------------------------------------------
// Fully connected

PackedFullyConnected::PackedFullyConnected(int64_t out_features, int64_t in_features,
                                           const float* weights, const float* bias,
                                           Activation activation)
    : out_features_(out_features), in_features_(in_features), activation_(activation) {
  if (out_features < 1 || in_features < 1) {
    throw std::invalid_argument("fully connected layer needs M >= 1 and K >= 1");
  }
  const size_t count = static_cast<size_t>(out_features * in_features);
  weights_ = AlignedBuffer(count);
  std::copy(weights, weights + count, weights_.data());
  bias_.assign(static_cast<size_t>(out_features), 0.0f);
  if (bias) std::copy(bias, bias + out_features, bias_.begin());
}

void PackedFullyConnected::run(const float* x, int64_t batch, float* y, ThreadPool* pool) const {
  pool = pool_for(pool, out_features_ * in_features_ / 16);
  // Split over output features: each thread streams its own rows of W once, for every image.
  parallel_for(pool, out_features_, [&](int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) {
      const float* w = weights_.data() + m * in_features_;
      for (int64_t n = 0; n < batch; ++n) {
        const float v = dot(x + n * in_features_, w, in_features_) + bias_[static_cast<size_t>(m)];
        y[n * out_features_ + m] = activate(v, activation_);
      }
    }
  });
}

void fully_connected(const float* x, int64_t batch, int64_t in_features, const float* weights,
                     const float* bias, int64_t out_features, Activation activation, float* y,
                     ThreadPool* pool) {
  const PackedFullyConnected packed(out_features, in_features, weights, bias, activation);
  packed.run(x, batch, y, pool);
}

// ---------------------------------------------------------------------------------------------
// Pooling

namespace {

template <typename Window>
void pool2d(const Pool2dShape& s, float* y, ThreadPool* pool, Window window) {
  const int64_t out_h = s.out_height();
  const int64_t out_w = s.out_width();
  pool = pool_for(pool, s.batch * s.channels * out_h * out_w * s.kernel_h * s.kernel_w / 4);
  parallel_for(pool, s.batch * s.channels, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      float* out = y + plane * out_h * out_w;
      for (int64_t oh = 0; oh < out_h; ++oh) {
        for (int64_t ow = 0; ow < out_w; ++ow) {
          out[oh * out_w + ow] = window(plane, oh * s.stride_h - s.pad_top, ow * s.stride_w - s.pad_left);
        }
      }
    }
  });
}

}  // namespace

void max_pool2d(const Pool2dShape& s, const float* x, float* y, ThreadPool* pool) {
  const int64_t plane_size = s.in_height * s.in_width;
  pool2d(s, y, pool, [&](int64_t plane, int64_t h0, int64_t w0) {
    const float* src = x + plane * plane_size;
    const int64_t h_begin = std::max<int64_t>(h0, 0);
    const int64_t h_end = std::min(h0 + s.kernel_h, s.in_height);
    const int64_t w_begin = std::max<int64_t>(w0, 0);
    const int64_t w_end = std::min(w0 + s.kernel_w, s.in_width);
    float best = -std::numeric_limits<float>::infinity();
    for (int64_t h = h_begin; h < h_end; ++h) {
      for (int64_t w = w_begin; w < w_end; ++w) best = std::max(best, src[h * s.in_width + w]);
    }
    return best;
  });
}

void average_pool2d(const Pool2dShape& s, const float* x, float* y, ThreadPool* pool) {
  const int64_t plane_size = s.in_height * s.in_width;
  pool2d(s, y, pool, [&](int64_t plane, int64_t h0, int64_t w0) {
    const float* src = x + plane * plane_size;
    const int64_t h_begin = std::max<int64_t>(h0, 0);
    const int64_t h_end = std::min(h0 + s.kernel_h, s.in_height);
    const int64_t w_begin = std::max<int64_t>(w0, 0);
    const int64_t w_end = std::min(w0 + s.kernel_w, s.in_width);
    float sum = 0.0f;
    for (int64_t h = h_begin; h < h_end; ++h) {
      for (int64_t w = w_begin; w < w_end; ++w) sum += src[h * s.in_width + w];
    }
    int64_t count = (h_end - h_begin) * (w_end - w_begin);
    if (s.count_include_pad) {
      // The window clipped to the padded image: ceil_mode overhang past the padding is not counted.
      count = (std::min(h0 + s.kernel_h, s.in_height + s.pad_bottom) - h0) *
              (std::min(w0 + s.kernel_w, s.in_width + s.pad_right) - w0);
    }
    return count > 0 ? sum / static_cast<float>(count) : 0.0f;
  });
}

void global_average_pool(int64_t planes, int64_t plane_size, const float* x, float* y,
                         ThreadPool* pool) {
  pool = pool_for(pool, planes * plane_size / 4);
  parallel_for(pool, planes, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const float* src = x + p * plane_size;
      double sum = 0.0;  // exact enough for any plane, and still one fixed order
      for (int64_t i = 0; i < plane_size; ++i) sum += src[i];
      y[p] = static_cast<float>(sum / static_cast<double>(plane_size));
    }
  });
}

void global_max_pool(int64_t planes, int64_t plane_size, const float* x, float* y,
                     ThreadPool* pool) {
  pool = pool_for(pool, planes * plane_size / 4);
  parallel_for(pool, planes, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const float* src = x + p * plane_size;
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < plane_size; ++i) best = std::max(best, src[i]);
      y[p] = best;
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Element-wise

namespace {

template <typename Op>
void elementwise(int64_t count, ThreadPool* pool, Op op) {
  // Ranges start at multiples of 64 so vector/scalar loop boundaries fall in the same places
  // relative to the data for any split (the ops are exact per element anyway).
  const int64_t blocks = ceil_div(count, 64);
  parallel_for(pool_for(pool, count), blocks, [&](int64_t begin, int64_t end) {
    op(begin * 64, std::min(count, end * 64));
  });
}

}  // namespace

void relu(const float* x, float* y, int64_t count, ThreadPool* pool) {
  elementwise(count, pool, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  });
}

void clip(const float* x, float* y, int64_t count, float min_value, float max_value,
          ThreadPool* pool) {
  elementwise(count, pool, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float v = x[i] < min_value ? min_value : x[i];
      y[i] = v > max_value ? max_value : v;
    }
  });
}

void sigmoid(const float* x, float* y, int64_t count, ThreadPool* pool) {
  elementwise(count, pool, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
  });
}

void hard_swish(const float* x, float* y, int64_t count, ThreadPool* pool) {
  elementwise(count, pool, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float v = x[i];
      const float gate = std::min(std::max(v + 3.0f, 0.0f), 6.0f);
      y[i] = v * gate / 6.0f;
    }
  });
}

void add(const float* a, const float* b, float* y, int64_t count, Activation activation,
         ThreadPool* pool) {
  elementwise(count, pool, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = activate(a[i] + b[i], activation);
  });
}

void copy(const float* x, float* y, int64_t count, ThreadPool* pool) {
  if (x == y) return;
  elementwise(count, pool, [&](int64_t begin, int64_t end) {
    std::memcpy(y + begin, x + begin, static_cast<size_t>(end - begin) * sizeof(float));
  });
}

// ---------------------------------------------------------------------------------------------
// Normalisation

void lrn(const float* x, float* y, int64_t batch, int64_t channels, int64_t plane_size,
         int64_t size, float alpha, float beta, float bias, ThreadPool* pool) {
  const int64_t before = (size - 1) / 2;  // ONNX: floor((size-1)/2) below, ceil((size-1)/2) above
  const int64_t after = size / 2;
  const float scale = alpha / static_cast<float>(size);
  pool = pool_for(pool, batch * channels * plane_size * size / 4);
  parallel_for(pool, batch * channels, [&](int64_t begin, int64_t end) {
    std::vector<float> sum(static_cast<size_t>(plane_size));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / channels;
      const int64_t c = item % channels;
      std::fill(sum.begin(), sum.end(), 0.0f);
      const int64_t c_end = std::min(channels - 1, c + after);
      for (int64_t cc = std::max<int64_t>(0, c - before); cc <= c_end; ++cc) {
        const float* src = x + (n * channels + cc) * plane_size;
        for (int64_t i = 0; i < plane_size; ++i) sum[static_cast<size_t>(i)] += src[i] * src[i];
      }
      const float* src = x + item * plane_size;
      float* dst = y + item * plane_size;
      for (int64_t i = 0; i < plane_size; ++i) {
        dst[i] = src[i] / std::pow(bias + scale * sum[static_cast<size_t>(i)], beta);
      }
    }
  });
}

void fold_batch_norm(int64_t channels, const float* scale, const float* bias, const float* mean,
                     const float* var, float epsilon, float* out_multiplier, float* out_offset) {
  for (int64_t c = 0; c < channels; ++c) {
    out_multiplier[c] = scale[c] / std::sqrt(var[c] + epsilon);
    out_offset[c] = bias[c] - mean[c] * out_multiplier[c];
  }
}

void batch_norm(const float* x, float* y, int64_t batch, int64_t channels, int64_t plane_size,
                const float* multiplier, const float* offset, ThreadPool* pool) {
  pool = pool_for(pool, batch * channels * plane_size);
  parallel_for(pool, batch * channels, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const float a = multiplier[item % channels];
      const float b = offset[item % channels];
      const float* src = x + item * plane_size;
      float* dst = y + item * plane_size;
      for (int64_t i = 0; i < plane_size; ++i) dst[i] = src[i] * a + b;
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Data movement

void concat(std::span<const float* const> inputs, std::span<const int64_t> input_axis,
            int64_t outer, int64_t inner, float* y, ThreadPool* pool) {
  int64_t total_axis = 0;
  for (int64_t a : input_axis) total_axis += a;
  pool = pool_for(pool, outer * total_axis * inner);
  parallel_for(pool, outer, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      float* dst = y + o * total_axis * inner;
      for (size_t i = 0; i < inputs.size(); ++i) {
        const int64_t block = input_axis[i] * inner;
        std::memcpy(dst, inputs[i] + o * block, static_cast<size_t>(block) * sizeof(float));
        dst += block;
      }
    }
  });
}

void softmax(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner,
             ThreadPool* pool) {
  pool = pool_for(pool, outer * axis * inner);
  parallel_for(pool, outer * inner, [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      const int64_t base = line / inner * axis * inner + line % inner;
      const float* src = x + base;
      float* dst = y + base;
      float max_value = -std::numeric_limits<float>::infinity();
      for (int64_t a = 0; a < axis; ++a) max_value = std::max(max_value, src[a * inner]);
      float sum = 0.0f;
      for (int64_t a = 0; a < axis; ++a) {
        const float e = std::exp(src[a * inner] - max_value);
        dst[a * inner] = e;
        sum += e;
      }
      for (int64_t a = 0; a < axis; ++a) dst[a * inner] /= sum;
    }
  });
}

}  // namespace co_up::reference
