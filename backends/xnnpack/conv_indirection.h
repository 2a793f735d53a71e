// The indirection buffer of an indirect-GEMM convolution (XNNPACK's IGEMM idea): for every output
// pixel and kernel tap, a pointer to the input pixel that tap reads, or to a row of padding values.
// Built once when a convolution is created on fixed buffers; a frame then runs the GEMM over these
// pointers with no im2col copy. Shared by cpu-xnnpack's AVX-512 f32 and npu-int8's VNNI kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "op_shapes.h"

namespace co_up::xnnpack {

// Row pointers of every (output pixel, tap) of `s` over the NHWC input `x`: taps in (ky, kx)
// row-major order; `padding_row` where the tap falls outside the input, and for the
// `padded_taps - kh*kw` extra entries per pixel (kernels that read taps in groups).
template <typename T>
std::vector<const T*> make_indirection(const backends::Conv2dShape& s, const T* x,
                                       const T* padding_row, int64_t padded_taps) {
  const int64_t oh = s.out_height(), ow = s.out_width();
  const int64_t pixels = s.batch * oh * ow;
  std::vector<const T*> rows(static_cast<size_t>(pixels * padded_taps), padding_row);
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t p = (n * oh + oy) * ow + ox;
        for (int64_t ky = 0; ky < s.kernel_h; ++ky) {
          for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
            const int64_t iy = oy * s.stride_h - s.pad_top + ky * s.dilation_h;
            const int64_t ix = ox * s.stride_w - s.pad_left + kx * s.dilation_w;
            if (iy < 0 || iy >= s.in_height || ix < 0 || ix >= s.in_width) continue;
            rows[static_cast<size_t>(p * padded_taps + ky * s.kernel_w + kx)] =
                x + ((n * s.in_height + iy) * s.in_width + ix) * s.in_channels;
          }
        }
      }
    }
  }
  return rows;
}

}  // namespace co_up::xnnpack
