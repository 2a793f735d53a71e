// Helpers shared by the ONNX fixture tests: load a fixture as co_up builds it, run it on the host
// platform with one CPU backend, and compare with PyTorch's golden output.
//
// Fixtures live in CO_UP_ONNX_FIXTURES (tests/fixtures/onnx): NAME.onnx, NAME_input.npy,
// NAME_output.npy (tests/fixtures/make_fixtures.py writes them).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_importer.h"
#include "tests/core/test_support.h"

namespace co_up::onnx_fixtures {

inline const std::filesystem::path kFixtures = CO_UP_ONNX_FIXTURES;

inline graph::Graph load(const std::string& name, const std::string& units = "layers") {
  NetworkSpec spec;
  spec.model = (kFixtures / (name + ".onnx")).string();
  spec.units = units;
  return build_network(spec);
}

// The host platform; with `cpu_backend` set, B and L use only that plugin.
inline Platform platform_with(const std::string& cpu_backend) {
  Platform platform = testing::host_platform();
  for (ProcessorSpec& p : platform.processors) {
    if (p.is_cpu() && !cpu_backend.empty()) p.backends = {cpu_backend};
  }
  return platform;
}

// Two frames of `input` through `order`; the last frame's first output.
inline std::vector<float> run(const graph::Graph& g, const std::string& order, ExecutionMode mode,
                              const std::vector<float>& input, const std::string& cpu_backend = {}) {
  ExecutorOptions options;
  options.mode = mode;
  Executor executor(g, Partition::create(g, order), platform_with(cpu_backend),
                    testing::build_plugins(), options);
  RunRequest request;
  request.frames = 2;
  request.input_sets = {{input}};
  RunResult result = executor.run(request);
  EXPECT_EQ(result.profile.frames_completed, 2u);
  return result.last_outputs.at(0);
}

// Orders for a graph of `layers` units: all B, half B / half L, alternating B,L.
inline std::vector<std::string> orders_for(uint32_t layers) {
  std::string half(layers, 'B');
  std::fill(half.begin() + layers / 2, half.end(), 'L');
  std::string alternating;
  for (uint32_t i = 0; i < layers; ++i) alternating += i % 2 ? 'L' : 'B';
  return {std::string(layers, 'B'), half, alternating};
}

// Max |got - want| within 1e-3 of the golden output's range, and the same argmax.
inline void expect_matches_pytorch(const std::vector<float>& got, const graph::NpyArray& want,
                                   const std::string& what) {
  ASSERT_EQ(got.size(), want.data.size()) << what;
  const auto [lo, hi] = std::minmax_element(want.data.begin(), want.data.end());
  const double range = std::max(static_cast<double>(*hi - *lo), 1e-6);
  double max_diff = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(got[i]) - want.data[i]));
  }
  EXPECT_LE(max_diff, 1e-3 * range) << what << ": max |diff| " << max_diff << ", range " << range;
  const auto argmax = [](std::span<const float> v) {
    return std::max_element(v.begin(), v.end()) - v.begin();
  };
  EXPECT_EQ(argmax(got), argmax(want.data)) << what;
}

// Each fixture `name` must fail to import with one line (InputError) holding every part listed.
inline void expect_one_line_import_errors(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& cases) {
  for (const auto& [name, parts] : cases) {
    try {
      graph::import_onnx_file(kFixtures / (name + ".onnx"));
      ADD_FAILURE() << name << ": no error";
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      for (const std::string& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
    }
  }
}

}  // namespace co_up::onnx_fixtures
