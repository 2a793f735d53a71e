#include "rknn_marshal.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace co_up::rknn {
namespace {

// Visits every element as (NCHW index, index in the layout's order): the one loop both
// directions share, so NHWC <-> NCHW is written once.
template <typename Visit>
void for_each_element(const TensorLayout& layout, Visit&& visit) {
  const int64_t count = layout.element_count();
  if (!layout.nhwc) {
    for (int64_t i = 0; i < count; ++i) visit(i, i);
    return;
  }
  const auto& d = layout.nchw_dims;
  const int64_t n = d[0], c = d[1], h = d[2], w = d[3], plane = h * w;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < plane; ++p) {
      const int64_t nhwc_base = (b * plane + p) * c;
      const int64_t nchw_base = b * c * plane + p;
      for (int64_t ch = 0; ch < c; ++ch) visit(nchw_base + ch * plane, nhwc_base + ch);
    }
  }
}

template <typename Q>
void quantize(const float* src, const TensorLayout& layout, Q* dst) {
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::min());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  const float scale = layout.scale;
  const auto zp = static_cast<float>(layout.zero_point);
  // 1.5 * 2^23: adding and subtracting it rounds any |r| < 2^22 to an integer, half to even (the
  // default rounding mode) — nearbyint's result, but a vectorisable add instead of a libm call
  // per element on baseline x86-64. r is clamped first, far outside every int8/uint8 range.
  constexpr float kRound = 12582912.0f;
  for_each_element(layout, [&](int64_t from, int64_t to) {
    // x / scale, not x * (1 / scale): the two round differently near .5.
    float r = src[from] / scale;
    r = r >= -65536.0f ? (r <= 65536.0f ? r : 65536.0f) : (r < 0.0f ? -65536.0f : 0.0f);  // NaN: 0
    const float q = ((r + kRound) - kRound) + zp;
    dst[to] = static_cast<Q>(std::clamp(q, lo, hi));
  });
}

}  // namespace

int64_t TensorLayout::element_count() const {
  int64_t count = 1;
  for (int64_t d : nchw_dims) count *= d;
  return count;
}

size_t TensorLayout::bytes() const { return static_cast<size_t>(element_count()) * element_size(type); }

size_t element_size(rknn_tensor_type type) {
  switch (type) {
    case RKNN_TENSOR_FLOAT32: return 4;
    case RKNN_TENSOR_FLOAT16: return 2;
    case RKNN_TENSOR_INT8:
    case RKNN_TENSOR_UINT8: return 1;
    default:
      throw std::invalid_argument("tensor type " + std::to_string(type) +
                                  " is not one co_up converts to (f32, f16, int8, uint8)");
  }
}

uint16_t float_to_half(float value) {
  uint32_t f = 0;
  std::memcpy(&f, &value, sizeof f);
  const auto sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
  f &= 0x7fffffffu;
  if (f >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (f > 0x7f800000u ? 0x200u : 0u));  // inf, NaN
  if (f >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // 65520 and up: infinity
  if (f < 0x38800000u) {                        // below 2^-14: a half subnormal or zero
    if (f < 0x33000000u) return sign;           // below 2^-25 rounds to zero
    const uint32_t exponent = f >> 23;
    const uint32_t mantissa = (f & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // value / 2^-24 = mantissa * 2^(exponent - 126)
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Normal: rebias the exponent (127 -> 15), round the mantissa from 23 to 10 bits; a carry
  // into the exponent is the correct result.
  uint32_t half = (f >> 13) - ((127u - 15u) << 10);
  const uint32_t rest = f & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

void pack_input(const float* src, const TensorLayout& layout, void* dst) {
  switch (layout.type) {
    case RKNN_TENSOR_FLOAT32: {
      auto* out = static_cast<float*>(dst);
      if (!layout.nhwc) {
        std::memcpy(out, src, layout.bytes());
        return;
      }
      for_each_element(layout, [&](int64_t from, int64_t to) { out[to] = src[from]; });
      return;
    }
    case RKNN_TENSOR_FLOAT16: {
      auto* out = static_cast<uint16_t*>(dst);
      for_each_element(layout, [&](int64_t from, int64_t to) { out[to] = float_to_half(src[from]); });
      return;
    }
    case RKNN_TENSOR_INT8:
      quantize(src, layout, static_cast<int8_t*>(dst));
      return;
    case RKNN_TENSOR_UINT8:
      quantize(src, layout, static_cast<uint8_t*>(dst));
      return;
    default:
      element_size(layout.type);  // throws, naming the type
  }
}

void unpack_output(const float* src, const TensorLayout& layout, float* dst) {
  if (!layout.nhwc) {
    std::memcpy(dst, src, static_cast<size_t>(layout.element_count()) * sizeof(float));
    return;
  }
  for_each_element(layout, [&](int64_t to, int64_t from) { dst[to] = src[from]; });
}

}  // namespace co_up::rknn
