// Own AVX-512 convolution against XNNPACK's (sliced on the claiming pool) at one and two threads,
// on the 1x1 shapes of MobileNetV2 that avx512_conv_wins() gives the own kernel: which one a
// two-thread cluster should run, per shape.
//
//   co_up_bench_conv_choice [--reps=N]
//
// Pools of one thread (core 0) and two (cores 0 and 1), held warm as a compiled sub-graph holds
// them. Rounds alternate the four variants; each time is the fastest over all rounds (on a shared
// host the fastest run is the one whose second core was free).
#include <xnnpack.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "avx512_conv.h"
#include "bench/bench_data.h"
#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "xnn_common.h"
#include "xnn_sliced_ops.h"
#include "xnn_thread_pool.h"

namespace {

using co_up::bench::random_floats;
using co_up::backends::Conv2dShape;
using co_up::xnnpack::Avx512Convolution;
using co_up::xnnpack::CpuPool;
using co_up::xnnpack::F32ConvParams;
using co_up::xnnpack::SlicedOperator;

double time_us(const std::function<void()>& run) {
  const auto t0 = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

static int run_conv_choice(int argc, char** argv) {
  int reps = 200;
  for (const co_up::bench::BenchOption& a : co_up::bench::read_options(argc, argv)) {
    if (a.is("reps")) {
      reps = static_cast<int>(a.integer(1, 10000000));
    } else if (a.is("help")) {
      std::printf("usage: co_up_bench_conv_choice [--reps=N]\n");
      return 0;
    } else {
      a.unknown();
    }
  }
  if (!co_up::xnnpack::avx512_gemm_available()) {
    std::fprintf(stderr, "co_up_bench_conv_choice: error: this CPU has no AVX-512 (nothing to compare)\n");
    return 1;
  }
  co_up::xnnpack::initialize_xnnpack("(bench)");
  const std::vector<int> one_core = {0}, two_cores = {0, 1};
  const CpuPool pool1(1, one_core, co_up::xnnpack::Schedule::kDynamic);
  const CpuPool pool2(2, two_cores, co_up::xnnpack::Schedule::kDynamic);
  const CpuPool::Warm warm(pool2);
  struct Shape { int64_t in, out, hw; };
  const std::vector<Shape> shapes = {{64, 384, 14}, {96, 576, 14}, {384, 64, 14}, {384, 96, 14},
                                     {576, 96, 14}, {160, 960, 7}, {960, 160, 7}, {576, 160, 7},
                                     {960, 320, 7}, {320, 1280, 7}, {144, 32, 28}, {192, 32, 28},
                                     {192, 64, 14}, {144, 24, 56}, {16, 96, 112}, {32, 192, 28},
                                     // MobileNetV3-L, EfficientNet-B0
                                     {80, 480, 14}, {112, 672, 14}, {480, 112, 14}, {672, 112, 14},
                                     {40, 240, 28}, {240, 40, 28}, {192, 1152, 7}, {1152, 192, 7},
                                     // ResNet-50, GoogLeNet, ConvNeXt-T
                                     {64, 256, 56}, {256, 64, 56}, {128, 512, 28}, {512, 128, 28},
                                     {256, 1024, 14}, {1024, 256, 14}, {512, 2048, 7}, {2048, 512, 7},
                                     {192, 64, 28}, {480, 192, 14}, {832, 384, 7}, {96, 384, 56},
                                     {384, 96, 56}, {384, 1536, 14}, {1536, 384, 14},
                                     // SqueezeNet's fire expand1x1, Inception-v3's 64 -> 80
                                     {16, 64, 55}, {32, 128, 27}, {48, 192, 27}, {64, 256, 13},
                                     {64, 80, 73}};
  std::printf("MobileNetV2's 1x1 shapes, then other networks'.\n1x1 convolutions (ReLU6), fastest of %d alternating rounds: in -> out at HxW, MACs, own "
              "1t us, own 2t us, xnnpack 1t us, xnnpack 2t us, own/xnnpack at 2t, the kernel the plugin runs (nothing fused)\n", reps);
  for (const Shape& sh : shapes) {
    Conv2dShape s;
    s.in_channels = sh.in;
    s.out_channels = sh.out;
    s.in_height = s.in_width = sh.hw;
    s.kernel_h = s.kernel_w = 1;
    const std::vector<float> x = random_floats(size_t(sh.hw * sh.hw * sh.in));
    const std::vector<float> w = random_floats(size_t(sh.in * sh.out));
    const std::vector<float> b = random_floats(size_t(sh.out));
    std::vector<float> y(size_t(sh.hw * sh.hw * sh.out) + 64);
    const Avx512Convolution own(s, F32ConvParams{w.data(), b.data(), 0.0f, 6.0f}, x.data(), y.data());
    const SlicedOperator xnn1 = SlicedOperator::convolution(s, w.data(), b.data(), 0.0f, 6.0f, 0, x.data(),
                                                            y.data(), sh.out, "bench", 1, 1);
    const SlicedOperator xnn2 = SlicedOperator::convolution(s, w.data(), b.data(), 0.0f, 6.0f, 0, x.data(),
                                                            y.data(), sh.out, "bench", 0, 2);
    const std::function<void()> variants[4] = {[&] { own.run(pool1); }, [&] { own.run(pool2); },
                                               [&] { xnn1.run(pool1); }, [&] { xnn2.run(pool2); }};
    double best[4] = {1e30, 1e30, 1e30, 1e30};
    for (auto& v : variants) for (int i = 0; i < 5; ++i) v();
    for (int r = 0; r < reps; ++r) {
      for (int k = 0; k < 4; ++k) {
        const int v = r % 2 == 0 ? k : 3 - k;
        best[v] = std::min(best[v], time_us(variants[v]));
      }
    }
    std::printf("  %4lld -> %4lld at %3lldx%-3lld %9lld  %7.2f  %7.2f  %7.2f  %7.2f  %5.2f  %s\n", (long long)sh.in,
                (long long)sh.out, (long long)sh.hw, (long long)sh.hw, (long long)(sh.hw * sh.hw * sh.in * sh.out),
                best[0], best[1], best[2], best[3], best[1] / best[3],
                co_up::xnnpack::own_conv_runs(s, false) ? "own" : "xnnpack");
  }
  // MobileNetV2's first layers as the plugin cuts them on two threads (the split rule's slices),
  // one after another as in a frame: stem 3x3/2 3 -> 32, depthwise 32, 1x1 32 -> 16, 1x1
  // 16 -> 96, depthwise 3x3/2 96 (memory-bound: 1.6-4.8 MB per tensor at 112x112).
  {
    struct Layer { int64_t in, out, hw, k, stride, group; };
    const std::vector<Layer> layers = {{3, 32, 224, 3, 2, 1}, {32, 32, 112, 3, 1, 32}, {32, 16, 112, 1, 1, 1},
                                       {16, 96, 112, 1, 1, 1}, {96, 96, 112, 3, 2, 96}};
    std::vector<std::vector<float>> acts;
    acts.push_back(random_floats(size_t(224 * 224 * 3)));
    std::vector<std::vector<float>> weights;
    std::vector<SlicedOperator> ops1, ops2;
    for (const Layer& l : layers) {
      Conv2dShape s;
      s.in_channels = l.in;
      s.out_channels = l.out;
      s.group = l.group;
      s.in_height = s.in_width = l.hw;
      s.kernel_h = s.kernel_w = l.k;
      s.stride_h = s.stride_w = l.stride;
      s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = l.k / 2;
      weights.push_back(random_floats(size_t(l.out * l.k * l.k * l.in / l.group)));
      acts.push_back(std::vector<float>(size_t(s.out_height() * s.out_width() * l.out) + 64));
      const float* x = acts[acts.size() - 2].data();
      float* y = acts.back().data();
      ops1.push_back(SlicedOperator::convolution(s, weights.back().data(), nullptr, 0.0f, 6.0f, 0, x, y, l.out,
                                                 "bench", 1, 1));
      ops2.push_back(SlicedOperator::convolution(s, weights.back().data(), nullptr, 0.0f, 6.0f, 0, x, y, l.out,
                                                 "bench", 0, 2));
    }
    const std::function<void()> chain[2] = {[&] { for (const auto& op : ops1) op.run(pool1); },
                                            [&] { for (const auto& op : ops2) op.run(pool2); }};
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < reps; ++r) {
      for (int k = 0; k < 2; ++k) {
        const int v = r % 2 == 0 ? k : 1 - k;
        best[v] = std::min(best[v], time_us(chain[v]));
      }
    }
    std::printf("MobileNetV2's 112x112 layers in a row, fastest of %d: 1 thread %.1f us, 2 threads %.1f us (%.2fx)\n",
                reps, best[0], best[1], best[0] / best[1]);
  }
  return 0;
}

int main(int argc, char** argv) {
  return co_up::bench::bench_main("co_up_bench_conv_choice", [&] { return run_conv_choice(argc, argv); });
}
