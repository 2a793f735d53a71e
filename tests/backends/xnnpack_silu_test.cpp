// cpu-xnnpack's SiLU: the stand-alone step (xnn_silu.h) against x / (1 + e^-x) in double
// precision, and a SiLU fused into a convolution's epilogue (the AVX-512 convolution, the own
// depthwise kernel) equal, bit for bit, to the same convolution followed by the stand-alone step,
// so a sub-graph boundary between the two cannot change a result.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "avx512_conv.h"
#include "xnn_depthwise.h"
#include "xnn_silu.h"
#include "xnn_thread_pool.h"
#include "tests/backends/random_data.h"

namespace {

using co_up::backends::Conv2dShape;
using co_up::xnnpack::CpuPool;
using co_up::xnnpack::Schedule;
using co_up::test::random_symmetric;

TEST(XnnpackSilu, MatchesTheFormula) {
  std::vector<float> x = random_symmetric(1000, 12.0f, 3);
  x.insert(x.end(), {0.0f, -0.0f, 100.0f, -100.0f, 88.5f, -88.5f, 1e-30f});
  std::vector<float> y(x.size(), -1.0f);
  CpuPool pool(2, {}, Schedule::kStatic);
  co_up::xnnpack::silu_nc(x.data(), y.data(), static_cast<int64_t>(x.size()), pool);
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = double(x[i]) / (1.0 + std::exp(-double(x[i])));
    ASSERT_NEAR(y[i], want, 1e-6 * std::abs(want) + 1e-30) << "x = " << x[i];
  }
  std::vector<float> in_place = x;
  co_up::xnnpack::silu_nc(in_place.data(), in_place.data(), static_cast<int64_t>(x.size()), pool);
  EXPECT_EQ(in_place, y);
}

TEST(XnnpackSilu, DepthwiseFusedEqualsUnfused) {
  Conv2dShape s;
  s.in_channels = s.out_channels = s.group = 40;
  s.in_height = 11;
  s.in_width = 13;
  s.kernel_h = s.kernel_w = 7;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 3;
  const std::vector<float> x = random_symmetric(size_t(11 * 13 * 40), 1.0f, 4);
  const std::vector<float> w = random_symmetric(size_t(40 * 49), 0.5f, 5);
  const std::vector<float> b = random_symmetric(40, 1.0f, 6);
  std::vector<float> fused(x.size()), unfused(x.size());
  CpuPool pool(1, {}, Schedule::kStatic);
  constexpr float kInf = INFINITY;
  co_up::xnnpack::DepthwiseConvolution(s, w.data(), b.data(), -kInf, kInf, 0, x.data(), fused.data(), true).run(pool);
  co_up::xnnpack::DepthwiseConvolution(s, w.data(), b.data(), -kInf, kInf, 0, x.data(), unfused.data(), false).run(pool);
  co_up::xnnpack::silu_nc(unfused.data(), unfused.data(), static_cast<int64_t>(unfused.size()), pool);
  EXPECT_EQ(fused, unfused);
}

TEST(XnnpackSilu, Avx512ConvolutionFusedEqualsUnfused) {
  if (!co_up::xnnpack::avx512_gemm_available()) {
    GTEST_SKIP() << "this CPU has no AVX-512: the backend never fuses SiLU into a convolution here";
  }
  Conv2dShape s;
  s.in_channels = 64;
  s.out_channels = 96;
  s.in_height = s.in_width = 10;
  s.kernel_h = s.kernel_w = 3;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
  const std::vector<float> x = random_symmetric(size_t(100 * 64), 1.0f, 7);
  const std::vector<float> w = random_symmetric(size_t(96 * 64 * 9), 0.1f, 8);
  const std::vector<float> b = random_symmetric(96, 1.0f, 9);
  std::vector<float> fused(size_t(100 * 96)), unfused(size_t(100 * 96));
  CpuPool pool(1, {}, Schedule::kStatic);
  co_up::xnnpack::F32ConvParams params{w.data(), b.data()};
  co_up::xnnpack::Avx512Convolution(s, params, x.data(), unfused.data()).run(pool);
  params.silu = true;
  co_up::xnnpack::Avx512Convolution(s, params, x.data(), fused.data()).run(pool);
  co_up::xnnpack::silu_nc(unfused.data(), unfused.data(), static_cast<int64_t>(unfused.size()), pool);
  EXPECT_EQ(fused, unfused);
}

}  // namespace
