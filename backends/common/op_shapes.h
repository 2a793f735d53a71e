// Shapes and fused activations of the spatial ops, as decoded from a node and as every backend's
// kernels take them: plain integers in NCHW terms (a backend with another internal layout maps
// them itself), no ABI types. One definition, so that all backends agree on output sizes.
#pragma once

#include <cstdint>

namespace co_up::backends {

enum class Activation : uint8_t { kNone, kRelu, kRelu6 };

struct Conv2dShape {
  int64_t batch = 1;
  int64_t in_channels = 0;
  int64_t in_height = 0;
  int64_t in_width = 0;
  int64_t out_channels = 0;
  int64_t kernel_h = 1;
  int64_t kernel_w = 1;
  int64_t stride_h = 1;
  int64_t stride_w = 1;
  int64_t pad_top = 0;
  int64_t pad_left = 0;
  int64_t pad_bottom = 0;
  int64_t pad_right = 0;
  int64_t dilation_h = 1;
  int64_t dilation_w = 1;
  int64_t group = 1;
  Activation activation = Activation::kNone;

  int64_t out_height() const;
  int64_t out_width() const;
  // One input channel per group (group == C), M a multiple of C: a direct kernel beats a GEMM of
  // K = kH*kW.
  bool is_depthwise() const;
};

struct Pool2dShape {
  int64_t batch = 1;
  int64_t channels = 0;
  int64_t in_height = 0;
  int64_t in_width = 0;
  int64_t kernel_h = 1;
  int64_t kernel_w = 1;
  int64_t stride_h = 1;
  int64_t stride_w = 1;
  int64_t pad_top = 0;
  int64_t pad_left = 0;
  int64_t pad_bottom = 0;
  int64_t pad_right = 0;
  bool ceil_mode = false;
  bool count_include_pad = false;

  // ONNX rules; in ceil mode a last window that would start in the trailing padding is dropped.
  int64_t out_height() const;
  int64_t out_width() const;
};

}  // namespace co_up::backends
