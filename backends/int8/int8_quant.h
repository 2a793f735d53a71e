// Quantisation arithmetic of the npu-int8 backend, independent of any operator library:
// activation parameters from calibrated ranges, per-output-channel symmetric weights, int32 biases,
// the requantisation scale every int8 convolution uses, and int8 -> int8 requantisation tables.
//
// Convention (the ABI's and XNNPACK's): real = scale * (q - zero_point), q an int8.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace co_up::int8 {

struct QuantParams {
  float scale = 1.0f;
  int32_t zero_point = 0;  // in [-128, 127]

  bool operator==(const QuantParams&) const = default;
};

// Running range of a tensor over the calibration frames.
struct Range {
  float min = 0.0f;
  float max = 0.0f;
  bool seen = false;

  // Widens the range by `values` (NaNs are ignored).
  void observe(std::span<const float> values);
};

// Asymmetric int8 parameters covering [range.min, range.max] widened to include 0, so that 0 (the
// padding value of convolutions) is exact. An empty or all-zero range gets scale 1.
QuantParams activation_params(const Range& range);

// The int8 value of `real` (round to nearest even, saturated).
int8_t quantize_value(float real, const QuantParams& q);
inline float dequantize_value(int8_t value, const QuantParams& q) {
  return q.scale * static_cast<float>(static_cast<int32_t>(value) - q.zero_point);
}

// Weights of `channels` output channels, `per_channel` values each, channel-major:
// symmetric int8 in [-127, 127], scale[c] = max|w[c, :]| / 127 (1 for an all-zero channel).
struct ChannelWeights {
  std::vector<int8_t> values;
  std::vector<float> scales;
};
ChannelWeights quantize_weights(const float* weights, int64_t channels, int64_t per_channel);

// bias[c] / (input_scale * weight_scale[c]), rounded and saturated to int32; zeros without bias.
std::vector<int32_t> quantize_bias(const float* bias, int64_t channels, float input_scale,
                                   std::span<const float> weight_scales);

// The factor that maps a convolution's int32 accumulator to output units:
// input_scale * weight_scale / output_scale (the expression XNNPACK evaluates, in float).
float requantization_scale(float input_scale, float weight_scale, float output_scale);

// [lo, hi] of a fused activation clamp in output units ({-128, 127} for none).
struct Int8Bounds {
  int8_t min = -128;
  int8_t max = 127;
};
Int8Bounds clamp_bounds(float real_min, float real_max, const QuantParams& output);

// table[v + 128] = the int8 of dequantize(v, from) in `to`: an int8 -> int8 requantisation is a
// 256-entry lookup.
std::array<int8_t, 256> requantize_table(const QuantParams& from, const QuantParams& to);

}  // namespace co_up::int8
