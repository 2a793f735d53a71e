// The cpu-xnnpack backend's own kernels: what XNNPACK (Debian's 2022 snapshot) lacks or does
// differently, on NHWC activations. Kept small and written so the compiler vectorises the channel
// loops (channels are innermost in NHWC). Each output element is computed in a fixed order
// whatever the split, so results do not depend on the thread count.
//
// Every function takes the device's CpuPool (never null); arrays must not overlap unless said.
#pragma once

#include <cstdint>
#include <span>

#include "op_shapes.h"
#include "ref_kernels.h"
#include "xnn_thread_pool.h"

namespace co_up::xnnpack {

// Layout conversion at sub-graph boundaries: x[N, C, HW] <-> y[N, HW, C].
void nchw_to_nhwc(const float* x, float* y, int64_t batch, int64_t channels, int64_t plane,
                  const CpuPool& pool);
void nhwc_to_nchw(const float* x, float* y, int64_t batch, int64_t channels, int64_t plane,
                  const CpuPool& pool);

// ONNX LRN across channels, x[pixels, C] (pixels = N*H*W); same formula as cpu-reference.
// kPortable: the loop every CPU runs, never the AVX-512 one (the same bits; tests compare them).
enum class LrnPath { kAuto, kPortable };
void lrn_nhwc(const float* x, float* y, int64_t pixels, int64_t channels, int64_t size,
              float alpha, float beta, float bias, const CpuPool& pool, LrnPath path = LrnPath::kAuto);

// y[p, c] = x[p, c] * multiplier[c] + offset[c] (inference batch norm, folded).
void channel_affine_nhwc(const float* x, float* y, int64_t pixels, int64_t channels,
                         const float* multiplier, const float* offset, const CpuPool& pool);

// x[N, HW, C] -> y[N, C]: max over the plane.
void global_max_pool_nhwc(const float* x, float* y, int64_t batch, int64_t plane,
                          int64_t channels, const CpuPool& pool);

// Max / average pooling with cpu-reference's semantics (ceil mode, count_include_pad, padding
// never wins a max), for the cases XNNPACK's operators do not cover.
void max_pool2d_nhwc(const backends::Pool2dShape& shape, const float* x, float* y,
                     const CpuPool& pool);
void average_pool2d_nhwc(const backends::Pool2dShape& shape, const float* x, float* y,
                         const CpuPool& pool);

// Softmax over the middle axis of x[outer, axis, inner] (cpu-reference's kernel, split over outer
// lines); XNNPACK's softmax covers inner == 1.
void softmax_lines(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner,
                   const CpuPool& pool);

// Concatenation: y holds `outer` rows of sum(widths) floats; input i fills columns
// [offset_i, offset_i + widths[i]) of every row from its own rows of widths[i] floats. Split over
// ranges of y's elements (whole cache lines), so one row (a detector head's single concatenated
// row) or many (NHWC channel concatenation: one row per pixel) both keep every thread busy.
void concat_rows(std::span<const float* const> inputs, std::span<const int64_t> widths, int64_t outer,
                 float* y, const CpuPool& pool);

// y[0, count) = x[0, count) over the pool (Reshape, Flatten, Identity, a one-input Concat).
void copy_floats(const float* x, float* y, int64_t count, const CpuPool& pool);

// y = max(0, min(1, alpha * x + beta)) over `count` elements (x == y allowed).
void hard_sigmoid_nc(const float* x, float* y, int64_t count, float alpha, float beta,
                     const CpuPool& pool);

}  // namespace co_up::xnnpack
