// The rknn shim's terminal-node conversions (ARM-CO-UP §4.3): co_up's f32 NCHW tensors to the
// type and layout of an RKNN model's input, and the runtime's f32 outputs back to NCHW.
//
//   type     f32 (copied), f16 (IEEE half, round to nearest even), int8 / uint8 affine:
//            q = clamp(round_half_even(x / scale) + zp, type range); dynamic fixed point (DFP)
//            is affine with scale 2^-fl and zp 0
//   layout   NCHW (as co_up holds it) or NHWC, for rank-4 tensors; other ranks have one layout
//
// Plain functions over caller-owned buffers; no allocation, no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "rknn_api_types.h"

namespace co_up::rknn {

// How one model tensor is laid out on the runtime's side.
struct TensorLayout {
  std::vector<int64_t> nchw_dims;  // co_up's dims (any rank; NCHW meaning when rank 4)
  bool nhwc = false;               // rank 4 only
  rknn_tensor_type type = RKNN_TENSOR_FLOAT32;  // f32, f16, int8 or uint8
  float scale = 1.0f;              // int8 / uint8
  int32_t zero_point = 0;

  int64_t element_count() const;
  size_t bytes() const;  // element_count times the size of `type`
};

// Throws std::invalid_argument when the type is not one the shim converts to.
size_t element_size(rknn_tensor_type type);

// f32 NCHW `src` (layout.element_count() values) -> `dst` (layout.bytes() bytes).
void pack_input(const float* src, const TensorLayout& layout, void* dst);

// f32 `src` in the layout's order (NHWC or NCHW) -> f32 NCHW `dst`. `layout.type` is ignored:
// the shim asks the runtime for float outputs.
void unpack_output(const float* src, const TensorLayout& layout, float* dst);

uint16_t float_to_half(float value);

}  // namespace co_up::rknn
