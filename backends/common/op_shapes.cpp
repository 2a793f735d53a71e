#include "op_shapes.h"

namespace co_up::backends {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t pooled_size(int64_t in, int64_t pad_begin, int64_t pad_end, int64_t kernel,
                    int64_t stride, bool ceil_mode) {
  const int64_t span = in + pad_begin + pad_end - kernel;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? ceil_div(span, stride) : span / stride) + 1;
  // The last window must start inside the input or the leading padding.
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

}  // namespace

int64_t Conv2dShape::out_height() const {
  return (in_height + pad_top + pad_bottom - dilation_h * (kernel_h - 1) - 1) / stride_h + 1;
}

int64_t Conv2dShape::out_width() const {
  return (in_width + pad_left + pad_right - dilation_w * (kernel_w - 1) - 1) / stride_w + 1;
}

bool Conv2dShape::is_depthwise() const {
  return group > 1 && group == in_channels && out_channels % in_channels == 0;
}

int64_t Pool2dShape::out_height() const {
  return pooled_size(in_height, pad_top, pad_bottom, kernel_h, stride_h, ceil_mode);
}

int64_t Pool2dShape::out_width() const {
  return pooled_size(in_width, pad_left, pad_right, kernel_w, stride_w, ceil_mode);
}

}  // namespace co_up::backends
