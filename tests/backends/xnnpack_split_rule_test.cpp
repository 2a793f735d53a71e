// cpu-xnnpack's split rule (backends/xnnpack/xnn_sliced_ops.h, slice_count): a layer is cut over
// the pool's threads only where the time the other threads save exceeds the measured cost of a
// split, into a multiple of the thread count (so no thread gets one slice more than another);
// layers with fewer output rows than threads (squeeze-excite 1x1 convolutions over one pixel) are
// cut into ranges of output channels, with the bits of one operator; and the layers of
// MobileNetV2/V3 that ran on one thread before are now split; pooling (which ran on the caller
// alone) is cut into bands of output rows with the bits of one operator; and the pool's own
// parallel_for cuts its range into chunks of near-equal size, an even number of them on two threads.
#include <gtest/gtest.h>

#include <xnnpack.h>

#include <algorithm>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "xnn_common.h"
#include "xnn_sliced_ops.h"
#include "xnn_thread_pool.h"

namespace {

using co_up::backends::Conv2dShape;
using co_up::xnnpack::conv_row_slice;
using co_up::xnnpack::conv_work_us;
using co_up::xnnpack::dense_conv_work_us;
using co_up::xnnpack::ConvRowSlice;
using co_up::xnnpack::CpuPool;
using co_up::xnnpack::pass_work_us;
using co_up::xnnpack::Schedule;
using co_up::xnnpack::slice_count;
using co_up::xnnpack::SlicedOperator;
using co_up::xnnpack::SliceRange;
using co_up::xnnpack::split_cost_us;
using co_up::xnnpack::XnnOperator;

std::vector<float> random_floats(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count + 64);  // slack: XNNPACK may read past the end
  for (float& f : v) f = dist(rng);
  return v;
}

Conv2dShape depthwise3x3(int64_t channels, int64_t out_hw, int64_t stride) {
  Conv2dShape s;
  s.in_channels = s.out_channels = s.group = channels;
  s.in_height = s.in_width = out_hw * stride;
  s.kernel_h = s.kernel_w = 3;
  s.stride_h = s.stride_w = stride;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
  return s;
}

class SplitRule : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { co_up::xnnpack::initialize_xnnpack("(test)"); }
};

TEST(SplitRuleCount, OneThreadOrOneUnitKeepsTheLayerWhole) {
  EXPECT_EQ(slice_count(1000.0, 100, 1), 1);
  EXPECT_EQ(slice_count(1000.0, 1, 2), 1);
}

TEST(SplitRuleCount, SplitsExactlyWhereTheSavedTimeExceedsTheSplitCost) {
  const double cost = split_cost_us();
  ASSERT_GT(cost, 0.0);
  // Two threads save half the layer: a split pays above twice its cost.
  EXPECT_EQ(slice_count(2.0 * cost * 0.99, 100, 2), 1);
  EXPECT_EQ(slice_count(2.0 * cost * 1.01, 100, 2), 2);
  // Four threads save three quarters: above 4/3 of the cost.
  EXPECT_EQ(slice_count(4.0 / 3.0 * cost * 0.99, 100, 4), 1);
  EXPECT_EQ(slice_count(4.0 / 3.0 * cost * 1.01, 100, 4), 4);
}

TEST(SplitRuleCount, SlicesAreAMultipleOfTheThreadCountAndAtMostEight) {
  for (int threads : {2, 3, 4}) {
    for (double us = 1.0; us < 5000.0; us *= 1.3) {
      for (int64_t extent : {7, 14, 28, 56, 112}) {
        const int64_t n = slice_count(us, extent, threads);
        ASSERT_GE(n, 1);
        ASSERT_LE(n, 8) << us << " us over " << extent << ", " << threads << " threads";
        if (n > 1) {
          EXPECT_EQ(n % threads, 0) << us << " us over " << extent << ", " << threads << " threads";
        }
      }
    }
  }
  // Fewer units than threads: one slice per unit.
  EXPECT_EQ(slice_count(1000.0, 3, 4), 3);
  // A long layer keeps extra slices per thread (a late thread still gets a share), a short one
  // only one per thread: each extra slice must be at least 20 split costs long.
  EXPECT_EQ(slice_count(2.0 * 20.0 * split_cost_us() * 0.99, 100, 2), 2);
  EXPECT_EQ(slice_count(4.0 * 20.0 * split_cost_us() * 1.01, 100, 2), 4);
}

TEST_F(SplitRule, MobileNetLayersThatRanOnOneThreadAreSplitEvenly) {
  const std::vector<float> w = random_floats(9 * 960, 1), b = random_floats(960, 2);
  const std::vector<float> x = random_floats(14 * 14 * 960, 3);
  std::vector<float> y(14 * 14 * 960 + 64);
  // 960 x 7 x 7 depthwise (MobileNetV2's last blocks, 0.42 M MACs: whole before): two bands.
  const Conv2dShape small = depthwise3x3(960, 7, 1);
  EXPECT_EQ(SlicedOperator::convolution(small, w.data(), b.data(), 0, 6, 0, x.data(), y.data(), 960, "t", 0, 2)
                .slices(),
            2);
  EXPECT_EQ(SlicedOperator::convolution(small, w.data(), b.data(), 0, 6, 0, x.data(), y.data(), 960, "t", 0, 1)
                .slices(),
            1);
  // 576 x 14 x 14 depthwise (1.0 M MACs: three slices before, one thread ran two): even.
  const Conv2dShape mid = depthwise3x3(576, 14, 1);
  EXPECT_EQ(SlicedOperator::convolution(mid, w.data(), b.data(), 0, 6, 0, x.data(), y.data(), 576, "t", 0, 2)
                    .slices() % 2,
            0);
  // A pass over 47 K elements (MobileNetV3's HardSwish at 240 x 14 x 14): two ranges.
  // A HardSwish pass over `count` elements, as cpu-xnnpack cuts it for a pool of two threads.
  auto hardswish_pass = [&](int64_t count) {
    return SlicedOperator::per_range(
        count, 1,
        [&](SliceRange r, xnn_operator_t* op) {
          const size_t n = size_t(r.end - r.begin);
          xnn_status st = xnn_create_hardswish_nc_f32(n, n, n, 0u, op);
          if (st == xnn_status_success) st = xnn_setup_hardswish_nc_f32(*op, 1, x.data() + r.begin, y.data() + r.begin, nullptr);
          return st;
        },
        "t", 0, 2);
  };
  const auto hardswish = hardswish_pass(240 * 14 * 14);
  EXPECT_EQ(hardswish.slices(), 2);
  // Too short to pay: a 4 K-element pass stays whole.
  ASSERT_LT(pass_work_us(4096), 2.0 * split_cost_us());
  const auto tiny = hardswish_pass(4096);
  EXPECT_EQ(tiny.slices(), 1);
  EXPECT_GT(conv_work_us(small.out_channels * 49 * 9), 2.0 * split_cost_us());
}

// A 1x1 convolution over one pixel (squeeze-excite) has one output row: it is cut into ranges of
// output channels on two threads, and gives the bits of one operator however it is cut.
TEST_F(SplitRule, OnePixelConvolutionIsCutIntoChannelRangesWithTheBitsOfOneOperator) {
  struct Case {
    int64_t cin, cout, hw, extra_stride;
  };
  for (const Case& k : std::vector<Case>{{960, 240, 1, 0}, {240, 960, 1, 0}, {40, 100, 1, 8}, {672, 168, 1, 0}}) {
    Conv2dShape s;
    s.in_channels = k.cin;
    s.out_channels = k.cout;
    s.in_height = s.in_width = k.hw;
    const int64_t y_stride = k.cout + k.extra_stride;
    const auto x = random_floats(size_t(k.cin), 4);
    const auto w = random_floats(size_t(k.cout * k.cin), 5);
    const auto b = random_floats(size_t(k.cout), 6);
    std::vector<float> whole(size_t(y_stride) + 64, 7.0f);
    xnn_operator_t raw = nullptr;
    ASSERT_EQ(xnn_create_convolution2d_nhwc_f32(0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, size_t(k.cin), size_t(k.cout),
                                                size_t(k.cin), size_t(y_stride), w.data(), b.data(), 0.0f,
                                                1e30f, 0, &raw),
              xnn_status_success);
    const XnnOperator op(raw);
    ASSERT_EQ(xnn_setup_convolution2d_nhwc_f32(op.get(), 1, 1, 1, x.data(), whole.data(), nullptr),
              xnn_status_success);
    ASSERT_EQ(xnn_run_operator(op.get(), nullptr), xnn_status_success);
    const bool pays = dense_conv_work_us(k.cin * k.cout, k.cin * k.cout) > 2.0 * split_cost_us();
    for (int threads : {1, 2}) {
      const CpuPool pool(threads, {}, Schedule::kDynamic);
      std::vector<float> y(whole.size(), 7.0f);  // 7.0 in the gaps must survive
      const SlicedOperator chosen = SlicedOperator::convolution(s, w.data(), b.data(), 0.0f, 1e30f, 0,
                                                                x.data(), y.data(), y_stride, "t", 0, threads);
      EXPECT_EQ(chosen.slices(), threads == 2 && pays ? 2 : 1) << k.cin << "->" << k.cout << ", " << threads;
      chosen.run(pool);
      ASSERT_EQ(y, whole) << k.cin << "->" << k.cout << ", " << threads << " threads";
      for (int64_t slices = 1; slices <= 9; ++slices) {
        std::vector<float> yc(whole.size(), 7.0f);
        const SlicedOperator cut = SlicedOperator::convolution_channels(s, w.data(), b.data(), 0.0f, 1e30f, 0,
                                                                        x.data(), yc.data(), y_stride, "t", slices);
        cut.run(pool);
        ASSERT_EQ(yc, whole) << k.cin << "->" << k.cout << ", " << slices << " slices, " << threads << " threads";
      }
    }
  }
}

// A dense (group 1) convolution reuses its weights over its pixels and runs several times faster
// per multiply-add than a depthwise one; estimated at the depthwise rate, MobileNetV3-L's 1x1
// expansions at 14x14 and 28x28 (25-60 us on one thread) were cut into six or eight ranges of
// channels (the rows did not divide into that many bands), each re-reading the whole input and
// applying its HardSwish over strided rows, and GoogLeNet's 1x1 layers into four to six uneven
// bands. Now: two bands of rows on two threads, with the bits of one operator.
TEST_F(SplitRule, DenseConvolutionsAreCutIntoAsManyBandsAsTheirTimePays) {
  struct Case {
    int64_t cin, cout, hw, k;
    int64_t slices;  // as the rule cuts it for two threads
  };
  for (const Case& k : std::vector<Case>{{80, 200, 14, 1, 2},    // MobileNetV3-L, Conv + HardSwish
                                         {40, 240, 28, 1, 2},    // MobileNetV3-L, Conv + HardSwish
                                         {512, 32, 14, 1, 2},    // GoogLeNet 4b-4d
                                         {832, 48, 7, 1, 2},     // GoogLeNet 5b: 4 + 3 rows, not 16 + 32 channels
                                         {16, 96, 112, 1, 4},    // MobileNetV2: 4 bands of 28 rows, not 6 uneven
                                         {3, 16, 112, 3, 2}}) {  // MobileNetV3-L's stem (stride 1 here)
    Conv2dShape s;
    s.in_channels = k.cin;
    s.out_channels = k.cout;
    s.in_height = s.in_width = k.hw;
    s.kernel_h = s.kernel_w = k.k;
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = k.k / 2;
    const auto x = random_floats(size_t(k.hw * k.hw * k.cin), 21);
    const auto w = random_floats(size_t(k.cout * k.k * k.k * k.cin), 22);  // OHWI
    const auto b = random_floats(size_t(k.cout), 23);
    const size_t out = size_t(k.hw * k.hw * k.cout) + 64;
    std::vector<float> whole(out, 7.0f);
    const CpuPool one(1, {}, Schedule::kDynamic);
    SlicedOperator::convolution(s, w.data(), b.data(), 0.0f, 6.0f, 0, x.data(), whole.data(), k.cout, "t", 1)
        .run(one);
    for (bool hardswish : {false, true}) {
      std::vector<float> reference(out, 7.0f);
      SlicedOperator::convolution(s, w.data(), b.data(), 0.0f, 6.0f, 0, x.data(), reference.data(), k.cout, "t",
                                  1, 1, hardswish)
          .run(one);
      std::vector<float> y(out, 7.0f);
      const SlicedOperator chosen = SlicedOperator::convolution(s, w.data(), b.data(), 0.0f, 6.0f, 0, x.data(),
                                                                y.data(), k.cout, "t", 0, 2, hardswish);
      EXPECT_EQ(chosen.slices(), k.slices) << k.cin << "->" << k.cout << " at " << k.hw;
      const CpuPool two(2, {}, Schedule::kDynamic);
      chosen.run(two);
      ASSERT_EQ(y, reference) << k.cin << "->" << k.cout << " at " << k.hw << (hardswish ? " + HardSwish" : "");
      if (!hardswish) ASSERT_EQ(y, whole);
    }
  }
}

// Depthwise (3x3, 5x5 with stride 2) and dense convolutions whose rows do not divide into the
// bands (7 rows) are cut into ranges of output channels: the bits of one operator, cut into 1..9
// ranges on one and two threads, and as the split rule chooses on two threads.
TEST_F(SplitRule, ChannelRangesOfDepthwiseAndDenseConvolutionsGiveTheBitsOfOneOperator) {
  struct Case {
    int64_t cin, cout, group, hw, k, stride, extra_stride;
  };
  for (const Case& k : std::vector<Case>{{960, 960, 960, 7, 3, 1, 0},
                                         {1152, 1152, 1152, 7, 5, 1, 0},
                                         {100, 100, 100, 14, 5, 2, 8},
                                         {64, 80, 1, 7, 3, 1, 0}}) {
    Conv2dShape s;
    s.in_channels = k.cin;
    s.out_channels = k.cout;
    s.group = k.group;
    s.in_height = s.in_width = k.hw;
    s.kernel_h = s.kernel_w = k.k;
    s.stride_h = s.stride_w = k.stride;
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = k.k / 2;
    const int64_t oh = s.out_height(), ow = s.out_width();
    const int64_t y_stride = k.cout + k.extra_stride;
    const int64_t taps = k.k * k.k, gin = k.cin / k.group;
    const auto x = random_floats(size_t(k.hw * k.hw * k.cin), 11);
    const auto w = random_floats(size_t(k.cout * taps * gin), 12);  // OHWI
    const auto b = random_floats(size_t(k.cout), 13);
    std::vector<float> whole(size_t(oh * ow * y_stride) + 64, 7.0f);
    xnn_operator_t raw = nullptr;
    ASSERT_EQ(xnn_create_convolution2d_nhwc_f32(uint32_t(s.pad_top), uint32_t(s.pad_right), uint32_t(s.pad_bottom),
                                                uint32_t(s.pad_left), uint32_t(k.k), uint32_t(k.k),
                                                uint32_t(k.stride), uint32_t(k.stride), 1, 1, uint32_t(k.group),
                                                size_t(gin), size_t(k.cout / k.group), size_t(k.cin),
                                                size_t(y_stride), w.data(), b.data(), 0.0f, 6.0f, 0, &raw),
              xnn_status_success);
    const XnnOperator op(raw);
    ASSERT_EQ(xnn_setup_convolution2d_nhwc_f32(op.get(), 1, size_t(k.hw), size_t(k.hw), x.data(), whole.data(), nullptr),
              xnn_status_success);
    ASSERT_EQ(xnn_run_operator(op.get(), nullptr), xnn_status_success);
    for (int threads : {1, 2}) {
      const CpuPool pool(threads, {}, Schedule::kDynamic);
      std::vector<float> y(whole.size(), 7.0f);
      const SlicedOperator chosen = SlicedOperator::convolution(s, w.data(), b.data(), 0.0f, 6.0f, 0, x.data(),
                                                                y.data(), y_stride, "t", 0, threads);
      if (threads == 1) {
        EXPECT_EQ(chosen.slices(), 1);
      } else if (oh % 2 == 1) {
        EXPECT_EQ(chosen.slices() % 2, 0) << k.cin << " " << k.k << "x" << k.k;
      }
      chosen.run(pool);
      ASSERT_EQ(y, whole) << k.cin << "->" << k.cout << " g" << k.group << " " << k.k << "x" << k.k << ", "
                          << threads << " threads, as chosen";
      for (int64_t slices = 1; slices <= 9; ++slices) {
        std::vector<float> yc(whole.size(), 7.0f);
        const SlicedOperator cut = SlicedOperator::convolution_channels(s, w.data(), b.data(), 0.0f, 6.0f, 0,
                                                                        x.data(), yc.data(), y_stride, "t", slices);
        cut.run(pool);
        ASSERT_EQ(yc, whole) << k.cin << "->" << k.cout << " g" << k.group << " " << k.k << "x" << k.k << ", "
                             << slices << " slices, " << threads << " threads";
      }
    }
  }
}

// Max pooling (3x3 stride 1 padded, as in GoogLeNet's inception branches; 3x3 stride 2 with the
// extra bottom/right padding of ceil mode) and unpadded average pooling, cut into 1..7 bands of
// output rows on one and two threads: the bits of one operator over the whole image.
TEST_F(SplitRule, PoolingBandsGiveTheBitsOfOneOperator) {
  struct PoolCase {
    bool average;
    int64_t c, h, w, k, stride, pt, pl, pb, pr;
  };
  for (const PoolCase& k : std::vector<PoolCase>{{false, 48, 28, 28, 3, 1, 1, 1, 1, 1},
                                                 {false, 40, 56, 55, 3, 2, 0, 0, 1, 0},
                                                 {false, 24, 13, 13, 2, 2, 0, 0, 1, 1},
                                                 {true, 32, 14, 14, 2, 2, 0, 0, 0, 0},
                                                 {true, 16, 9, 9, 3, 1, 0, 0, 0, 0}}) {
    Conv2dShape window;
    window.in_channels = window.out_channels = k.c;
    window.in_height = k.h;
    window.in_width = k.w;
    window.kernel_h = window.kernel_w = k.k;
    window.stride_h = window.stride_w = k.stride;
    window.pad_top = k.pt;
    window.pad_left = k.pl;
    window.pad_bottom = k.pb;
    window.pad_right = k.pr;
    const int64_t oh = window.out_height(), ow = window.out_width();
    const auto x = random_floats(size_t(k.h * k.w * k.c), 9);
    const size_t ch = size_t(k.c);
    auto make = [&](const float* in, float* out, int64_t rows, int64_t pt, int64_t pb, xnn_operator_t* op) {
      xnn_status st = k.average ? xnn_create_average_pooling2d_nhwc_f32(0, 0, 0, 0, uint32_t(k.k), uint32_t(k.k),
                                                                       uint32_t(k.stride), uint32_t(k.stride), ch,
                                                                       ch, ch, -1e30f, 1e30f, 0, op)
                                : xnn_create_max_pooling2d_nhwc_f32(uint32_t(pt), uint32_t(k.pr), uint32_t(pb),
                                                                   uint32_t(k.pl), uint32_t(k.k), uint32_t(k.k),
                                                                   uint32_t(k.stride), uint32_t(k.stride), 1, 1, ch,
                                                                   ch, ch, -1e30f, 1e30f, 0, op);
      if (st != xnn_status_success) return st;
      return k.average ? xnn_setup_average_pooling2d_nhwc_f32(*op, 1, size_t(rows), size_t(k.w), in, out, nullptr)
                       : xnn_setup_max_pooling2d_nhwc_f32(*op, 1, size_t(rows), size_t(k.w), in, out, nullptr);
    };
    std::vector<float> whole(size_t(oh * ow * k.c) + 64, 7.0f);
    xnn_operator_t raw = nullptr;
    ASSERT_EQ(make(x.data(), whole.data(), k.h, k.pt, k.pb, &raw), xnn_status_success) << k.h << "x" << k.w;
    const XnnOperator op(raw);
    ASSERT_EQ(xnn_run_operator(op.get(), nullptr), xnn_status_success);
    for (int threads : {1, 2}) {
      const CpuPool pool(threads, {}, Schedule::kDynamic);
      for (int64_t slices = 1; slices <= 7; ++slices) {
        std::vector<float> y(whole.size(), 7.0f);
        const SlicedOperator bands = SlicedOperator::row_bands(
            window, 0.0,
            [&](SliceRange band, const ConvRowSlice& cut, xnn_operator_t* band_op) {
              return make(x.data() + cut.in_begin * k.w * k.c, y.data() + band.begin * ow * k.c, cut.in_rows,
                          cut.pad_top, cut.pad_bottom, band_op);
            },
            "t", slices, threads);
        EXPECT_EQ(bands.slices(), std::min(slices, oh));
        bands.run(pool);
        ASSERT_EQ(y, whole) << (k.average ? "average " : "max ") << k.h << "x" << k.w << " k" << k.k << " s"
                            << k.stride << ", " << slices << " slices, " << threads << " threads";
      }
    }
    // The split rule: a pass long enough is cut in two on two threads, kept whole on one.
    std::vector<float> y(whole.size());
    const auto real = [&](SliceRange band, const ConvRowSlice& cut, xnn_operator_t* band_op) {
      return make(x.data() + cut.in_begin * k.w * k.c, y.data() + band.begin * ow * k.c, cut.in_rows, cut.pad_top,
                  cut.pad_bottom, band_op);
    };
    EXPECT_EQ(SlicedOperator::row_bands(window, 40.0, real, "t", 0, 2).slices(), std::min<int64_t>(2, oh));
    EXPECT_EQ(SlicedOperator::row_bands(window, 40.0, real, "t", 0, 1).slices(), 1);
    EXPECT_EQ(SlicedOperator::row_bands(window, split_cost_us(), real, "t", 0, 2).slices(), 1);
  }
}

TEST(SplitRuleChunks, ParallelForChunksAreNearEqualAndEvenOnTwoThreads) {
  const CpuPool pool(2, {}, Schedule::kDynamic);
  for (int64_t count : {42, 33, 100, 9, 100003}) {
    for (int64_t align : {1, 16}) {
      std::vector<std::pair<int64_t, int64_t>> ranges;
      std::mutex m;
      pool.parallel_for(count, align, 1, [&](int64_t b, int64_t e) {
        const std::lock_guard lock(m);
        ranges.emplace_back(b, e);
      });
      std::sort(ranges.begin(), ranges.end());
      const int64_t blocks = (count + align - 1) / align;
      ASSERT_EQ(int64_t(ranges.size()), std::min<int64_t>(blocks, 8)) << count << " / " << align;
      int64_t covered = 0, smallest = count, largest = 0;
      for (const auto& [b, e] : ranges) {
        EXPECT_EQ(b, covered);
        EXPECT_EQ(b % align, 0);
        covered = e;
        if (e != count) {  // the last range may end in a partial block
          smallest = std::min(smallest, (e - b) / align);
          largest = std::max(largest, (e - b) / align);
        }
      }
      EXPECT_EQ(covered, count);
      if (ranges.size() > 2) {
        EXPECT_LE(largest - smallest, 1) << count << " / " << align << ": chunks of near-equal size";
      }
    }
  }
}

}  // namespace
