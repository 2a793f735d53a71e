// Helpers of the parallel-region command-line tests: GoogLeNet as --units=ops builds it, a
// synthetic B/L profile of it, and a command's output split into lines.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "graph/passes.h"
#include "graph/zoo/zoo.h"
#include "planner/layer_profile.h"
#include "planner/synthetic_profile.h"

namespace co_up::test {

inline constexpr int kRegionsImageSize = 64;

inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// GoogLeNet with one unit per convolution, as co_up builds it for --units=ops.
inline graph::Graph googlenet_ops() {
  graph::SeededWeights weights(1);
  graph::ZooOptions options;
  options.image_size = kRegionsImageSize;
  graph::Graph g = graph::build_zoo_graph("googlenet", weights, options);
  graph::optimize_for_inference(g);
  graph::assign_op_units(g);
  return g;
}

// A synthetic B/L profile with googlenet_ops()'s layer count, so that `co_up plan` builds the
// network and finds its regions without profiling.
inline planner::LayerProfile googlenet_ops_profile() {
  planner::SyntheticSpec spec;
  spec.layers = googlenet_ops().layer_count();
  spec.processors = 2;
  spec.shared_hosts = false;
  spec.handoff_us = 30;
  spec.graph = "googlenet";
  planner::LayerProfile p = planner::make_synthetic_profile(spec);
  p.network.units = "ops";
  p.network.image_size = kRegionsImageSize;
  return p;
}

}  // namespace co_up::test
