// The cpu-reference rank-N kernels (ref_tensor_kernels.h) against direct index arithmetic:
// numpy broadcasting, batched matrix products with broadcast batch dims, transposes, slices,
// reductions, gathers, layer normalisation and GELU; and bit-identical results with 1 and 3
// threads on outputs large enough to be split.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "ref_tensor_kernels.h"

namespace co_up::reference {
namespace {

std::vector<float> ramp(int64_t count, float scale = 0.01f) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = std::sin(static_cast<float>(i) * 0.37f) * scale * 100;
  return v;
}

TEST(ReferenceTensorKernels, BinaryOpsBroadcastLikeNumpy) {
  // a[2, 1, 4] op b[3, 1] -> y[2, 3, 4]
  const auto a = ramp(8), b = ramp(3, 0.02f);
  const BroadcastPlan plan = plan_broadcast({2, 1, 4}, {3, 1}, {2, 3, 4});
  ASSERT_EQ(plan.count, 24);
  std::vector<float> y(24);
  for (const BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv, BinaryOp::kPow}) {
    broadcast_binary(op, plan, a.data(), b.data(), y.data(), backends::Activation::kNone, nullptr);
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        for (int k = 0; k < 4; ++k) {
          const float x = a[i * 4 + k], z = b[j];
          const float want = op == BinaryOp::kAdd ? x + z : op == BinaryOp::kSub ? x - z
                           : op == BinaryOp::kMul ? x * z : op == BinaryOp::kDiv ? x / z : std::pow(x, z);
          const float got = y[(i * 3 + j) * 4 + k];
          if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got));
          } else {
            EXPECT_FLOAT_EQ(got, want) << static_cast<int>(op) << " at " << i << "," << j << "," << k;
          }
        }
      }
    }
  }
}

TEST(ReferenceTensorKernels, BatchedMatMulBroadcastsBatchDims) {
  // a[2, 1, 3, 5] x b[4, 5, 2] -> y[2, 4, 3, 2]
  const auto a = ramp(2 * 3 * 5), b = ramp(4 * 5 * 2, 0.03f);
  const MatMulPlan plan = plan_matmul({2, 1, 3, 5}, {4, 5, 2});
  std::vector<float> y(2 * 4 * 3 * 2);
  matmul(plan, a.data(), b.data(), y.data(), nullptr);
  for (int p = 0; p < 2; ++p) {
    for (int q = 0; q < 4; ++q) {
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 2; ++j) {
          float want = 0;
          for (int k = 0; k < 5; ++k) want += a[(p * 3 + i) * 5 + k] * b[(q * 5 + k) * 2 + j];
          EXPECT_FLOAT_EQ(y[((p * 4 + q) * 3 + i) * 2 + j], want);
        }
      }
    }
  }
}

TEST(ReferenceTensorKernels, TransposeAndStridedSlice) {
  const auto x = ramp(2 * 3 * 4);
  std::vector<float> y(24);
  strided_copy(plan_transpose({2, 3, 4}, {2, 0, 1}), x.data(), y.data(), nullptr);  // -> [4, 2, 3]
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) EXPECT_EQ(y[(k * 2 + i) * 3 + j], x[(i * 3 + j) * 4 + k]);
    }
  }
  // x[1:2, 0:3:2, 1:4:2] -> [1, 2, 2]
  std::vector<float> s(4);
  strided_copy(plan_slice({2, 3, 4}, {1, 0, 1}, {1, 2, 2}, {1, 2, 2}), x.data(), s.data(), nullptr);
  EXPECT_EQ(s, (std::vector<float>{x[12 + 1], x[12 + 3], x[12 + 8 + 1], x[12 + 8 + 3]}));
}

TEST(ReferenceTensorKernels, ReduceOverAnyAxes) {
  const auto x = ramp(2 * 3 * 4);
  std::vector<float> y(3);
  reduce(plan_reduce({2, 3, 4}, {0, 2}, /*mean=*/true), x.data(), y.data(), nullptr);
  for (int j = 0; j < 3; ++j) {
    float sum = 0;
    for (int i = 0; i < 2; ++i) {
      for (int k = 0; k < 4; ++k) sum += x[(i * 3 + j) * 4 + k];
    }
    EXPECT_NEAR(y[j], sum / 8, 1e-6);
  }
  std::vector<float> all(1);
  reduce(plan_reduce({2, 3, 4}, {0, 1, 2}, /*mean=*/false), x.data(), all.data(), nullptr);
  float total = 0;
  for (float v : x) total += v;
  EXPECT_NEAR(all[0], total, 1e-5);
}

TEST(ReferenceTensorKernels, GatherLayerNormAndGelu) {
  const auto x = ramp(2 * 3 * 4);
  std::vector<float> g(2 * 2 * 4);
  gather(x.data(), g.data(), 2, 3, 4, {2, 0}, nullptr);  // axis 1 of [2, 3, 4]
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(g[(i * 2 + 0) * 4 + k], x[(i * 3 + 2) * 4 + k]);
      EXPECT_EQ(g[(i * 2 + 1) * 4 + k], x[(i * 3 + 0) * 4 + k]);
    }
  }
  const std::vector<float> scale{1.0f, 2.0f, 0.5f, 1.5f}, bias{0.1f, -0.2f, 0.0f, 0.3f};
  std::vector<float> n(24);
  layer_norm(x.data(), n.data(), 6, 4, scale.data(), bias.data(), 1e-5f, nullptr);
  for (int r = 0; r < 6; ++r) {
    double mean = 0, var = 0;
    for (int k = 0; k < 4; ++k) mean += x[r * 4 + k] / 4.0;
    for (int k = 0; k < 4; ++k) var += (x[r * 4 + k] - mean) * (x[r * 4 + k] - mean) / 4.0;
    for (int k = 0; k < 4; ++k) {
      EXPECT_NEAR(n[r * 4 + k], (x[r * 4 + k] - mean) / std::sqrt(var + 1e-5) * scale[k] + bias[k], 1e-5);
    }
  }
  std::vector<float> e(24), t(24);
  unary(UnaryOp::kGelu, x.data(), e.data(), 24, nullptr);
  unary(UnaryOp::kGeluTanh, x.data(), t.data(), 24, nullptr);
  for (int i = 0; i < 24; ++i) {
    const double v = x[i];
    EXPECT_NEAR(e[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-6);
    EXPECT_NEAR(t[i], 0.5 * v * (1 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v))), 1e-6);
  }
}

TEST(ReferenceTensorKernels, ThreadCountDoesNotChangeABit) {
  ThreadPool pool(3, {});
  const auto a = ramp(8 * 64 * 96), b = ramp(8 * 96 * 64, 0.02f);
  const MatMulPlan mm = plan_matmul({8, 64, 96}, {8, 96, 64});
  std::vector<float> one(8 * 64 * 64), three(8 * 64 * 64);
  matmul(mm, a.data(), b.data(), one.data(), nullptr);
  matmul(mm, a.data(), b.data(), three.data(), &pool);
  EXPECT_EQ(one, three);
  const ReducePlan rp = plan_reduce({8, 64, 96}, {1}, true);
  std::vector<float> r1(8 * 96), r3(8 * 96);
  reduce(rp, a.data(), r1.data(), nullptr);
  reduce(rp, a.data(), r3.data(), &pool);
  EXPECT_EQ(r1, r3);
  const BroadcastPlan bp = plan_broadcast({8, 64, 96}, {96}, {8, 64, 96});
  std::vector<float> b1(a.size()), b3(a.size());
  broadcast_binary(BinaryOp::kMul, bp, a.data(), b.data(), b1.data(), backends::Activation::kNone, nullptr);
  broadcast_binary(BinaryOp::kMul, bp, a.data(), b.data(), b3.data(), backends::Activation::kNone, &pool);
  EXPECT_EQ(b1, b3);
  std::vector<float> t1(a.size()), t3(a.size());
  strided_copy(plan_transpose({8, 64, 96}, {0, 2, 1}), a.data(), t1.data(), nullptr);
  strided_copy(plan_transpose({8, 64, 96}, {0, 2, 1}), a.data(), t3.data(), &pool);
  EXPECT_EQ(t1, t3);
}

}  // namespace
}  // namespace co_up::reference
