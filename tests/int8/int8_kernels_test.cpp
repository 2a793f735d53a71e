// npu-int8's building blocks without the ABI: quantisation arithmetic, the terminal conversions,
// and the AVX512-VNNI convolutions against XNNPACK's qc8 convolution — bit for bit, on shapes
// that cover every path (pointwise, padded 3x3, strided, grouped, depthwise, C = 3, channel
// counts off the vector widths, a fully connected layer as a 1x1 image, batch > 1).
#include <gtest/gtest.h>
#include <xnnpack.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "int8_kernels.h"
#include "int8_quant.h"
#include "int8_vnni.h"
#include "xnn_common.h"

namespace {

using co_up::backends::Conv2dShape;
using co_up::int8::QuantParams;
using co_up::int8::Range;
using co_up::xnnpack::CpuPool;
using co_up::xnnpack::Schedule;

TEST(Int8Quant, ActivationParamsCoverTheRangeAndZeroExactly) {
  Range r;
  r.observe(std::vector<float>{0.5f, 3.0f, 1.25f});
  const QuantParams q = co_up::int8::activation_params(r);
  EXPECT_EQ(q.zero_point, -128);  // [0, 3]: 0 is the lowest value
  EXPECT_NEAR(q.scale, 3.0f / 255.0f, 1e-7);
  Range s;
  s.observe(std::vector<float>{-2.0f, 6.0f, NAN});
  const QuantParams p = co_up::int8::activation_params(s);
  EXPECT_EQ(co_up::int8::dequantize_value(co_up::int8::quantize_value(0.0f, p), p), 0.0f);
  for (float v = -2.0f; v <= 6.0f; v += 0.01f) {
    EXPECT_LE(std::fabs(co_up::int8::dequantize_value(co_up::int8::quantize_value(v, p), p) - v),
              p.scale / 2 + 1e-6f)
        << v;
  }
  EXPECT_EQ(co_up::int8::activation_params(Range{}), QuantParams{});  // never observed
}

TEST(Int8Quant, WeightsArePerChannelSymmetricAndTablesComposeParams) {
  const std::vector<float> w = {0.5f, -1.0f, 0.25f,   // channel 0: max 1.0
                                0.0f, 0.0f, 0.0f,     // channel 1: all zero
                                2.0f, 1.0f, -0.5f};   // channel 2: max 2.0
  const auto q = co_up::int8::quantize_weights(w.data(), 3, 3);
  EXPECT_FLOAT_EQ(q.scales[0], 1.0f / 127);
  EXPECT_FLOAT_EQ(q.scales[1], 1.0f);
  EXPECT_FLOAT_EQ(q.scales[2], 2.0f / 127);
  EXPECT_EQ(q.values, (std::vector<int8_t>{64, -127, 32, 0, 0, 0, 127, 64, -32}));
  const std::vector<float> bias = {0.5f, 0.0f, -1.0f};
  const auto b = co_up::int8::quantize_bias(bias.data(), 3, 0.1f, q.scales);
  EXPECT_EQ(b[0], static_cast<int32_t>(std::nearbyint(0.5 / (0.1 * q.scales[0]))));
  EXPECT_EQ(b[2], static_cast<int32_t>(std::nearbyint(-1.0 / (0.1 * q.scales[2]))));
  const QuantParams a{0.05f, -3}, c{0.1f, 10};
  const auto same = co_up::int8::requantize_table(a, a);
  for (int v = -128; v < 128; ++v) EXPECT_EQ(same[size_t(v + 128)], v);
  const auto to_c = co_up::int8::requantize_table(a, c);
  for (int v = -128; v < 128; ++v) {
    EXPECT_EQ(to_c[size_t(v + 128)],
              co_up::int8::quantize_value(co_up::int8::dequantize_value(int8_t(v), a), c));
  }
}

TEST(Int8Kernels, TerminalConversionsRoundTrip) {
  const CpuPool pool(1, {}, Schedule::kStatic);
  const int64_t n = 2, c = 5, plane = 37;
  std::vector<float> x(size_t(n * c * plane));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  for (float& v : x) v = dist(rng);
  const QuantParams q{8.0f / 255.0f, 0};
  std::vector<int8_t> nhwc(x.size());
  co_up::int8::quantize_nchw_to_nhwc(x.data(), nhwc.data(), n, c, plane, q, pool);
  // Element (b, ch, p) of NCHW lands at (b, p, ch) of NHWC.
  EXPECT_EQ(nhwc[size_t((1 * plane + 7) * c + 3)],
            co_up::int8::quantize_value(x[size_t((1 * c + 3) * plane + 7)], q));
  std::vector<float> back(x.size());
  co_up::int8::dequantize_nhwc_to_nchw(nhwc.data(), back.data(), n, c, plane, q, pool);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(std::fabs(back[i] - x[i]), q.scale / 2 + 1e-6f);
}

// ---------------------------------------------------------------------------------------------
// VNNI convolution == XNNPACK qc8 convolution.

struct Case {
  const char* what;
  Conv2dShape s;
};

Conv2dShape shape(int64_t batch, int64_t c, int64_t h, int64_t w, int64_t m, int64_t k,
                  int64_t stride, int64_t pad, int64_t group, int64_t dilation = 1) {
  Conv2dShape s;
  s.batch = batch;
  s.in_channels = c;
  s.in_height = h;
  s.in_width = w;
  s.out_channels = m;
  s.kernel_h = s.kernel_w = k;
  s.stride_h = s.stride_w = stride;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = pad;
  s.group = group;
  s.dilation_h = s.dilation_w = dilation;
  return s;
}

class VnniVsXnnpack : public ::testing::TestWithParam<Case> {};

TEST_P(VnniVsXnnpack, BitExact) {
  if (!co_up::int8::vnni_available()) {
    GTEST_SKIP() << "this CPU has no AVX512-VNNI: npu-int8 uses XNNPACK's operators only here";
  }
  ASSERT_EQ(xnn_initialize(nullptr), xnn_status_success);
  const Conv2dShape s = GetParam().s;
  const int64_t gin = s.in_channels / s.group, taps = s.kernel_h * s.kernel_w;
  const int64_t out_pixels = s.batch * s.out_height() * s.out_width();
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(-128, 127), weight(-127, 127);
  co_up::xnnpack::Buffer<int8_t> x(s.batch * s.in_height * s.in_width * s.in_channels);
  for (int64_t i = 0; i < x.count(); ++i) x.data()[i] = int8_t(byte(rng));
  std::vector<int8_t> w(size_t(s.out_channels * taps * gin));
  for (auto& v : w) v = int8_t(weight(rng));
  std::vector<int32_t> bias(size_t(s.out_channels));
  std::uniform_int_distribution<int32_t> big(-20000, 20000);
  for (auto& v : bias) v = big(rng);
  std::vector<float> wscale(size_t(s.out_channels));
  std::uniform_real_distribution<float> sdist(0.002f, 0.02f);
  for (auto& v : wscale) v = sdist(rng);
  const float in_scale = 0.05f, out_scale = 0.4f;
  const int8_t in_zp = -7, out_zp = 5, out_min = -100, out_max = 120;
  std::vector<float> scales(wscale.size());
  for (size_t i = 0; i < scales.size(); ++i) {
    scales[i] = co_up::int8::requantization_scale(in_scale, wscale[i], out_scale);
  }

  co_up::xnnpack::Buffer<int8_t> want(out_pixels * s.out_channels), got(out_pixels * s.out_channels);
  xnn_operator_t op = nullptr;
  ASSERT_EQ(xnn_create_convolution2d_nhwc_qc8(
                uint32_t(s.pad_top), uint32_t(s.pad_right), uint32_t(s.pad_bottom),
                uint32_t(s.pad_left), uint32_t(s.kernel_h), uint32_t(s.kernel_w),
                uint32_t(s.stride_h), uint32_t(s.stride_w), uint32_t(s.dilation_h),
                uint32_t(s.dilation_w), uint32_t(s.group), size_t(gin),
                size_t(s.out_channels / s.group), size_t(s.in_channels), size_t(s.out_channels),
                in_zp, in_scale, wscale.data(), w.data(), bias.data(), out_zp, out_scale, out_min,
                out_max, 0, &op),
            xnn_status_success);
  ASSERT_EQ(xnn_setup_convolution2d_nhwc_qc8(op, size_t(s.batch), size_t(s.in_height),
                                             size_t(s.in_width), x.data(), want.data(), nullptr),
            xnn_status_success);
  ASSERT_EQ(xnn_run_operator(op, nullptr), xnn_status_success);
  xnn_delete_operator(op);

  co_up::int8::Int8ConvParams p;
  p.weights = w.data();
  p.bias = bias.data();
  p.scales = scales.data();
  p.input_zero_point = in_zp;
  p.output_zero_point = out_zp;
  p.output_min = out_min;
  p.output_max = out_max;
  for (int threads : {1, 2}) {
    const CpuPool pool(threads, {}, Schedule::kDynamic);
    std::fill(got.data(), got.data() + got.count(), int8_t{0});
    const bool depthwise = s.group == s.in_channels && s.out_channels == s.in_channels && s.group > 1;
    if (depthwise) {
      co_up::int8::VnniDepthwise(s, p, x.data(), got.data()).run(pool);
    } else {
      co_up::int8::VnniConvolution(s, p, x.data(), got.data()).run(pool);
    }
    int64_t differ = 0, first = -1;
    for (int64_t i = 0; i < got.count(); ++i) {
      if (got.data()[i] != want.data()[i] && differ++ == 0) first = i;
    }
    EXPECT_EQ(differ, 0) << GetParam().what << " (" << threads << " threads): first at " << first
                         << ": " << int(got.data()[std::max<int64_t>(first, 0)]) << " vs XNNPACK "
                         << int(want.data()[std::max<int64_t>(first, 0)]);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, VnniVsXnnpack,
    ::testing::Values(Case{"pointwise", shape(1, 64, 9, 11, 96, 1, 1, 0, 1)},
                      Case{"3x3 padded", shape(1, 32, 12, 12, 40, 3, 1, 1, 1)},
                      Case{"3x3 stride 2, C=3 (first layer)", shape(1, 3, 23, 23, 16, 3, 2, 1, 1)},
                      Case{"7x7 stride 2", shape(1, 3, 20, 20, 33, 7, 2, 3, 1)},
                      Case{"1x1 stride 2, batch 2", shape(2, 20, 10, 10, 50, 1, 2, 0, 1)},
                      Case{"grouped", shape(1, 24, 8, 8, 36, 5, 1, 2, 2)},
                      Case{"dilated", shape(1, 8, 12, 12, 12, 3, 1, 2, 1, 2)},
                      Case{"depthwise 3x3", shape(1, 72, 14, 14, 72, 3, 1, 1, 72)},
                      Case{"depthwise stride 2, C=130", shape(1, 130, 9, 9, 130, 3, 2, 1, 130)},
                      Case{"depthwise 5x5", shape(2, 16, 7, 7, 16, 5, 1, 2, 16)},
                      Case{"depthwise multiplier 2", shape(1, 8, 6, 6, 16, 3, 1, 1, 8)},
                      Case{"fully connected, batch 1", shape(1, 300, 1, 1, 70, 1, 1, 0, 1)},
                      Case{"fully connected, batch 3", shape(3, 64, 1, 1, 1000, 1, 1, 0, 1)}),
    [](const ::testing::TestParamInfo<Case>& info) { return "case" + std::to_string(info.index); });

}  // namespace
