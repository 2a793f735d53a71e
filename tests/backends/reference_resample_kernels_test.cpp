// The cpu-reference resampling kernels (ref_resample_kernels.h) on small hand-checked cases:
// ONNX coordinate transforms and nearest rounding (ties included), bilinear weights with edge
// clamping, Pad in constant / reflect / edge mode over several axes, LeakyRelu; and identical
// results with 1 and 3 threads on outputs large enough to be split.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ref_resample_kernels.h"
#include "ref_thread_pool.h"

namespace co_up::reference {
namespace {

using backends::NearestRounding;
using backends::PadMode;
using backends::ResizeMode;
using backends::ResizeSpec;
using backends::ResizeTransform;

TEST(ReferenceResampleKernels, SourceCoordinatesFollowOnnx) {
  // 4 -> 8 (scale 2): asymmetric x/2, half_pixel (x+0.5)/2-0.5, align_corners x*3/7.
  EXPECT_FLOAT_EQ(resize_source_coordinate(ResizeTransform::kAsymmetric, 3, 2.0f, 4, 8), 1.5f);
  EXPECT_FLOAT_EQ(resize_source_coordinate(ResizeTransform::kHalfPixel, 3, 2.0f, 4, 8), 1.25f);
  EXPECT_FLOAT_EQ(resize_source_coordinate(ResizeTransform::kHalfPixel, 0, 2.0f, 4, 8), -0.25f);
  EXPECT_FLOAT_EQ(resize_source_coordinate(ResizeTransform::kPytorchHalfPixel, 3, 2.0f, 4, 8), 1.25f);
  EXPECT_FLOAT_EQ(resize_source_coordinate(ResizeTransform::kPytorchHalfPixel, 0, 0.25f, 4, 1), 0.0f);
  EXPECT_FLOAT_EQ(resize_source_coordinate(ResizeTransform::kAlignCorners, 7, 2.0f, 4, 8), 3.0f);
  EXPECT_FLOAT_EQ(resize_source_coordinate(ResizeTransform::kAlignCorners, 0, 0.25f, 4, 1), 0.0f);
}

std::vector<float> resize_row(const std::vector<float>& x, int64_t out, ResizeSpec spec) {
  const auto in = static_cast<int64_t>(x.size());
  const ResizePlan plan = plan_resize({1, in}, {1, out}, {1.0f, static_cast<float>(out) / static_cast<float>(in)}, spec);
  std::vector<float> y(static_cast<size_t>(out));
  resize(plan, x.data(), y.data(), nullptr);
  return y;
}

TEST(ReferenceResampleKernels, NearestRoundingModesOnTies) {
  const std::vector<float> x{10, 20, 30};
  // asymmetric by 2: sources 0, 0.5, 1, 1.5, 2, 2.5.
  ResizeSpec spec{ResizeMode::kNearest, ResizeTransform::kAsymmetric, NearestRounding::kFloor};
  EXPECT_EQ(resize_row(x, 6, spec), (std::vector<float>{10, 10, 20, 20, 30, 30}));
  spec.rounding = NearestRounding::kRoundPreferFloor;
  EXPECT_EQ(resize_row(x, 6, spec), (std::vector<float>{10, 10, 20, 20, 30, 30}));
  spec.rounding = NearestRounding::kRoundPreferCeil;
  EXPECT_EQ(resize_row(x, 6, spec), (std::vector<float>{10, 20, 20, 30, 30, 30}));  // 2.5 -> 3 clamps to 2
  spec.rounding = NearestRounding::kCeil;
  EXPECT_EQ(resize_row(x, 6, spec), (std::vector<float>{10, 20, 20, 30, 30, 30}));
}

TEST(ReferenceResampleKernels, LinearClampsAtTheEdges) {
  const std::vector<float> x{0, 4, 8};
  // half_pixel by 2: sources -0.25 (clamped to 0), 0.25, 0.75, 1.25, 1.75, 2.25 (clamped to 2).
  const ResizeSpec spec{ResizeMode::kLinear, ResizeTransform::kHalfPixel, NearestRounding::kFloor};
  EXPECT_EQ(resize_row(x, 6, spec), (std::vector<float>{0, 1, 3, 5, 7, 8}));
  const ResizeSpec corners{ResizeMode::kLinear, ResizeTransform::kAlignCorners, NearestRounding::kFloor};
  EXPECT_EQ(resize_row(x, 5, corners), (std::vector<float>{0, 2, 4, 6, 8}));
}

TEST(ReferenceResampleKernels, BilinearOverTwoAxes) {
  // 2x2 -> 3x3 with align_corners: the centre is the mean of the four corners.
  const std::vector<float> x{1, 3, 5, 11};
  const ResizeSpec spec{ResizeMode::kLinear, ResizeTransform::kAlignCorners, NearestRounding::kFloor};
  const ResizePlan plan = plan_resize({1, 1, 2, 2}, {1, 1, 3, 3}, {1, 1, 1.5f, 1.5f}, spec);
  std::vector<float> y(9);
  resize(plan, x.data(), y.data(), nullptr);
  EXPECT_EQ(y, (std::vector<float>{1, 2, 3, 3, 5, 7, 5, 8, 11}));
}

TEST(ReferenceResampleKernels, PadModes) {
  const std::vector<float> x{1, 2, 3, 4, 5, 6};  // [2, 3]
  auto run = [&](PadMode mode, const std::vector<int64_t>& pads, float value) {
    const PadPlan plan = plan_pad({2, 3}, pads, mode, value);
    std::vector<float> y(static_cast<size_t>(plan.out_dims[0] * plan.out_dims[1]));
    pad(plan, x.data(), y.data(), nullptr);
    return y;
  };
  // One row before, two columns after (begins {1, 0}, ends {0, 2}).
  EXPECT_EQ(run(PadMode::kConstant, {1, 0, 0, 2}, -1.0f),
            (std::vector<float>{-1, -1, -1, -1, -1, 1, 2, 3, -1, -1, 4, 5, 6, -1, -1}));
  EXPECT_EQ(run(PadMode::kEdge, {1, 0, 0, 2}, 0.0f),
            (std::vector<float>{1, 2, 3, 3, 3, 1, 2, 3, 3, 3, 4, 5, 6, 6, 6}));
  EXPECT_EQ(run(PadMode::kReflect, {1, 0, 0, 2}, 0.0f),
            (std::vector<float>{4, 5, 6, 5, 4, 1, 2, 3, 2, 1, 4, 5, 6, 5, 4}));
}

TEST(ReferenceResampleKernels, LeakyRelu) {
  const std::vector<float> x{-2, -0.5f, 0, 3};
  std::vector<float> y(4);
  leaky_relu(x.data(), y.data(), 4, 0.1f, nullptr);
  EXPECT_EQ(y, (std::vector<float>{-0.2f, -0.05f, 0, 3}));
}

TEST(ReferenceResampleKernels, SameResultsWithOneAndThreeThreads) {
  std::vector<float> x(static_cast<size_t>(4 * 37 * 53));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 101) * 0.1f - 5.0f;
  ThreadPool pool(3, {});
  const ResizeSpec spec{ResizeMode::kLinear, ResizeTransform::kPytorchHalfPixel, NearestRounding::kFloor};
  const ResizePlan r = plan_resize({1, 4, 37, 53}, {1, 4, 80, 110}, {1, 1, 80.0f / 37, 110.0f / 53}, spec);
  std::vector<float> one(static_cast<size_t>(4 * 80 * 110)), three(one.size());
  resize(r, x.data(), one.data(), nullptr);
  resize(r, x.data(), three.data(), &pool);
  EXPECT_EQ(one, three);
  const PadPlan p = plan_pad({1, 4, 37, 53}, {0, 0, 20, 30, 0, 1, 20, 30}, PadMode::kReflect, 0.0f);
  std::vector<float> pone(static_cast<size_t>(1 * 5 * 77 * 113)), pthree(pone.size());
  pad(p, x.data(), pone.data(), nullptr);
  pad(p, x.data(), pthree.data(), &pool);
  EXPECT_EQ(pone, pthree);
}

}  // namespace
}  // namespace co_up::reference
