// f32 depthwise convolution (one input and one output channel per group) on NHWC buffers, for
// the kernel sizes Debian 12's XNNPACK has no depthwise micro-kernel for.
//
// Why: that XNNPACK (a February 2022 snapshot) has f32 depthwise kernels for 3, 4, 9 and 25 taps
// only (1x3 or 3x1, 2x2, 3x3, 5x5); any other size, ConvNeXt's 7x7 among them, becomes a grouped
// GEMM with one channel per group, which fills 1 of 16 vector lanes (ConvNeXt-T's 7x7 at 56x56:
// 25 ms, about 1 GFLOP/s). This kernel vectorises over channels (16 per vector) and keeps a tile
// of output pixels in registers over all taps.
//
// Numerics: every output is bias + the taps in (ky, kx) order, one fixed sequence of f32
// operations for a given build and CPU (the compiler may contract a multiply and an add into an
// FMA), so the result does not depend on the thread count or on how pixels are tiled; it differs
// from cpu-reference's order by rounding only.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "op_shapes.h"
#include "xnn_thread_pool.h"

namespace co_up::xnnpack {

// Whether `shape` is a depthwise convolution (group == C == M) of a size XNNPACK runs as a GEMM,
// so that DepthwiseConvolution should run it instead.
bool depthwise_kernel_wins(const backends::Conv2dShape& shape);

// Created once for fixed buffers (weights packed now), then run any number of times. x is NHWC
// [N, H, W, C]; y NHWC with `output_stride` floats between pixels (>= C; a Concat's slice when
// larger). Throws std::invalid_argument when `shape` is not depthwise.
class DepthwiseConvolution {
 public:
  DepthwiseConvolution(const backends::Conv2dShape& shape, const float* weights, const float* bias,
                       float output_min, float output_max, int64_t output_stride, const float* x,
                       float* y, bool silu = false);

  // Which loops run: kAuto the AVX-512 ones where the CPU has AVX-512F, else the portable ones
  // (what ARM boards run); kPortable the portable ones anywhere, so that tests cover both.
  enum class Variant { kAuto, kPortable };

  void run(const CpuPool& pool, Variant variant = Variant::kAuto) const;

 private:
  backends::Conv2dShape s_;
  int64_t channels_padded_;   // C rounded up to 16: the packed rows' length
  std::vector<float> weights_;  // [kH * kW][channels_padded_], zero beyond C
  std::vector<float> bias_;     // [channels_padded_]
  float lo_, hi_;
  int64_t output_stride_;
  const float* x_;
  float* y_;
  bool silu_;  // SiLU after the clamp (a fused SiLU node; the same bits as xnn_silu.h)
};

}  // namespace co_up::xnnpack
