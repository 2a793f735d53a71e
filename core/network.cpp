#include "core/network.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "graph/builder.h"
#include "graph/onnx/layer_units.h"
#include "graph/onnx/onnx_importer.h"
#include "graph/passes.h"
#include "graph/zoo/zoo.h"

namespace co_up {
namespace {

// "5:3,2:2" -> {{5, 3}, {2, 2}}, checked; applied from the highest unit down, so that every
// index means the unit --list-layers shows without --split.
void apply_splits(graph::Graph& g, const std::string& split) {
  if (split.empty()) return;
  std::vector<std::pair<uint32_t, int>> splits;
  size_t at = 0;
  while (at <= split.size()) {
    const size_t comma = std::min(split.find(',', at), split.size());
    const std::string item = split.substr(at, comma - at);
    const size_t colon = item.find(':');
    auto number = [&](const std::string& s) -> long {
      if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) {
        throw InputError("--split='" + split + "': '" + item + "' is not LAYER:PARTS (e.g. --split=5:3 splits layer 5 "
                         "into 3 parts by output channel)");
      }
      return std::stol(s);
    };
    if (colon == std::string::npos) number("");
    const long unit = number(item.substr(0, colon)), parts = number(item.substr(colon + 1));
    for (const auto& [u, p] : splits) {
      if (u == unit) throw InputError("--split='" + split + "' names layer " + std::to_string(unit) + " twice");
    }
    splits.emplace_back(static_cast<uint32_t>(unit), static_cast<int>(parts));
    at = comma + 1;
  }
  std::sort(splits.begin(), splits.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [unit, parts] : splits) graph::split_output_channels(g, unit, parts);
}

}  // namespace

graph::Graph build_network(const NetworkSpec& spec) {
  if (spec.units != "layers" && spec.units != "ops") {
    throw InputError("unknown --units='" + spec.units + "' (use layers or ops)");
  }
  if (!spec.model.empty()) {
    if (!spec.name.empty()) throw InputError("give either --graph or --model, not both");
    if (!spec.data_dir.empty()) {
      throw InputError("--data applies to --graph; an ONNX model carries its own weights");
    }
    if (spec.image_size != 0) {
      throw InputError("--image-size applies to --graph; use --input-shape=N,C,H,W with --model");
    }
    graph::OnnxImportOptions import_options;
    import_options.input_shape = spec.input_shape;
    graph::Graph g = graph::import_onnx_file(spec.model, import_options);
    graph::optimize_for_inference(g);
    if (spec.units == "ops") {
      graph::assign_op_units(g);
    } else {
      graph::assign_block_units(g);
    }
    apply_splits(g, spec.split);
    g.validate();
    return g;
  }
  if (!spec.input_shape.empty()) {
    throw InputError("--input-shape applies to --model; use --image-size with --graph");
  }
  graph::ZooOptions options;
  options.image_size = spec.image_size;
  graph::Graph g = [&] {
    if (!spec.data_dir.empty()) {
      graph::NpyDirectoryWeights weights(spec.data_dir);
      return graph::build_zoo_graph(spec.name, weights, options);
    }
    graph::SeededWeights weights(spec.seed);
    return graph::build_zoo_graph(spec.name, weights, options);
  }();
  graph::optimize_for_inference(g);
  if (spec.units == "ops") graph::assign_op_units(g);
  apply_splits(g, spec.split);
  g.validate();
  return g;
}

std::vector<std::vector<float>> seeded_inputs(const graph::Graph& graph, uint64_t seed) {
  std::vector<std::vector<float>> inputs;
  uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
  for (graph::TensorId t : graph.inputs()) {
    std::vector<float> values(static_cast<size_t>(graph.tensor(t).desc.element_count()));
    for (float& v : values) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;  // LCG (Knuth MMIX)
      v = static_cast<float>(static_cast<double>(state >> 40) / static_cast<double>(1 << 24)) * 2.0f - 1.0f;
    }
    inputs.push_back(std::move(values));
  }
  return inputs;
}

}  // namespace co_up
