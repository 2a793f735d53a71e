// cpu-xnnpack against cpu-reference, one network at a time on one core (B = core 0, one thread),
// and the fraction of this core's peak f32 FLOP/s each reaches. The peak is the larger of a
// register-only FMA loop (AVX-512 where the CPU has it: the physical limit) and XNNPACK's own
// GEMM (fully connected operator, M = N = K = 1024, one thread).
//
//   co_up_bench_xnnpack [--networks=alexnet,squeezenet] [--frames=N] [--image-size=N] [--convs]
//
// --convs: every distinct convolution shape of the networks, run on one thread by cpu-xnnpack's
// AVX-512 kernel and by XNNPACK's operator on the same buffers, interleaved, caches flushed
// before each run (as in a network, where weights are not cached between frames); medians of 15,
// GFLOP/s of both and the path the backend picks (avx512_conv_wins). The ONNX Runtime comparison
// is bench/ort_compare.sh.
#include <xnnpack.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "bench/bench_text.h"
#include "avx512_conv.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/graph.h"
#include "xnn_thread_pool.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start _mm512_set1_ps from an "undefined" vector it then reports as
// uninitialized (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

namespace {

using co_up::bench::now_s;

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

// GFLOP/s of independent FMA chains in registers: the core's arithmetic limit (no memory).
#if defined(__x86_64__)
template <size_t... kChain>
__attribute__((target("avx512f"))) double avx512_fma_gflops(std::index_sequence<kChain...>) {
  // kChain... > FMA latency x ports: the ports never wait. Constant indices keep acc in registers.
  constexpr int64_t kIterations = 20'000'000;
  __m512 acc[sizeof...(kChain)] = {_mm512_set1_ps(float(kChain))...};
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  const double t = now_s();
  for (int64_t n = 0; n < kIterations; ++n) {
    ((acc[kChain] = _mm512_fmadd_ps(acc[kChain], a, b)), ...);
  }
  const double seconds = now_s() - t;
  volatile float sink = (_mm512_reduce_add_ps(acc[kChain]) + ...);
  (void)sink;
  return 2.0 * 16 * double(sizeof...(kChain)) * double(kIterations) / seconds / 1e9;
}
#endif

double fma_peak_gflops() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) {
    double best = 0;
    for (int i = 0; i < 3; ++i) best = std::max(best, avx512_fma_gflops(std::make_index_sequence<24>{}));
    return best;
  }
#endif
  return 0.0;  // elsewhere the XNNPACK GEMM stands for the peak
}

struct ConvCase {
  std::string network, layer;
  co_up::backends::Conv2dShape shape;
};

// Distinct convolution shapes of `g`, first occurrence named.
void collect_convs(const std::string& network, const co_up::graph::Graph& g,
                   std::vector<ConvCase>& out) {
  for (const auto& node : g.nodes()) {
    if (node.op != co_up::graph::OpType::kConv) continue;
    const auto& x = g.tensor(node.inputs[0]).desc.shape;
    const auto& w = g.tensor(node.inputs[1]).desc.shape;
    co_up::backends::Conv2dShape s;
    s.batch = x[0], s.in_channels = x[1], s.in_height = x[2], s.in_width = x[3];
    s.out_channels = w[0], s.kernel_h = w[2], s.kernel_w = w[3];
    const auto& strides = node.attrs.get_ints("strides");
    const auto& pads = node.attrs.get_ints("pads");  // top, left, bottom, right
    const auto& dilations = node.attrs.get_ints("dilations");
    s.stride_h = strides[0], s.stride_w = strides[1];
    s.pad_top = pads[0], s.pad_left = pads[1], s.pad_bottom = pads[2], s.pad_right = pads[3];
    s.dilation_h = dilations[0], s.dilation_w = dilations[1];
    s.group = node.attrs.get_int("group");
    if (s.is_depthwise()) continue;  // always XNNPACK's
    const bool seen = std::any_of(out.begin(), out.end(), [&](const ConvCase& c) {
      const auto& t = c.shape;
      return t.in_channels == s.in_channels && t.in_height == s.in_height &&
             t.in_width == s.in_width && t.out_channels == s.out_channels &&
             t.kernel_h == s.kernel_h && t.stride_h == s.stride_h && t.pad_top == s.pad_top &&
             t.group == s.group && t.dilation_h == s.dilation_h;
    });
    if (!seen) out.push_back({network, node.name, s});
  }
}

// Median seconds of cpu-xnnpack's AVX-512 kernel and of XNNPACK's operator on one shape.
std::pair<double, double> time_conv(const co_up::backends::Conv2dShape& s) {
  const int64_t taps = s.kernel_h * s.kernel_w, gin = s.in_channels / s.group;
  const int64_t gout = s.out_channels / s.group;
  std::vector<float> x(size_t(s.batch * s.in_height * s.in_width * s.in_channels) + 64);
  std::vector<float> w(size_t(s.out_channels * gin * taps)), ohwi(w.size()), b(size_t(s.out_channels));
  std::vector<float> y(size_t(s.batch * s.out_height() * s.out_width() * s.out_channels) + 64);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto* v : {&x, &w, &b}) for (float& e : *v) e = dist(rng);
  for (int64_t m = 0; m < s.out_channels; ++m)
    for (int64_t c = 0; c < gin; ++c)
      for (int64_t t = 0; t < taps; ++t) ohwi[size_t((m * taps + t) * gin + c)] = w[size_t((m * gin + c) * taps + t)];
  co_up::xnnpack::CpuPool pool(1, {}, co_up::xnnpack::Schedule::kStatic);
  co_up::xnnpack::Avx512Convolution own(s, {w.data(), b.data(), 0.0f, INFINITY}, x.data(), y.data());
  xnn_operator_t op = nullptr;
  xnn_create_convolution2d_nhwc_f32(
      uint32_t(s.pad_top), uint32_t(s.pad_right), uint32_t(s.pad_bottom), uint32_t(s.pad_left),
      uint32_t(s.kernel_h), uint32_t(s.kernel_w), uint32_t(s.stride_h), uint32_t(s.stride_w),
      uint32_t(s.dilation_h), uint32_t(s.dilation_w), uint32_t(s.group), size_t(gin), size_t(gout),
      size_t(s.in_channels), size_t(s.out_channels), ohwi.data(), b.data(), 0.0f, INFINITY, 0, &op);
  xnn_setup_convolution2d_nhwc_f32(op, size_t(s.batch), size_t(s.in_height), size_t(s.in_width),
                                   x.data(), y.data(), nullptr);
  static std::vector<char> flush(64 << 20, 1);  // larger than the last-level cache
  std::vector<double> mine, theirs;
  for (int i = 0; i < 15; ++i) {
    for (int which = 0; which < 2; ++which) {
      for (size_t j = 0; j < flush.size(); j += 64) flush[j]++;
      const double t = now_s();
      if (which == 0) {
        own.run(pool);
      } else {
        xnn_run_operator(op, nullptr);
      }
      (which == 0 ? mine : theirs).push_back(now_s() - t);
    }
  }
  xnn_delete_operator(op);
  std::sort(mine.begin(), mine.end());
  std::sort(theirs.begin(), theirs.end());
  return {mine[mine.size() / 2], theirs[theirs.size() / 2]};
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

static int run_xnnpack(int argc, char** argv) {
  std::vector<std::string> networks = {"alexnet", "googlenet", "mobilenet", "resnet50", "squeezenet"};
  int frames = 5;
  int64_t image_size = 0;
  bool convs = false;
  for (const co_up::bench::BenchOption& a : co_up::bench::read_options(argc, argv)) {
    if (a.is("networks")) {
      // Empty: only the peak lines (bench/ort_compare.sh reads them).
      networks = a.value.empty() ? std::vector<std::string>{} : a.list();
    } else if (a.is("frames")) {
      frames = static_cast<int>(a.integer(1, 1000000));
    } else if (a.is("image-size")) {
      image_size = a.integer(1, 100000);
    } else if (a.is("convs")) {
      convs = true;
    } else if (a.is("help")) {
      std::printf("usage: co_up_bench_xnnpack [--networks=a,b] [--frames=N] [--image-size=N] [--convs]\n");
      return 0;
    } else {
      a.unknown();
    }
  }
  const auto plugins = co_up::PluginRegistry::load_directory(CO_UP_PLUGIN_DIR);
  const double gemm = peak_gflops();
  const double fma = fma_peak_gflops();
  const double peak = std::max(gemm, fma);
  std::printf("xnnpack gemm: XNNPACK f32 GEMM 1024^3, 1 thread: %.1f GFLOP/s\n", gemm);
  if (fma > 0) {
    std::printf("fma loop: AVX-512 FMA in registers, 1 thread: %.1f GFLOP/s\n", fma);
    std::printf("peak: the larger of the two, 1 thread: %.1f GFLOP/s\n\n", peak);
  } else {
    std::printf("peak: XNNPACK f32 GEMM 1024^3, 1 thread: %.1f GFLOP/s\n\n", peak);
  }
  if (convs) {
    if (!co_up::xnnpack::avx512_gemm_available()) {
      std::printf("--convs: this CPU has no AVX-512 (or CO_UP_NO_AVX512_GEMM is set): "
                  "cpu-xnnpack uses XNNPACK's convolutions only\n");
      return 0;
    }
    if (xnn_initialize(nullptr) != xnn_status_success) throw co_up::RuntimeError("xnn_initialize failed");
    std::vector<ConvCase> cases;
    for (const std::string& name : networks) {
      co_up::NetworkSpec spec;
      spec.name = name;
      spec.image_size = image_size;
      collect_convs(name, co_up::build_network(spec), cases);
    }
    std::printf("%-11s %-34s %-26s %9s %9s %8s %8s\n", "network", "first layer", "C>M HxW kxk/s g",
                "avx512", "xnnpack", "ratio", "picks");
    std::string current;
    double own_total = 0, xnn_total = 0, picked_total = 0, best_total = 0;
    int shapes = 0, mispicked = 0;
    // Whether avx512_conv_wins picks the faster path is measured here, not asserted in a unit
    // test: "as picked" against "best of both" per shape (the path that measured faster), and
    // the shapes where the rule picked the one that measured more than 5 % slower.
    int all_shapes = 0, all_mispicked = 0;
    double all_picked = 0, all_best = 0;
    auto summary = [&] {
      if (current.empty()) return;
      std::printf("%-11s total conv ms: avx512 %.2f, xnnpack %.2f, as picked %.2f (%.2fx XNNPACK), "
                  "best of both %.2f (picked / best %.3f; %d of %d shapes picked > 5 %% slower)\n\n",
                  current.c_str(), own_total * 1e3, xnn_total * 1e3, picked_total * 1e3,
                  xnn_total / picked_total, best_total * 1e3, picked_total / best_total, mispicked, shapes);
      all_shapes += shapes;
      all_mispicked += mispicked;
      all_picked += picked_total;
      all_best += best_total;
    };
    for (const ConvCase& c : cases) {
      if (c.network != current) {
        summary();
        current = c.network;
        own_total = xnn_total = picked_total = best_total = 0;
        shapes = mispicked = 0;
      }
      const auto& s = c.shape;
      const auto [own, xnn] = time_conv(s);
      const bool picks = co_up::xnnpack::avx512_conv_wins(s);
      own_total += own;
      xnn_total += xnn;
      picked_total += picks ? own : xnn;
      best_total += std::min(own, xnn);
      ++shapes;
      if ((picks ? own : xnn) > 1.05 * std::min(own, xnn)) ++mispicked;
      const double gflop = 2.0 * double(s.batch * s.out_height() * s.out_width() * s.out_channels *
                                        s.kernel_h * s.kernel_w * (s.in_channels / s.group)) / 1e9;
      char geometry[64];
      std::snprintf(geometry, sizeof(geometry), "%lld>%lld %lldx%lld %lldx%lld/%lld g%lld",
                    (long long)s.in_channels, (long long)s.out_channels, (long long)s.in_height,
                    (long long)s.in_width, (long long)s.kernel_h, (long long)s.kernel_w,
                    (long long)s.stride_h, (long long)s.group);
      const bool slower = (picks ? own : xnn) > 1.05 * std::min(own, xnn);
      std::printf("%-11s %-34.34s %-26s %8.1fG %8.1fG %7.2fx %8s%s\n", c.network.c_str(),
                  c.layer.c_str(), geometry, gflop / own, gflop / xnn, xnn / own,
                  picks ? "avx512" : "xnnpack", slower ? " (slower)" : "");
      std::fflush(stdout);
    }
    summary();
    std::printf("rule vs measurement: as picked / best of both %.3f over %d shapes, %d picked the path "
                "that measured > 5 %% slower\n", all_best > 0 ? all_picked / all_best : 0.0, all_shapes,
                all_mispicked);
    return 0;
  }
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
  return 0;
}

int main(int argc, char** argv) {
  return co_up::bench::bench_main("co_up_bench_xnnpack", [&] { return run_xnnpack(argc, argv); });
}
