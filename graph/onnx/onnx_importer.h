// ONNX import: an .onnx file (opsets 11-17, as torch.onnx / tf2onnx export CNNs) to a co_up Graph.
//
// What the importer does, so that the rest of co_up sees the same IR as for a zoo network:
//  - constants: initializers and Constant nodes; subgraphs that only compute on constants (the
//    Shape -> Gather -> Unsqueeze -> Concat chain before a Reshape, PyTorch's Slice/Transpose/Cast
//    chain for F.pad) are evaluated at load, with the input shape known;
//  - operators map one-to-one onto graph/op.h where the IR has them; Gemm and MatMul with a
//    constant right-hand side become FullyConnected (transB, alpha and beta applied to the weights);
//    an Add/Sub/Mul/Div of a Conv/FullyConnected output (read by nothing else) by a per-channel or
//    scalar constant is folded into that op's weights and bias; x * HardSigmoid(x) with
//    alpha 1/6, beta 1/2 becomes HardSwish; a constant zero Pad is folded into the Conv (or
//    AveragePool) it feeds; Dropout and Identity disappear; auto_pad is resolved to explicit pads;
//  - BatchNormalization stays a node here and is folded by the common passes (graph/passes.h).
// Every node lands in layer unit 0; build_network (core/network.h) runs the passes and then
// assigns layer units (assign_block_units, or assign_op_units for --units=ops).
//
// Errors: InputError (core/error.h), one line naming the file and, where there is one, the node:
// unreadable/truncated/corrupt file, not an ONNX model, unsupported opset (outside 11-17),
// unsupported operator (its op type and node name), a dynamic input shape without
// ImportOptions::input_shape, external tensor data, an exits list that does not name every output
// once. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace co_up::graph {

struct OnnxImportOptions {
  // The input's shape (NCHW), replacing the model's: needed when the model's input has symbolic
  // (dynamic) dimensions; must have the model's rank. Empty: the model's own shape.
  std::vector<int64_t> input_shape;
  // The model's exits (graph output names, stage order, final last), from a sidecar JSON; empty:
  // outputs named exit0, exit1, ... are exits by convention. `exits_origin` names the list in
  // errors ("exits file 'm.onnx.exits.json'").
  std::vector<std::string> exits;
  std::string exits_origin;
};

// The opsets of the default domain the importer accepts.
inline constexpr int64_t kOnnxMinOpset = 11;
inline constexpr int64_t kOnnxMaxOpset = 17;

Graph import_onnx_file(const std::filesystem::path& path, const OnnxImportOptions& options = {});

// The same from bytes in memory; `source` names them in error messages (the fuzz target's entry).
Graph import_onnx_bytes(std::string_view bytes, const std::string& source,
                        const OnnxImportOptions& options = {});

// Parses "1,3,224,224" (--input-shape); throws InputError naming the option for anything else.
std::vector<int64_t> parse_input_shape(const std::string& text);

}  // namespace co_up::graph
