// Built instead of onnx_importer.cpp when libonnx-dev / libprotobuf-dev are missing.
#include "core/error.h"
#include "graph/onnx/onnx_importer.h"

namespace co_up::graph {

Graph import_onnx_file(const std::filesystem::path& path, const OnnxImportOptions&) {
  throw InputError("cannot load '" + path.string() +
                   "': this co_up was built without ONNX support (install libonnx-dev and "
                   "libprotobuf-dev, then rebuild)");
}

Graph import_onnx_bytes(std::string_view, const std::string& source, const OnnxImportOptions&) {
  throw InputError("cannot load '" + source + "': this co_up was built without ONNX support");
}

std::vector<int64_t> parse_input_shape(const std::string& text) {
  throw InputError("--input-shape='" + text + "': this co_up was built without ONNX support");
}

}  // namespace co_up::graph
