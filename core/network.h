// build_network: the one path from a network name to the graph the runtime partitions —
// zoo builder or ONNX importer, weights, inference passes, layer units.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace co_up {

struct NetworkSpec {
  NetworkSpec() = default;
  // The zoo fields, in order (keeps `build_network({name, units, size, seed, dir})` working).
  NetworkSpec(std::string name_, std::string units_, int64_t image_size_, uint64_t seed_,
              std::string data_dir_)
      : name(std::move(name_)), units(std::move(units_)), image_size(image_size_), seed(seed_),
        data_dir(std::move(data_dir_)) {}

  std::string name;              // zoo name
  std::string units = "layers";  // "layers" (the paper's units; automatic for a model), "ops" or "branches"
  int64_t image_size = 0;        // 0: the network's own
  int64_t batch = 1;             // zoo networks: frames per input (the input's first dimension)
  uint64_t seed = 1;             // generated weights
  std::string data_dir;          // non-empty: weights from <dir>/<constant>.npy
  // ONNX import instead of the zoo (graph/onnx/onnx_importer.h): the .onnx file, and the input
  // shape replacing the model's (needed for dynamic dimensions). `name` must then be empty.
  std::string model;
  std::vector<int64_t> input_shape;
  // --split=UNIT:PARTS[,UNIT:PARTS...]: layer units (numbered as without the option) whose compute
  // op is split by output channels into PARTS units (graph::split_output_channels). Empty: none.
  std::string split;
  // Exits of a multi-exit model (docs/early_exits.md): a JSON file {"exits": ["name", ...]} listing
  // the model's outputs in stage order. Empty: <model>.exits.json when it exists, else outputs
  // named exit0, exit1, ... by convention.
  std::string exits_file;
  // Width-partitioned stages of a multi-exit model (graph/stage_plan.h): --stages=P:...;I:...
  // or --stage-plan=FILE; each stage becomes one layer unit. Empty: none.
  std::string stages;
  std::string stage_plan_file;
};

// Throws InputError (unknown network, bad weights directory, unreadable or unsupported model, ...).
// An imported model gets the same passes as a zoo network; its layer units are found from its
// structure (graph/onnx/layer_units.h) unless units is "ops".
graph::Graph build_network(const NetworkSpec& spec);

// Bytes this process can still allocate: /proc/meminfo's MemAvailable, lowered by RLIMIT_AS and
// RLIMIT_DATA when set. build_network refuses a network whose weights plus peak live activations
// exceed it (InputError with the bytes needed); a zoo network's weights are counted before each
// is allocated.
uint64_t available_memory_bytes();

// A deterministic input in [-1, 1) for every graph input, a function of the seed only.
std::vector<std::vector<float>> seeded_inputs(const graph::Graph& graph, uint64_t seed);

}  // namespace co_up
