// A small three-stage multi-exit CNN for the early-exit tests, and inputs that exit early or not.
//
// Each stage is one layer unit: a 3x3 convolution (+ReLU) on the previous stage's features, then an
// exit head (global average pool, fully connected, softmax) named exit0, exit1, exit2. Nothing has
// a bias, so the network is positively homogeneous: scaling the input by a scales every logit by a.
// A large input (kConfidentScale) gives near one-hot exits (softmax-max close to 1); a tiny one
// (kUnsureScale) gives near-uniform exits (softmax-max close to 1/10). Weights are seeded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/network.h"
#include "graph/builder.h"
#include "graph/passes.h"

namespace co_up::test {

inline constexpr float kConfidentScale = 1000.0f;
inline constexpr float kUnsureScale = 0.001f;
inline constexpr int64_t kExitClasses = 10;

// `with_exits` false: the same network as a static one (three plain outputs). `names`: the exit
// heads' output names, in stage order. `independent`: every stage's convolution reads the input
// instead of the stage before (a width partition reusing no features: no data edge between
// stages, so only the exit decisions order them).
inline graph::Graph exit_network(bool with_exits = true, uint64_t seed = 11,
                                 const std::vector<std::string>& names = {"exit0", "exit1", "exit2"},
                                 bool independent = false) {
  graph::SeededWeights weights(seed);
  graph::GraphBuilder b("exitnet", weights);
  const graph::TensorId x = b.input("data", {1, 3, 16, 16});
  auto conv = [](int64_t channels) {
    graph::ConvParams p = graph::ConvParams::square(channels, 3, 1, 1);
    p.bias = false;
    return p;
  };
  auto head = [&](graph::TensorId features, const std::string& name) {
    graph::TensorId h = b.global_avg_pool(features, name + "_pool");
    h = b.flatten(h, name + "_flatten");
    h = b.fully_connected(h, name + "_fc", kExitClasses, /*bias=*/false);
    return b.softmax(h, name);
  };
  std::vector<graph::TensorId> exits;
  graph::TensorId features = x;
  for (int stage = 0; stage < 3; ++stage) {
    const std::string n = std::to_string(stage + 1);
    b.begin_layer("stage" + n);
    features = b.relu(b.conv(independent ? x : features, "conv" + n, conv(8)), "conv" + n + "_relu");
    exits.push_back(head(features, names.at(static_cast<size_t>(stage))));
  }
  for (graph::TensorId e : exits) b.output(e);
  graph::Graph g = b.finish();
  graph::optimize_for_inference(g);
  if (with_exits) g.mark_outputs_as_exits();
  return g;
}

// Seeded input values in [-1, 1) times `scale`.
inline std::vector<std::vector<float>> scaled_input(const graph::Graph& g, uint64_t seed, float scale) {
  std::vector<std::vector<float>> inputs = seeded_inputs(g, seed);
  for (std::vector<float>& input : inputs) {
    for (float& v : input) v *= scale;
  }
  return inputs;
}

}  // namespace co_up::test
