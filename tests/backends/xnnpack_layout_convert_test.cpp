// cpu-xnnpack's layout conversions at the sub-graph boundary (nchw_to_nhwc, nhwc_to_nchw): an
// image of few channels (an RGB input) is cut into ranges of pixels over the pool, one of many
// channels into tiles of rows; either way, on one and two threads, the result is the transpose.
#include <gtest/gtest.h>

#include <vector>

#include "xnn_kernels.h"
#include "xnn_thread_pool.h"

namespace {

using co_up::xnnpack::CpuPool;
using co_up::xnnpack::Schedule;

std::vector<float> numbered(size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>(i) + 0.25f;
  return v;
}

TEST(XnnpackLayoutConvert, NchwToNhwcAndBackAreTransposesOnOneAndTwoThreads) {
  struct Case {
    int64_t batch, channels, plane;
  };
  // 3 channels over 224x224 and 320x320 (the networks' inputs: the four-pixel SSE path and the
  // pool's ranges), plane sizes that leave a partial range and a partial group of four, one
  // pixel, and channel counts around the few-planes threshold.
  for (const Case& k : std::vector<Case>{{1, 3, 224 * 224}, {1, 3, 320 * 320}, {2, 3, 1025 * 3 + 2},
                                         {1, 3, 7}, {1, 3, 1}, {2, 1, 5000}, {1, 2, 4099}, {1, 4, 2047},
                                         {1, 7, 9001}, {1, 8, 3001}, {2, 64, 197}, {1, 1000, 1}}) {
    const int64_t count = k.batch * k.channels * k.plane;
    const std::vector<float> x = numbered(static_cast<size_t>(count));
    std::vector<float> want(x.size());
    for (int64_t n = 0; n < k.batch; ++n) {
      for (int64_t c = 0; c < k.channels; ++c) {
        for (int64_t p = 0; p < k.plane; ++p) {
          want[static_cast<size_t>((n * k.plane + p) * k.channels + c)] =
              x[static_cast<size_t>((n * k.channels + c) * k.plane + p)];
        }
      }
    }
    for (int threads : {1, 2}) {
      for (Schedule schedule : {Schedule::kDynamic, Schedule::kStatic}) {
        const CpuPool pool(threads, {}, schedule);
        std::vector<float> nhwc(x.size(), -1.0f), back(x.size(), -1.0f);
        co_up::xnnpack::nchw_to_nhwc(x.data(), nhwc.data(), k.batch, k.channels, k.plane, pool);
        ASSERT_EQ(nhwc, want) << k.batch << "x" << k.channels << "x" << k.plane << ", " << threads << " threads";
        co_up::xnnpack::nhwc_to_nchw(nhwc.data(), back.data(), k.batch, k.channels, k.plane, pool);
        ASSERT_EQ(back, x) << k.batch << "x" << k.channels << "x" << k.plane << ", " << threads << " threads";
      }
    }
  }
}

}  // namespace
