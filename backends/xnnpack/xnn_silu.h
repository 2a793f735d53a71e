// SiLU, y = x * sigmoid(x), in one pass (XNNPACK has no SiLU: a sigmoid then a multiply read and
// write the tensor twice). On AVX-512 CPUs it computes avx512_silu.h's silu_ps, as the AVX-512
// convolution's fused epilogue does, so fused and unfused results are the same bits; elsewhere
// x / (1 + exp(-x)) in plain C++.
#pragma once

#include <cstdint>

#include "xnn_thread_pool.h"

namespace co_up::xnnpack {

// y may equal x.
void silu_nc(const float* x, float* y, int64_t count, const CpuPool& pool);

}  // namespace co_up::xnnpack
