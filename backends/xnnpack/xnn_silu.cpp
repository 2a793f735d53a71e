#include "xnn_silu.h"

#include <cmath>

#include "avx512_conv.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start some intrinsics from an "undefined" vector it then reports as
// maybe-uninitialized (a known false positive at -O3), as in avx512_conv.cpp.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "avx512_silu.h"

namespace co_up::xnnpack {

namespace {

constexpr int64_t kMinParallel = 16384;  // elements below which the caller runs it alone

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void silu_avx512(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, silu_ps(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, silu_ps(_mm512_maskz_loadu_ps(m, x + i)));
  }
}
#endif

void silu_portable(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

}  // namespace

void silu_nc(const float* x, float* y, int64_t count, const CpuPool& pool) {
  pool.parallel_for(count, 16, kMinParallel, [&](int64_t begin, int64_t end) {
#if defined(__x86_64__)
    if (avx512_gemm_available()) {
      silu_avx512(x + begin, y + begin, end - begin);
      return;
    }
#endif
    silu_portable(x + begin, y + begin, end - begin);
  });
}

}  // namespace co_up::xnnpack
