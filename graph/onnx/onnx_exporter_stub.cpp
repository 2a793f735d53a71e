// Built instead of onnx_exporter.cpp when libonnx-dev / libprotobuf-dev are missing.
#include "core/error.h"
#include "graph/onnx/onnx_exporter.h"

namespace co_up::graph {

std::string export_onnx_bytes(const Graph&, const OnnxExportRegion& region) {
  throw InputError("cannot export '" + region.name +
                   "' to ONNX: this co_up was built without ONNX support (install libonnx-dev "
                   "and libprotobuf-dev, then rebuild)");
}

void export_onnx_file(const Graph& graph, const OnnxExportRegion& region,
                      const std::filesystem::path&) {
  export_onnx_bytes(graph, region);
}

}  // namespace co_up::graph
