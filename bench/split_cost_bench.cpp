// What a split costs on cpu-xnnpack's claiming pool, and from what layer size cutting a layer
// over two threads pays (the inputs of backends/xnnpack/xnn_sliced_ops.cpp's split rule).
//
//   co_up_bench_split_cost [--reps=N]
//
// On a pool of two threads pinned to cores 0 and 1 (held warm, as a compiled sub-graph holds it):
//  - the join: one parallel_for of two chunks of a fixed busy wait, less one wait (publish,
//    claim, count, wait: what a split adds to the slower thread's share);
//  - depthwise 3x3 convolutions (XNNPACK's operator, the sliced path) at the channel and pixel
//    counts of MobileNetV2/V3 and EfficientNet-B0, whole (one slice, the caller alone) against cut
//    into two and four slices on the pool;
//  - HardSwish (an element-wise pass) over 8 K to 256 K elements, likewise.
// Each time is the fastest of --reps runs (default 400): on a shared host the fastest run is the
// one whose second core was free, which is the case the split rule is for. Prints one line per
// case: MACs or elements, the times, and the per-MAC (per-element) rate of the whole layer.
#include <xnnpack.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_data.h"
#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "xnn_common.h"
#include "xnn_sliced_ops.h"
#include "xnn_thread_pool.h"

namespace {

using co_up::bench::random_floats;
using co_up::backends::Conv2dShape;
using co_up::xnnpack::CpuPool;
using co_up::xnnpack::SlicedOperator;
using co_up::xnnpack::SliceRange;

double fastest_us(int reps, const std::function<void()>& run) {
  for (int i = 0; i < 10; ++i) run();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  return best;
}

}  // namespace

static int run_split_cost(int argc, char** argv) {
  int reps = 400;
  for (const co_up::bench::BenchOption& a : co_up::bench::read_options(argc, argv)) {
    if (a.is("reps")) {
      reps = static_cast<int>(a.integer(1, 10000000));
    } else if (a.is("help")) {
      std::printf("usage: co_up_bench_split_cost [--reps=N]\n");
      return 0;
    } else {
      a.unknown();
    }
  }
  co_up::xnnpack::initialize_xnnpack("(bench)");
  const std::vector<int> cores = {0, 1};
  CpuPool pool(2, cores, co_up::xnnpack::Schedule::kDynamic);
  CpuPool::Warm warm(pool);

  // The join: two chunks of a fixed busy wait each, on two threads, minus one chunk's wait. The
  // fastest run is one where both threads ran a chunk (otherwise it takes two chunks' time).
  static constexpr double kBusyUs = 5.0;
  const auto busy = [](int64_t, int64_t) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(kBusyUs);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  const double pair = fastest_us(reps * 10, [&] { pool.parallel_for(2, 1, 2, busy); });
  std::printf("join: two chunks of %.1f us on two threads %.2f us, so a split costs %.2f us (fastest of %d)\n",
              kBusyUs, pair, pair - kBusyUs, reps * 10);

  std::printf("depthwise 3x3 (XNNPACK), fastest of %d: C x H x W, MACs, whole us, 2 slices us, 4 slices us, MACs/us whole\n", reps);
  struct Dw { int64_t c, h, stride; };
  const std::vector<Dw> dws = {{576, 14, 2}, {240, 14, 1}, {192, 14, 1}, {960, 7, 1}, {672, 14, 2},
                               {384, 14, 1}, {480, 14, 1}, {1152, 7, 1}, {576, 14, 1}, {144, 28, 1},
                               {32, 112, 1}, {16, 112, 1}};
  for (const Dw& d : dws) {
    Conv2dShape s;
    s.in_channels = s.out_channels = s.group = d.c;
    s.in_height = s.in_width = d.h * d.stride;
    s.kernel_h = s.kernel_w = 3;
    s.stride_h = s.stride_w = d.stride;
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
    const int64_t oh = s.out_height(), ow = s.out_width();
    const int64_t macs = oh * ow * d.c * 9;
    const std::vector<float> x = random_floats(size_t(s.in_height * s.in_width * d.c));
    const std::vector<float> w = random_floats(size_t(9 * d.c));
    const std::vector<float> b = random_floats(size_t(d.c));
    std::vector<float> y(size_t(oh * ow * d.c) + 64);
    double t[3];
    const int64_t counts[3] = {1, 2, 4};
    for (int k = 0; k < 3; ++k) {
      const SlicedOperator op = SlicedOperator::convolution(s, w.data(), b.data(), 0.0f, 6.0f, 0, x.data(),
                                                            y.data(), d.c, "bench", counts[k]);
      t[k] = fastest_us(reps, [&] { op.run(pool); });
    }
    std::printf("  %4lld x %3lld x %3lld  %8lld  %7.2f  %7.2f  %7.2f  %6.0f\n", (long long)d.c,
                (long long)oh, (long long)ow, (long long)macs, t[0], t[1], t[2], double(macs) / t[0]);
  }

  std::printf("HardSwish (XNNPACK), fastest of %d: elements, whole us, 2 slices us, 4 slices us, elements/us whole\n", reps);
  for (int64_t n : {8 * 1024, 16 * 1024, 32 * 1024, 47 * 1024, 64 * 1024, 128 * 1024, 256 * 1024}) {
    const std::vector<float> x = random_floats(size_t(n));
    std::vector<float> y(size_t(n) + 64);
    double t[3];
    const int64_t counts[3] = {1, 2, 4};
    for (int k = 0; k < 3; ++k) {
      const SlicedOperator op = SlicedOperator::per_range(
          n, 1,
          [&](SliceRange r, xnn_operator_t* o) {
            const size_t len = size_t(r.end - r.begin);
            xnn_status st = xnn_create_hardswish_nc_f32(len, len, len, 0u, o);
            if (st == xnn_status_success) st = xnn_setup_hardswish_nc_f32(*o, 1, x.data() + r.begin, y.data() + r.begin, nullptr);
            return st;
          },
          "bench", counts[k]);
      t[k] = fastest_us(reps, [&] { op.run(pool); });
    }
    std::printf("  %8lld  %7.2f  %7.2f  %7.2f  %6.0f\n", (long long)n, t[0], t[1], t[2], double(n) / t[0]);
  }
  return 0;
}

int main(int argc, char** argv) {
  // A machine without two cores to pin, or XNNPACK failing to start, is one line, not a terminate.
  return co_up::bench::bench_main("co_up_bench_split_cost", [&] { return run_split_cost(argc, argv); });
}
