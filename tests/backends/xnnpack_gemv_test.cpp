// The backend's one-row matrix product (backends/xnnpack/xnn_gemv.h): against a double-precision
// sum, with a bias, a clamp, reductions of any length (not a multiple of 4) and outputs that end
// in a partial block; two threads, and any ranges of blocks, give the bits of one thread; the
// portable loop (what ARM boards run) agrees with the AVX-512 one to rounding; each row of a
// batch, written into a wider output, gets the bits it gets alone; and the
// classifier and squeeze-excite shapes of MobileNetV3-L are cut over two threads, a tiny one not.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "xnn_gemv.h"
#include "xnn_thread_pool.h"

namespace {

using co_up::xnnpack::CpuPool;
using co_up::xnnpack::Gemv;
using co_up::xnnpack::Schedule;

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> random_floats(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& f : v) f = dist(rng);
  return v;
}

struct Shape {
  int64_t in, out;
};

TEST(Gemv, MatchesTheSumForEveryLengthAndAPartialLastBlock) {
  for (const Shape s : {Shape{1, 1}, Shape{3, 17}, Shape{7, 16}, Shape{24, 72}, Shape{240, 960}, Shape{961, 33}}) {
    const std::vector<float> w = random_floats(size_t(s.in * s.out), 1);
    const std::vector<float> bias = random_floats(size_t(s.out), 2);
    const std::vector<float> x = random_floats(size_t(s.in), 3);
    for (const bool clamp : {false, true}) {
      const float lo = clamp ? 0.0f : -kInf, hi = clamp ? 0.5f : kInf;
      std::vector<float> y(size_t(s.out) + 1, 7.0f);  // one float past the end, untouched
      const Gemv gemv(s.in, s.out, w.data(), bias.data(), lo, hi, x.data(), y.data());
      gemv.run(CpuPool(1, {}, Schedule::kDynamic));
      for (int64_t o = 0; o < s.out; ++o) {
        double sum = bias[size_t(o)];
        for (int64_t k = 0; k < s.in; ++k) sum += double(w[size_t(o * s.in + k)]) * double(x[size_t(k)]);
        const double want = std::min<double>(std::max<double>(sum, lo), hi);
        EXPECT_NEAR(y[size_t(o)], want, 1e-5 * std::sqrt(double(s.in)) + 1e-6) << s.in << " -> " << s.out << ", output " << o;
      }
      EXPECT_EQ(y[size_t(s.out)], 7.0f) << s.in << " -> " << s.out;
    }
  }
}

TEST(Gemv, AnySplitAndTwoThreadsGiveTheBitsOfOneThread) {
  for (const Shape s : {Shape{960, 1280}, Shape{1280, 1000}, Shape{240, 960}, Shape{37, 100}}) {
    const std::vector<float> w = random_floats(size_t(s.in * s.out), 4);
    const std::vector<float> x = random_floats(size_t(s.in), 5);
    std::vector<float> want(size_t(s.out)), y(size_t(s.out));
    const Gemv one(s.in, s.out, w.data(), nullptr, -kInf, kInf, x.data(), want.data());
    one.run(CpuPool(1, {}, Schedule::kDynamic));
    const Gemv gemv(s.in, s.out, w.data(), nullptr, -kInf, kInf, x.data(), y.data());
    const CpuPool two(2, {}, Schedule::kDynamic);
    gemv.run(two);
    EXPECT_EQ(y, want) << s.in << " -> " << s.out << " on two threads";
    for (int64_t cut = 0; cut <= gemv.blocks(); ++cut) {
      std::fill(y.begin(), y.end(), 0.0f);
      gemv.run_blocks(cut, gemv.blocks());
      gemv.run_blocks(0, cut);
      ASSERT_EQ(y, want) << s.in << " -> " << s.out << " cut at block " << cut;
    }
    std::vector<float> portable(size_t(s.out));
    const Gemv loop(s.in, s.out, w.data(), nullptr, -kInf, kInf, x.data(), portable.data());
    loop.run_blocks_portable(0, loop.blocks());
    for (size_t o = 0; o < want.size(); ++o) EXPECT_NEAR(portable[o], want[o], 1e-4) << o;
  }
}

TEST(Gemv, EachRowOfABatchGetsTheBitsItGetsAlone) {
  const Shape s{100, 50};
  const int64_t rows = 3, stride = 64;  // rows written 64 floats apart (a wider output)
  const std::vector<float> w = random_floats(size_t(s.in * s.out), 8);
  const std::vector<float> x = random_floats(size_t(rows * s.in), 9);
  std::vector<float> y(size_t(rows * stride), 7.0f);
  const Gemv batch(s.in, s.out, w.data(), nullptr, -kInf, kInf, x.data(), y.data(), rows, stride);
  batch.run(CpuPool(2, {}, Schedule::kDynamic));
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> alone(size_t(s.out));
    const Gemv one(s.in, s.out, w.data(), nullptr, -kInf, kInf, x.data() + r * s.in, alone.data());
    one.run(CpuPool(1, {}, Schedule::kDynamic));
    for (int64_t o = 0; o < s.out; ++o) ASSERT_EQ(y[size_t(r * stride + o)], alone[size_t(o)]) << r << ", " << o;
    for (int64_t o = s.out; o < stride; ++o) ASSERT_EQ(y[size_t(r * stride + o)], 7.0f) << "gap written";
  }
}

TEST(Gemv, LargeProductsAreCutOverTwoThreadsTinyOnesNot) {
  EXPECT_TRUE(Gemv::splits(960, 1280, 2));   // MobileNetV3-L's classifier
  EXPECT_TRUE(Gemv::splits(1280, 1000, 2));
  EXPECT_TRUE(Gemv::splits(960, 240, 2));    // its squeeze-excite at 7x7
  EXPECT_FALSE(Gemv::splits(960, 1280, 1));
  EXPECT_FALSE(Gemv::splits(24, 72, 2));     // a squeeze-excite of 72 channels: 1728 weights
}

}  // namespace
