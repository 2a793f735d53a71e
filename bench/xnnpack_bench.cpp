// cpu-xnnpack against cpu-reference, one network at a time on one core (B = core 0, one thread),
// and the fraction of this core's peak f32 FLOP/s each reaches. The peak is measured with
// XNNPACK's own GEMM (fully connected operator, M = N = K = 1024, one thread).
//
//   co_up_bench_xnnpack [--networks=alexnet,squeezenet] [--frames=N] [--image-size=N]
//
// The ONNX Runtime comparison the issue asks for needs ONNX import (issue 3), not done yet.
#include <xnnpack.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/graph.h"

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best-of-several GFLOP/s of XNNPACK's f32 GEMM on one thread.
double peak_gflops() {
  if (xnn_initialize(nullptr) != xnn_status_success) return 0.0;
  constexpr size_t kN = 1024;
  std::vector<float> a(kN * kN), w(kN * kN), c(kN * kN);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto* v : {&a, &w}) for (float& x : *v) x = dist(rng);
  xnn_operator_t op = nullptr;
  if (xnn_create_fully_connected_nc_f32(kN, kN, kN, kN, w.data(), nullptr, -INFINITY, INFINITY, 0,
                                        &op) != xnn_status_success ||
      xnn_setup_fully_connected_nc_f32(op, kN, a.data(), c.data(), nullptr) != xnn_status_success) {
    return 0.0;
  }
  xnn_run_operator(op, nullptr);  // warm-up
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    const double t = now_s();
    xnn_run_operator(op, nullptr);
    best = std::min(best, now_s() - t);
  }
  xnn_delete_operator(op);
  return 2.0 * kN * kN * kN / best / 1e9;
}

co_up::Platform one_core(const std::string& backend) {
  return co_up::parse_platform(
      R"({"name": "bench-1core", "processors": [{"letter": "B", "kind": "cpu", "backend": [")" +
          backend + R"("], "cores": [0], "threads": 1}]})",
      "xnnpack bench");
}

// Median seconds per frame of `frames` frames in switch mode (one frame at a time).
double seconds_per_frame(const co_up::graph::Graph& g, const std::string& backend, int frames,
                         const co_up::PluginRegistry& plugins) {
  co_up::ExecutorOptions options;
  options.mode = co_up::ExecutionMode::kSwitch;
  co_up::Executor executor(g, co_up::Partition::create(g, std::string(g.layer_count(), 'B')),
                           one_core(backend), plugins, options);
  co_up::RunRequest request;
  request.input_sets = {co_up::seeded_inputs(g, 1)};
  request.frames = 1;
  executor.run(request);  // warm-up: caches, page faults
  std::vector<double> times;
  for (int i = 0; i < frames; ++i) {
    const double t = now_s();
    executor.run(request);
    times.push_back(now_s() - t);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> networks = {"alexnet", "googlenet", "mobilenet", "resnet50", "squeezenet"};
  int frames = 5;
  int64_t image_size = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--networks=", 0) == 0) {
      networks.clear();
      std::stringstream list(arg.substr(11));
      for (std::string n; std::getline(list, n, ',');) networks.push_back(n);
    } else if (arg.rfind("--frames=", 0) == 0) {
      frames = std::max(1, std::stoi(arg.substr(9)));
    } else if (arg.rfind("--image-size=", 0) == 0) {
      image_size = std::stoll(arg.substr(13));
    } else {
      std::fprintf(stderr, "usage: %s [--networks=a,b] [--frames=N] [--image-size=N]\n", argv[0]);
      return 2;
    }
  }
  try {
    const auto plugins = co_up::PluginRegistry::load_directory(CO_UP_PLUGIN_DIR);
    const double peak = peak_gflops();
    std::printf("peak: XNNPACK f32 GEMM 1024^3, 1 thread: %.1f GFLOP/s\n\n", peak);
    std::printf("%-11s %9s %12s %12s %8s %11s %11s\n", "network", "GMACs", "xnnpack ms",
                "reference ms", "speedup", "xnn %peak", "ref %peak");
    for (const std::string& name : networks) {
      co_up::NetworkSpec spec;
      spec.name = name;
      spec.image_size = image_size;
      const co_up::graph::Graph g = co_up::build_network(spec);
      int64_t macs = 0;
      for (const auto& node : g.nodes()) macs += co_up::graph::node_macs(g, node);
      const double x = seconds_per_frame(g, "cpu-xnnpack", frames, plugins);
      const double r = seconds_per_frame(g, "cpu-reference", frames, plugins);
      const double gflop = 2.0 * double(macs) / 1e9;
      std::printf("%-11s %9.3f %12.2f %12.2f %7.2fx %10.1f%% %10.1f%%\n", name.c_str(),
                  double(macs) / 1e9, x * 1e3, r * 1e3, r / x, 100.0 * gflop / x / peak,
                  100.0 * gflop / r / peak);
      std::fflush(stdout);
    }
    std::printf("\nONNX Runtime comparison: needs ONNX import (issue 3), not available yet.\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "co_up_bench_xnnpack: %s\n", e.what());
    return 1;
  }
  return 0;
}
