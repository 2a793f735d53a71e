// cpu-reference kernels of the IR's CNN forms (graph/op.h): squeeze-excite channel scale,
// HardSigmoid, SiLU and ShuffleNet's channel shuffle, on NCHW f32 arrays.
//
// Same contracts as ref_kernels.h: `pool` may be null; each output element is computed the same
// way whatever the split; nothing is allocated. Element-wise kernels allow x == y; the others
// need distinct arrays.
#pragma once

#include <cstdint>

#include "ref_thread_pool.h"

namespace co_up::reference {

// y[n, c, p] = x[n, c, p] * scale[n, c] over planes of `plane` elements.
void channel_scale(const float* x, const float* scale, float* y, int64_t batch, int64_t channels,
                   int64_t plane, ThreadPool* pool);

// y = max(0, min(1, alpha * x + beta)).
void hard_sigmoid(const float* x, float* y, int64_t count, float alpha, float beta,
                  ThreadPool* pool);

// y = x * sigmoid(x) = x / (1 + exp(-x)).
void silu(const float* x, float* y, int64_t count, ThreadPool* pool);

// y[n, j * groups + i, p] = x[n, i * (channels / groups) + j, p]; `groups` divides `channels`.
void channel_shuffle(const float* x, float* y, int64_t batch, int64_t channels, int64_t plane,
                     int64_t groups, ThreadPool* pool);

}  // namespace co_up::reference
