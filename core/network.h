// build_network: the one path from a network name to the graph the runtime partitions —
// zoo builder (or, later, an importer), weights, inference passes, layer units.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace co_up {

struct NetworkSpec {
  std::string name;              // zoo name
  std::string units = "layers";  // "layers" (the paper's units) or "ops" (one per compute op)
  int64_t image_size = 0;        // 0: the network's own
  uint64_t seed = 1;             // generated weights
  std::string data_dir;          // non-empty: weights from <dir>/<constant>.npy
};

// Throws InputError (unknown network, bad weights directory, ...).
graph::Graph build_network(const NetworkSpec& spec);

// A deterministic input in [-1, 1) for every graph input, a function of the seed only.
std::vector<std::vector<float>> seeded_inputs(const graph::Graph& graph, uint64_t seed);

}  // namespace co_up
