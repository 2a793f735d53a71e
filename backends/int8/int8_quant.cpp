#include "int8_quant.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace co_up::int8 {

void Range::observe(std::span<const float> values) {
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
  // Comparisons with NaN are false, so a NaN never moves the range.
  for (float v : values) {
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  if (lo > hi) return;  // empty or all NaN
  min = seen ? std::min(min, lo) : lo;
  max = seen ? std::max(max, hi) : hi;
  seen = true;
}

QuantParams activation_params(const Range& range) {
  const float lo = std::min(range.seen ? range.min : 0.0f, 0.0f);
  const float hi = std::max(range.seen ? range.max : 0.0f, 0.0f);
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi - lo <= 0.0f) return {};
  QuantParams q;
  q.scale = (hi - lo) / 255.0f;
  const float zero = std::nearbyint(-128.0f - lo / q.scale);
  q.zero_point = static_cast<int32_t>(std::clamp(zero, -128.0f, 127.0f));
  return q;
}

int8_t quantize_value(float real, const QuantParams& q) {
  const float v = std::nearbyint(real / q.scale) + static_cast<float>(q.zero_point);
  return static_cast<int8_t>(std::clamp(v, -128.0f, 127.0f));
}

ChannelWeights quantize_weights(const float* weights, int64_t channels, int64_t per_channel) {
  ChannelWeights w;
  w.values.resize(static_cast<size_t>(channels * per_channel));
  w.scales.resize(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    const float* row = weights + c * per_channel;
    float peak = 0.0f;
    for (int64_t k = 0; k < per_channel; ++k) peak = std::max(peak, std::fabs(row[k]));
    const float scale = peak > 0.0f && std::isfinite(peak) ? peak / 127.0f : 1.0f;
    w.scales[static_cast<size_t>(c)] = scale;
    int8_t* out = w.values.data() + c * per_channel;
    // |row[k] / scale| <= 127: adding and subtracting 1.5 * 2^23 rounds it to the nearest integer
    // (ties to even) like nearbyint, without a libm call per weight.
    constexpr float kMagic = 12582912.0f;
    for (int64_t k = 0; k < per_channel; ++k) {
      float v = (row[k] / scale + kMagic) - kMagic;
      v = v > -127.0f ? v : -127.0f;  // NaN -> -127
      v = v < 127.0f ? v : 127.0f;
      out[k] = static_cast<int8_t>(static_cast<int32_t>(v));
    }
  }
  return w;
}

std::vector<int32_t> quantize_bias(const float* bias, int64_t channels, float input_scale,
                                   std::span<const float> weight_scales) {
  std::vector<int32_t> q(static_cast<size_t>(channels), 0);
  if (bias == nullptr) return q;
  constexpr double kMax = static_cast<double>(std::numeric_limits<int32_t>::max());
  for (int64_t c = 0; c < channels; ++c) {
    const double scale = static_cast<double>(input_scale) * weight_scales[static_cast<size_t>(c)];
    const double v = std::nearbyint(static_cast<double>(bias[c]) / scale);
    q[static_cast<size_t>(c)] = static_cast<int32_t>(std::clamp(v, -kMax, kMax));
  }
  return q;
}

float requantization_scale(float input_scale, float weight_scale, float output_scale) {
  return input_scale * weight_scale / output_scale;
}

Int8Bounds clamp_bounds(float real_min, float real_max, const QuantParams& output) {
  Int8Bounds b;
  if (real_min > -std::numeric_limits<float>::infinity()) b.min = quantize_value(real_min, output);
  if (real_max < std::numeric_limits<float>::infinity()) b.max = quantize_value(real_max, output);
  return b;
}

std::array<int8_t, 256> requantize_table(const QuantParams& from, const QuantParams& to) {
  std::array<int8_t, 256> table{};
  for (int v = -128; v <= 127; ++v) {
    table[static_cast<size_t>(v + 128)] =
        quantize_value(dequantize_value(static_cast<int8_t>(v), from), to);
  }
  return table;
}

}  // namespace co_up::int8
