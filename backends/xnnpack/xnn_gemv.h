// Input rows times a weight matrix, each row alone, y[o] = clamp(bias[o] + sum_k w[o, k] * x[k]):
// the fully connected layers the own convolution does not take (a classifier's one row) and the
// 1x1 convolutions over one pixel per image (squeeze-excite), on the backend's own loop instead
// of XNNPACK's GEMM.
//
// Why: for one row XNNPACK runs its 1x16 GEMM kernel, one accumulator per 16 outputs, so every
// multiply-add waits for the one before it (4 cycles of FMA latency per 64 bytes of weights):
// MobileNetV3-L's 960 -> 1280 and 1280 -> 1000 took 115-123 us on one core, about 40 GB/s of
// weights; ONNX Runtime's took about 0.75x the time at two threads. Here each block of 16
// outputs keeps four accumulators (the reduction's positions k mod 4), summed in a fixed order at
// the end, so four multiply-adds are in flight and the loop streams weights as fast as the
// caches deliver them.
//
// Numerics: four partial sums a0 = bias + the terms k = 0 mod 4 (in order), a1..a3 the terms
// k = 1, 2, 3 mod 4, then (a0 + a1) + (a2 + a3): a fixed order, the same for any thread count and
// any split into ranges of blocks (the work is split by outputs only); it differs from a
// sequential sum by rounding only. The AVX-512 and portable loops may differ in FMA
// contraction, never within one.
#pragma once

#include <cstdint>
#include <vector>

#include "xnn_thread_pool.h"

namespace co_up::xnnpack {

class Gemv {
 public:
  // Outputs per block: ranges of outputs split at multiples of this.
  static constexpr int64_t kBlock = 16;

  // `weights` [out][in] row-major, copied (packed) now; `bias` [out] or NULL. Reads `rows` rows
  // of `x` [in] and writes as many rows of `y` [out], `y_stride` floats apart (0: `out`), at run;
  // every row on its own, so a batch gives each image the bits it gets alone.
  Gemv(int64_t in, int64_t out, const float* weights, const float* bias, float lo, float hi,
       const float* x, float* y, int64_t rows = 1, int64_t y_stride = 0);

  int64_t blocks() const { return (out_ + kBlock - 1) / kBlock; }
  // Outputs [begin * kBlock, end * kBlock) clipped to `out` of every row, on the calling thread.
  void run_blocks(int64_t begin, int64_t end) const;
  // Every block, cut into ranges of blocks over the pool where the split rule says it pays.
  void run(const CpuPool& pool) const;
  // Whether run() cuts an `in` x `out` product over `threads` threads (the split rule, at the
  // one-pixel convolutions' weight rate).
  static bool splits(int64_t in, int64_t out, int threads);

  // For tests: the portable loop even where AVX-512 is available (the loop ARM boards run).
  void run_blocks_portable(int64_t begin, int64_t end) const;

 private:
  int64_t in_, out_;
  std::vector<float> packed_;  // [block][in][kBlock], zero past `out`
  std::vector<float> bias_;    // [blocks * kBlock], zero past `out`
  float lo_, hi_;
  const float* x_;
  float* y_;
  int64_t rows_, y_stride_;
};

}  // namespace co_up::xnnpack
