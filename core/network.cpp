#include "core/network.h"

#include "core/error.h"
#include "graph/builder.h"
#include "graph/onnx/layer_units.h"
#include "graph/onnx/onnx_importer.h"
#include "graph/passes.h"
#include "graph/zoo/zoo.h"

namespace co_up {

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
