// Helpers of the parallel-region command-line tests: GoogLeNet as --units=ops builds it, and
// a command's output split into lines.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "graph/passes.h"
#include "graph/zoo/zoo.h"

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

}  // namespace co_up::test
