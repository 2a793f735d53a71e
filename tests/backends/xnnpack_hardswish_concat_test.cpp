// cpu-xnnpack's Conv + HardSwish fusion on the own AVX-512 convolution (its epilogue gives the bits
// of the convolution followed by XNNPACK's HardSwish, so a fused and an unfused layer agree), and
// the Concat kernel on the pool (concat_rows): every split of the output's elements over one and
// two threads gives the plain concatenation, for one long row (a detector head's Concat on the
// last axis), many short rows with widths that are no multiple of the split's alignment, and NHWC
// channel concatenation; and one input (copy_floats).
#include <gtest/gtest.h>

#include <xnnpack.h>

#include <random>
#include <vector>

#include "avx512_conv.h"
#include "xnn_common.h"
#include "xnn_kernels.h"
#include "xnn_thread_pool.h"
#include "tests/backends/random_data.h"

namespace {

using co_up::backends::Conv2dShape;
using co_up::xnnpack::CpuPool;
using co_up::xnnpack::Schedule;
using co_up::test::random_symmetric;

TEST(XnnpackHardSwish, Avx512ConvolutionFusedEqualsConvolutionThenXnnpackHardSwish) {
  if (!co_up::xnnpack::avx512_gemm_available()) {
    GTEST_SKIP() << "this CPU has no AVX-512: the own convolution (and its epilogue) never runs here";
  }
  co_up::xnnpack::initialize_xnnpack("(test)");
  // MobileNetV3-L's 112 -> 672 expansion at 14x14 (tiles of two blocks), a 3x3 with an output
  // wider than the layer, and a reduction deep enough to run in parts (4200 -> 40 at 3x3: a
  // partial block).
  struct Case {
    int64_t in, out, size, kernel, stride_extra;
  };
  for (const Case& k : {Case{112, 672, 14, 1, 0}, Case{64, 96, 10, 3, 24}, Case{4200, 40, 3, 1, 0}}) {
    Conv2dShape s;
    s.in_channels = k.in;
    s.out_channels = k.out;
    s.in_height = s.in_width = k.size;
    s.kernel_h = s.kernel_w = k.kernel;
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = k.kernel / 2;
    const int64_t pixels = s.in_height * s.in_width, stride = s.out_channels + k.stride_extra;
    const std::vector<float> x = random_symmetric(size_t(pixels * s.in_channels), 4.0f, 7);
    const std::vector<float> w =
        random_symmetric(size_t(s.out_channels * s.in_channels * s.kernel_h * s.kernel_w), 0.1f, 8);
    const std::vector<float> b = random_symmetric(size_t(s.out_channels), 1.0f, 9);
    for (int threads : {1, 2}) {
      const CpuPool pool(threads, {}, Schedule::kDynamic);
      std::vector<float> fused(size_t(pixels * stride), 5.0f), unfused(fused);
      co_up::xnnpack::F32ConvParams params{w.data(), b.data()};
      params.output_stride = stride;
      co_up::xnnpack::Avx512Convolution(s, params, x.data(), unfused.data()).run(pool);
      params.hardswish = true;
      co_up::xnnpack::Avx512Convolution(s, params, x.data(), fused.data()).run(pool);
      xnn_operator_t raw = nullptr;
      ASSERT_EQ(xnn_create_hardswish_nc_f32(size_t(s.out_channels), size_t(stride), size_t(stride), 0, &raw),
                xnn_status_success);
      const co_up::xnnpack::XnnOperator hardswish(raw);
      ASSERT_EQ(xnn_setup_hardswish_nc_f32(hardswish.get(), size_t(pixels), unfused.data(), unfused.data(), nullptr),
                xnn_status_success);
      ASSERT_EQ(xnn_run_operator(hardswish.get(), nullptr), xnn_status_success);
      EXPECT_EQ(fused, unfused) << s.in_channels << " -> " << s.out_channels << ", " << threads << " threads";
    }
  }
}

TEST(XnnpackConcat, EverySplitGivesThePlainConcatenation) {
  struct Case {
    int64_t outer;
    std::vector<int64_t> widths;
  };
  const std::vector<Case> cases = {
      {1, {4800 * 85, 1200 * 85, 300 * 85}},  // one row: a detector's outputs along the boxes
      {4800, {2, 2, 81}},                     // many short rows of odd widths
      {40 * 40, {128, 128}},                  // NHWC channel concatenation
      {333, {3, 17, 1, 100}},                 // ragged everything
      {7, {5, 6}},                            // below the split threshold: on the caller
      {1, {100003}},                          // one input: copy_floats (Reshape, Identity)
  };
  for (const Case& k : cases) {
    int64_t row = 0;
    for (int64_t w : k.widths) row += w;
    std::vector<std::vector<float>> inputs;
    std::vector<const float*> pointers;
    for (size_t i = 0; i < k.widths.size(); ++i) {
      inputs.push_back(random_symmetric(size_t(k.outer * k.widths[i]), 1.0f, unsigned(20 + i)));
      pointers.push_back(inputs.back().data());
    }
    std::vector<float> expected;
    for (int64_t r = 0; r < k.outer; ++r) {
      for (size_t i = 0; i < k.widths.size(); ++i) {
        expected.insert(expected.end(), inputs[i].begin() + r * k.widths[i], inputs[i].begin() + (r + 1) * k.widths[i]);
      }
    }
    for (int threads : {1, 2}) {
      for (Schedule schedule : {Schedule::kStatic, Schedule::kDynamic}) {
        const CpuPool pool(threads, {}, schedule);
        std::vector<float> y(size_t(k.outer * row) + 16, 3.0f);
        co_up::xnnpack::concat_rows(pointers, k.widths, k.outer, y.data(), pool);
        EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + k.outer * row), expected)
            << k.outer << " rows of " << row << ", " << threads << " threads";
        EXPECT_EQ(y[size_t(k.outer * row)], 3.0f) << "wrote past the output";
      }
    }
  }
}

}  // namespace
