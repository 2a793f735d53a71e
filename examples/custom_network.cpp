// Example: define a network with the builder API, split it over two processors, run it pipelined.
//
//   build/co_up_example_custom_network [ORDER]     (default order: BBLL)
//
// The same steps the co_up CLI takes, in ~60 lines: graph -> inference passes -> Partition by an
// order string -> Executor on the host platform with the plugins next to the binary -> report.
#include <iostream>
#include <string>

#include "core/error.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/builder.h"
#include "graph/passes.h"
#include "profiler/report.h"

namespace {

// A small residual CNN of four layer units; the shortcut in unit 2 reads unit 1's output.
co_up::graph::Graph build_tiny_resnet() {
  using namespace co_up::graph;
  SeededWeights weights(2024);
  GraphBuilder b("tiny_resnet", weights);
  TensorId x = b.input("data", {1, 3, 64, 64});

  b.begin_layer("stem");
  x = Stream(b, x).conv("stem", ConvParams::square(32, 3, 2, 1)).batch_norm().relu().tail();

  b.begin_layer("block1");
  const TensorId block_in = Stream(b, x).conv("block1", ConvParams::square(32, 3, 1, 1)).relu().tail();

  b.begin_layer("block2");
  const TensorId branch = Stream(b, block_in).conv("block2", ConvParams::square(32, 3, 1, 1)).tail();
  x = b.relu(b.add(branch, block_in, "block2_add"), "block2_relu");

  b.begin_layer("classifier");
  x = Stream(b, x).global_avg_pool().flatten().fully_connected("fc", 10).softmax().tail();
  b.output(x);

  Graph g = b.finish();
  optimize_for_inference(g);  // folds batch-norm, fuses activations
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const co_up::graph::Graph graph = build_tiny_resnet();
    const std::string order = argc > 1 ? argv[1] : "BBLL";

    const co_up::Platform platform = co_up::detect_host_platform("/sys");
    const co_up::PluginRegistry plugins =
        co_up::PluginRegistry::load_directory(co_up::PluginRegistry::default_directory());

    co_up::ExecutorOptions options;
    options.mode = co_up::ExecutionMode::kPipeline;
    options.profile_level = 2;
    co_up::Executor executor(graph, co_up::Partition::create(graph, order), platform, plugins,
                             options);

    co_up::RunRequest request;
    request.frames = 50;
    request.input_sets = {co_up::seeded_inputs(graph, 1)};
    const co_up::RunResult result = executor.run(request);

    co_up::profiler::print_report(std::cout, result.profile);
    std::cout << "class scores of the last frame:";
    for (float score : result.last_outputs.at(0)) std::cout << ' ' << score;
    std::cout << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "example failed: " << e.what() << "\n";
    return 1;
  }
}
