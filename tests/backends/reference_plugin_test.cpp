// The cpu-reference plugin driven purely through the C ABI, as the runtime drives it: dlopen,
// entry point, factory -> device -> compiled sub-graph, map/bind/run, hooks, and error statuses.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "co_up/plugin_abi.h"
#include "tests/backends/abi_test_support.h"
#include "tests/backends/reference_naive.h"
#include "tests/backends/random_data.h"

namespace {

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("CO_UP_PLUGIN_PATH");
    ASSERT_NE(dir, nullptr) << "CO_UP_PLUGIN_PATH is not set (run through ctest)";
    const std::string path = std::string(dir) + "/libco_up_cpu_reference.so";
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    get_api_ = reinterpret_cast<co_up_plugin_get_api_fn>(dlsym(handle_, CO_UP_PLUGIN_ENTRY_POINT));
    ASSERT_NE(get_api_, nullptr);
    api_ = get_api_(CO_UP_ABI_VERSION_MAJOR, CO_UP_ABI_VERSION_MINOR);
    ASSERT_NE(api_, nullptr);
    ASSERT_EQ(api_->factory_create(nullptr, 0, &factory_), nullptr);
  }

  void TearDown() override {
    if (api_ && factory_) api_->factory_release(factory_);
    if (handle_) dlclose(handle_);
  }

  // Returns the status code (OK for NULL) and releases the status, keeping its message.
  int32_t take(co_up_status* status) {
    if (!status) return CO_UP_STATUS_OK;
    last_message_ = status->message ? status->message : "";
    const int32_t code = status->code;
    api_->status_release(status);
    return code;
  }

  co_up_device* make_device(const std::vector<std::pair<std::string, std::string>>& opts) {
    std::vector<co_up_option> options;
    for (const auto& [k, v] : opts) options.push_back({k.c_str(), v.c_str()});
    co_up_device* device = nullptr;
    EXPECT_EQ(take(api_->device_create(factory_, options.data(), uint32_t(options.size()), &device)),
              CO_UP_STATUS_OK)
        << last_message_;
    return device;
  }

  void* handle_ = nullptr;
  co_up_plugin_get_api_fn get_api_ = nullptr;
  const co_up_plugin_api* api_ = nullptr;
  co_up_factory* factory_ = nullptr;
  std::string last_message_;
};

using co_up::testing::GraphBuilder;  // shared with the other plugin ABI tests
using co_up::test::random_vector;

// x[1,3,9,9] -> Conv 3x3 pad 1 (4 out) -> Relu -> MaxPool 2x2 s2 ceil -> FC 5. Layers 0,0,1,2.
struct SmallNet {
  std::vector<float> conv_w = random_vector(4 * 3 * 3 * 3, 1);
  std::vector<float> conv_b = random_vector(4, 2);
  std::vector<float> fc_w = random_vector(5 * 4 * 5 * 5, 3);
  std::vector<float> fc_b = random_vector(5, 4);
  GraphBuilder b;
  co_up_subgraph_desc graph;

  SmallNet() {
    const uint32_t x = b.tensor("x", {1, 3, 9, 9});
    const uint32_t w = b.tensor("conv_w", {4, 3, 3, 3}, &conv_w);
    const uint32_t bias = b.tensor("conv_b", {4}, &conv_b, CO_UP_LAYOUT_ANY);
    const uint32_t c = b.tensor("conv", {1, 4, 9, 9});
    const uint32_t r = b.tensor("relu", {1, 4, 9, 9});
    const uint32_t p = b.tensor("pool", {1, 4, 5, 5});
    const uint32_t fw = b.tensor("fc_w", {5, 100}, &fc_w, CO_UP_LAYOUT_ANY);
    const uint32_t fb = b.tensor("fc_b", {5}, &fc_b, CO_UP_LAYOUT_ANY);
    const uint32_t y = b.tensor("y", {1, 5}, nullptr, CO_UP_LAYOUT_ANY);
    b.node("conv1", "Conv", 0, {x, w, bias}, c,
           {b.ints("strides", {1, 1}), b.ints("pads", {1, 1, 1, 1}), b.ints("dilations", {1, 1}),
            GraphBuilder::integer("group", 1), GraphBuilder::str("activation", "none")});
    b.node("relu1", "Relu", 0, {c}, r, {});
    b.node("pool1", "MaxPool", 1, {r}, p,
           {b.ints("kernel_shape", {2, 2}), b.ints("strides", {2, 2}), b.ints("pads", {0, 0, 0, 0}),
            GraphBuilder::integer("ceil_mode", 1)});
    b.node("fc1", "FullyConnected", 2, {p, fw, fb}, y, {GraphBuilder::str("activation", "none")});
    graph = b.desc({x}, {y});
  }

  std::vector<double> expected(const std::vector<float>& x) const {
    co_up::testing::NaiveConv s;
    s.c = 3; s.h = 9; s.w = 9; s.m = 4; s.kh = s.kw = 3; s.pt = s.pl = s.pb = s.pr = 1; s.act = 1;
    std::vector<double> mag;
    const auto conv = co_up::testing::naive_conv(s, x, conv_w, conv_b, &mag);
    co_up::testing::NaivePool ps;
    ps.c = 4; ps.h = 9; ps.w = 9; ps.kh = ps.kw = 2; ps.sh = ps.sw = 2; ps.ceil_mode = true;
    const auto pooled = co_up::testing::naive_pool(ps, std::vector<float>(conv.begin(), conv.end()), false);
    std::vector<double> y;
    for (int m = 0; m < 5; ++m) {
      double sum = fc_b[m];
      for (int k = 0; k < 100; ++k) sum += pooled[k] * fc_w[m * 100 + k];
      y.push_back(sum);
    }
    return y;
  }
};

TEST_F(PluginTest, DescribesItself) {
  EXPECT_STREQ(api_->name, "cpu-reference");
  EXPECT_EQ(api_->kind, CO_UP_BACKEND_CPU);
  EXPECT_EQ(api_->abi_major, CO_UP_ABI_VERSION_MAJOR);
  EXPECT_GE(api_->struct_size, sizeof(co_up_plugin_api));
  EXPECT_NE(api_->compiled_bind_input, nullptr);
}

TEST_F(PluginTest, RefusesOtherMajorVersions) {
  EXPECT_EQ(get_api_(CO_UP_ABI_VERSION_MAJOR + 1, 0), nullptr);
  EXPECT_EQ(get_api_(0, 0), nullptr);
  EXPECT_NE(get_api_(CO_UP_ABI_VERSION_MAJOR, CO_UP_ABI_VERSION_MINOR + 5), nullptr);
}

TEST_F(PluginTest, RejectsBadDeviceOptions) {
  const std::vector<std::vector<std::pair<std::string, std::string>>> bad = {
      {{"processor", "B"}, {"cores", "0"}, {"threads", "0"}},
      {{"processor", "B"}, {"cores", "0"}, {"threads", "2"}},
      {{"processor", "B"}, {"cores", "0,x"}, {"threads", "1"}},
      {{"processor", "B"}, {"cores", "0,,1"}},
      {{"processor", "B"}, {"cores", "0"}, {"threads", "two"}},
      {{"processor", "BIG"}, {"cores", "0"}},
  };
  for (const auto& opts : bad) {
    std::vector<co_up_option> options;
    for (const auto& [k, v] : opts) options.push_back({k.c_str(), v.c_str()});
    co_up_device* device = nullptr;
    EXPECT_EQ(take(api_->device_create(factory_, options.data(), uint32_t(options.size()), &device)),
              CO_UP_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(device, nullptr);
    EXPECT_NE(last_message_.find("option"), std::string::npos) << last_message_;
  }
}

struct HookLog {
  std::vector<std::string> events;
};

TEST_F(PluginTest, RunsASmallNetworkWithHooksMapAndBind) {
  co_up_device* device = make_device({{"processor", "B"}, {"cores", "0"}, {"threads", "1"}});
  ASSERT_NE(device, nullptr);
  SmallNet net;
  co_up_compiled* compiled = nullptr;
  ASSERT_EQ(take(api_->compiled_create(device, &net.graph, &compiled)), CO_UP_STATUS_OK)
      << last_message_;

  const auto x = random_vector(3 * 9 * 9, 10);
  void* in = nullptr;
  ASSERT_EQ(take(api_->compiled_map(compiled, CO_UP_IO_INPUT, 0, &in)), CO_UP_STATUS_OK);
  std::memcpy(in, x.data(), x.size() * sizeof(float));
  ASSERT_EQ(take(api_->compiled_unmap(compiled, CO_UP_IO_INPUT, 0)), CO_UP_STATUS_OK);

  HookLog log;
  co_up_run_hooks hooks{};
  hooks.struct_size = sizeof(hooks);
  hooks.user_data = &log;
  hooks.layer_begin = [](void* u, uint32_t l) {
    static_cast<HookLog*>(u)->events.push_back("begin" + std::to_string(l));
  };
  hooks.layer_end = [](void* u, uint32_t l) {
    static_cast<HookLog*>(u)->events.push_back("end" + std::to_string(l));
  };
  ASSERT_EQ(take(api_->compiled_run(compiled, &hooks)), CO_UP_STATUS_OK) << last_message_;
  EXPECT_EQ(log.events, (std::vector<std::string>{"begin0", "end0", "begin1", "end1", "begin2",
                                                  "end2"}));

  void* out = nullptr;
  ASSERT_EQ(take(api_->compiled_map(compiled, CO_UP_IO_OUTPUT, 0, &out)), CO_UP_STATUS_OK);
  const std::vector<float> mapped_result(static_cast<float*>(out), static_cast<float*>(out) + 5);
  const auto want = net.expected(x);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(mapped_result[i], want[i], 1e-4) << i;

  // Bound input: same data from another buffer gives the same bits; the binding lasts one run.
  const auto other = random_vector(3 * 9 * 9, 11);
  std::vector<float> bound(x);
  ASSERT_EQ(take(api_->compiled_bind_input(compiled, 0, bound.data())), CO_UP_STATUS_OK);
  ASSERT_EQ(take(api_->compiled_run(compiled, nullptr)), CO_UP_STATUS_OK);
  EXPECT_EQ(0, std::memcmp(out, mapped_result.data(), 5 * sizeof(float)));
  std::memcpy(in, other.data(), other.size() * sizeof(float));
  ASSERT_EQ(take(api_->compiled_bind_input(compiled, 0, bound.data())), CO_UP_STATUS_OK);
  ASSERT_EQ(take(api_->compiled_run(compiled, nullptr)), CO_UP_STATUS_OK);
  EXPECT_EQ(0, std::memcmp(out, mapped_result.data(), 5 * sizeof(float))) << "bind was ignored";
  ASSERT_EQ(take(api_->compiled_run(compiled, nullptr)), CO_UP_STATUS_OK);  // back to the map
  const auto want_other = net.expected(other);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(static_cast<float*>(out)[i], want_other[i], 1e-4) << i;

  // Hooks with a struct_size that predates layer_end: only layer_begin is called.
  log.events.clear();
  hooks.struct_size = offsetof(co_up_run_hooks, layer_end);
  ASSERT_EQ(take(api_->compiled_run(compiled, &hooks)), CO_UP_STATUS_OK);
  EXPECT_EQ(log.events, (std::vector<std::string>{"begin0", "begin1", "begin2"}));

  EXPECT_EQ(take(api_->compiled_map(compiled, CO_UP_IO_OUTPUT, 1, &out)),
            CO_UP_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take(api_->compiled_bind_input(compiled, 3, bound.data())),
            CO_UP_STATUS_INVALID_ARGUMENT);
  api_->compiled_release(compiled);
  api_->device_release(device);
}

TEST_F(PluginTest, ThreadCountDoesNotChangeTheBits) {
  // A larger conv so the work really is split; unpinned when the host lacks two CPUs.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  sched_getaffinity(0, sizeof(allowed), &allowed);
  const bool can_pin = CPU_ISSET(0, &allowed) && CPU_ISSET(1, &allowed);
  const std::string pin = can_pin ? "on" : "off";

  std::vector<float> w = random_vector(48 * 32 * 9, 20);
  GraphBuilder b;
  const uint32_t x = b.tensor("x", {1, 32, 30, 30});
  const uint32_t wt = b.tensor("w", {48, 32, 3, 3}, &w);
  const uint32_t y = b.tensor("y", {1, 48, 30, 30});
  const uint32_t z = b.tensor("z", {1, 48, 30, 30});
  b.node("conv", "Conv", 0, {x, wt, CO_UP_NO_TENSOR}, y,
         {b.ints("strides", {1, 1}), b.ints("pads", {1, 1, 1, 1}), b.ints("dilations", {1, 1}),
          GraphBuilder::integer("group", 1), GraphBuilder::str("activation", "relu6")});
  b.node("act", "HardSwish", 0, {y}, z, {});
  const co_up_subgraph_desc graph = b.desc({x}, {z});
  const auto input = random_vector(32 * 30 * 30, 21);

  std::vector<std::vector<float>> results;
  for (const char* threads : {"1", "2"}) {
    co_up_device* device = make_device({{"processor", "L"}, {"cores", "0,1"}, {"threads", threads},
                                        {"pin", pin}});
    ASSERT_NE(device, nullptr);
    co_up_compiled* compiled = nullptr;
    ASSERT_EQ(take(api_->compiled_create(device, &graph, &compiled)), CO_UP_STATUS_OK)
        << last_message_;
    ASSERT_EQ(take(api_->compiled_bind_input(compiled, 0, input.data())), CO_UP_STATUS_OK);
    ASSERT_EQ(take(api_->compiled_run(compiled, nullptr)), CO_UP_STATUS_OK);
    void* out = nullptr;
    ASSERT_EQ(take(api_->compiled_map(compiled, CO_UP_IO_OUTPUT, 0, &out)), CO_UP_STATUS_OK);
    results.emplace_back(static_cast<float*>(out), static_cast<float*>(out) + 48 * 900);
    api_->compiled_release(compiled);
    api_->device_release(device);
  }
  EXPECT_EQ(0, std::memcmp(results[0].data(), results[1].data(), results[0].size() * sizeof(float)));
}

TEST_F(PluginTest, ExplainsUnsupportedNodes) {
  co_up_device* device = make_device({{"processor", "B"}, {"threads", "1"}});
  ASSERT_NE(device, nullptr);
  GraphBuilder b;
  const uint32_t x = b.tensor("x", {1, 2, 3, 3});
  const uint32_t y = b.tensor("y", {1, 2, 3, 3});
  const uint32_t q = b.tensor("q", {1, 2, 3, 3});
  b.node("mystery", "Foo", 0, {x}, y, {});
  b.node("relu", "Relu", 1, {x}, q, {});
  b.tensors()[q].dtype = CO_UP_DTYPE_I8;
  const co_up_subgraph_desc graph = b.desc({x}, {y});

  co_up_node_support support{};
  support.struct_size = sizeof(support);
  ASSERT_EQ(take(api_->device_query_node(device, &graph, 0, &support)), CO_UP_STATUS_OK);
  EXPECT_EQ(support.supported, 0);
  EXPECT_NE(std::string(support.reason).find("op 'Foo' is not implemented by cpu-reference"),
            std::string::npos)
      << support.reason;
  ASSERT_EQ(take(api_->device_query_node(device, &graph, 1, &support)), CO_UP_STATUS_OK);
  EXPECT_EQ(support.supported, 0);
  EXPECT_NE(std::string(support.reason).find("dtype int8 not supported (f32 only)"),
            std::string::npos)
      << support.reason;

  co_up_compiled* compiled = nullptr;
  EXPECT_EQ(take(api_->compiled_create(device, &graph, &compiled)), CO_UP_STATUS_UNSUPPORTED);
  EXPECT_EQ(compiled, nullptr);
  EXPECT_NE(last_message_.find("node 'mystery' (Foo)"), std::string::npos) << last_message_;

  // A supported node answers 1 with an empty reason.
  b.tensors()[q].dtype = CO_UP_DTYPE_F32;
  ASSERT_EQ(take(api_->device_query_node(device, &graph, 1, &support)), CO_UP_STATUS_OK);
  EXPECT_EQ(support.supported, 1);
  EXPECT_STREQ(support.reason, "");
  api_->device_release(device);
}

TEST_F(PluginTest, RejectsMalformedGraphsWithAStatus) {
  co_up_device* device = make_device({{"threads", "1"}});
  ASSERT_NE(device, nullptr);
  SmallNet net;
  co_up_compiled* compiled = nullptr;
  // Missing attribute.
  const_cast<co_up_node_desc*>(net.graph.nodes)[0].attr_count = 2;
  EXPECT_EQ(take(api_->compiled_create(device, &net.graph, &compiled)), CO_UP_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_message_.find("attribute 'dilations' is missing"), std::string::npos) << last_message_;
  const_cast<co_up_node_desc*>(net.graph.nodes)[0].attr_count = 5;
  // Output shape that does not follow from the input.
  int64_t* pool_dims = const_cast<int64_t*>(net.graph.tensors[5].dims);
  pool_dims[2] = 4;
  EXPECT_EQ(take(api_->compiled_create(device, &net.graph, &compiled)), CO_UP_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_message_.find("node 'pool1' (MaxPool)"), std::string::npos) << last_message_;
  EXPECT_EQ(compiled, nullptr);
  api_->device_release(device);
}

}  // namespace
