// cpu-xnnpack's LRN across channels (NHWC): the same bits as the one-channel-at-a-time loop it
// replaced (window sums in ascending channel order, d^-0.75 as 1 / (sqrt(d) * sqrt(sqrt(d)))),
// on the portable path and on the one this CPU takes (AVX-512 where it has it), and the ONNX
// formula within float rounding (cpu-reference).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ref_kernels.h"
#include "xnn_kernels.h"
#include "xnn_thread_pool.h"
#include "tests/backends/random_data.h"

namespace {

using co_up::xnnpack::CpuPool;
using co_up::xnnpack::LrnPath;
using co_up::xnnpack::Schedule;
using co_up::test::random_vector;

// One pixel, one channel at a time: the kernel's definition.
std::vector<float> lrn_by_channel(const std::vector<float>& x, int64_t pixels, int64_t channels, int64_t size,
                                  float alpha, float beta, float bias) {
  const int64_t before = (size - 1) / 2, after = size / 2;
  const float scale = alpha / static_cast<float>(size);
  std::vector<float> y(x.size());
  for (int64_t p = 0; p < pixels; ++p) {
    const float* src = x.data() + p * channels;
    for (int64_t c = 0; c < channels; ++c) {
      float s = 0.0f;
      for (int64_t cc = std::max<int64_t>(0, c - before); cc <= std::min(channels - 1, c + after); ++cc) {
        s += src[cc] * src[cc];
      }
      const float d = bias + scale * s;
      float v;
      if (beta == 0.75f) {
        const float q = std::sqrt(d);
        v = src[c] / (q * std::sqrt(q));
      } else {
        v = src[c] / std::pow(d, beta);
      }
      y[static_cast<size_t>(p * channels + c)] = v;
    }
  }
  return y;
}

TEST(XnnpackLrn, SameBitsAsChannelByChannelAndCloseToTheOnnxFormula) {
  CpuPool pool(2, {}, Schedule::kStatic);
  const int64_t pixels = 37;
  for (const int64_t channels : {1, 3, 16, 17, 64, 70}) {
    for (const int64_t size : {1, 2, 3, 4, 5, 7}) {
      for (const float beta : {0.75f, 0.5f}) {
        const std::string what = "channels " + std::to_string(channels) + " size " + std::to_string(size) +
                                 " beta " + std::to_string(beta);
        const std::vector<float> x = random_vector(size_t(pixels * channels), unsigned(channels * 10 + size), -3.0f, 3.0f);
        const float alpha = 1e-2f, bias = 1.5f;
        const std::vector<float> exact = lrn_by_channel(x, pixels, channels, size, alpha, beta, bias);
        std::vector<float> y(x.size(), -1.0f);
        for (const LrnPath path : {LrnPath::kPortable, LrnPath::kAuto}) {
          std::fill(y.begin(), y.end(), -1.0f);
          co_up::xnnpack::lrn_nhwc(x.data(), y.data(), pixels, channels, size, alpha, beta, bias, pool, path);
          for (size_t i = 0; i < y.size(); ++i) {
            ASSERT_EQ(y[i], exact[i]) << what << (path == LrnPath::kAuto ? " auto" : " portable") << " element " << i;
          }
        }

        std::vector<float> nchw(x.size()), want(x.size());
        for (int64_t p = 0; p < pixels; ++p) {
          for (int64_t c = 0; c < channels; ++c) nchw[size_t(c * pixels + p)] = x[size_t(p * channels + c)];
        }
        co_up::reference::lrn(nchw.data(), want.data(), 1, channels, pixels, size, alpha, beta, bias, nullptr);
        for (int64_t p = 0; p < pixels; ++p) {
          for (int64_t c = 0; c < channels; ++c) {
            const float w = want[size_t(c * pixels + p)];
            ASSERT_NEAR(y[size_t(p * channels + c)], w, 1e-6f * std::abs(w)) << what << " pixel " << p << " channel " << c;
          }
        }
      }
    }
  }
}

}  // namespace
