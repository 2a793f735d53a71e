// libFuzzer target for the ONNX loader: any bytes must end in a Graph or an InputError — never a
// crash, a hang, or a sanitizer report. Seeds: tests/fixtures/onnx/*.onnx (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "graph/onnx/layer_units.h"
#include "graph/onnx/onnx_importer.h"
#include "graph/passes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    co_up::graph::Graph g = co_up::graph::import_onnx_bytes(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    co_up::graph::optimize_for_inference(g);
    co_up::graph::assign_block_units(g);
    g.validate();
  } catch (const co_up::InputError&) {
    // The expected outcome for bad bytes.
  }
  return 0;
}
