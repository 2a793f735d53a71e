// The backend conformance suite (as IREE's hal/cts): what every plugin must do through the C ABI,
// whatever it runs on. A test binary includes this header once and instantiates the suite for its
// plugins (tests/backends/plugin_conformance_test.cpp for the plugins that need nothing else,
// tests/rknn/rknn_conformance_test.cpp for the rknn shim over its fake runtime). A plugin that
// declines to load there (no device: opencl without an OpenCL platform) skips, saying why.
//
// Checked per plugin: the table (versions, sizes, every function present, a wrong major refused);
// NULL handles and out-pointers answered with INVALID_ARGUMENT statuses, never a crash; releases
// that accept NULL; a one-node sub-graph (Relu, tensors "x" -> "y", [1,2,3,3], graph "test",
// layers 0-0) queried, compiled, fed through map/unmap, run and read back, with ports out of
// range refused.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "co_up/plugin_abi.h"
#include "tests/backends/abi_test_support.h"
#include "tests/backends/plugin_harness.h"

namespace co_up::testing {

struct Backend {
  const char* file;
  const char* processor;  // the letter its device is created for
  double tolerance;       // max |got - want| relative to the output's range (int8 quantises)
  // Device options beyond processor/cores/threads (rknn: where its converted models lie).
  std::vector<std::pair<std::string, std::string>> options = {};
  // False where the test provides what the plugin needs (rknn's fake runtime): declining to load
  // is then a failure, not a skip.
  bool may_decline = true;
};
inline void PrintTo(const Backend& backend, std::ostream* os) { *os << backend.file; }

class PluginConformance : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    try {
      plugin_ = std::make_unique<AbiPlugin>(GetParam().file);
    } catch (const std::exception& e) {
      if (!GetParam().may_decline) {
        FAIL() << GetParam().file << " did not load: " << e.what();
      }
      GTEST_SKIP() << GetParam().file << " did not load here: " << e.what();
    }
  }

  co_up_device* device() {
    if (device_ == nullptr) {
      std::vector<std::pair<std::string, std::string>> options = {
          {"processor", GetParam().processor}, {"cores", "0"}, {"threads", "1"}};
      options.insert(options.end(), GetParam().options.begin(), GetParam().options.end());
      const auto [code, message] = plugin_->make_device(options, &device_);
      EXPECT_EQ(code, CO_UP_STATUS_OK) << message;
    }
    return device_;
  }

  void TearDown() override {
    if (device_ != nullptr) plugin_->api()->device_release(device_);
  }

  int32_t code(co_up_status* status) const { return plugin_->take(status).first; }

  std::unique_ptr<AbiPlugin> plugin_;
  co_up_device* device_ = nullptr;
};

TEST_P(PluginConformance, TableFollowsTheAbi) {
  const co_up_plugin_api& api = *plugin_->api();
  EXPECT_GE(api.struct_size, sizeof(co_up_plugin_api));
  EXPECT_EQ(api.abi_major, uint32_t{CO_UP_ABI_VERSION_MAJOR});
  EXPECT_LE(api.abi_minor, uint32_t{CO_UP_ABI_VERSION_MINOR});
  ASSERT_NE(api.name, nullptr);
  EXPECT_GT(std::string(api.name).size(), 0u);
  ASSERT_NE(api.version, nullptr);
  ASSERT_NE(api.description, nullptr);
  for (const void* f : {reinterpret_cast<const void*>(api.status_release),
                        reinterpret_cast<const void*>(api.factory_create),
                        reinterpret_cast<const void*>(api.factory_release),
                        reinterpret_cast<const void*>(api.device_create),
                        reinterpret_cast<const void*>(api.device_release),
                        reinterpret_cast<const void*>(api.device_query_node),
                        reinterpret_cast<const void*>(api.compiled_create),
                        reinterpret_cast<const void*>(api.compiled_release),
                        reinterpret_cast<const void*>(api.compiled_map),
                        reinterpret_cast<const void*>(api.compiled_unmap),
                        reinterpret_cast<const void*>(api.compiled_run)}) {
    EXPECT_NE(f, nullptr);
  }
  EXPECT_EQ(plugin_->get_api()(CO_UP_ABI_VERSION_MAJOR + 1, 0), nullptr);
}

TEST_P(PluginConformance, NullArgumentsAreInvalidArgumentStatuses) {
  const co_up_plugin_api& api = *plugin_->api();
  EXPECT_EQ(code(api.factory_create(nullptr, 0, nullptr)), CO_UP_STATUS_INVALID_ARGUMENT);
  co_up_device* out = nullptr;
  EXPECT_EQ(code(api.device_create(nullptr, nullptr, 0, &out)), CO_UP_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(code(api.device_create(plugin_->factory(), nullptr, 0, nullptr)),
            CO_UP_STATUS_INVALID_ARGUMENT);
  co_up_node_support support{};
  support.struct_size = sizeof(support);
  EXPECT_EQ(code(api.device_query_node(nullptr, nullptr, 0, &support)),
            CO_UP_STATUS_INVALID_ARGUMENT);
  co_up_compiled* compiled = nullptr;
  EXPECT_EQ(code(api.compiled_create(nullptr, nullptr, &compiled)), CO_UP_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(code(api.compiled_create(device(), nullptr, &compiled)), CO_UP_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(compiled, nullptr);
  void* mapped = nullptr;
  EXPECT_EQ(code(api.compiled_map(nullptr, CO_UP_IO_INPUT, 0, &mapped)),
            CO_UP_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(code(api.compiled_unmap(nullptr, CO_UP_IO_INPUT, 0)), CO_UP_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(code(api.compiled_run(nullptr, nullptr)), CO_UP_STATUS_INVALID_ARGUMENT);
  if (api.compiled_bind_input != nullptr) {
    EXPECT_EQ(code(api.compiled_bind_input(nullptr, 0, &support)), CO_UP_STATUS_INVALID_ARGUMENT);
  }
  api.status_release(nullptr);
  api.device_release(nullptr);
  api.compiled_release(nullptr);
}

TEST_P(PluginConformance, AReluSubGraphComputesThroughMapRunMap) {
  const co_up_plugin_api& api = *plugin_->api();
  GraphBuilder b;
  const uint32_t x = b.tensor("x", {1, 2, 3, 3});
  const uint32_t y = b.tensor("y", {1, 2, 3, 3});
  b.node("relu", "Relu", 0, {x}, y, {});
  const co_up_subgraph_desc graph = b.desc({x}, {y});
  ASSERT_NE(device(), nullptr);

  co_up_node_support support{};
  support.struct_size = sizeof(support);
  ASSERT_EQ(code(api.device_query_node(device(), &graph, 0, &support)), CO_UP_STATUS_OK);
  EXPECT_EQ(support.supported, 1) << support.reason;
  EXPECT_EQ(code(api.device_query_node(device(), &graph, 1, &support)),
            CO_UP_STATUS_INVALID_ARGUMENT);  // one node only

  co_up_compiled* compiled = nullptr;
  const auto [status, message] = plugin_->take(api.compiled_create(device(), &graph, &compiled));
  ASSERT_EQ(status, CO_UP_STATUS_OK) << message;
  ASSERT_NE(compiled, nullptr);
  std::vector<float> input(18);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(i) - 8.5f;
  // Several frames: a backend that calibrates (npu-int8) changes numerics after its first ones.
  for (int frame = 0; frame < 6; ++frame) {
    void* in = nullptr;
    ASSERT_EQ(code(api.compiled_map(compiled, CO_UP_IO_INPUT, 0, &in)), CO_UP_STATUS_OK);
    std::copy(input.begin(), input.end(), static_cast<float*>(in));
    ASSERT_EQ(code(api.compiled_unmap(compiled, CO_UP_IO_INPUT, 0)), CO_UP_STATUS_OK);
    ASSERT_EQ(code(api.compiled_run(compiled, nullptr)), CO_UP_STATUS_OK);
    void* out = nullptr;
    ASSERT_EQ(code(api.compiled_map(compiled, CO_UP_IO_OUTPUT, 0, &out)), CO_UP_STATUS_OK);
    const auto* values = static_cast<const float*>(out);
    double worst = 0;
    for (size_t i = 0; i < input.size(); ++i) {
      worst = std::max(worst, std::fabs(static_cast<double>(values[i]) - std::max(input[i], 0.0f)));
    }
    EXPECT_LE(worst, GetParam().tolerance * 8.5) << "frame " << frame;
    ASSERT_EQ(code(api.compiled_unmap(compiled, CO_UP_IO_OUTPUT, 0)), CO_UP_STATUS_OK);
  }
  void* mapped = nullptr;
  EXPECT_EQ(code(api.compiled_map(compiled, CO_UP_IO_OUTPUT, 1, &mapped)),
            CO_UP_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(code(api.compiled_map(compiled, CO_UP_IO_INPUT, 7, &mapped)),
            CO_UP_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(code(api.compiled_unmap(compiled, CO_UP_IO_INPUT, 7)), CO_UP_STATUS_INVALID_ARGUMENT);
  api.compiled_release(compiled);
}

}  // namespace co_up::testing
