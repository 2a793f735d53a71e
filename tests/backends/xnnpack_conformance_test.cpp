// Conformance of the cpu-xnnpack plugin against cpu-reference (the oracle): every operator
// through the C ABI, every zoo network through the Executor with platforms naming each backend.
// Tolerance: max |xnnpack - reference| <= 1e-4 * max(output range, 1e-3).
// Also: results independent of threads and mappings (bit for bit), pool workers on their cores,
// bad device options refused before any work.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "co_up/plugin_abi.h"
#include "tests/backends/abi_test_support.h"
#include "tests/backends/plugin_harness.h"
#include "tests/backends/xnnpack_oracle.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "xnn_thread_pool.h"

namespace {

using namespace co_up::testing::xnnpack_oracle;  // Plugin, xnn(), ref(), Desc, conform(), ...


struct ConvCase {
  std::vector<int64_t> x;  // N C H W
  int64_t m, k, stride, pad, group;
  const char* act;
  bool bias;
  int64_t dilation = 1;
};

TEST(XnnpackConformance, Conv) {
  const ConvCase cases[] = {
      {{1, 3, 17, 19}, 8, 3, 1, 1, 1, "none", true},
      {{1, 3, 33, 33}, 16, 11, 4, 2, 1, "relu", true},  // AlexNet conv1 shape, smaller
      {{2, 8, 13, 13}, 12, 5, 2, 2, 2, "relu", false},  // grouped, batch 2
      {{1, 16, 15, 15}, 16, 3, 1, 1, 16, "relu6", true},  // depthwise
      {{1, 16, 15, 15}, 32, 3, 2, 1, 16, "none", true},   // depthwise, multiplier 2
      {{1, 24, 9, 9}, 40, 1, 1, 0, 1, "relu", true},      // pointwise
      {{1, 4, 12, 12}, 6, 3, 1, 2, 1, "none", true, 2},   // dilated
      // Deep enough for the AVX-512 path where the CPU has it (avx512_conv_wins): tails of
      // pixels and of column blocks, groups, batch 2.
      {{1, 32, 11, 13}, 72, 3, 1, 1, 1, "relu", true},
      {{2, 64, 9, 9}, 128, 3, 2, 1, 2, "relu6", true},
      {{1, 128, 7, 9}, 80, 1, 1, 0, 1, "none", false},
  };
  int i = 0;
  for (const ConvCase& cc : cases) {
    Desc d;
    const uint32_t x = d.tensor(cc.x);
    const uint32_t w = d.tensor({cc.m, cc.x[1] / cc.group, cc.k, cc.k}, true, 1, 0.3f);
    const uint32_t b = cc.bias ? d.tensor({cc.m}, true, 2) : CO_UP_NO_TENSOR;
    const int64_t span = cc.dilation * (cc.k - 1) + 1;
    const int64_t oh = (cc.x[2] + 2 * cc.pad - span) / cc.stride + 1;
    const int64_t ow = (cc.x[3] + 2 * cc.pad - span) / cc.stride + 1;
    const uint32_t y = d.tensor({cc.x[0], cc.m, oh, ow});
    d.attr_ints("strides", {cc.stride, cc.stride});
    d.attr_ints("pads", {cc.pad, cc.pad, cc.pad, cc.pad});
    d.attr_ints("dilations", {cc.dilation, cc.dilation});
    d.attr_int("group", cc.group);
    d.attr_string("activation", cc.act);
    d.node("Conv", {x, w, b}, y);
    d.input(x);
    d.output(y);
    conform(d, "conv case " + std::to_string(i++));
  }
}

TEST(XnnpackConformance, FullyConnected) {
  for (const auto& xd : std::vector<std::vector<int64_t>>{{2, 50}, {1, 8, 3, 3}, {1, 16, 1, 1}}) {
    for (const char* act : {"none", "relu"}) {
      Desc d;
      const uint32_t x = d.tensor(xd);
      int64_t k = 1;
      for (size_t i = 1; i < xd.size(); ++i) k *= xd[i];
      const uint32_t w = d.tensor({20, k}, true, 1, 0.2f);
      const uint32_t b = d.tensor({20}, true, 2);
      const uint32_t y = d.tensor({xd[0], 20});
      d.attr_string("activation", act);
      d.node("FullyConnected", {x, w, b}, y);
      d.input(x);
      d.output(y);
      conform(d, "fc on rank " + std::to_string(xd.size()) + " " + act);
    }
  }
}

struct PoolCase {
  const char* op;
  std::vector<int64_t> x;
  int64_t k, s, pad, ceil, include_pad;
};

int64_t pooled(int64_t in, int64_t pad, int64_t k, int64_t s, bool ceil_mode) {
  const int64_t span = in + 2 * pad - k;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

TEST(XnnpackConformance, Pooling) {
  const PoolCase cases[] = {
      {"MaxPool", {1, 8, 13, 13}, 3, 2, 0, 1, 0},   // AlexNet/SqueezeNet: ceil mode
      {"MaxPool", {1, 8, 14, 14}, 3, 2, 0, 1, 0},   // ceil mode with overhang
      {"MaxPool", {1, 8, 14, 14}, 3, 1, 1, 1, 0},   // GoogLeNet branch pool
      {"MaxPool", {2, 5, 9, 11}, 2, 2, 0, 0, 0},
      {"MaxPool", {1, 4, 6, 6}, 1, 1, 0, 0, 0},     // 1x1: XNNPACK declines, own kernel
      {"AveragePool", {1, 8, 14, 14}, 2, 2, 0, 0, 0},
      {"AveragePool", {1, 8, 14, 14}, 3, 2, 1, 1, 0},
      {"AveragePool", {1, 8, 14, 14}, 3, 2, 1, 0, 1},
  };
  int i = 0;
  for (const PoolCase& pc : cases) {
    Desc d;
    const uint32_t x = d.tensor(pc.x);
    const uint32_t y = d.tensor({pc.x[0], pc.x[1], pooled(pc.x[2], pc.pad, pc.k, pc.s, pc.ceil),
                                 pooled(pc.x[3], pc.pad, pc.k, pc.s, pc.ceil)});
    d.attr_ints("kernel_shape", {pc.k, pc.k});
    d.attr_ints("strides", {pc.s, pc.s});
    d.attr_ints("pads", {pc.pad, pc.pad, pc.pad, pc.pad});
    d.attr_int("ceil_mode", pc.ceil);
    if (std::string(pc.op) == "AveragePool") d.attr_int("count_include_pad", pc.include_pad);
    d.node(pc.op, {x}, y);
    d.input(x);
    d.output(y);
    conform(d, std::string(pc.op) + " case " + std::to_string(i++));
  }
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    Desc d;
    const uint32_t x = d.tensor({2, 24, 7, 5});
    const uint32_t y = d.tensor({2, 24, 1, 1});
    d.node(op, {x}, y);
    d.input(x);
    d.output(y);
    conform(d, op);
  }
}

TEST(XnnpackConformance, Elementwise) {
  for (const char* op : {"Relu", "Clip", "Sigmoid", "HardSwish", "Identity"}) {
    Desc d;
    const uint32_t x = d.tensor({1, 6, 11, 13}, false, 3, 8.0f);
    const uint32_t y = d.tensor({1, 6, 11, 13});
    if (std::string(op) == "Clip") {
      d.attr_float("min", 0.0);
      d.attr_float("max", 6.0);
    }
    d.node(op, {x}, y);
    d.input(x);
    d.output(y);
    conform(d, op);
  }
  for (const char* act : {"none", "relu"}) {
    Desc d;
    const uint32_t a = d.tensor({1, 6, 11, 13});
    const uint32_t b = d.tensor({1, 6, 11, 13}, false, 4);
    const uint32_t y = d.tensor({1, 6, 11, 13});
    d.attr_string("activation", act);
    d.node("Add", {a, b}, y);
    d.input(a);
    d.input(b);
    d.output(y);
    conform(d, std::string("Add ") + act);
  }
}

// Residual blocks as ResNet's, through the fusions and the activation arena: a convolution with
// its Add in one layer adds the shortcut in its epilogue and, as the shortcut's last reader,
// writes over it — but not when the shortcut is also the convolution's own input (Add(Conv(a),
// a)): writing over its input while reading it would corrupt the result.
TEST(XnnpackConformance, ResidualBlocksInPlaceAndNot) {
  Desc d;
  const std::vector<int64_t> dims = {1, 64, 9, 8};
  const uint32_t in = d.tensor(dims);
  const uint32_t a = d.tensor(dims);
  d.node("Relu", {in}, a, 0);
  auto conv = [&](int64_t k, uint32_t x, const char* act, uint64_t seed, int64_t layer) {
    const uint32_t w = d.tensor({64, 64, k, k}, true, seed, 0.2f / float(k));
    const uint32_t b = d.tensor({64}, true, seed + 1);
    const uint32_t y = d.tensor(dims);
    d.attr_ints("strides", {1, 1});
    d.attr_ints("pads", {k / 2, k / 2, k / 2, k / 2});
    d.attr_ints("dilations", {1, 1});
    d.attr_int("group", 1);
    d.attr_string("activation", act);
    d.node("Conv", {x, w, b}, y, layer);
    return y;
  };
  auto add = [&](uint32_t x, uint32_t y, int64_t layer) {
    const uint32_t z = d.tensor(dims);
    d.attr_string("activation", "relu");
    d.node("Add", {x, y}, z, layer);
    return z;
  };
  // A 3x3 convolution reads each pixel's neighbours after their tiles are written.
  const uint32_t c = add(conv(3, a, "none", 10, 1), a, 1);  // shortcut = convolution input
  const uint32_t e = conv(1, conv(1, c, "relu", 20, 2), "none", 30, 3);
  const uint32_t f = add(e, c, 3);                          // c's last reader: in place
  const uint32_t g = add(conv(3, f, "none", 40, 4), f, 4);  // again its own input
  const uint32_t out = d.tensor(dims);
  d.node("Relu", {g}, out, 5);
  d.input(in);
  d.output(out);
  conform(d, "residual blocks");
}

TEST(XnnpackConformance, Normalisation) {
  {
    Desc d;
    const uint32_t x = d.tensor({1, 16, 9, 9}, false, 5, 20.0f);
    const uint32_t y = d.tensor({1, 16, 9, 9});
    d.attr_int("size", 5);
    d.attr_float("alpha", 1e-2);
    d.attr_float("beta", 0.75);
    d.attr_float("bias", 1.0);
    d.node("LRN", {x}, y);
    d.input(x);
    d.output(y);
    conform(d, "LRN");
  }
  {
    Desc d;
    const uint32_t x = d.tensor({1, 16, 9, 9}, false, 5, 20.0f);
    const uint32_t y = d.tensor({1, 16, 9, 9});
    d.attr_int("size", 4);
    d.attr_float("alpha", 1e-3);
    d.attr_float("beta", 0.6);
    d.attr_float("bias", 2.0);
    d.node("LRN", {x}, y);
    d.input(x);
    d.output(y);
    conform(d, "LRN even size, beta 0.6");
  }
  {
    Desc d;
    const uint32_t x = d.tensor({2, 10, 5, 7});
    const uint32_t scale = d.tensor({10}, true, 1);
    const uint32_t bias = d.tensor({10}, true, 2);
    const uint32_t mean = d.tensor({10}, true, 3);
    const uint32_t var = d.tensor({10}, true, 4);
    const uint32_t y = d.tensor({2, 10, 5, 7});
    // Variances must be positive: a fresh builder tensor is in [-1, 1), so shift it.
    for (float& v : d.mutable_data(var)) v = v + 1.5f;
    d.attr_float("epsilon", 1e-5);
    d.node("BatchNormalization", {x, scale, bias, mean, var}, y);
    d.input(x);
    d.output(y);
    conform(d, "BatchNormalization");
  }
}

TEST(XnnpackConformance, DataMovement) {
  for (int64_t axis : {1, 2, 3}) {
    Desc d;
    std::vector<int64_t> a{1, 4, 5, 6}, b{1, 4, 5, 6}, o{1, 4, 5, 6};
    a[size_t(axis)] = 3;
    b[size_t(axis)] = 7;
    o[size_t(axis)] = 10;
    const uint32_t x0 = d.tensor(a), x1 = d.tensor(b, false, 9);
    const uint32_t y = d.tensor(o);
    d.attr_int("axis", axis);
    d.node("Concat", {x0, x1}, y);
    d.input(x0);
    d.input(x1);
    d.output(y);
    conform(d, "Concat axis " + std::to_string(axis));
  }
  for (const auto& [dims, axis] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{3, 100}, 1}, {{1, 10, 3, 4}, 1}, {{1, 10, 3, 4}, 3}, {{2, 10, 3, 4}, 2}}) {
    Desc d;
    const uint32_t x = d.tensor(dims, false, 6, 5.0f);
    const uint32_t y = d.tensor(dims);
    d.attr_int("axis", axis);
    d.node("Softmax", {x}, y);
    d.input(x);
    d.output(y);
    conform(d, "Softmax rank " + std::to_string(dims.size()) + " axis " + std::to_string(axis));
  }
  {
    Desc d;  // Flatten of a 4-D tensor with a plane, then a Reshape back to 4-D.
    const uint32_t x = d.tensor({2, 3, 4, 5});
    const uint32_t f = d.tensor({2, 60});
    const uint32_t r = d.tensor({2, 5, 3, 4});
    const uint32_t y = d.tensor({2, 5, 3, 4});
    d.attr_int("axis", 1);
    d.node("Flatten", {x}, f);
    d.attr_ints("shape", {2, 5, 3, 4});
    d.node("Reshape", {f}, r);
    d.attr_ints("shape", {2, 5, 3, 4});
    d.node("Relu", {r}, y);
    d.input(x);
    d.output(y);
    conform(d, "Flatten + Reshape");
  }
}

// ----------------------------------------------------------------------------------------------
// Networks, through the Executor.

const co_up::PluginRegistry& plugins() {
  static const co_up::PluginRegistry registry = [] {
    const char* dir = std::getenv("CO_UP_PLUGIN_PATH");
    return co_up::PluginRegistry::load_directory(dir != nullptr ? dir : "plugins");
  }();
  return registry;
}

bool two_cores() { return std::thread::hardware_concurrency() >= 2; }

// B on core 0 and L on core 1, both on `backend`; or, with threads_b > 1, B alone on cores_b.
co_up::Platform platform(const std::string& backend, const std::string& cores_b = "[0]",
                         int threads_b = 1) {
  const std::string l = two_cores() ? "[1]" : "[0]";
  std::string json = R"({"name": "conformance", "processors": [
      {"letter": "B", "kind": "cpu", "backend": [")" + backend + R"("], "cores": )" + cores_b +
                     R"(, "threads": )" + std::to_string(threads_b) + "}";
  if (threads_b == 1) {
    json += R"(, {"letter": "L", "kind": "cpu", "backend": [")" + backend +
            R"("], "cores": )" + l + R"(, "threads": 1})";
  }
  return co_up::parse_platform(json + "]}", "conformance test");
}

std::vector<float> run_network(const co_up::graph::Graph& g, const std::string& order,
                               const co_up::Platform& p) {
  co_up::Executor executor(g, co_up::Partition::create(g, order), p, plugins(),
                           co_up::ExecutorOptions{});
  co_up::RunRequest request;
  request.frames = 2;
  request.input_sets = {co_up::seeded_inputs(g, 7)};
  auto result = executor.run(request);
  EXPECT_EQ(result.profile.frames_completed, 2u);
  return result.last_outputs.at(0);
}

class XnnpackNetwork : public ::testing::TestWithParam<const char*> {};

TEST_P(XnnpackNetwork, MatchesReferenceAndIsBitExactAcrossMappings) {
  co_up::NetworkSpec spec;
  spec.name = GetParam();
  spec.image_size = 64;
  const co_up::graph::Graph g = co_up::build_network(spec);
  const uint32_t layers = g.layer_count();
  const std::string all_b(layers, 'B');
  const auto want = run_network(g, all_b, platform("cpu-reference"));
  const auto got = run_network(g, all_b, platform("cpu-xnnpack"));
  expect_close(got, want, spec.name);
  // Two stages (B then L), and B with two threads: the same bits as one processor, one thread.
  std::string split = all_b;
  std::fill(split.begin() + layers / 2, split.end(), 'L');
  EXPECT_EQ(run_network(g, split, platform("cpu-xnnpack")), got) << spec.name << " " << split;
  if (two_cores()) {
    EXPECT_EQ(run_network(g, all_b, platform("cpu-xnnpack", "[0,1]", 2)), got)
        << spec.name << " on 2 threads";
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, XnnpackNetwork,
                         ::testing::Values("alexnet", "googlenet", "mobilenet", "resnet50",
                                           "squeezenet"));

// ----------------------------------------------------------------------------------------------
// Pool pinning and device options.

TEST(XnnpackPool, WorkersRunOnTheirCores) {
  const int cpus = int(std::thread::hardware_concurrency());
  std::vector<int> cores;
  for (int c = 0; c < std::min(cpus, 4); ++c) cores.push_back(c);
  for (int threads : {2, 3}) {
    co_up::xnnpack::CpuPool pool(threads, cores, co_up::xnnpack::Schedule::kDynamic);
    const auto affinities = pool.thread_affinities();
    ASSERT_EQ(affinities.size(), size_t(threads));
    for (int i = 1; i < threads; ++i) {
      EXPECT_EQ(affinities[size_t(i)], std::vector<int>{cores[size_t(i) % cores.size()]})
          << "worker " << i << " of " << threads;
    }
  }
  // Every worker on one core when the cluster has one.
  co_up::xnnpack::CpuPool one(2, std::vector<int>{cpus - 1}, co_up::xnnpack::Schedule::kStatic);
  const auto affinities = one.thread_affinities();
  EXPECT_EQ(affinities[1], std::vector<int>{cpus - 1});
}

TEST(XnnpackPool, StaticAndDynamicCoverEveryItemOnce) {
  for (auto schedule : {co_up::xnnpack::Schedule::kStatic, co_up::xnnpack::Schedule::kDynamic}) {
    co_up::xnnpack::CpuPool pool(3, {}, schedule);
    std::vector<int> hits(100003, 0);
    pool.parallel_for(int64_t(hits.size()), 16, 1, [&](int64_t b, int64_t e) {
      EXPECT_EQ(b % 16, 0);
      for (int64_t i = b; i < e; ++i) ++hits[size_t(i)];
    });
    EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), int64_t(hits.size()));
  }
}

TEST(XnnpackDevice, BadOptionsAreRefusedWithAReason) {
  const Plugin& p = xnn();
  const int cpus = int(std::thread::hardware_concurrency());
  co_up_device* device = nullptr;
  auto [code, message] = p.make_device({{"processor", "B"}, {"cores", "0"}, {"threads", "2"}}, &device);
  EXPECT_EQ(code, CO_UP_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message.find("threads=2 exceeds"), std::string::npos) << message;
  EXPECT_EQ(device, nullptr);

  std::tie(code, message) = p.make_device({{"processor", "B"}, {"cores", "4000"}}, &device);
  EXPECT_EQ(code, CO_UP_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message.find("core 4000"), std::string::npos) << message;
  EXPECT_NE(message.find("does not exist"), std::string::npos) << message;

  std::tie(code, message) = p.make_device({{"processor", "B"}, {"schedule", "greedy"}}, &device);
  EXPECT_EQ(code, CO_UP_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message.find("schedule"), std::string::npos) << message;

  std::tie(code, message) = p.make_device({{"processor", "B"}, {"cores", "0,x"}}, &device);
  EXPECT_EQ(code, CO_UP_STATUS_INVALID_ARGUMENT);

  // Overlapping clusters: L may not take a core B holds, while B's device lives.
  co_up_device* b = nullptr;
  const std::string all = cpus >= 2 ? "0,1" : "0";
  ASSERT_EQ(p.make_device({{"processor", "B"}, {"cores", all}}, &b).first, CO_UP_STATUS_OK);
  std::tie(code, message) = p.make_device({{"processor", "L"}, {"cores", "0"}}, &device);
  EXPECT_EQ(code, CO_UP_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message.find("also belongs to processor B"), std::string::npos) << message;
  p.api()->device_release(b);
  ASSERT_EQ(p.make_device({{"processor", "L"}, {"cores", "0"}}, &device).first, CO_UP_STATUS_OK);
  p.api()->device_release(device);
}

TEST(XnnpackDevice, ReportsLayersThroughHooks) {
  Desc d;
  const uint32_t x = d.tensor({1, 4, 5, 5});
  const uint32_t y = d.tensor({1, 4, 5, 5});
  const uint32_t z = d.tensor({1, 4, 5, 5});
  d.node("Relu", {x}, y);
  d.node("Sigmoid", {y}, z);
  d.input(x);
  d.output(z);
  const Plugin& p = xnn();
  co_up_device* device = nullptr;
  ASSERT_EQ(p.make_device({{"processor", "B"}}, &device).first, CO_UP_STATUS_OK);
  co_up_compiled* c = nullptr;
  const auto& g = d.get();
  p.check(p.api()->compiled_create(device, &g, &c));
  std::vector<std::pair<char, uint32_t>> seen;
  co_up_run_hooks hooks{};
  hooks.struct_size = sizeof(hooks);
  hooks.user_data = &seen;
  hooks.layer_begin = [](void* u, uint32_t l) {
    static_cast<std::vector<std::pair<char, uint32_t>>*>(u)->push_back({'b', l});
  };
  hooks.layer_end = [](void* u, uint32_t l) {
    static_cast<std::vector<std::pair<char, uint32_t>>*>(u)->push_back({'e', l});
  };
  p.check(p.api()->compiled_run(c, &hooks));
  EXPECT_EQ(seen, (std::vector<std::pair<char, uint32_t>>{{'b', 0}, {'e', 0}, {'b', 1}, {'e', 1}}));
  p.api()->compiled_release(c);

  // An unsupported op is answered per node, with the reason; the supported node next to it says
  // yes with an empty reason; compiling the sub-graph refuses it as unsupported.
  Desc u;
  const uint32_t ux = u.tensor({1, 4, 5, 5});
  const uint32_t uy = u.tensor({1, 4, 5, 5});
  const uint32_t uz = u.tensor({1, 4, 5, 5});
  u.node("Relu", {ux}, uy);
  u.node("Mystery", {uy}, uz);
  u.input(ux);
  u.output(uz);
  const auto& ug = u.get();
  co_up_node_support support{};
  support.struct_size = sizeof(support);
  p.check(p.api()->device_query_node(device, &ug, 1, &support));
  EXPECT_EQ(support.supported, 0);
  EXPECT_NE(std::string(support.reason).find("op 'Mystery' is not implemented by cpu-xnnpack"),
            std::string::npos)
      << support.reason;
  support = {};
  support.struct_size = sizeof(support);
  p.check(p.api()->device_query_node(device, &ug, 0, &support));
  EXPECT_EQ(support.supported, 1);
  EXPECT_STREQ(support.reason, "");
  co_up_compiled* refused = nullptr;
  EXPECT_EQ(p.take(p.api()->compiled_create(device, &ug, &refused)).first, CO_UP_STATUS_UNSUPPORTED);
  EXPECT_EQ(refused, nullptr);
  p.api()->device_release(device);
}

// Between two NHWC backends the runtime describes boundary tensors as NHWC (ABI 1.2): the plugin
// declares it, takes such inputs and outputs without transposing (the data is the NCHW run's,
// channels innermost), and refuses NHWC anywhere but the sub-graph's inputs and outputs.
TEST(XnnpackDevice, NhwcBoundariesAreTheSameDataChannelsLast) {
  const Plugin& p = xnn();
  EXPECT_NE(p.api()->boundary_layouts & (1u << CO_UP_LAYOUT_NHWC), 0u);
  EXPECT_EQ(ref().api()->boundary_layouts, 0u);
  constexpr int64_t kC = 8, kM = 24, kH = 5, kW = 6;
  auto build = [](Desc& d, bool nhwc_io, bool nhwc_inside) {
    const uint32_t x = d.tensor({1, kC, kH, kW});
    const uint32_t w = d.tensor({kM, kC, 3, 3}, true, 1, 0.3f);
    const uint32_t y = d.tensor({1, kM, kH, kW});
    const uint32_t z = d.tensor({1, kM, kH, kW});
    d.attr_ints("strides", {1, 1});
    d.attr_ints("pads", {1, 1, 1, 1});
    d.attr_ints("dilations", {1, 1});
    d.attr_int("group", 1);
    d.attr_string("activation", "none");
    d.node("Conv", {x, w, CO_UP_NO_TENSOR}, y);
    d.node("Relu", {y}, z);
    d.input(x);
    d.output(z);
    if (nhwc_io) {
      d.set_layout(x, CO_UP_LAYOUT_NHWC);
      d.set_layout(z, CO_UP_LAYOUT_NHWC);
    }
    if (nhwc_inside) d.set_layout(y, CO_UP_LAYOUT_NHWC);
  };
  auto to_nhwc = [](const std::vector<float>& nchw, int64_t c) {
    std::vector<float> out(nchw.size());
    const int64_t plane = int64_t(nchw.size()) / c;
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t q = 0; q < plane; ++q) out[size_t(q * c + ch)] = nchw[size_t(ch * plane + q)];
    return out;
  };
  Desc nchw;
  build(nchw, false, false);
  const std::vector<float> want = run_desc(p, nchw);
  Desc nhwc;
  build(nhwc, true, false);
  nhwc.mutable_data(0) = to_nhwc(nchw.data(0), kC);  // the same input, channels-last
  EXPECT_EQ(run_desc(p, nhwc), to_nhwc(want, kM));

  Desc inside;
  build(inside, true, true);
  co_up_device* device = nullptr;
  ASSERT_EQ(p.make_device({{"processor", "B"}}, &device).first, CO_UP_STATUS_OK);
  co_up_compiled* c = nullptr;
  const auto& g = inside.get();
  co_up_status* status = p.api()->compiled_create(device, &g, &c);
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(status->code, CO_UP_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(status->message).find("only on 4-D sub-graph inputs and outputs"), std::string::npos)
      << status->message;
  p.api()->status_release(status);
  p.api()->device_release(device);
}

// The IR's CNN forms (graph/op.h) and the Concats DenseNet makes: one input, many inputs.
TEST(XnnpackConformance, CnnForms) {
  {
    Desc d;  // squeeze-excite: X[N,C,H,W] * S[N,C,1,1], batch 2
    const uint32_t x = d.tensor({2, 6, 5, 7});
    const uint32_t s = d.tensor({2, 6, 1, 1}, false, 5);
    const uint32_t y = d.tensor({2, 6, 5, 7});
    d.node("ChannelScale", {x, s}, y);
    d.input(x);
    d.input(s);
    d.output(y);
    conform(d, "ChannelScale");
  }
  for (const char* op : {"HardSigmoid", "SiLU"}) {
    Desc d;
    const uint32_t x = d.tensor({1, 6, 11, 13}, false, 3, 8.0f);
    const uint32_t y = d.tensor({1, 6, 11, 13});
    if (std::string(op) == "HardSigmoid") {
      d.attr_float("alpha", 0.2);
      d.attr_float("beta", 0.5);
    }
    d.node(op, {x}, y);
    d.input(x);
    d.output(y);
    conform(d, op);
  }
  for (int64_t groups : {1, 2, 3, 4, 12}) {
    Desc d;
    const uint32_t x = d.tensor({2, 12, 4, 5});
    const uint32_t y = d.tensor({2, 12, 4, 5});
    d.attr_int("groups", groups);
    d.node("ChannelShuffle", {x}, y);
    d.input(x);
    d.output(y);
    conform(d, "ChannelShuffle groups " + std::to_string(groups));
  }
  for (int inputs : {1, 7}) {
    Desc d;
    std::vector<uint32_t> xs;
    for (int i = 0; i < inputs; ++i) {
      xs.push_back(d.tensor({1, 3 + i, 5, 6}, false, uint64_t(10 + i)));
      d.input(xs.back());
    }
    int64_t channels = 0;
    for (int i = 0; i < inputs; ++i) channels += 3 + i;
    const uint32_t y = d.tensor({1, channels, 5, 6});
    d.attr_int("axis", 1);
    d.node("Concat", xs, y);
    d.output(y);
    conform(d, "Concat of " + std::to_string(inputs) + " inputs");
  }
}

}  // namespace
