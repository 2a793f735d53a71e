// ONNX export: a co_up Graph, or one region of it (a partition's sub-graph), as a standalone ONNX
// model with its weights inside — what a vendor's conversion tool (rknn-toolkit2, Vela, the
// VeriSilicon/Amlogic converter, ...) takes to build the accelerator's own model of that part.
// It is the inverse of onnx_importer.h: import_onnx_bytes(export_onnx_bytes(g, r)) computes what
// region r of g computes (tests/onnx/onnx_export_test.cpp checks it for every zoo network).
//
// Operators (graph/op.h -> default ONNX domain, opset kOnnxExportOpset), standard ONNX only:
//   Conv, Add            Conv / Add, plus a Relu (or Clip 0..6 for "relu6") node for a fused
//                        activation; the activation's output carries the IR tensor's name and the
//                        pre-activation value is "<name>/preact"
//   FullyConnected       Gemm(transB = 1) with W[M, K] and B[M] (+ activation as above), after a
//                        Flatten(axis = 1) when its input is not 2-D
//   Clip                 Clip with min and max as scalar initializers
//   Reshape              Reshape with the (resolved) shape as an int64 initializer
//   BatchNormalization   BatchNormalization (one left after a non-Conv; folded ones are already
//                        part of the Conv's weights)
//   every other op       the ONNX operator of the same name and attributes (MaxPool, AveragePool,
//                        GlobalAveragePool, GlobalMaxPool, Relu, Sigmoid, HardSwish, LRN, Concat,
//                        Softmax, Flatten, Identity)
// Values: the model's inputs and outputs are the region's boundary tensors under their IR names
// (f32, with their shapes); constants become f32 initializers under their own names. A name
// already taken in the model gets a "_<n>" suffix.
//
// Errors: InputError naming the region and the node (a node the region lists reads a tensor that
// is neither a constant, a region input nor computed earlier in the region; an op with no ONNX
// equivalent). Built without ONNX support (no libonnx-dev), every function throws an InputError
// saying how to get it. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace co_up::graph {

// The default-domain opset of exported models: the lowest one with every operator above
// (HardSwish appeared in opset 14), inside what the importer reads (kOnnxMinOpset..MaxOpset).
inline constexpr int64_t kOnnxExportOpset = 14;

// What to export: a partition's sub-graph (core/partition.h SubGraph: nodes, inputs, outputs) or
// the whole graph (whole_graph_region).
struct OnnxExportRegion {
  std::string name;               // the ONNX graph's name, e.g. "alexnet_5_7"
  std::vector<NodeId> nodes;      // compute nodes in topological order (Input nodes are skipped)
  std::vector<TensorId> inputs;   // activations the nodes read but do not compute
  std::vector<TensorId> outputs;  // tensors the nodes compute that the model must return
};

// Every node, the graph's inputs and outputs, named after the graph.
inline OnnxExportRegion whole_graph_region(const Graph& graph) {
  OnnxExportRegion region;
  region.name = graph.name();
  for (const Node& n : graph.nodes()) {
    if (n.op != OpType::kInput) region.nodes.push_back(n.id);
  }
  region.inputs = graph.inputs();
  region.outputs = graph.outputs();
  return region;
}

// The serialized ModelProto.
std::string export_onnx_bytes(const Graph& graph, const OnnxExportRegion& region);

// Writes export_onnx_bytes to `path` (replacing it); throws InputError when it cannot.
void export_onnx_file(const Graph& graph, const OnnxExportRegion& region,
                      const std::filesystem::path& path);

}  // namespace co_up::graph
