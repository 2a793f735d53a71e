// Which kernel runs a convolution on AVX-512 CPUs: 1x1 expansions from at most 96 channels
// (MobileNet's, ResNet's first, SqueezeNet's) go to XNNPACK unless an epilogue is fused; everything else that
// avx512_conv_wins() names stays on the own kernel (backends/xnnpack/avx512_conv.h).
#include <gtest/gtest.h>

#include <tuple>

#include "avx512_conv.h"

namespace {

using co_up::backends::Conv2dShape;
using co_up::xnnpack::xnnpack_1x1_expansion_wins;

Conv2dShape conv(int64_t in, int64_t out, int64_t hw, int64_t k = 1, int64_t stride = 1) {
  Conv2dShape s;
  s.in_channels = in;
  s.out_channels = out;
  s.in_height = s.in_width = hw;
  s.kernel_h = s.kernel_w = k;
  s.stride_h = s.stride_w = stride;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = k / 2;
  return s;
}

TEST(XnnpackConvChoice, ExpansionsFromFewChannelsGoToXnnpack) {
  for (const auto& [in, out, hw] : {std::tuple{64, 384, 14}, {96, 576, 14}, {80, 480, 14}, {64, 256, 56},
                                    {32, 192, 28}, {16, 96, 112}, {16, 64, 55}}) {
    EXPECT_TRUE(xnnpack_1x1_expansion_wins(conv(in, out, hw))) << in << " -> " << out << " at " << hw;
  }
}

// From more than 96 input channels the own kernel is as fast or faster at one and two threads;
// ResNet-50's 128 -> 512 at 28x28 (a stage's first expansion, its shortcut Add fused elsewhere)
// lost 20 % at two threads on XNNPACK.
TEST(XnnpackConvChoice, ExpansionsFromOver96ChannelsStayOwn) {
  for (const auto& [in, out, hw] : {std::tuple{128, 512, 28}, {112, 672, 14}, {160, 960, 7}, {192, 1152, 7}}) {
    EXPECT_FALSE(xnnpack_1x1_expansion_wins(conv(in, out, hw))) << in << " -> " << out << " at " << hw;
  }
}

TEST(XnnpackConvChoice, ProjectionsDeepReductionsAndOtherWindowsStayOwn) {
  EXPECT_FALSE(xnnpack_1x1_expansion_wins(conv(384, 64, 14)));    // projection
  EXPECT_FALSE(xnnpack_1x1_expansion_wins(conv(960, 320, 7)));    // projection
  EXPECT_FALSE(xnnpack_1x1_expansion_wins(conv(320, 1280, 7)));   // 320 inputs: deeper than 96
  EXPECT_FALSE(xnnpack_1x1_expansion_wins(conv(256, 1024, 14)));  // deeper than 96
  EXPECT_FALSE(xnnpack_1x1_expansion_wins(conv(64, 64, 56, 3)));  // 3x3
  EXPECT_FALSE(xnnpack_1x1_expansion_wins(conv(64, 256, 56, 1, 2)));  // strided
  EXPECT_FALSE(xnnpack_1x1_expansion_wins(conv(64, 384, 6)));     // fewer than 7x7 pixels
  Conv2dShape grouped = conv(64, 384, 14);
  grouped.group = 2;
  EXPECT_FALSE(xnnpack_1x1_expansion_wins(grouped));
  // A fully connected layer is a 1x1 convolution over rows x 1 pixels (ViT-Ti's 192 -> 768 MLP at
  // 197 tokens): not an expansion of an image, it keeps the own GEMM.
  Conv2dShape fc = conv(192, 768, 1);
  fc.in_height = 197;
  EXPECT_FALSE(xnnpack_1x1_expansion_wins(fc));
}

TEST(XnnpackConvChoice, AFusedEpilogueKeepsAnExpansionOnTheOwnKernel) {
  const Conv2dShape s = conv(64, 256, 56);  // ResNet-50's expansion, fused with the shortcut Add
  EXPECT_EQ(co_up::xnnpack::own_conv_runs(s, true), co_up::xnnpack::avx512_conv_wins(s));
  EXPECT_FALSE(co_up::xnnpack::own_conv_runs(s, false));
  const Conv2dShape projection = conv(384, 64, 14);
  EXPECT_EQ(co_up::xnnpack::own_conv_runs(projection, false), co_up::xnnpack::avx512_conv_wins(projection));
}

}  // namespace
