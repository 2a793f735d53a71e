// co_up_bench_npu_overhead: what one NPU node costs per frame beyond the NPU's own work and the
// terminal nodes' data conversion (target: under 50 microseconds).
//
// The NPU node is the rknn shim (backends/rknn) over the fake librknnrt.so the tests build
// (tests/rknn/fake_rknnrt.cpp), running a partition that is one ReLU: the exported ONNX model,
// copied to <graph>_0_0.rknn as the converter would name it. Per frame, through the plugin ABI as
// the executor calls it (map/write/unmap the input, run, map/read/unmap the output):
//   run         compiled_run: input conversion, rknn_inputs_set, rknn_run, rknn_outputs_get,
//               output conversion, rknn_outputs_release
//   compute     the fake's ReLU inside rknn_run (fake_rknnrt_compute_ns, summed by the fake)
//   copies      the fake copying the input in and the output out, as a runtime does to and from
//               NPU memory (fake_rknnrt_io_ns)
//   conversion  the shim's conversions alone (pack_input + unpack_output of that layout)
//   overhead    run - compute - copies - conversion, per frame: the NPU node's own cost (the
//               shim, the seven API calls, the fake's call bookkeeping).
// Every column is a median over frames.
//
// Options: --frames=N (default 3000), --quick (300 frames), --plugins=DIR, --help.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "core/error.h"
#include "core/partition.h"
#include "core/plugin.h"
#include "core/plugin_registry.h"
#include "core/subgraph_desc.h"
#include "graph/builder.h"
#include "graph/onnx/onnx_exporter.h"
#include "rknn_marshal.h"

namespace co_up::bench {
namespace {

struct Case {
  const char* label;
  std::vector<int64_t> shape;
  const char* input;   // FAKE_RKNNRT_INPUT: what the "converted model" takes
  const char* output;  // FAKE_RKNNRT_OUTPUT
  rknn::rknn_tensor_type type;
  bool nhwc;
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median_us(std::vector<int64_t> ns) {
  std::sort(ns.begin(), ns.end());
  return ns.empty() ? 0.0 : static_cast<double>(ns[ns.size() / 2]) / 1e3;
}

graph::Graph relu_graph(const std::vector<int64_t>& shape) {
  graph::SeededWeights weights(1);
  graph::GraphBuilder b("npu_node", weights);
  graph::TensorId x = b.input("data", shape);
  b.begin_layer("relu");
  b.output(b.relu(x, "relu"));
  return b.finish();
}

struct Row {
  double run_us, compute_us, copies_us, conversion_us, overhead_us;
};

using Counter = uint64_t (*)();

Row measure(const Case& c, const std::shared_ptr<const Plugin>& plugin,
            const std::filesystem::path& dir, Counter compute_ns, Counter io_ns, int frames) {
  const graph::Graph g = relu_graph(c.shape);
  const Partition partition = Partition::create(g, "N");
  const SubGraph& sg = partition.subgraphs()[0];
  graph::export_onnx_file(g, {"npu_node_0_0", sg.nodes, sg.inputs, sg.outputs}, dir / "npu_node_0_0.rknn");
  setenv("FAKE_RKNNRT_INPUT", c.input, 1);
  setenv("FAKE_RKNNRT_OUTPUT", c.output, 1);
  auto device = Device::create(plugin, {{"processor", "N"}, {"model_dir", dir.string()}}, "bench");
  const SubGraphDesc desc(g, sg);
  CompiledSubGraph compiled(device, desc.get(), "npu_node_0_0");

  const size_t count = static_cast<size_t>(g.tensor(sg.inputs[0]).desc.element_count());
  std::vector<float> input(count), output(count);
  for (size_t i = 0; i < count; ++i) input[i] = static_cast<float>(static_cast<int>(i % 97) - 48) / 16.0f;

  // The conversions alone, on the same layouts.
  rknn::TensorLayout in_layout{c.shape, c.nhwc, c.type, 1.0f / 16.0f, 0};
  rknn::TensorLayout out_layout{c.shape, std::string(c.output) == "nhwc", rknn::RKNN_TENSOR_FLOAT32, 1, 0};
  std::vector<unsigned char> packed(in_layout.bytes());
  std::vector<float> unpacked(count);
  const bool converts_input = c.nhwc || c.type != rknn::RKNN_TENSOR_FLOAT32;

  std::vector<int64_t> run_ns, fake_ns, copy_ns, conversion_ns, overhead_ns;
  for (int f = -frames / 10; f < frames; ++f) {  // the first tenth warms up
    auto* in = static_cast<float*>(compiled.map(CO_UP_IO_INPUT, 0));
    std::memcpy(in, input.data(), count * sizeof(float));
    // The input conversion alone, from the same (mapped) buffer the shim converts from.
    int64_t conversion = 0;
    if (converts_input) {
      const int64_t convert_begin = now_ns();
      rknn::pack_input(in, in_layout, packed.data());
      conversion += now_ns() - convert_begin;
    }
    compiled.unmap(CO_UP_IO_INPUT, 0);
    const uint64_t compute_before = compute_ns(), io_before = io_ns();
    const int64_t begin = now_ns();
    compiled.run(nullptr);
    const int64_t run = now_ns() - begin;
    const auto compute = static_cast<int64_t>(compute_ns() - compute_before);
    const auto copies = static_cast<int64_t>(io_ns() - io_before);
    const auto* out = static_cast<const float*>(compiled.map(CO_UP_IO_OUTPUT, 0));
    std::memcpy(output.data(), out, count * sizeof(float));
    compiled.unmap(CO_UP_IO_OUTPUT, 0);
    // The output conversion alone (NHWC back to NCHW), on data of the same size.
    if (out_layout.nhwc) {
      const int64_t convert_begin = now_ns();
      rknn::unpack_output(output.data(), out_layout, unpacked.data());
      conversion += now_ns() - convert_begin;
    }
    if (f < 0) continue;
    run_ns.push_back(run);
    fake_ns.push_back(compute);
    copy_ns.push_back(copies);
    conversion_ns.push_back(conversion);
    overhead_ns.push_back(run - compute - copies - conversion);
  }
  return {median_us(run_ns), median_us(fake_ns), median_us(copy_ns), median_us(conversion_ns),
          median_us(overhead_ns)};
}

}  // namespace
}  // namespace co_up::bench

static int run_npu_overhead(int argc, char** argv) {
  using namespace co_up;
  int frames = 3000;
  std::string plugins = CO_UP_PLUGIN_DIR;
  for (const bench::BenchOption& a : bench::read_options(argc, argv)) {
    if (a.is("quick")) {
      frames = 300;
    } else if (a.is("frames")) {
      frames = static_cast<int>(a.integer(1, 100000000));
    } else if (a.is("plugins")) {
      plugins = a.string();
    } else if (a.is("help")) {
      std::cout << "usage: co_up_bench_npu_overhead [--frames=N] [--quick] [--plugins=DIR]\n";
      return 0;
    } else {
      a.unknown();
    }
  }
  // The fake stands in for librknnrt.so; the shim's factory opens it when the plugins load.
  setenv("CO_UP_RKNN_LIBRARY", CO_UP_FAKE_RKNNRT, 1);
  unsetenv("FAKE_RKNNRT_LOG");
  const PluginRegistry registry = PluginRegistry::load_directory(plugins);
  const auto plugin = registry.find("rknn");
  if (!plugin) throw RuntimeError("the rknn plugin did not load: " + registry.summary());
  void* fake = dlopen(CO_UP_FAKE_RKNNRT, RTLD_NOW | RTLD_NOLOAD);
  auto compute_ns = fake ? reinterpret_cast<bench::Counter>(dlsym(fake, "fake_rknnrt_compute_ns")) : nullptr;
  auto io_ns = fake ? reinterpret_cast<bench::Counter>(dlsym(fake, "fake_rknnrt_io_ns")) : nullptr;
  if (!compute_ns || !io_ns) throw RuntimeError("the fake's counters are not in " + std::string(CO_UP_FAKE_RKNNRT));
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("co_up_npu_overhead_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);

  const std::vector<bench::Case> cases = {
      {"f32 NCHW in/out (no conversion)", {1, 16, 8, 8}, "f32,nchw", "nchw", rknn::RKNN_TENSOR_FLOAT32, false},
      {"f32 NCHW in/out (no conversion)", {1, 64, 28, 28}, "f32,nchw", "nchw", rknn::RKNN_TENSOR_FLOAT32, false},
      {"int8 NHWC in, f32 NHWC out", {1, 16, 8, 8}, "int8,nhwc,0.0625,0", "nhwc", rknn::RKNN_TENSOR_INT8, true},
      {"int8 NHWC in, f32 NHWC out", {1, 64, 28, 28}, "int8,nhwc,0.0625,0", "nhwc", rknn::RKNN_TENSOR_INT8, true},
      {"f16 NHWC in, f32 NCHW out", {1, 64, 28, 28}, "f16,nhwc", "nchw", rknn::RKNN_TENSOR_FLOAT16, true},
  };
  std::printf("NPU node overhead: one-ReLU partition through the rknn shim + fake librknnrt.so, "
              "%d frames, medians in microseconds\n\n", frames);
  std::printf("| layout                          | tensor      |    run | fake compute | fake copies | conversion | overhead |\n");
  std::printf("|---------------------------------|-------------|-------:|-------------:|------------:|-----------:|---------:|\n");
  double worst = 0;
  for (const bench::Case& c : cases) {
    const bench::Row r = bench::measure(c, plugin, dir, compute_ns, io_ns, frames);
    std::string shape;
    for (int64_t d : c.shape) {
      if (!shape.empty()) shape += 'x';
      shape += std::to_string(d);
    }
    std::printf("| %-31s | %-11s | %6.1f | %12.1f | %11.1f | %10.1f | %8.1f |\n", c.label, shape.c_str(),
                r.run_us, r.compute_us, r.copies_us, r.conversion_us, r.overhead_us);
    worst = std::max(worst, r.overhead_us);
  }
  std::filesystem::remove_all(dir);
  std::printf("\nworst median overhead %.1f us (target < 50 us)\n", worst);
  return 0;
}

int main(int argc, char** argv) {
  return co_up::bench::bench_main("co_up_bench_npu_overhead", [&] { return run_npu_overhead(argc, argv); });
}
