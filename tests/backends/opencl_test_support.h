// Helpers for the opencl backend tests: load a plugin through the C ABI (as the runtime does),
// build sub-graph descriptions, run them, compare within a stated tolerance.
//
// Tests skip, saying why, when the ICD loader finds no OpenCL platform (CI has PoCL, so they run).
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "co_up/plugin_abi.h"
#include "tests/backends/abi_test_support.h"
#include "tests/backends/random_data.h"

namespace co_up::opencl_test {

// Tolerance of every comparison with the CPU reference: |got - want| <= kAbs + kRel * max|want|
// over the tensor. GPU kernels and CLBlast sum in other orders (and with FMA), so bit equality
// is not expected; 1e-3 of the tensor's scale is far below any real error (wrong index, missing
// bias, wrong padding), which shows up as O(1) of the scale.
constexpr float kAbs = 1e-4f;
constexpr float kRel = 1e-3f;

inline ::testing::AssertionResult near_reference(const std::vector<float>& want,
                                                 const std::vector<float>& got) {
  if (want.size() != got.size()) {
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  }
  float scale = 0.0f;
  for (float v : want) scale = std::max(scale, std::fabs(v));
  const float limit = kAbs + kRel * scale;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!(std::fabs(want[i] - got[i]) <= limit)) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want "
                                           << want[i] << " (limit " << limit << ", scale " << scale
                                           << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// One plugin .so from the build's plugin directory, with its factory.
class LoadedPlugin {
 public:
  explicit LoadedPlugin(const std::string& file) {
    const char* dir = std::getenv("CO_UP_PLUGIN_PATH");
    if (!dir) {
      error_ = "CO_UP_PLUGIN_PATH is not set (run through ctest)";
      return;
    }
    handle_ = dlopen((std::string(dir) + "/" + file).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      error_ = dlerror();
      return;
    }
    auto get = reinterpret_cast<co_up_plugin_get_api_fn>(dlsym(handle_, CO_UP_PLUGIN_ENTRY_POINT));
    api_ = get ? get(CO_UP_ABI_VERSION_MAJOR, CO_UP_ABI_VERSION_MINOR) : nullptr;
    if (!api_) {
      error_ = "no API table";
      return;
    }
    co_up_status* s = api_->factory_create(nullptr, 0, &factory_);
    if (s) {
      declined_ = s->code == CO_UP_STATUS_NO_DEVICE;
      error_ = s->message;
      api_->status_release(s);
    }
  }
  ~LoadedPlugin() {
    if (factory_) api_->factory_release(factory_);
    // Not dlclose'd: OpenCL drivers and CLBlast keep process-wide state that outlives unloading.
  }
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  bool ok() const { return factory_ != nullptr; }
  bool declined() const { return declined_; }
  const std::string& error() const { return error_; }
  const co_up_plugin_api* api() const { return api_; }
  co_up_factory* factory() const { return factory_; }

  // Returns the status code (OK for NULL), keeping the message in last_message().
  int32_t take(co_up_status* status) {
    if (!status) return CO_UP_STATUS_OK;
    last_message_ = status->message ? status->message : "";
    const int32_t code = status->code;
    api_->status_release(status);
    return code;
  }
  const std::string& last_message() const { return last_message_; }

 private:
  void* handle_ = nullptr;
  const co_up_plugin_api* api_ = nullptr;
  co_up_factory* factory_ = nullptr;
  bool declined_ = false;
  std::string error_;
  std::string last_message_;
};

// The opencl plugin, loaded once per test binary. Tests call it through OPENCL_OR_SKIP().
inline LoadedPlugin& opencl_plugin() {
  static LoadedPlugin plugin("libco_up_opencl.so");
  return plugin;
}

#define OPENCL_OR_SKIP()                                                                  \
  do {                                                                                    \
    if (!::co_up::opencl_test::opencl_plugin().ok()) {                                    \
      if (::co_up::opencl_test::opencl_plugin().declined()) {                             \
        GTEST_SKIP() << "no OpenCL platform/device, opencl backend declined: "            \
                     << ::co_up::opencl_test::opencl_plugin().error();                    \
      }                                                                                   \
      FAIL() << "opencl plugin failed to load: " << ::co_up::opencl_test::opencl_plugin().error(); \
    }                                                                                     \
  } while (0)

// The sub-graph description builder shared with the other plugin ABI tests.
using ::co_up::testing::GraphBuilder;
using ::co_up::test::random_vector;

// Compiles `graph` on a fresh device of `plugin`, writes `inputs` through map/unmap, runs it
// (`runs` times) and reads every output through map/unmap. Errors fail the calling test.
inline std::vector<std::vector<float>> run_subgraph(
    LoadedPlugin& plugin, const co_up_subgraph_desc& graph,
    const std::vector<std::vector<float>>& inputs,
    std::vector<std::pair<std::string, std::string>> options = {}, int runs = 1) {
  const co_up_plugin_api* api = plugin.api();
  options.insert(options.begin(), {"processor", "G"});
  std::vector<co_up_option> opts;
  for (const auto& [k, v] : options) opts.push_back({k.c_str(), v.c_str()});
  std::vector<std::vector<float>> outputs;
  co_up_device* device = nullptr;
  EXPECT_EQ(plugin.take(api->device_create(plugin.factory(), opts.data(), uint32_t(opts.size()), &device)),
            CO_UP_STATUS_OK)
      << plugin.last_message();
  if (!device) return outputs;
  co_up_compiled* compiled = nullptr;
  EXPECT_EQ(plugin.take(api->compiled_create(device, &graph, &compiled)), CO_UP_STATUS_OK)
      << plugin.last_message();
  if (compiled) {
    for (int r = 0; r < runs; ++r) {
      for (uint32_t i = 0; i < graph.input_count; ++i) {
        void* ptr = nullptr;
        EXPECT_EQ(plugin.take(api->compiled_map(compiled, CO_UP_IO_INPUT, i, &ptr)), CO_UP_STATUS_OK);
        if (ptr) std::memcpy(ptr, inputs[i].data(), inputs[i].size() * sizeof(float));
        EXPECT_EQ(plugin.take(api->compiled_unmap(compiled, CO_UP_IO_INPUT, i)), CO_UP_STATUS_OK);
      }
      EXPECT_EQ(plugin.take(api->compiled_run(compiled, nullptr)), CO_UP_STATUS_OK)
          << plugin.last_message();
    }
    for (uint32_t o = 0; o < graph.output_count; ++o) {
      const co_up_tensor_desc& t = graph.tensors[graph.outputs[o]];
      int64_t n = 1;
      for (uint32_t d = 0; d < t.rank; ++d) n *= t.dims[d];
      std::vector<float> values(static_cast<size_t>(n));
      void* ptr = nullptr;
      EXPECT_EQ(plugin.take(api->compiled_map(compiled, CO_UP_IO_OUTPUT, o, &ptr)), CO_UP_STATUS_OK);
      if (ptr) std::memcpy(values.data(), ptr, values.size() * sizeof(float));
      EXPECT_EQ(plugin.take(api->compiled_unmap(compiled, CO_UP_IO_OUTPUT, o)), CO_UP_STATUS_OK);
      outputs.push_back(std::move(values));
    }
    api->compiled_release(compiled);
  }
  api->device_release(device);
  return outputs;
}

}  // namespace co_up::opencl_test
