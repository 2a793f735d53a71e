// cpu-xnnpack's own depthwise convolution (backends/xnnpack/xnn_depthwise.h) against the textbook
// formula in double precision: ConvNeXt's 7x7, one-sided kernels, stride, asymmetric padding,
// dilation, channel counts that leave a partial vector, batch > 1, a clamp, and an output that is
// a slice of a wider tensor; two threads equal one bit for bit. Both loop variants (AVX-512 where
// the CPU has it, and the portable one ARM boards run).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "reference_naive.h"
#include "xnn_depthwise.h"
#include "xnn_thread_pool.h"

namespace {

using co_up::backends::Conv2dShape;
using co_up::testing::NaiveConv;
using co_up::xnnpack::CpuPool;
using co_up::xnnpack::DepthwiseConvolution;
using co_up::xnnpack::Schedule;

struct Case {
  int64_t n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  float lo, hi;
  int64_t extra_stride;  // floats after each output pixel's C channels (a Concat's slice)
};

std::string describe(const Case& k) {
  char text[200];
  std::snprintf(text, sizeof(text), "N%lld C%lld %lldx%lld k%lldx%lld s%lldx%lld p%lld,%lld,%lld,%lld d%lldx%lld +%lld",
                (long long)k.n, (long long)k.c, (long long)k.h, (long long)k.w, (long long)k.kh,
                (long long)k.kw, (long long)k.sh, (long long)k.sw, (long long)k.pt, (long long)k.pl,
                (long long)k.pb, (long long)k.pr, (long long)k.dh, (long long)k.dw,
                (long long)k.extra_stride);
  return text;
}

Conv2dShape shape_of(const Case& k) {
  Conv2dShape s;
  s.batch = k.n;
  s.in_channels = s.out_channels = s.group = k.c;
  s.in_height = k.h;
  s.in_width = k.w;
  s.kernel_h = k.kh;
  s.kernel_w = k.kw;
  s.stride_h = k.sh;
  s.stride_w = k.sw;
  s.pad_top = k.pt;
  s.pad_left = k.pl;
  s.pad_bottom = k.pb;
  s.pad_right = k.pr;
  s.dilation_h = k.dh;
  s.dilation_w = k.dw;
  return s;
}

// y as the kernel writes it: NHWC with (C + extra_stride) floats per pixel.
using Variant = DepthwiseConvolution::Variant;

std::vector<float> run(const Case& k, const std::vector<float>& x_nhwc, const std::vector<float>& wt,
                       const std::vector<float>& b, int threads, Variant variant) {
  const Conv2dShape s = shape_of(k);
  const int64_t stride = k.c + k.extra_stride;
  std::vector<float> y(static_cast<size_t>(k.n * s.out_height() * s.out_width() * stride), -7.0f);
  CpuPool pool(threads, {}, Schedule::kStatic);
  DepthwiseConvolution conv(s, wt.data(), b.data(), k.lo, k.hi, stride, x_nhwc.data(), y.data());
  conv.run(pool, variant);
  return y;
}

// Both loop variants: kAuto (AVX-512 on such a CPU) and the portable one ARM boards run.
class XnnpackDepthwiseVariants : public ::testing::TestWithParam<Variant> {};

INSTANTIATE_TEST_SUITE_P(Loops, XnnpackDepthwiseVariants, ::testing::Values(Variant::kAuto, Variant::kPortable),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return std::string(info.param == Variant::kAuto ? "Auto" : "Portable");
                         });

TEST_P(XnnpackDepthwiseVariants, MatchesTheFormulaOnEveryPath) {
  const Case cases[] = {
      {1, 96, 20, 21, 7, 7, 1, 1, 3, 3, 3, 3, 1, 1, -INFINITY, INFINITY, 0},  // ConvNeXt's block
      {2, 20, 9, 30, 7, 7, 1, 1, 3, 3, 3, 3, 1, 1, 0.0f, 6.0f, 0},           // partial vector, clamp
      {1, 7, 5, 12, 1, 7, 1, 1, 0, 3, 0, 3, 1, 1, -INFINITY, INFINITY, 5},   // channels < 16, slice
      {1, 32, 17, 23, 3, 5, 2, 2, 1, 2, 0, 1, 1, 1, -INFINITY, INFINITY, 0}, // stride, uneven pad
      {1, 48, 16, 40, 7, 1, 1, 1, 3, 0, 3, 0, 2, 2, -1.0f, 1.0f, 16},        // dilation, slice
      {1, 16, 3, 4, 7, 7, 1, 1, 3, 3, 3, 3, 1, 1, -INFINITY, INFINITY, 0},   // kernel over the image
      {1, 40, 13, 37, 3, 5, 1, 1, 2, 4, 2, 4, 2, 2, -INFINITY, INFINITY, 3}, // kw > 1 dilated, slice
      {1, 19, 9, 29, 1, 7, 1, 2, 0, 5, 0, 4, 1, 3, -2.0f, 2.0f, 0},         // 1x7 dilated, stride 2
  };
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Case& k : cases) {
    SCOPED_TRACE(describe(k));
    const Conv2dShape s = shape_of(k);
    ASSERT_TRUE(co_up::xnnpack::depthwise_kernel_wins(s) || k.kh * k.kw == 25 || k.kh * k.kw == 9);
    std::vector<float> x(static_cast<size_t>(k.n * k.c * k.h * k.w)), wt(static_cast<size_t>(k.c * k.kh * k.kw)),
        b(static_cast<size_t>(k.c));
    for (float& v : x) v = dist(rng);
    for (float& v : wt) v = dist(rng);
    for (float& v : b) v = dist(rng);
    std::vector<float> x_nhwc(x.size());  // the kernel's layout
    for (int64_t n = 0; n < k.n; ++n)
      for (int64_t c = 0; c < k.c; ++c)
        for (int64_t p = 0; p < k.h * k.w; ++p)
          x_nhwc[static_cast<size_t>((n * k.h * k.w + p) * k.c + c)] = x[static_cast<size_t>((n * k.c + c) * k.h * k.w + p)];
    NaiveConv nc;
    nc.n = k.n;
    nc.c = nc.m = nc.group = k.c;
    nc.h = k.h;
    nc.w = k.w;
    nc.kh = k.kh;
    nc.kw = k.kw;
    nc.sh = k.sh;
    nc.sw = k.sw;
    nc.pt = k.pt;
    nc.pl = k.pl;
    nc.pb = k.pb;
    nc.pr = k.pr;
    nc.dh = k.dh;
    nc.dw = k.dw;
    std::vector<double> magnitude;
    const std::vector<double> want = co_up::testing::naive_conv(nc, x, wt, b, &magnitude);
    const std::vector<float> one = run(k, x_nhwc, wt, b, 1, GetParam());
    const std::vector<float> two = run(k, x_nhwc, wt, b, 2, GetParam());
    ASSERT_EQ(one, two) << "two threads must give the same bits";
    const int64_t oh = s.out_height(), ow = s.out_width(), stride = k.c + k.extra_stride;
    ASSERT_EQ(oh, nc.oh());
    ASSERT_EQ(ow, nc.ow());
    for (int64_t n = 0; n < k.n; ++n)
      for (int64_t c = 0; c < k.c; ++c)
        for (int64_t p = 0; p < oh * ow; ++p) {
          const size_t o = static_cast<size_t>((n * k.c + c) * oh * ow + p);
          const double expected = std::min<double>(k.hi, std::max<double>(k.lo, want[o]));
          const float got = one[static_cast<size_t>((n * oh * ow + p) * stride + c)];
          ASSERT_NEAR(got, expected, 1e-6 * magnitude[o] + 1e-7) << "n " << n << " c " << c << " pixel " << p;
        }
    for (int64_t p = 0; p < k.n * oh * ow; ++p)  // the slice's neighbours are untouched
      for (int64_t e = 0; e < k.extra_stride; ++e) ASSERT_EQ(one[static_cast<size_t>(p * stride + k.c + e)], -7.0f);
  }
}

TEST(XnnpackDepthwise, TakesOnlyTheSizesXnnpackRunsAsAGemm) {
  Conv2dShape s;
  s.in_channels = s.out_channels = s.group = 32;
  s.in_height = s.in_width = 14;
  for (auto [kh, kw, want] : {std::tuple{7, 7, true}, {1, 7, true}, {3, 3, false}, {5, 5, false},
                              {2, 2, false}, {1, 9, false}, {3, 5, true},
                              {1, 3, false}, {3, 1, false}, {1, 5, true}, {5, 1, true}}) {
    s.kernel_h = kh;
    s.kernel_w = kw;
    EXPECT_EQ(co_up::xnnpack::depthwise_kernel_wins(s), want) << kh << "x" << kw;
  }
  s.kernel_h = s.kernel_w = 7;
  s.out_channels = 64;  // a channel multiplier of 2: not this kernel's
  EXPECT_FALSE(co_up::xnnpack::depthwise_kernel_wins(s));
  s.out_channels = 32;
  s.group = 1;
  EXPECT_FALSE(co_up::xnnpack::depthwise_kernel_wins(s));
}

}  // namespace

// A NaN input stays NaN through the clamp in every channel: the 16-wide blocks and the channels
// left over after them (here 16 + 4) clamp alike.
TEST_P(XnnpackDepthwiseVariants, KeepsNaNThroughTheClampInEveryChannel) {
  const Case k{1, 20, 5, 6, 1, 7, 1, 1, 0, 3, 0, 3, 1, 1, 0.0f, 6.0f, 0};
  const int64_t hw = k.h * k.w;
  std::vector<float> x_nhwc(static_cast<size_t>(hw * k.c), 0.5f), wt(static_cast<size_t>(k.c * 7), 0.25f),
      b(static_cast<size_t>(k.c), 0.0f);
  const int64_t nan_channels[] = {3, 18};  // one in a vector block, one in the tail
  for (int64_t c : nan_channels)
    for (int64_t p = 0; p < hw; ++p) x_nhwc[static_cast<size_t>(p * k.c + c)] = NAN;
  const std::vector<float> y = run(k, x_nhwc, wt, b, 1, GetParam());
  for (int64_t p = 0; p < hw; ++p)
    for (int64_t c = 0; c < k.c; ++c) {
      const float v = y[static_cast<size_t>(p * k.c + c)];
      if (c == 3 || c == 18) {
        EXPECT_TRUE(std::isnan(v)) << "pixel " << p << " channel " << c << ": " << v;
      } else {
        EXPECT_FALSE(std::isnan(v)) << "pixel " << p << " channel " << c;
      }
    }
}
