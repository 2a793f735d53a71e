#include "ref_cnn_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace co_up::reference {
namespace {

// Below this many elements a kernel runs on the calling thread: waking workers costs more.
constexpr int64_t kMinParallelWork = 1 << 15;

ThreadPool* pool_for(ThreadPool* pool, int64_t work) { return work >= kMinParallelWork ? pool : nullptr; }

// Element-wise over [0, count) in blocks of 64, so a split never changes which loop an element
// falls in.
template <typename Body>
void elementwise_blocks(int64_t count, ThreadPool* pool, Body body) {
  const int64_t blocks = (count + 63) / 64;
  parallel_for(pool_for(pool, count), blocks, [&](int64_t begin, int64_t end) {
    body(begin * 64, std::min(count, end * 64));
  });
}

}  // namespace

void channel_scale(const float* x, const float* scale, float* y, int64_t batch, int64_t channels,
                   int64_t plane, ThreadPool* pool) {
  parallel_for(pool_for(pool, batch * channels * plane), batch * channels,
               [&](int64_t begin, int64_t end) {
    for (int64_t nc = begin; nc < end; ++nc) {
      const float s = scale[nc];
      const float* src = x + nc * plane;
      float* dst = y + nc * plane;
      for (int64_t i = 0; i < plane; ++i) dst[i] = src[i] * s;
    }
  });
}

void hard_sigmoid(const float* x, float* y, int64_t count, float alpha, float beta,
                  ThreadPool* pool) {
  elementwise_blocks(count, pool, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = std::min(std::max(alpha * x[i] + beta, 0.0f), 1.0f);
  });
}

void silu(const float* x, float* y, int64_t count, ThreadPool* pool) {
  elementwise_blocks(count, pool, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
  });
}

void channel_shuffle(const float* x, float* y, int64_t batch, int64_t channels, int64_t plane,
                     int64_t groups, ThreadPool* pool) {
  const int64_t per_group = channels / groups;
  parallel_for(pool_for(pool, batch * channels * plane), batch * channels,
               [&](int64_t begin, int64_t end) {
    for (int64_t nc = begin; nc < end; ++nc) {
      const int64_t n = nc / channels, c_out = nc % channels;
      const int64_t c_in = (c_out % groups) * per_group + c_out / groups;
      std::memcpy(y + nc * plane, x + (n * channels + c_in) * plane,
                  static_cast<size_t>(plane) * sizeof(float));
    }
  });
}

}  // namespace co_up::reference
