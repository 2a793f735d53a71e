// cpu-xnnpack's AVX-512 convolution (backends/xnnpack/avx512_conv.h) against the textbook
// formula in double precision, on shapes chosen to hit every tile variant: 1..8 pixel rows, one
// or two vectors, partial column blocks, groups, stride, padding, dilation, batch > 1, fused
// clamps, reductions split into several ranges. Skips (saying why) on CPUs without AVX-512, where the backend never takes this path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "avx512_conv.h"
#include "reference_naive.h"
#include "xnn_thread_pool.h"

namespace {

using co_up::backends::Conv2dShape;
using co_up::testing::NaiveConv;
using co_up::xnnpack::Avx512Convolution;
using co_up::xnnpack::CpuPool;
using co_up::xnnpack::F32ConvParams;
using co_up::xnnpack::Schedule;

struct Case {
  int64_t n, c, h, w, m, k, stride, pad, group, dilation;
  float lo, hi;
};

std::string describe(const Case& cc) {
  char text[160];
  std::snprintf(text, sizeof(text), "N%lld C%lld %lldx%lld M%lld k%lld s%lld p%lld g%lld d%lld",
                static_cast<long long>(cc.n), static_cast<long long>(cc.c),
                static_cast<long long>(cc.h), static_cast<long long>(cc.w),
                static_cast<long long>(cc.m), static_cast<long long>(cc.k),
                static_cast<long long>(cc.stride), static_cast<long long>(cc.pad),
                static_cast<long long>(cc.group), static_cast<long long>(cc.dilation));
  return text;
}

// Runs the convolution on NHWC data with `threads` threads and returns y in NCHW order.
// `residual_nhwc`, when not empty, is added before the clamp (the fused Add).
std::vector<float> run_nchw(const Case& cc, const std::vector<float>& x_nchw,
                            const std::vector<float>& w, const std::vector<float>& b,
                            int threads, const std::vector<float>& residual_nhwc = {}) {
  Conv2dShape s;
  s.batch = cc.n;
  s.in_channels = cc.c;
  s.in_height = cc.h;
  s.in_width = cc.w;
  s.out_channels = cc.m;
  s.kernel_h = s.kernel_w = cc.k;
  s.stride_h = s.stride_w = cc.stride;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = cc.pad;
  s.dilation_h = s.dilation_w = cc.dilation;
  s.group = cc.group;
  const int64_t oh = s.out_height(), ow = s.out_width(), plane = cc.h * cc.w;
  std::vector<float> x(x_nchw.size());
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t ch = 0; ch < cc.c; ++ch)
      for (int64_t q = 0; q < plane; ++q)
        x[static_cast<size_t>((n * plane + q) * cc.c + ch)] = x_nchw[static_cast<size_t>((n * cc.c + ch) * plane + q)];
  std::vector<float> y(static_cast<size_t>(cc.n * oh * ow * cc.m), std::nanf(""));
  const F32ConvParams params{w.data(), b.empty() ? nullptr : b.data(), cc.lo, cc.hi,
                            residual_nhwc.empty() ? nullptr : residual_nhwc.data()};
  Avx512Convolution conv(s, params, x.data(), y.data());
  CpuPool pool(threads, {}, Schedule::kDynamic);
  conv.run(pool);
  conv.run(pool);  // a second frame on the same buffers gives the same result
  std::vector<float> out(y.size());
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t m = 0; m < cc.m; ++m)
      for (int64_t q = 0; q < oh * ow; ++q)
        out[static_cast<size_t>((n * cc.m + m) * oh * ow + q)] = y[static_cast<size_t>((n * oh * ow + q) * cc.m + m)];
  return out;
}

TEST(Avx512Convolution, MatchesTheDefinitionOnEveryTileShape) {
  if (!co_up::xnnpack::avx512_gemm_available()) {
    GTEST_SKIP() << "this CPU has no AVX-512F (or CO_UP_NO_AVX512_GEMM is set): cpu-xnnpack "
                    "uses XNNPACK's kernels here";
  }
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const Case cases[] = {
      {1, 64, 1, 1, 32, 1, 1, 0, 1, 1, -kInf, kInf},    // one pixel: the 1-row tile
      {1, 64, 3, 3, 40, 1, 1, 0, 1, 1, -kInf, kInf},    // 9 pixels: 8 + 1; 40 = 32 + 8 columns
      {1, 32, 5, 7, 16, 3, 1, 1, 1, 1, 0.0f, kInf},     // 16 columns: one vector; ReLU
      {1, 32, 11, 13, 97, 3, 2, 1, 1, 1, 0.0f, 6.0f},   // 3 blocks + 1 column; ReLU6; stride 2
      {2, 48, 9, 9, 96, 3, 1, 1, 2, 1, -kInf, kInf},    // batch 2, 2 groups of 24 -> 48
      {1, 16, 12, 12, 33, 3, 1, 2, 1, 2, -kInf, kInf},  // dilation 2, padding 2
      {1, 3, 27, 27, 20, 11, 4, 2, 1, 1, 0.0f, kInf},   // AlexNet conv1-like: row mode, 121 taps
      {2, 3, 30, 29, 64, 7, 2, 3, 1, 1, 0.0f, kInf},    // ResNet conv1-like: row mode, batch 2
      {1, 3, 23, 25, 80, 7, 2, 3, 1, 1, 0.0f, 6.0f},    // row mode, 3 blocks: a 4- and a 1-vector pair tile
      {1, 3, 121, 117, 32, 3, 2, 1, 1, 1, 0.0f, kInf},  // stem-like row mode: the padded copy split over rows
      {1, 5, 9, 10, 40, 3, 1, 2, 1, 2, -kInf, kInf},    // dilation 2: not row mode
      {1, 96, 7, 6, 48, 5, 1, 2, 4, 1, -1.0f, 1.0f},    // 4 groups of 24 -> 12 (partial vector)
      {1, 64, 6, 5, 40, 3, 1, 1, 1, 1, 0.0f, 6.0f},     // depth 576
      {1, 200, 5, 5, 40, 3, 1, 1, 2, 1, 0.0f, kInf},    // depth 900, 2 groups
      {1, 512, 4, 4, 40, 3, 1, 1, 1, 1, 0.0f, kInf},    // depth 4608: 9 parts of one tap each
      {1, 4200, 3, 3, 40, 1, 1, 0, 1, 1, -kInf, kInf},  // 1x1 depth 4200: 9 channel slices, the last short
      {1, 160, 13, 12, 80, 3, 1, 1, 1, 1, 0.0f, 6.0f},  // 156 pixels: pair tiles on a deep reduction, 3 blocks
      {1, 128, 30, 30, 72, 1, 1, 0, 1, 1, 0.0f, kInf},  // 720 KB of pixels: two L2 chunks, the last short
      {1, 64, 40, 40, 64, 3, 1, 1, 2, 1, -kInf, kInf},  // two chunks of two groups
      {1, 832, 7, 7, 384, 1, 1, 0, 1, 1, 0.0f, kInf},   // GoogLeNet 5b: 12 blocks in one range per thread
      {1, 96, 7, 7, 128, 3, 1, 1, 1, 1, 0.0f, kInf},    // 4 blocks: two per thread's range
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Case& cc : cases) {
    std::vector<float> x(static_cast<size_t>(cc.n * cc.c * cc.h * cc.w));
    std::vector<float> w(static_cast<size_t>(cc.m * (cc.c / cc.group) * cc.k * cc.k));
    std::vector<float> b(static_cast<size_t>(cc.m));
    for (float& v : x) v = dist(rng);
    for (float& v : w) v = dist(rng) * 0.2f;
    for (float& v : b) v = dist(rng);
    NaiveConv s;
    s.n = cc.n, s.c = cc.c, s.h = cc.h, s.w = cc.w, s.m = cc.m, s.kh = s.kw = cc.k;
    s.sh = s.sw = cc.stride, s.pt = s.pl = s.pb = s.pr = cc.pad, s.dh = s.dw = cc.dilation;
    s.group = cc.group;
    std::vector<double> magnitude;
    const std::vector<double> want = co_up::testing::naive_conv(s, x, w, b, &magnitude);
    const std::vector<float> got = run_nchw(cc, x, w, b, 1);
    ASSERT_EQ(got.size(), want.size()) << describe(cc);
    for (size_t i = 0; i < got.size(); ++i) {
      const double clamped = std::min<double>(std::max<double>(want[i], cc.lo), cc.hi);
      // f32 rounding of a sum of K terms: a few ulps of the sum of their magnitudes.
      ASSERT_NEAR(got[i], clamped, 1e-6 * (magnitude[i] + 1.0) * 8) << describe(cc) << " at " << i;
    }
    // Tiles split outputs, never a reduction: bit-identical for any thread count.
    EXPECT_EQ(run_nchw(cc, x, w, b, 2), got) << describe(cc) << ": 1 and 2 threads differ";
  }
}

TEST(Avx512Convolution, FusedResidualIsAddedBeforeTheClamp) {
  if (!co_up::xnnpack::avx512_gemm_available()) {
    GTEST_SKIP() << "this CPU has no AVX-512F (or CO_UP_NO_AVX512_GEMM is set)";
  }
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // ResNet's conv3 + Add(relu), and a reduction deep enough to run in parts (the residual and
  // the clamp belong to the last part only).
  for (const int64_t channels : {64, 4200}) {
    const Case relu{1, channels, 5, 5, 40, 1, 1, 0, 1, 1, 0.0f, kInf};
    const Case plain{1, channels, 5, 5, 40, 1, 1, 0, 1, 1, -kInf, kInf};
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(channels * 25)), w(static_cast<size_t>(40 * channels));
    std::vector<float> b(40), residual(25 * 40);
    for (auto* v : {&x, &w, &b, &residual}) {
      for (float& e : *v) e = dist(rng);
    }
    const std::vector<float> conv = run_nchw(plain, x, w, b, 1);
    const std::vector<float> fused = run_nchw(relu, x, w, b, 1, residual);
    for (int64_t m = 0; m < 40; ++m) {
      for (int64_t q = 0; q < 25; ++q) {
        const size_t nchw = static_cast<size_t>(m * 25 + q);
        const float want = std::max(conv[nchw] + residual[static_cast<size_t>(q * 40 + m)], 0.0f);
        ASSERT_EQ(fused[nchw], want) << channels << " channels: channel " << m << " pixel " << q;
      }
    }
  }
}

// cpu-xnnpack writes a fused convolution's result over its residual where the convolution is
// the residual's last reader (xnn_plugin.cpp): each tile must read its residual lines before it
// stores them, for any thread count and with two-block tiles over several L2 chunks.
TEST(Avx512Convolution, InPlaceResidualGivesTheSameResultAsSeparateBuffers) {
  if (!co_up::xnnpack::avx512_gemm_available()) {
    GTEST_SKIP() << "this CPU has no AVX-512F (or CO_UP_NO_AVX512_GEMM is set)";
  }
  Conv2dShape s;  // ResNet's 64 -> 256 + Add, 37x37 pixels: pair tiles, four L2 chunks, a short last tile
  s.in_channels = 64;
  s.in_height = s.in_width = 37;
  s.out_channels = 256;
  const int64_t pixels = 37 * 37;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(pixels * 64)), w(256 * 64), b(256), residual(static_cast<size_t>(pixels * 256));
  for (auto* v : {&x, &w, &b, &residual}) {
    for (float& e : *v) e = dist(rng);
  }
  const float kInf = std::numeric_limits<float>::infinity();
  std::vector<float> separate(residual.size());
  {
    Avx512Convolution conv(s, F32ConvParams{w.data(), b.data(), 0.0f, kInf, residual.data()}, x.data(), separate.data());
    conv.run(CpuPool(1, {}, Schedule::kDynamic));
  }
  for (const int threads : {1, 2}) {
    std::vector<float> y = residual;
    Avx512Convolution conv(s, F32ConvParams{w.data(), b.data(), 0.0f, kInf, y.data()}, x.data(), y.data());
    conv.run(CpuPool(threads, {}, Schedule::kDynamic));
    EXPECT_EQ(y, separate) << threads << " threads";
  }
}

// Whether avx512_conv_wins picks the faster path is a measurement: `co_up_bench_xnnpack --convs`
// times both on every convolution shape of the zoo and reports the shapes where the rule picked
// the slower one (bench/README.md). This test checks only what holds whatever the thresholds are:
// no AVX-512, no pick; depthwise convolutions (no reduction to tile) and layers with fewer pixels
// than one tile are never picked; a pick stays a pick when the layer gets more output channels or
// more pixels (more work per weight and per tile, which favours the GEMM tiles); and the zoo's
// common deep 3x3 layers are picked where AVX-512 exists.
TEST(Avx512Convolution, PickRuleIsMonotoneAndNeverPicksWhatItCannotTile) {
  const bool avx512 = co_up::xnnpack::avx512_gemm_available();
  std::vector<Conv2dShape> shapes;
  for (const int64_t cin : {3, 16, 24, 32, 64, 96, 128, 192, 256, 512, 832, 1024}) {
    for (const int64_t cout : {8, 16, 32, 48, 64, 96, 128, 256, 512}) {
      for (const int64_t hw : {1, 2, 3, 7, 14, 28, 56}) {
        for (const int64_t k : {1, 3}) {
          Conv2dShape s;
          s.in_channels = cin;
          s.out_channels = cout;
          s.in_height = s.in_width = hw;
          s.kernel_h = s.kernel_w = k;
          if (k == 3 && hw >= 3) s.pad_top = s.pad_bottom = s.pad_left = s.pad_right = 1;
          if (k > hw + s.pad_top + s.pad_bottom) continue;
          shapes.push_back(s);
        }
      }
    }
  }
  int picked = 0;
  for (const Conv2dShape& s : shapes) {
    const bool wins = co_up::xnnpack::avx512_conv_wins(s);
    picked += wins;
    if (!avx512) {
      EXPECT_FALSE(wins);
      continue;
    }
    const std::string what = std::to_string(s.in_channels) + ">" + std::to_string(s.out_channels) + " " +
                             std::to_string(s.in_height) + "x" + std::to_string(s.in_width) + " k" +
                             std::to_string(s.kernel_h);
    if (s.batch * s.out_height() * s.out_width() < 8) {
      EXPECT_FALSE(wins) << what << ": fewer pixels than a tile";
    }
    if (!wins) continue;
    Conv2dShape wider = s;
    wider.out_channels *= 2;
    EXPECT_TRUE(co_up::xnnpack::avx512_conv_wins(wider)) << what << " picked, twice the output channels not";
    Conv2dShape larger = s;
    larger.in_height *= 2;
    larger.in_width *= 2;
    EXPECT_TRUE(co_up::xnnpack::avx512_conv_wins(larger)) << what << " picked, four times the pixels not";
    Conv2dShape depthwise = s;
    depthwise.in_channels = depthwise.out_channels = depthwise.group = s.in_channels;
    EXPECT_FALSE(co_up::xnnpack::avx512_conv_wins(depthwise)) << what << " depthwise";
  }
  if (avx512) {
    // Not a threshold: the rule picks something, and not everything.
    EXPECT_GT(picked, 0);
    EXPECT_LT(picked, static_cast<int>(shapes.size()));
    Conv2dShape deep;  // ResNet50's 3x3 256 -> 256 at 14x14, most of its time
    deep.in_channels = deep.out_channels = 256;
    deep.in_height = deep.in_width = 14;
    deep.kernel_h = deep.kernel_w = 3;
    deep.pad_top = deep.pad_bottom = deep.pad_left = deep.pad_right = 1;
    EXPECT_TRUE(co_up::xnnpack::avx512_conv_wins(deep));
  }
}

}  // namespace
