// AVX512-VNNI int8 convolutions for x86-64 CPUs that have them (Ice Lake, Sapphire Rapids, Zen 4).
//
// Why the backend has its own: Debian's XNNPACK (a February 2022 snapshot) has no VNNI kernels;
// on such a CPU its int8 convolutions are no faster than its f32 ones and its int8 depthwise
// convolution is slower (bench/README.md), so an "NPU" built on them alone would not be faster
// than the CPU it stands in for. vpdpbusd does 64 int8 multiply-adds per instruction.
//
// Numerics are XNNPACK's qc8 convolution's, bit for bit (tests/backends/int8_plugin_test.cpp
// checks it): int32 accumulator = bias + sum (x - x_zero_point) * w, then
// clamp(nearbyint(min(float(acc) * scale[c], out_max - zp)) + zp, out_min, out_max). So whether a
// machine takes this path or XNNPACK's changes speed, not results.
//
// Like XNNPACK's operators, a convolution is created once for fixed input and output buffers
// (it builds an indirection buffer of input row pointers) and then run any number of times.
// Elsewhere (aarch64, x86 without VNNI) vnni_available() is false and creating one throws.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "op_shapes.h"
#include "xnn_thread_pool.h"

namespace co_up::int8 {

// Compiled for x86-64 and the running CPU has AVX512F, AVX512BW and AVX512-VNNI.
bool vnni_available();

struct Int8ConvParams {
  const int8_t* weights = nullptr;  // [M, kH, kW, C/group] (per-group OHWI), symmetric int8
  const int32_t* bias = nullptr;    // [M] int32, in units of input_scale * weight_scale[m]
  const float* scales = nullptr;    // [M] requantisation scales (requantization_scale())
  int8_t input_zero_point = 0;
  int8_t output_zero_point = 0;
  int8_t output_min = -128;
  int8_t output_max = 127;
};

// Convolution as an indirect GEMM: [output pixels] x [taps * C/group] times the packed weights,
// per group. Any kernel, stride, dilation, padding, group count. x and y are NHWC; x is read in
// groups of four channels, so it must stay readable 3 bytes past its end (the backend's buffers
// have 64 bytes of slack; the extra values meet zero weights).
class VnniConvolution {
 public:
  VnniConvolution(const backends::Conv2dShape& shape, const Int8ConvParams& params,
                  const int8_t* x, int8_t* y);
  ~VnniConvolution();
  VnniConvolution(const VnniConvolution&) = delete;
  VnniConvolution& operator=(const VnniConvolution&) = delete;

  void run(const xnnpack::CpuPool& pool) const;

  struct State;  // packed weights, indirection buffer, parameters (the .cpp's kernels read it)

 private:
  std::unique_ptr<State> state_;
};

// Depthwise convolution (group == C == M): channels in blocks of 64, taps in fours.
class VnniDepthwise {
 public:
  VnniDepthwise(const backends::Conv2dShape& shape, const Int8ConvParams& params, const int8_t* x,
                int8_t* y);
  ~VnniDepthwise();
  VnniDepthwise(const VnniDepthwise&) = delete;
  VnniDepthwise& operator=(const VnniDepthwise&) = delete;

  void run(const xnnpack::CpuPool& pool) const;

  struct State;  // as VnniConvolution's

 private:
  std::unique_ptr<State> state_;
};

}  // namespace co_up::int8
