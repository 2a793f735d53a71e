// ONNX load time ("Loading ResNet50 from ONNX takes under 1 second including weight
// packing"), split into its phases, median of --repeat runs:
//   import   read + protobuf parse + constant folding + mapping to the IR (import_onnx_file)
//   passes   batch-norm folding, activation fusion, layer units (build_network minus import)
//   setup    Executor construction: every sub-graph compiled by its backend plugin, i.e. weight
//            packing (all layers on B, the host platform, this build's plugins)
//
//   co_up_bench_onnx_load MODEL.onnx [--repeat=N] [--plugins=DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "core/error.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/onnx/onnx_importer.h"

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

constexpr const char* kUsage = "usage: co_up_bench_onnx_load MODEL.onnx [--repeat=N] [--plugins=DIR]";

}  // namespace

static int run_onnx_load(int argc, char** argv) {
  using namespace co_up;
  std::string model;
  int repeat = 5;
  std::string plugins = CO_UP_PLUGIN_DIR;
  for (const bench::BenchOption& a : bench::read_options(argc, argv)) {
    if (a.is("repeat")) repeat = static_cast<int>(a.integer(1, 100000));
    else if (a.is("plugins")) plugins = a.string();
    else if (a.is("help")) {
      std::cout << kUsage << "\n";
      return 0;
    } else if (a.name.empty() && model.empty()) model = a.text;
    else a.unknown();
  }
  if (model.empty()) throw InputError(std::string("no model given; ") + kUsage);
  const PluginRegistry registry = PluginRegistry::load_directory(plugins);
  const Platform platform = detect_host_platform("/nonexistent-sysfs");
  std::vector<double> import_ms, build_ms, setup_ms, total_ms;
  uint32_t layers = 0;
  size_t nodes = 0;
  for (int r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    const graph::Graph imported = graph::import_onnx_file(model);
    import_ms.push_back(ms_since(start));
    nodes = imported.nodes().size();
    start = std::chrono::steady_clock::now();
    NetworkSpec spec;
    spec.model = model;
    const graph::Graph g = build_network(spec);  // imports again: passes = build - import
    build_ms.push_back(ms_since(start));
    layers = g.layer_count();
    start = std::chrono::steady_clock::now();
    {
      Executor executor(g, Partition::create(g, std::string(layers, 'B')), platform, registry, {});
      setup_ms.push_back(ms_since(start));
    }
    total_ms.push_back(build_ms.back() + setup_ms.back());
  }
  const double imp = median(import_ms), build = median(build_ms), setup = median(setup_ms);
  std::printf("%s: %zu ONNX-imported nodes, %u layer units; median of %d runs\n", model.c_str(),
              nodes, layers, repeat);
  std::printf("  import %8.1f ms  (read, parse, fold constants, map to the IR)\n", imp);
  std::printf("  passes %8.1f ms  (BN folding, fusion, layer units)\n", std::max(0.0, build - imp));
  std::printf("  setup  %8.1f ms  (executor: sub-graphs compiled, weights packed, all on B)\n", setup);
  std::printf("  total  %8.1f ms  (build_network + setup)\n", median(total_ms));
  return 0;
}

int main(int argc, char** argv) {
  return co_up::bench::bench_main("co_up_bench_onnx_load", [&] { return run_onnx_load(argc, argv); });
}
