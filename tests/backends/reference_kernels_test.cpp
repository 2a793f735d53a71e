// cpu-reference kernels against the direct formulas of reference_naive.h, and bit-identical
// results for 1, 2 and 3 threads (the determinism the processor-mapping tests rely on).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backends/reference/ref_kernels.h"
#include "backends/reference/ref_thread_pool.h"
#include "tests/backends/reference_naive.h"
#include "tests/backends/random_data.h"
#include "tests/sanitizer_size.h"

namespace co_up::reference {
namespace {

using test::random_vector;

using testing::NaiveConv;
using testing::NaivePool;

// Pools of 1, 2 and 3 threads, unpinned (the test host may have fewer cores).
struct Pools {
  ThreadPool one{1, {}};
  ThreadPool two{2, {}};
  ThreadPool three{3, {}};
  ThreadPool* all[3] = {&one, &two, &three};
};

void expect_close(const std::vector<float>& got, const std::vector<double>& want,
                  const std::vector<double>& magnitude, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = 1e-5 * std::max(1.0, magnitude.empty() ? std::abs(want[i]) : magnitude[i]);
    ASSERT_NEAR(got[i], want[i], tol) << what << " at element " << i;
  }
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want,
                  const std::string& what) {
  expect_close(got, want, {}, what);
}

// Runs `op(pool, y)` on every pool and asserts the outputs are bit-identical; returns one.
template <typename Op>
std::vector<float> run_all_pools(Pools& pools, size_t out_size, Op op) {
  std::vector<float> first;
  for (ThreadPool* pool : pools.all) {
    std::vector<float> y(out_size, std::nanf(""));
    op(pool, y.data());
    if (first.empty()) {
      first = y;
    } else {
      EXPECT_EQ(0, std::memcmp(first.data(), y.data(), y.size() * sizeof(float)))
          << "output differs with " << pool->thread_count() << " threads";
    }
  }
  return first;
}

Conv2dShape to_shape(const NaiveConv& s) {
  Conv2dShape c;
  c.batch = s.n; c.in_channels = s.c; c.in_height = s.h; c.in_width = s.w;
  c.out_channels = s.m; c.kernel_h = s.kh; c.kernel_w = s.kw;
  c.stride_h = s.sh; c.stride_w = s.sw;
  c.pad_top = s.pt; c.pad_left = s.pl; c.pad_bottom = s.pb; c.pad_right = s.pr;
  c.dilation_h = s.dh; c.dilation_w = s.dw; c.group = s.group;
  c.activation = s.act == 1 ? Activation::kRelu : s.act == 2 ? Activation::kRelu6 : Activation::kNone;
  return c;
}

struct ConvCase {
  const char* name;
  NaiveConv s;
  bool bias = true;
};

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, MatchesDirectFormulaAndIsThreadInvariant) {
  const NaiveConv& s = GetParam().s;
  const auto x = random_vector(size_t(s.n * s.c * s.h * s.w), 1);
  const auto w = random_vector(size_t(s.m * s.c / s.group * s.kh * s.kw), 2);
  const auto b = GetParam().bias ? random_vector(size_t(s.m), 3, -3.0f, 3.0f) : std::vector<float>{};
  std::vector<double> magnitude;
  const auto want = naive_conv(s, x, w, b, &magnitude);
  Pools pools;
  const auto got = run_all_pools(pools, want.size(), [&](ThreadPool* pool, float* y) {
    conv2d(to_shape(s), x.data(), w.data(), b.empty() ? nullptr : b.data(), y, pool);
  });
  expect_close(got, want, magnitude, GetParam().name);

  // The portable micro-kernel (the one aarch64 runs) must be right and thread-invariant too.
  const PackedConv2d portable(to_shape(s), w.data(), b.empty() ? nullptr : b.data(), false);
  const auto got_portable = run_all_pools(pools, want.size(), [&](ThreadPool* pool, float* y) {
    AlignedBuffer scratch(portable.scratch_floats(pool->thread_count()));
    portable.run(x.data(), y, scratch.data(), pool);
  });
  expect_close(got_portable, want, magnitude, std::string(GetParam().name) + " (portable)");
}

NaiveConv conv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t m, int64_t k, int64_t stride,
               int64_t pad, int64_t group = 1, int64_t dilation = 1, int act = 0) {
  NaiveConv s;
  s.n = n; s.c = c; s.h = h; s.w = w; s.m = m; s.kh = k; s.kw = k; s.sh = stride; s.sw = stride;
  s.pt = s.pl = s.pb = s.pr = pad; s.group = group; s.dh = s.dw = dilation; s.act = act;
  return s;
}

NaiveConv asymmetric() {
  NaiveConv s = conv(1, 5, 11, 9, 7, 3, 1, 0);
  s.kh = 3; s.kw = 2; s.sh = 2; s.sw = 1; s.pt = 0; s.pl = 1; s.pb = 2; s.pr = 1;
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTest,
    ::testing::Values(
        ConvCase{"3x3 pad1", conv(1, 8, 12, 12, 16, 3, 1, 1)},
        ConvCase{"3x3 pad1 no bias", conv(1, 3, 10, 10, 5, 3, 1, 1), false},
        ConvCase{"1x1 pointwise", conv(1, 32, 14, 14, 40, 1, 1, 0, 1, 1, 1)},
        ConvCase{"1x1 stride2", conv(2, 16, 13, 13, 24, 1, 2, 0)},
        ConvCase{"3x3 stride2 N=2", conv(2, 6, 15, 15, 13, 3, 2, 1, 1, 1, 2)},
        ConvCase{"5x5 group2 pad2", conv(1, 8, 9, 9, 12, 5, 1, 2, 2)},
        ConvCase{"group4", conv(2, 8, 7, 7, 8, 3, 1, 1, 4)},
        ConvCase{"depthwise", conv(1, 16, 11, 11, 16, 3, 1, 1, 16, 1, 2)},
        ConvCase{"depthwise stride2", conv(2, 8, 12, 12, 8, 3, 2, 1, 8)},
        ConvCase{"depthwise multiplier2", conv(1, 4, 9, 9, 8, 5, 1, 2, 4)},
        ConvCase{"depthwise dilation2", conv(1, 4, 12, 12, 4, 3, 1, 2, 4, 2)},
        ConvCase{"dilation2", conv(1, 5, 13, 13, 7, 3, 1, 2, 1, 2)},
        ConvCase{"asymmetric pads", asymmetric()},
        ConvCase{"K and N blocking", conv(1, 70, 21, 21, 20, 3, 1, 1, 1, 1, 1)},
        ConvCase{"11x11 stride4", conv(1, 3, 35, 35, 9, 11, 4, 0)},
        // Large enough that the work is split across threads (small ones run on one).
        ConvCase{"split 3x3", conv(1, 32, 40, 41, 50, 3, 1, 1, 1, 1, 1)},
        ConvCase{"split grouped N=2", conv(2, 16, 30, 30, 32, 3, 1, 1, 2)},
        ConvCase{"split pointwise", conv(1, 96, 25, 25, 64, 1, 1, 0)},
        ConvCase{"split depthwise", conv(2, 32, 40, 40, 32, 3, 2, 1, 32, 1, 2)}),
    [](const ::testing::TestParamInfo<ConvCase>& info) {
      std::string name = info.param.name;
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

TEST(FullyConnected, MatchesDirectFormulaAndIsThreadInvariant) {
  for (const int64_t k : {7, 32, 300, 1001}) {
    const int64_t n = 2, m = k > 1000 ? 301 : 37;  // the last one is split across threads
    const auto x = random_vector(size_t(n * k), 4);
    const auto w = random_vector(size_t(m * k), 5);
    const auto b = random_vector(size_t(m), 6);
    std::vector<double> want, magnitude;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        double sum = b[j], mag = std::abs(b[j]);
        for (int64_t q = 0; q < k; ++q) {
          sum += double(x[i * k + q]) * w[j * k + q];
          mag += std::abs(double(x[i * k + q]) * w[j * k + q]);
        }
        want.push_back(std::max(sum, 0.0));
        magnitude.push_back(mag);
      }
    }
    Pools pools;
    const auto got = run_all_pools(pools, want.size(), [&](ThreadPool* pool, float* y) {
      fully_connected(x.data(), n, k, w.data(), b.data(), m, Activation::kRelu, y, pool);
    });
    expect_close(got, want, magnitude, "fc K=" + std::to_string(k));
  }
}

Pool2dShape to_shape(const NaivePool& s) {
  Pool2dShape p;
  p.batch = s.n; p.channels = s.c; p.in_height = s.h; p.in_width = s.w;
  p.kernel_h = s.kh; p.kernel_w = s.kw; p.stride_h = s.sh; p.stride_w = s.sw;
  p.pad_top = s.pt; p.pad_left = s.pl; p.pad_bottom = s.pb; p.pad_right = s.pr;
  p.ceil_mode = s.ceil_mode; p.count_include_pad = s.include_pad;
  return p;
}

NaivePool pool_case(int64_t h, int64_t k, int64_t stride, int64_t pad, bool ceil_mode,
                    bool include_pad) {
  NaivePool s;
  s.n = 2; s.c = 3; s.h = h; s.w = h + 1; s.kh = k; s.kw = k; s.sh = stride; s.sw = stride;
  s.pt = s.pl = s.pb = s.pr = pad; s.ceil_mode = ceil_mode; s.include_pad = include_pad;
  return s;
}

TEST(Pool, OutputSizesFollowTheCeilRule) {
  EXPECT_EQ(to_shape(pool_case(6, 3, 2, 0, false, false)).out_height(), 2);
  EXPECT_EQ(to_shape(pool_case(6, 3, 2, 0, true, false)).out_height(), 3);
  // AlexNet pool1: 55 -> 27 either way.
  EXPECT_EQ(to_shape(pool_case(55, 3, 2, 0, true, false)).out_height(), 27);
  // ceil would give 4, but the 4th window would start in the bottom padding: 3.
  EXPECT_EQ(to_shape(pool_case(5, 2, 2, 1, true, false)).out_height(), 3);
}

TEST(Pool, MaxAndAverageMatchDirectFormulaAndAreThreadInvariant) {
  NaivePool asym = pool_case(9, 3, 2, 1, true, true);
  asym.pt = 0; asym.pl = 2; asym.pb = 2; asym.pr = 1;
  NaivePool big = pool_case(41, 3, 2, 1, true, true);
  big.c = 24;  // split across threads
  const NaivePool cases[] = {pool_case(6, 3, 2, 0, true, false), pool_case(7, 3, 2, 1, true, true),
                             pool_case(7, 3, 2, 1, true, false), pool_case(8, 2, 2, 0, false, false),
                             pool_case(5, 2, 2, 1, true, true),  pool_case(10, 3, 1, 1, false, true),
                             asym, big};
  Pools pools;
  for (const NaivePool& s : cases) {
    const auto x = random_vector(size_t(s.n * s.c * s.h * s.w), 7);
    for (const bool average : {false, true}) {
      const auto want = naive_pool(s, x, average);
      ASSERT_EQ(int64_t(want.size()), s.n * s.c * s.oh() * s.ow());
      const auto got = run_all_pools(pools, want.size(), [&](ThreadPool* pool, float* y) {
        if (average) {
          average_pool2d(to_shape(s), x.data(), y, pool);
        } else {
          max_pool2d(to_shape(s), x.data(), y, pool);
        }
      });
      expect_close(got, want, std::string(average ? "avg" : "max") + " h=" + std::to_string(s.h));
    }
  }
}

TEST(Pool, GlobalPools) {
  const int64_t planes = 6, size = 49;
  const auto x = random_vector(size_t(planes * size), 8);
  std::vector<double> avg, max;
  for (int64_t p = 0; p < planes; ++p) {
    double sum = 0, best = -1e30;
    for (int64_t i = 0; i < size; ++i) {
      sum += x[p * size + i];
      best = std::max(best, double(x[p * size + i]));
    }
    avg.push_back(sum / size);
    max.push_back(best);
  }
  Pools pools;
  expect_close(run_all_pools(pools, planes, [&](ThreadPool* pool, float* y) {
                 global_average_pool(planes, size, x.data(), y, pool);
               }),
               avg, "global average");
  expect_close(run_all_pools(pools, planes, [&](ThreadPool* pool, float* y) {
                 global_max_pool(planes, size, x.data(), y, pool);
               }),
               max, "global max");
}

TEST(Elementwise, ActivationsAndAdd) {
  const int64_t n = 100003;  // large enough to split, odd so ranges end mid-vector
  const auto x = random_vector(size_t(n), 9, -8.0f, 8.0f);
  const auto b = random_vector(size_t(n), 10, -8.0f, 8.0f);
  std::vector<double> want_relu, want_clip, want_sigmoid, want_hswish, want_add;
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    want_relu.push_back(std::max(v, 0.0));
    want_clip.push_back(std::min(std::max(v, -1.5), 2.5));
    want_sigmoid.push_back(1.0 / (1.0 + std::exp(-v)));
    want_hswish.push_back(v * std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0);
    want_add.push_back(std::min(std::max(v + double(b[i]), 0.0), 6.0));
  }
  Pools pools;
  expect_close(run_all_pools(pools, n, [&](ThreadPool* p, float* y) { relu(x.data(), y, n, p); }),
               want_relu, "relu");
  expect_close(run_all_pools(pools, n,
                             [&](ThreadPool* p, float* y) { clip(x.data(), y, n, -1.5f, 2.5f, p); }),
               want_clip, "clip");
  expect_close(
      run_all_pools(pools, n, [&](ThreadPool* p, float* y) { sigmoid(x.data(), y, n, p); }),
      want_sigmoid, "sigmoid");
  expect_close(
      run_all_pools(pools, n, [&](ThreadPool* p, float* y) { hard_swish(x.data(), y, n, p); }),
      want_hswish, "hard_swish");
  expect_close(run_all_pools(pools, n,
                             [&](ThreadPool* p, float* y) {
                               add(x.data(), b.data(), y, n, Activation::kRelu6, p);
                             }),
               want_add, "add relu6");
}

TEST(Normalisation, LrnFollowsOnnxFormula) {
  const int64_t n = 2, c = 7, hw = 1000;
  const auto x = random_vector(size_t(n * c * hw), 11, -3.0f, 3.0f);
  for (const int64_t size : {5, 4}) {
    const double alpha = 1e-2, beta = 0.75, bias = 2.0;
    std::vector<double> want;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < hw; ++i) {
          double sq = 0;
          const int64_t lo = std::max<int64_t>(0, ch - (size - 1) / 2);
          const int64_t hi = std::min<int64_t>(c - 1, ch + (size - 1 + 1) / 2);  // ceil((size-1)/2)
          for (int64_t cc = lo; cc <= hi; ++cc) sq += double(x[(b * c + cc) * hw + i]) * x[(b * c + cc) * hw + i];
          want.push_back(x[(b * c + ch) * hw + i] / std::pow(bias + alpha / size * sq, beta));
        }
    Pools pools;
    expect_close(run_all_pools(pools, want.size(),
                               [&](ThreadPool* p, float* y) {
                                 lrn(x.data(), y, n, c, hw, size, float(alpha), float(beta),
                                     float(bias), p);
                               }),
                 want, "lrn size " + std::to_string(size));
  }
}

TEST(Normalisation, BatchNormInference) {
  const int64_t n = 2, c = 5, hw = 2001;
  const auto x = random_vector(size_t(n * c * hw), 12);
  const auto scale = random_vector(size_t(c), 13);
  const auto bias = random_vector(size_t(c), 14);
  const auto mean = random_vector(size_t(c), 15);
  const auto var = random_vector(size_t(c), 16, 0.1f, 2.0f);
  const float eps = 1e-3f;
  std::vector<double> want;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < hw; ++i) {
        want.push_back((x[(b * c + ch) * hw + i] - double(mean[ch])) /
                           std::sqrt(double(var[ch]) + eps) * scale[ch] + bias[ch]);
      }
  std::vector<float> mul(c), off(c);
  fold_batch_norm(c, scale.data(), bias.data(), mean.data(), var.data(), eps, mul.data(), off.data());
  Pools pools;
  expect_close(run_all_pools(pools, want.size(),
                             [&](ThreadPool* p, float* y) {
                               batch_norm(x.data(), y, n, c, hw, mul.data(), off.data(), p);
                             }),
               want, "batch norm");
}

TEST(DataMovement, ConcatOnEveryAxis) {
  // a [2,3,4,5] and b with axis dim 2 instead, concatenated along each axis.
  for (int axis = 0; axis < 4; ++axis) {
    int64_t da[4] = {2, 3, 4, 5}, db[4] = {2, 3, 4, 5};
    db[axis] = 2;
    auto count = [](const int64_t* d) { return d[0] * d[1] * d[2] * d[3]; };
    const auto a = random_vector(size_t(count(da)), 17);
    const auto b = random_vector(size_t(count(db)), 18);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= da[d];
    for (int d = axis + 1; d < 4; ++d) inner *= da[d];
    std::vector<double> want;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < da[axis] * inner; ++i) want.push_back(a[o * da[axis] * inner + i]);
      for (int64_t i = 0; i < db[axis] * inner; ++i) want.push_back(b[o * db[axis] * inner + i]);
    }
    const float* inputs[] = {a.data(), b.data()};
    const int64_t axis_len[] = {da[axis], db[axis]};
    Pools pools;
    expect_close(run_all_pools(pools, want.size(),
                               [&](ThreadPool* p, float* y) {
                                 concat(inputs, axis_len, outer, inner, y, p);
                               }),
                 want, "concat axis " + std::to_string(axis));
  }
}

TEST(DataMovement, SoftmaxOverAnAxisIsStable) {
  const int64_t outer = 41, axis = 100, inner = 5;
  auto x = random_vector(size_t(outer * axis * inner), 19, -5.0f, 5.0f);
  x[0] = 1000.0f;  // would overflow exp() without the max subtraction
  std::vector<double> want(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double mx = -1e300, sum = 0;
      for (int64_t a = 0; a < axis; ++a) mx = std::max(mx, double(x[(o * axis + a) * inner + i]));
      for (int64_t a = 0; a < axis; ++a) sum += std::exp(x[(o * axis + a) * inner + i] - mx);
      for (int64_t a = 0; a < axis; ++a) {
        want[(o * axis + a) * inner + i] = std::exp(x[(o * axis + a) * inner + i] - mx) / sum;
      }
    }
  Pools pools;
  expect_close(run_all_pools(pools, want.size(),
                             [&](ThreadPool* p, float* y) { softmax(x.data(), y, outer, axis, inner, p); }),
               want, "softmax");
}

TEST(ThreadPool, RunsEveryChunkOnceAndPropagatesErrors) {
  ThreadPool pool(3, {});
  std::vector<int> hits(3, 0);
  for (int round = 0; round < 100; ++round) pool.run([&](int chunk) { ++hits[size_t(chunk)]; });
  EXPECT_EQ(hits, (std::vector<int>{100, 100, 100}));
  EXPECT_THROW(pool.run([](int chunk) {
    if (chunk == 2) throw std::runtime_error("boom");
  }),
               std::runtime_error);
  pool.run([&](int chunk) { ++hits[size_t(chunk)]; });  // still usable afterwards
  EXPECT_EQ(hits[2], 101);
}

// The convolutions that dominate the zoo networks, at full size (the parameterised tests above use
// small shapes): every micro-kernel (best ISA and portable) on 1 and 2 threads matches the
// definition, and the thread counts agree bit for bit. With CO_UP_BENCH=1 it also prints
// single-thread GFLOP/s of each, so a speed regression is visible in the log.
TEST(RepresentativeConvolutions, MatchTheDefinitionWithEveryKernelAndThreadCount) {
  const bool bench = std::getenv("CO_UP_BENCH") != nullptr;
  struct Bench {
    const char* name;
    NaiveConv s;
  } benches[] = {
      {"56x56x64->64 3x3", conv(1, 64, 56, 56, 64, 3, 1, 1)},
      {"AlexNet conv2 27x27x96->256 5x5 g2", conv(1, 96, 27, 27, 256, 5, 1, 2, 2)},
      {"ResNet 1x1 56x56x64->256", conv(1, 64, 56, 56, 256, 1, 1, 0)},
      {"ResNet 1x1 14x14x1024->256", conv(1, 1024, 14, 14, 256, 1, 1, 0)},
      {"depthwise 112x112x32 3x3", conv(1, 32, 112, 112, 32, 3, 1, 1, 32)},
  };
  // Under a sanitizer the definition (in double) of the three big ones alone takes tens of
  // seconds; there the last two (the deep 1x1 and the depthwise shape) are checked.
  const size_t shapes = test::size_for_this_build<size_t>("convolution shapes (the last ones)", std::size(benches), 2);
  const std::span<const Bench> checked(std::end(benches) - shapes, shapes);
  for (const Bench& b : checked) {
    const NaiveConv& s = b.s;
    const auto x = random_vector(size_t(s.n * s.c * s.h * s.w), 1);
    const auto w = random_vector(size_t(s.m * s.c / s.group * s.kh * s.kw), 2);
    std::vector<double> magnitude;
    const auto want = naive_conv(s, x, w, {}, &magnitude);
    for (const bool isa : {true, false}) {
      const PackedConv2d packed(to_shape(s), w.data(), nullptr, isa);
      std::vector<float> one_thread;
      for (int threads : {1, 2}) {
        const std::string what = std::string(b.name) + (isa ? " best" : " portable") +
                                 " threads=" + std::to_string(threads);
        ThreadPool pool(threads, {});
        AlignedBuffer scratch(packed.scratch_floats(threads));
        std::vector<float> y(want.size(), std::nanf(""));
        packed.run(x.data(), y.data(), scratch.data(), &pool);
        expect_close(y, want, magnitude, what);
        if (threads == 1) {
          one_thread = y;
        } else {
          EXPECT_EQ(0, std::memcmp(one_thread.data(), y.data(), y.size() * sizeof(float))) << what;
        }
        if (!bench) continue;
        const int reps = 10;
        const auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) packed.run(x.data(), y.data(), scratch.data(), &pool);
        const double sec =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
        const double flops = 2.0 * s.n * s.m * s.oh() * s.ow() * (s.c / s.group) * s.kh * s.kw;
        std::printf("%-40s %-8s threads=%d  %8.3f ms  %6.2f GFLOP/s\n", b.name,
                    isa ? "best" : "portable", threads, sec * 1e3, flops / sec * 1e-9);
      }
    }
  }
}

}  // namespace
}  // namespace co_up::reference
