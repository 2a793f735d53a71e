// `co_up --export-partitions=DIR`: ARM-CO-UP's interface layer (§4.3), the step before the
// vendor's conversion tool. Every sub-graph of the order that runs on an accelerator becomes a
// standalone ONNX model with its weights, named by the paper's convention
// `<graph>_<first layer>_<last layer>.onnx`; the vendor converter (rknn-toolkit2, ...) turns it
// into `<graph>_<first>_<last>.<ext>`, which the accelerator's plugin loads by the same name.
//
// Accelerator letters: N, and every processor the platform declares with kind "npu" or "dsp".
// Nothing is run and no plugin is loaded, so it works on the development machine that lacks the
// NPU and its runtime.
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "core/partition.h"
#include "core/platform.h"
#include "graph/graph.h"

namespace co_up::cli {

// "alexnet_5_7": what the vendor-converted file of layers 5..7 of graph "alexnet" is called,
// before its extension.
std::string partition_model_name(const std::string& graph_name, uint32_t first_layer,
                                 uint32_t last_layer);

// N plus the letters of the platform's npu/dsp processors ("N", "ND", ...).
std::string accelerator_letters(const Platform& platform);

struct ExportedPartition {
  std::filesystem::path path;
  const SubGraph* subgraph = nullptr;  // in the Partition passed in
  uint64_t bytes = 0;
};

// Writes DIR/<graph>_<first>_<last>.onnx for each accelerator sub-graph of `partition`, creating
// DIR if needed. Throws InputError when the order maps no layer to an accelerator, or when DIR
// cannot be created or written (a file that fails is not left half-written).
std::vector<ExportedPartition> export_partitions(const graph::Graph& graph,
                                                 const Partition& partition,
                                                 const Platform& platform,
                                                 const std::filesystem::path& dir);

// The command: export_partitions for --order, one line per file on `out`; returns the exit status.
int run_export_partitions(const graph::Graph& graph, const std::string& order,
                          const Platform& platform, const std::filesystem::path& dir,
                          std::ostream& out);

}  // namespace co_up::cli
