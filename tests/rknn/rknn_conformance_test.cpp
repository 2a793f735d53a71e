// The backend conformance suite (tests/backends/plugin_conformance.h) for the rknn shim, over the
// fake librknnrt.so (tests/rknn/fake_rknnrt.cpp) as the other backends run over their own
// runtimes. The shim runs a converted model, never the sub-graph it is given, so the suite's Relu
// sub-graph (graph "test", layers 0-0) is first "converted" as every rknn partition is: exported
// to ONNX (what co_up --export-partitions writes) and named test_0_0.rknn in the device's
// model_dir. Everything the suite checks holds for the shim as it is; nothing is declined.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "graph/builder.h"
#include "graph/onnx/onnx_exporter.h"
#include "tests/backends/plugin_conformance.h"

namespace co_up::testing {
namespace {

// The models directory of this process: known before main (the suite's parameters are), made
// and removed by the environment below.
const std::string& model_dir() {
  static const std::string dir =
      (std::filesystem::temp_directory_path() / ("co_up_test_rknn_conformance_" + std::to_string(::getpid())))
          .string();
  return dir;
}

class ConvertedReluModel : public ::testing::Environment {
 public:
  void SetUp() override {
    std::filesystem::remove_all(model_dir());
    std::filesystem::create_directories(model_dir());
    graph::SeededWeights weights(1);
    graph::GraphBuilder b("test", weights);
    const graph::TensorId x = b.input("x", {1, 2, 3, 3});
    b.begin_layer("relu");
    b.output(b.relu(x, "y"));
    const graph::Graph g = b.finish();
    graph::export_onnx_file(g, graph::whole_graph_region(g),
                            std::filesystem::path(model_dir()) / "test_0_0.rknn");
    setenv("CO_UP_RKNN_LIBRARY", CO_UP_FAKE_RKNNRT, 1);
    unsetenv("FAKE_RKNNRT_INPUT");  // f32 NCHW in and out: the suite compares exactly
    unsetenv("FAKE_RKNNRT_OUTPUT");
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(model_dir(), ignored);
  }
};

const ::testing::Environment* const kModel = ::testing::AddGlobalTestEnvironment(new ConvertedReluModel);

INSTANTIATE_TEST_SUITE_P(
    Backends, PluginConformance,
    ::testing::Values(Backend{"libco_up_rknn.so", "N", 1e-6, {{"model_dir", model_dir()}}, false}),
    [](const ::testing::TestParamInfo<Backend>& info) { return std::string("rknn"); });

}  // namespace
}  // namespace co_up::testing
