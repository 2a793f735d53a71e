// Shared set-up of the public API tests: a scratch directory holding a platform of two
// single-core CPU processors on one backend and a plugins directory with only that backend, the
// network every test runs, and the order that makes it a three-stage pipeline (B, L, B).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "co_up/co_up.hpp"
#include "tests/cli/scratch_dir.h"

namespace co_up::test {

// Small enough that 1,000 frames stream in seconds on cpu-reference.
inline constexpr const char* kNetwork = "squeezenet";
inline constexpr int64_t kImageSize = 32;

struct ApiWorld {
  ScratchDir scratch;
  std::filesystem::path platform;
  std::filesystem::path plugins;

  // `backend`: "cpu-reference" or "cpu-xnnpack"; `plugin_file`: its .so in the build tree.
  explicit ApiWorld(const std::string& backend = "cpu-reference",
                    const std::string& plugin_file = CO_UP_REFERENCE_PLUGIN) {
    platform = scratch.write("platform.json",
                             "{\"name\": \"api-test\", \"processors\": [\n"
                             "  {\"letter\": \"B\", \"kind\": \"cpu\", \"backend\": \"" + backend +
                                 "\", \"cores\": [0], \"threads\": 1},\n"
                             "  {\"letter\": \"L\", \"kind\": \"cpu\", \"backend\": \"" + backend +
                                 "\", \"cores\": [1], \"threads\": 1}]}\n");
    plugins = scratch / "plugins";
    std::filesystem::create_directories(plugins);
    std::filesystem::copy_file(plugin_file, plugins / std::filesystem::path(plugin_file).filename());
  }

  SessionOptions options(const std::string& order, Mode mode = Mode::kPipeline) const {
    SessionOptions o;
    o.set_platform_file(platform.string())
        .set_plugins_dir(plugins.string())
        .set_image_size(kImageSize)
        .set_order(order)
        .set_mode(mode);
    return o;
  }
};

// B for the first third of `layers`, L for the second, B again for the rest: three sub-graphs.
inline std::string three_stage_order(size_t layers) {
  std::string order(layers, 'B');
  for (size_t i = layers / 3; i < 2 * layers / 3; ++i) order[i] = 'L';
  return order;
}

// A deterministic input of `shape` in [-1, 1), different for each seed.
inline Tensor random_input(const std::vector<int64_t>& shape, uint32_t seed) {
  Tensor t(shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.values()) v = dist(rng);
  return t;
}

inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace co_up::test
