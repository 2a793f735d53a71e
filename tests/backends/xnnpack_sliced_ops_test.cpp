// cpu-xnnpack's sliced XNNPACK operators (backends/xnnpack/xnn_sliced_ops.h): the rows a band of
// output rows reads, checked by hand; and a convolution or fully connected layer cut into 1..9
// slices gives exactly the bits of one XNNPACK operator over the whole layer — depthwise 3x3 and
// 5x5 with stride and asymmetric padding, dilation, a 3-channel stem, an output that is a slice
// of a wider tensor, batches of 2 and 3 cut per image, padding taller than the kernel — on one
// thread and on two; and so do element-wise operators (HardSwish, Sigmoid, Clamp) cut into ranges
// of elements and global average pooling cut into ranges of channels; and a convolution with a
// HardSwish epilogue, cut any of those ways, gives the bits of the convolution then HardSwish.
#include <gtest/gtest.h>

#include <xnnpack.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "xnn_common.h"
#include "xnn_sliced_ops.h"
#include "xnn_thread_pool.h"

namespace {

using co_up::backends::Conv2dShape;
using co_up::xnnpack::conv_row_slice;
using co_up::xnnpack::ConvRowSlice;
using co_up::xnnpack::CpuPool;
using co_up::xnnpack::Schedule;
using co_up::xnnpack::SlicedOperator;
using co_up::xnnpack::SliceRange;
using co_up::xnnpack::split_range;
using co_up::xnnpack::XnnOperator;

std::vector<float> random_floats(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count + 64);  // slack: XNNPACK may read past the end
  for (float& f : v) f = dist(rng);
  return v;
}

class SlicedOps : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { co_up::xnnpack::initialize_xnnpack("(test)"); }
};

TEST(SliceRanges, SplitIsNearEqualAlignedAndCoversTheExtent) {
  const auto rows = split_range(10, 3, 1);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].begin, 0);
  EXPECT_EQ(rows[0].end, 3);
  EXPECT_EQ(rows[1].end, 6);
  EXPECT_EQ(rows[2].end, 10);
  // 100 channels in blocks of 16 (7 blocks) over 3 slices: 2, 2 and 3 blocks, the last ragged.
  const auto channels = split_range(100, 3, 16);
  ASSERT_EQ(channels.size(), 3u);
  EXPECT_EQ(channels[0].end, 32);
  EXPECT_EQ(channels[1].begin, 32);
  EXPECT_EQ(channels[1].end, 64);
  EXPECT_EQ(channels[2].end, 100);
  // Never more slices than blocks.
  EXPECT_EQ(split_range(20, 8, 16).size(), 2u);
}

TEST(SliceRanges, ConvRowBandReadsWhatItsRowsNeed) {
  Conv2dShape s;  // 3x3, stride 2, padding 1 above and below, 7 input rows: 4 output rows
  s.in_height = s.in_width = 7;
  s.in_channels = s.out_channels = 1;
  s.kernel_h = s.kernel_w = 3;
  s.stride_h = s.stride_w = 2;
  s.pad_top = s.pad_bottom = s.pad_left = s.pad_right = 1;
  ASSERT_EQ(s.out_height(), 4);
  // Output rows 0-1 read padded rows -1..3: input rows 0..3 and the top padding row.
  const ConvRowSlice top = conv_row_slice(s, {0, 2});
  EXPECT_EQ(top.in_begin, 0);
  EXPECT_EQ(top.in_rows, 4);
  EXPECT_EQ(top.pad_top, 1);
  EXPECT_EQ(top.pad_bottom, 0);
  // Output rows 2-3 read padded rows 3..7: input rows 3..6 and the bottom padding row.
  const ConvRowSlice bottom = conv_row_slice(s, {2, 4});
  EXPECT_EQ(bottom.in_begin, 3);
  EXPECT_EQ(bottom.in_rows, 4);
  EXPECT_EQ(bottom.pad_top, 0);
  EXPECT_EQ(bottom.pad_bottom, 1);
  // Dilation 2 widens the band: output row 1 (stride 1 now) reads rows 0, 2 and 4.
  s.stride_h = 1;
  s.dilation_h = 2;
  s.pad_top = s.pad_bottom = 2;
  const ConvRowSlice dilated = conv_row_slice(s, {1, 2});
  EXPECT_EQ(dilated.in_begin, 0);
  EXPECT_EQ(dilated.in_rows, 4);
  EXPECT_EQ(dilated.pad_top, 1);
  EXPECT_EQ(dilated.pad_bottom, 0);
}

struct ConvCase {
  int64_t n, cin, cout, group, h, w, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, extra_stride;
  float lo, hi;
  bool padding_only_bands = false;  // some cuts would read nothing but padding: kept whole
};

Conv2dShape shape_of(const ConvCase& k) {
  Conv2dShape s;
  s.batch = k.n;
  s.in_channels = k.cin;
  s.out_channels = k.cout;
  s.group = k.group;
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

std::string describe(const ConvCase& k) {
  char text[220];
  std::snprintf(text, sizeof(text), "N%lld C%lld->%lld g%lld %lldx%lld k%lldx%lld s%lldx%lld p%lld,%lld,%lld,%lld d%lldx%lld +%lld",
                (long long)k.n, (long long)k.cin, (long long)k.cout, (long long)k.group,
                (long long)k.h, (long long)k.w, (long long)k.kh, (long long)k.kw, (long long)k.sh,
                (long long)k.sw, (long long)k.pt, (long long)k.pl, (long long)k.pb,
                (long long)k.pr, (long long)k.dh, (long long)k.dw, (long long)k.extra_stride);
  return text;
}

TEST_F(SlicedOps, ConvolutionBandsGiveTheBitsOfOneOperator) {
  constexpr float kInf = 1e30f;
  const std::vector<ConvCase> cases = {
      {1, 32, 32, 32, 28, 28, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0.0f, 6.0f},      // depthwise 3x3
      {1, 24, 24, 24, 29, 31, 3, 3, 2, 2, 0, 1, 1, 0, 1, 1, 0, -kInf, kInf},     // stride 2, asymmetric
      {1, 40, 40, 40, 27, 27, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 0, -kInf, kInf},     // depthwise 5x5
      {1, 16, 16, 16, 20, 20, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 0, -kInf, kInf},     // dilation 2
      {1, 3, 16, 1, 33, 33, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, -kInf, kInf},       // 3-channel stem
      {1, 20, 24, 1, 15, 15, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 8, -1.0f, 1.0f},      // 1x1 into a slice
      {2, 16, 16, 16, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, -kInf, kInf},     // batch 2: per image
      {3, 8, 8, 8, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, -kInf, kInf},          // batch 3, stride 2
      {1, 8, 8, 1, 3, 3, 1, 1, 1, 1, 2, 0, 2, 0, 1, 1, 0, -kInf, kInf, true},    // padding taller than the kernel
  };
  for (const ConvCase& k : cases) {
    const Conv2dShape s = shape_of(k);
    const int64_t y_stride = k.cout + k.extra_stride;
    const int64_t out_pixels = k.n * s.out_height() * s.out_width();
    const auto x = random_floats(size_t(k.n * k.h * k.w * k.cin), 1);
    const auto w = random_floats(size_t(k.cout * k.kh * k.kw * (k.cin / k.group)), 2);
    const auto b = random_floats(size_t(k.cout), 3);

    // One XNNPACK operator over the whole layer, as the backend ran it before slicing.
    std::vector<float> whole(size_t(out_pixels * y_stride) + 64, 7.0f);
    xnn_operator_t raw = nullptr;
    ASSERT_EQ(xnn_create_convolution2d_nhwc_f32(
                  uint32_t(k.pt), uint32_t(k.pr), uint32_t(k.pb), uint32_t(k.pl), uint32_t(k.kh),
                  uint32_t(k.kw), uint32_t(k.sh), uint32_t(k.sw), uint32_t(k.dh), uint32_t(k.dw),
                  uint32_t(k.group), size_t(k.cin / k.group), size_t(k.cout / k.group),
                  size_t(k.cin), size_t(y_stride), w.data(), b.data(), k.lo, k.hi, 0, &raw),
              xnn_status_success)
        << describe(k);
    const XnnOperator op(raw);
    ASSERT_EQ(xnn_setup_convolution2d_nhwc_f32(op.get(), size_t(k.n), size_t(k.h), size_t(k.w),
                                               x.data(), whole.data(), nullptr),
              xnn_status_success);
    ASSERT_EQ(xnn_run_operator(op.get(), nullptr), xnn_status_success);

    for (int threads : {1, 2}) {
      const CpuPool pool(threads, {}, Schedule::kDynamic);
      for (int64_t slices = 1; slices <= 9; ++slices) {
        std::vector<float> y(whole.size(), 7.0f);  // 7.0 in the gaps must survive
        const SlicedOperator sliced = SlicedOperator::convolution(
            s, w.data(), b.data(), k.lo, k.hi, 0, x.data(), y.data(), y_stride, "test", slices);
        // Batch-1 operators per image, the slices spread over the images; one slice: one operator.
        const int64_t per_image = std::min(std::max<int64_t>(1, slices / k.n), s.out_height());
        if (!k.padding_only_bands) {
          EXPECT_EQ(sliced.slices(), slices == 1 ? 1 : k.n * per_image) << describe(k) << ", " << slices;
        } else if (slices >= s.out_height()) {
          EXPECT_EQ(sliced.slices(), 1) << describe(k) << ": a band of padding alone keeps the layer whole";
        }
        sliced.run(pool);
        ASSERT_EQ(y, whole) << describe(k) << ", " << slices << " slices, " << threads << " threads";
      }
    }
  }
}

// A convolution with a HardSwish epilogue (MobileNetV3's Conv + HardSwish, fused by the backend):
// however it is cut (bands of rows, ranges of channels, per image) and on one thread or two, the
// bits of one convolution followed by one XNNPACK HardSwish over the whole output, and the gaps of
// a wider output untouched.
TEST_F(SlicedOps, HardSwishEpilogueGivesTheBitsOfConvolutionThenHardSwish) {
  constexpr float kInf = 1e30f;
  const std::vector<ConvCase> cases = {
      {1, 200, 200, 200, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, -kInf, kInf},  // depthwise 3x3
      {1, 72, 72, 72, 15, 15, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 0, -kInf, kInf},     // 5x5, 8 rows
      {1, 40, 24, 1, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 8, -kInf, kInf},         // 1x1 into a slice
      {2, 16, 16, 16, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, -kInf, kInf},       // batch 2
  };
  for (const ConvCase& k : cases) {
    const Conv2dShape s = shape_of(k);
    const int64_t y_stride = k.cout + k.extra_stride;
    const int64_t out_pixels = k.n * s.out_height() * s.out_width();
    const auto x = random_floats(size_t(k.n * k.h * k.w * k.cin), 11);
    const auto w = random_floats(size_t(k.cout * k.kh * k.kw * (k.cin / k.group)), 12);
    const auto b = random_floats(size_t(k.cout), 13);

    std::vector<float> whole(size_t(out_pixels * y_stride) + 64, 7.0f);
    const SlicedOperator conv = SlicedOperator::convolution(s, w.data(), b.data(), k.lo, k.hi, 0, x.data(),
                                                            whole.data(), y_stride, "test", 1);
    conv.run(CpuPool(1, {}, Schedule::kDynamic));
    xnn_operator_t raw = nullptr;
    ASSERT_EQ(xnn_create_hardswish_nc_f32(size_t(k.cout), size_t(y_stride), size_t(y_stride), 0, &raw),
              xnn_status_success);
    const XnnOperator hardswish(raw);
    ASSERT_EQ(xnn_setup_hardswish_nc_f32(hardswish.get(), size_t(out_pixels), whole.data(), whole.data(), nullptr),
              xnn_status_success);
    ASSERT_EQ(xnn_run_operator(hardswish.get(), nullptr), xnn_status_success);

    for (int threads : {1, 2}) {
      const CpuPool pool(threads, {}, Schedule::kDynamic);
      // 0: as the split rule cuts it for this pool; 1..9 bands; then 2..5 channel ranges.
      for (int64_t slices = 0; slices <= 9; ++slices) {
        std::vector<float> y(whole.size(), 7.0f);
        SlicedOperator::convolution(s, w.data(), b.data(), k.lo, k.hi, 0, x.data(), y.data(), y_stride,
                                    "test", slices, threads, true)
            .run(pool);
        ASSERT_EQ(y, whole) << describe(k) << ", " << slices << " bands, " << threads << " threads";
      }
      if (k.n > 1) continue;
      for (int64_t slices = 2; slices <= 5; ++slices) {
        std::vector<float> y(whole.size(), 7.0f);
        SlicedOperator::convolution_channels(s, w.data(), b.data(), k.lo, k.hi, 0, x.data(), y.data(),
                                             y_stride, "test", slices, true)
            .run(pool);
        ASSERT_EQ(y, whole) << describe(k) << ", " << slices << " channel ranges, " << threads << " threads";
      }
    }
  }
}

TEST_F(SlicedOps, FullyConnectedChannelRangesGiveTheBitsOfOneOperator) {
  struct FcCase {
    int64_t rows, in, out;
  };
  for (const FcCase& k : std::vector<FcCase>{{1, 960, 1280}, {1, 1280, 1000}, {3, 200, 100}, {1, 64, 10}}) {
    const auto x = random_floats(size_t(k.rows * k.in), 4);
    const auto w = random_floats(size_t(k.out * k.in), 5);
    const auto b = random_floats(size_t(k.out), 6);
    std::vector<float> whole(size_t(k.rows * k.out) + 64, 7.0f);
    xnn_operator_t raw = nullptr;
    ASSERT_EQ(xnn_create_fully_connected_nc_f32(size_t(k.in), size_t(k.out), size_t(k.in), size_t(k.out),
                                                w.data(), b.data(), 0.0f, 1e30f, 0, &raw),
              xnn_status_success);
    const XnnOperator op(raw);
    ASSERT_EQ(xnn_setup_fully_connected_nc_f32(op.get(), size_t(k.rows), x.data(), whole.data(), nullptr),
              xnn_status_success);
    ASSERT_EQ(xnn_run_operator(op.get(), nullptr), xnn_status_success);
    for (int threads : {1, 2}) {
      const CpuPool pool(threads, {}, Schedule::kDynamic);
      for (int64_t slices = 1; slices <= 9; ++slices) {
        std::vector<float> y(whole.size(), 7.0f);
        const SlicedOperator sliced = SlicedOperator::fully_connected(
            k.rows, k.in, k.out, w.data(), b.data(), 0.0f, 1e30f, 0, x.data(), y.data(), "test", slices);
        sliced.run(pool);
        ASSERT_EQ(y, whole) << k.rows << "x" << k.in << "->" << k.out << ", " << slices
                            << " slices, " << threads << " threads";
      }
    }
  }
}

// One operator over everything vs SlicedOperator::per_range with 1..9 slices, 1 and 2 threads.
// make(begin, length, x, y, &op) creates and sets up an operator for `length` units from `begin`.
template <typename Make>
void expect_ranges_equal_whole(const std::string& what, int64_t extent, size_t in_size,
                               size_t out_size, Make make) {
  const auto x = random_floats(in_size, 8);
  std::vector<float> whole(out_size + 64, 7.0f);
  xnn_operator_t raw = nullptr;
  ASSERT_EQ(make(0, extent, x.data(), whole.data(), &raw), xnn_status_success) << what;
  const XnnOperator op(raw);
  ASSERT_EQ(xnn_run_operator(op.get(), nullptr), xnn_status_success) << what;
  for (int threads : {1, 2}) {
    const CpuPool pool(threads, {}, Schedule::kDynamic);
    for (int64_t slices = 1; slices <= 9; ++slices) {
      std::vector<float> y(whole.size(), 7.0f);
      const SlicedOperator sliced = SlicedOperator::per_range(
          extent, 1,
          [&](SliceRange r, xnn_operator_t* out) {
            return make(r.begin, r.end - r.begin, x.data(), y.data(), out);
          },
          what, slices);
      sliced.run(pool);
      ASSERT_EQ(y, whole) << what << ", " << slices << " slices, " << threads << " threads";
    }
  }
}

TEST_F(SlicedOps, ElementwiseRangesGiveTheBitsOfOneOperator) {
  for (int64_t count : {int64_t(131712), int64_t(1000), int64_t(37)}) {  // 672x14x14, ragged
    const size_t n = size_t(count);
    expect_ranges_equal_whole("hardswish " + std::to_string(count), count, n, n,
                              [](int64_t b, int64_t len, const float* x, float* y, xnn_operator_t* op) {
                                xnn_status st = xnn_create_hardswish_nc_f32(size_t(len), size_t(len), size_t(len), 0, op);
                                return st != xnn_status_success ? st
                                    : xnn_setup_hardswish_nc_f32(*op, 1, x + b, y + b, nullptr);
                              });
    expect_ranges_equal_whole("sigmoid " + std::to_string(count), count, n, n,
                              [](int64_t b, int64_t len, const float* x, float* y, xnn_operator_t* op) {
                                xnn_status st = xnn_create_sigmoid_nc_f32(size_t(len), size_t(len), size_t(len), 0, op);
                                return st != xnn_status_success ? st
                                    : xnn_setup_sigmoid_nc_f32(*op, 1, x + b, y + b, nullptr);
                              });
    expect_ranges_equal_whole("clamp " + std::to_string(count), count, n, n,
                              [](int64_t b, int64_t len, const float* x, float* y, xnn_operator_t* op) {
                                xnn_status st = xnn_create_clamp_nc_f32(size_t(len), size_t(len), size_t(len), -0.5f, 0.5f, 0, op);
                                return st != xnn_status_success ? st
                                    : xnn_setup_clamp_nc_f32(*op, 1, x + b, y + b, nullptr);
                              });
  }
}

TEST_F(SlicedOps, AddAndChannelScaleRangesGiveTheBitsOfOneOperator) {
  const auto other = random_floats(131712, 9);
  for (int64_t count : {int64_t(131712), int64_t(37)}) {
    expect_ranges_equal_whole("add " + std::to_string(count), count, size_t(count), size_t(count),
                              [&](int64_t b, int64_t len, const float* x, float* y, xnn_operator_t* op) {
                                xnn_status st = xnn_create_add_nd_f32(0.0f, 6.0f, 0, op);
                                const size_t shape[1] = {size_t(len)};
                                return st != xnn_status_success ? st
                                    : xnn_setup_add_nd_f32(*op, 1, shape, 1, shape, x + b, other.data() + b, y + b, nullptr);
                              });
  }
  // x[1, HW, C] * gate[1, 1, C] over ranges of pixels (the squeeze-excite scale).
  for (int64_t ch : {int64_t(672), int64_t(40)}) {
    const int64_t plane = 196;
    expect_ranges_equal_whole("channel scale C" + std::to_string(ch), plane, size_t(plane * ch), size_t(plane * ch),
                              [&](int64_t b, int64_t len, const float* x, float* y, xnn_operator_t* op) {
                                xnn_status st = xnn_create_multiply_nd_f32(-1e30f, 1e30f, 0, op);
                                const size_t x_shape[3] = {1, size_t(len), size_t(ch)};
                                const size_t s_shape[3] = {1, 1, size_t(ch)};
                                return st != xnn_status_success ? st
                                    : xnn_setup_multiply_nd_f32(*op, 3, x_shape, 3, s_shape, x + b * ch,
                                                                other.data(), y + b * ch, nullptr);
                              });
  }
}

TEST_F(SlicedOps, GlobalAveragePoolChannelRangesGiveTheBitsOfOneOperator) {
  struct GapCase {
    int64_t batch, channels, plane;
  };
  for (const GapCase& k : std::vector<GapCase>{{1, 672, 196}, {1, 960, 49}, {2, 120, 784}, {1, 37, 9}}) {
    const int64_t ch = k.channels;
    expect_ranges_equal_whole(
        "global average pool " + std::to_string(k.batch) + "x" + std::to_string(ch) + "x" + std::to_string(k.plane),
        ch, size_t(k.batch * k.plane * ch), size_t(k.batch * ch),
        [&](int64_t b, int64_t len, const float* x, float* y, xnn_operator_t* op) {
          xnn_status st = xnn_create_global_average_pooling_nwc_f32(size_t(len), size_t(ch), size_t(ch),
                                                                    -1e30f, 1e30f, 0, op);
          return st != xnn_status_success ? st
              : xnn_setup_global_average_pooling_nwc_f32(*op, size_t(k.batch), size_t(k.plane),
                                                         x + b, y + b, nullptr);
        });
  }
}

}  // namespace
