// npu-int8 (the int8 reference accelerator) against f32 cpu-xnnpack on one core, and the cost of
// an accelerator node itself.
//
//   co_up_bench_int8 [--networks=resnet50,mobilenet] [--frames=N] [--reps=R] [--image-size=N]
//
// 1. Networks: every layer on B (cpu-xnnpack, f32) vs every layer on N (npu-int8, hosted on B's
//    core, one thread), switch mode, one frame per run() call; N first runs its calibration
//    frames, which are not timed. int8 is measured twice: kernels=auto (AVX512-VNNI convolutions
//    where the CPU has them) and kernels=xnnpack (XNNPACK's int8 operators only). The three
//    configurations are interleaved R times, `frames` frames each; medians over all.
// 2. Node overhead: a partition of one Identity on N, driven as the runtime drives it: bind the
//    input (quantise: f32 NCHW -> int8 NHWC), run, map the output (dequantise back). The run is
//    the node's own cost per frame; bind and map are the data conversion, reported apart.
//    Also the Executor-level view: relu(B) -> identity(N) -> relu(B) vs all three on B.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "bench/bench_text.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin.h"
#include "core/plugin_registry.h"
#include "core/subgraph_desc.h"
#include "graph/builder.h"
#include "graph/graph.h"

namespace {

using co_up::bench::now_s;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

constexpr int kCalibrationFrames = 2;

// B = core 0, one thread (cpu-xnnpack); N = npu-int8 on B's core.
co_up::Platform one_core(const std::string& kernels) {
  return co_up::parse_platform(
      R"({"name": "bench-1core", "processors": [
          {"letter": "B", "kind": "cpu", "backend": ["cpu-xnnpack"], "cores": [0], "threads": 1},
          {"letter": "N", "kind": "npu", "backend": ["npu-int8"], "host": "B",
           "options": {"calibration_frames": ")" + std::to_string(kCalibrationFrames) +
          R"(", "kernels": ")" + kernels + R"("}}]})",
      "int8 bench");
}

// One configuration of a network, set up once; frame() times one switch-mode frame.
class Config {
 public:
  Config(const co_up::graph::Graph& g, char letter, const std::string& kernels,
         const co_up::PluginRegistry& plugins)
      : executor_(g, co_up::Partition::create(g, std::string(g.layer_count(), letter)),
                  one_core(kernels), plugins, options()) {
    request_.input_sets = {co_up::seeded_inputs(g, 1)};
    request_.frames = kCalibrationFrames + 1;  // calibration (N) and a warm-up: not timed
    executor_.run(request_);
    request_.frames = 1;
  }
  double frame() {
    const double t = now_s();
    executor_.run(request_);
    return now_s() - t;
  }

 private:
  static co_up::ExecutorOptions options() {
    co_up::ExecutorOptions o;
    o.mode = co_up::ExecutionMode::kSwitch;
    return o;
  }
  co_up::Executor executor_;
  co_up::RunRequest request_;
};

void bench_networks(const std::vector<std::string>& networks, int frames, int reps,
                    int64_t image_size, const co_up::PluginRegistry& plugins) {
  std::printf("%-11s %12s %12s %14s %10s %14s\n", "network", "f32 xnn ms", "int8 ms",
              "int8 xnnpack ms", "speedup", "speedup xnnpack");
  for (const std::string& name : networks) {
    co_up::NetworkSpec spec;
    spec.name = name;
    spec.image_size = image_size;
    const co_up::graph::Graph g = co_up::build_network(spec);
    Config f32(g, 'B', "auto", plugins);
    Config int8(g, 'N', "auto", plugins);
    Config int8_xnn(g, 'N', "xnnpack", plugins);
    std::vector<double> a, b, c;
    for (int r = 0; r < reps; ++r) {
      for (int f = 0; f < frames; ++f) a.push_back(f32.frame());
      for (int f = 0; f < frames; ++f) b.push_back(int8.frame());
      for (int f = 0; f < frames; ++f) c.push_back(int8_xnn.frame());
    }
    const double ma = median(a), mb = median(b), mc = median(c);
    std::printf("%-11s %12.2f %12.2f %14.2f %9.2fx %13.2fx\n", name.c_str(), ma * 1e3, mb * 1e3,
                mc * 1e3, ma / mb, ma / mc);
    std::fflush(stdout);
  }
}

// relu(B) -> identity(N) -> relu(B) on a [1, C, H, W] tensor.
co_up::graph::Graph identity_graph(int64_t c, int64_t h, int64_t w) {
  co_up::graph::SeededWeights weights(1);
  co_up::graph::GraphBuilder b("identity", weights);
  auto x = b.input("data", {1, c, h, w});
  b.begin_layer("pre");
  x = b.relu(x, "pre");
  b.begin_layer("npu");
  x = b.identity(x, "npu");
  b.begin_layer("post");
  x = b.relu(x, "post");
  b.output(x);
  return b.finish();
}

void bench_node_overhead(const co_up::PluginRegistry& plugins, int frames) {
  std::printf("\nnode overhead: one Identity on N (npu-int8), medians of %d frames, microseconds\n",
              frames);
  std::printf("%-18s %10s %14s %14s %16s %16s\n", "tensor", "run", "bind (quant)",
              "map (dequant)", "executor B|N|B", "executor B|B|B");
  struct Shape {
    int64_t c, h, w;
  };
  for (const Shape s : {Shape{1000, 1, 1}, Shape{64, 56, 56}, Shape{256, 14, 14}}) {
    const co_up::graph::Graph g = identity_graph(s.c, s.h, s.w);
    const co_up::Partition partition = co_up::Partition::create(g, "BNB");
    const co_up::SubGraph& npu = partition.subgraphs().at(1);
    const co_up::SubGraphDesc desc(g, npu);
    auto device = co_up::Device::create(plugins.find("npu-int8"),
                                        {{"processor", "N"}, {"threads", "1"},
                                         {"calibration_frames", "1"}},
                                        "bench device");
    co_up::CompiledSubGraph compiled(device, desc.get(), "bench identity");
    const std::vector<float> input = co_up::seeded_inputs(g, 3).at(0);
    std::vector<float> output(input.size());
    std::vector<double> run, bind, map;
    for (int f = 0; f < frames + 1 + kCalibrationFrames; ++f) {
      double t = now_s();
      if (!compiled.bind_input(0, input.data())) throw std::runtime_error("npu-int8 refused a bind");
      const double t_bind = now_s() - t;
      t = now_s();
      compiled.run(nullptr);
      const double t_run = now_s() - t;
      t = now_s();
      const auto* out = static_cast<const float*>(compiled.map(CO_UP_IO_OUTPUT, 0));
      std::copy(out, out + output.size(), output.begin());
      compiled.unmap(CO_UP_IO_OUTPUT, 0);
      const double t_map = now_s() - t;
      if (f <= kCalibrationFrames) continue;  // calibration (f32) and warm-up
      run.push_back(t_run);
      bind.push_back(t_bind);
      map.push_back(t_map);
    }
    // The Executor's view: an N stage between two B stages, one frame at a time.
    auto latency = [&](const std::string& order) {
      co_up::ExecutorOptions options;
      options.mode = co_up::ExecutionMode::kSwitch;
      co_up::Executor executor(g, co_up::Partition::create(g, order), one_core("auto"), plugins,
                               options);
      co_up::RunRequest request;
      request.input_sets = {co_up::seeded_inputs(g, 3)};
      request.frames = kCalibrationFrames + 1;
      executor.run(request);
      request.frames = 1;
      std::vector<double> t;
      for (int f = 0; f < frames; ++f) {
        const double start = now_s();
        executor.run(request);
        t.push_back(now_s() - start);
      }
      return median(t);
    };
    const double mixed = latency("BNB");
    const double all_b = latency("BBB");
    char label[64];
    std::snprintf(label, sizeof(label), "[1,%lld,%lld,%lld]", static_cast<long long>(s.c),
                  static_cast<long long>(s.h), static_cast<long long>(s.w));
    std::printf("%-18s %10.1f %14.1f %14.1f %16.1f %16.1f\n", label, median(run) * 1e6,
                median(bind) * 1e6, median(map) * 1e6, mixed * 1e6, all_b * 1e6);
  }
}

int run_int8(int argc, char** argv) {
  std::vector<std::string> networks = {"resnet50", "mobilenet"};
  int frames = 5;
  int reps = 3;
  int64_t image_size = 0;
  for (const co_up::bench::BenchOption& a : co_up::bench::read_options(argc, argv)) {
    if (a.is("networks")) {
      networks = a.list();
    } else if (a.is("frames")) {
      frames = static_cast<int>(a.integer(1, 1000000));
    } else if (a.is("reps")) {
      reps = static_cast<int>(a.integer(1, 100000));
    } else if (a.is("image-size")) {
      image_size = a.integer(1, 100000);
    } else if (a.is("help")) {
      std::printf("usage: co_up_bench_int8 [--networks=a,b] [--frames=N] [--reps=R] [--image-size=N]\n");
      return 0;
    } else {
      a.unknown();
    }
  }
  const auto plugins = co_up::PluginRegistry::load_directory(CO_UP_PLUGIN_DIR);
  if (!plugins.find("npu-int8") || !plugins.find("cpu-xnnpack")) {
    throw co_up::RuntimeError(std::string("needs the npu-int8 and cpu-xnnpack plugins in ") + CO_UP_PLUGIN_DIR);
  }
  bench_networks(networks, frames, reps, image_size, plugins);
  bench_node_overhead(plugins, frames * reps * 10);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return co_up::bench::bench_main("co_up_bench_int8", [&] { return run_int8(argc, argv); });
}
