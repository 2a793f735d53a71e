// The backend conformance suite (tests/backends/plugin_conformance.h) for every plugin that needs
// nothing but its file: a new backend is tested by one more line below.
#include "tests/backends/plugin_conformance.h"

namespace co_up::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(
    Backends, PluginConformance,
    ::testing::Values(Backend{"libco_up_cpu_reference.so", "B", 0.0},
                      Backend{"libco_up_cpu_xnnpack.so", "B", 0.0},
                      Backend{"libco_up_npu_int8.so", "N", 0.02},
                      Backend{"libco_up_opencl.so", "G", 1e-6}),
    [](const ::testing::TestParamInfo<Backend>& info) {
      std::string name = info.param.file;
      name = name.substr(std::string("libco_up_").size());
      name = name.substr(0, name.find('.'));
      return name;
    });

}  // namespace
}  // namespace co_up::testing
